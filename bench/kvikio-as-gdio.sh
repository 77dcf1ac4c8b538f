#!/usr/bin/env bash
# KvikIO 26.10's own Python tests (bench/kvikio-tests) with gdio in kvikio's place: a module
# `kvikio` that re-exports gdio (bench/kvikio-as-gdio/), KvikIO's test helper `kvikio.utils`
# taken from its wheel in .whl/ (../shared/tools/fetch-peer-wheels), and `rangehttpserver`
# from PyPI. gdio must be importable (pip install ./python, or PYTHONPATH).
#   bash bench/kvikio-as-gdio.sh [PYTEST_ARGS...]   (default: the modules gdio has)
# HOST_CUPY=1 puts a NumPy stand-in for CuPy (bench/kvikio-as-gdio/host-cupy) on the path, so
# that on a machine without a GPU the CuPy cases run on host memory instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r bench/kvikio-as-gdio/kvikio "$work/"
wheel=$(ls .whl/kvikio_*.whl | head -1)
$py - "$wheel" "$work/kvikio/utils.py" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("kvikio/utils.py"))
PY
# rangehttpserver from .whl where it is there (the GPU machine has no network), else PyPI.
if ls .whl/rangehttpserver-*.whl >/dev/null 2>&1; then
  $py -m pip install -q --no-index --no-deps --target "$work/deps" .whl/rangehttpserver-*.whl
else
  $py -m pip install -q --target "$work/deps" rangehttpserver
fi
cd bench/kvikio-tests
[ $# -gt 0 ] || set -- test_basic_io.py test_mmap.py test_defaults.py test_numpy.py test_cufile_driver.py test_http_io.py
shim=; [ -z "${HOST_CUPY:-}" ] || shim="$PWD/../kvikio-as-gdio/host-cupy:"
PYTHONPATH="$shim$work:$work/deps${PYTHONPATH:+:$PYTHONPATH}" $py -m pytest -q -p no:cacheprovider "$@"
