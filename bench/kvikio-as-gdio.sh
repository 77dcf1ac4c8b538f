#!/usr/bin/env bash
# KvikIO 26.10's own Python tests (bench/kvikio-tests) with gdio in kvikio's place: a module
# `kvikio` that re-exports gdio (bench/kvikio-as-gdio/), KvikIO's test helper `kvikio.utils`
# taken from KvikIO's wheel, and `rangehttpserver`. gdio must be importable (pip install ./python, or PYTHONPATH).
#   bash bench/kvikio-as-gdio.sh [PYTEST_ARGS...] [MODULES...]   (default modules: those gdio has)
# HOST_CUPY=1 puts a NumPy stand-in for CuPy (bench/kvikio-as-gdio/host-cupy) on the path, so
# that on a machine without a GPU the CuPy cases run on host memory instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r bench/kvikio-as-gdio/kvikio "$work/"
# KvikIO's test helper kvikio/utils.py from its wheel: .whl's (../shared/tools/fetch-peer-wheels),
# else the same version from PyPI.
wheel=$(ls .whl/kvikio_*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  $py -m pip download -q --no-deps -d "$work/wheel" "kvikio-cu13==26.10.0"
  wheel=$(ls "$work"/wheel/kvikio_*.whl | head -1)
fi
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
# The tests and the examples they import (test_examples.py looks in ../examples).
here=$PWD
cp -r bench/kvikio-tests "$work/tests" && cp -r bench/kvikio-examples "$work/examples"
cd "$work/tests"
# Without a test module among the arguments (only pytest options), the modules gdio has.
case " $* " in *.py\ *|*.py::*) ;; *) set -- "$@" test_basic_io.py test_mmap.py test_defaults.py test_numpy.py \
  test_cufile_driver.py test_http_io.py test_examples.py test_version.py test_remote_endpoint_utils.py ;; esac
shim=; [ -z "${HOST_CUPY:-}" ] || shim="$here/bench/kvikio-as-gdio/host-cupy:"
PYTHONPATH="$shim$work:$work/deps${PYTHONPATH:+:$PYTHONPATH}" $py -m pytest -q -p no:cacheprovider "$@"
