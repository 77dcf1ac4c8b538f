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
bash bench/kvikio-as-gdio.sh -q -rfE -p no:randomly test_basic_io.py test_mmap.py test_defaults.py test_numpy.py \
  test_cufile_driver.py test_http_io.py 2>&1 | tee "$out/pytest.txt" | grep -E '^(FAILED|ERROR)|passed|failed' | head -60
