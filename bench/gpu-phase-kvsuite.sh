#!/usr/bin/env bash
# KvikIO 26.10's own Python tests with gdio in kvikio's place (bench/kvikio-as-gdio.sh) on the
# GPU machine, where CuPy runs the tests the build machine skips. gdio's wheel (.dev/wheel) on
# the path; rangehttpserver from .whl (no network there).
# usage (through bench/gpu-session.sh kvsuite): bench/gpu-phase-kvsuite.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/kvsuite}; mkdir -p "$out"
. bench/gpu-phase-lib.sh
gdio_wheel_on_path
python3 -c "import gdio, cupy; print('gdio', gdio.__file__, 'cupy', cupy.__version__, gdio.runtime_info())"
# The default modules and test_async_io (CuPy streams); the whole log in pytest.txt, on stdout
# the failures by test (parameters folded) and the counts.
bash bench/kvikio-as-gdio.sh -rfE -p no:randomly test_basic_io.py test_mmap.py test_defaults.py test_numpy.py \
  test_cufile_driver.py test_http_io.py test_examples.py test_version.py test_remote_endpoint_utils.py \
  test_async_io.py >"$out/pytest.txt" 2>&1
grep -E '^(FAILED|ERROR) ' "$out/pytest.txt" | sed -E 's/\[[^]]*\]//; s/ - .*//' | sort | uniq -c
grep -E '[0-9]+ (passed|failed)' "$out/pytest.txt" | tail -1
