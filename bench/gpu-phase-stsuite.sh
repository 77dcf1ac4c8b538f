#!/usr/bin/env bash
# The safetensors package's own tests with gdio.safetensors as safetensors
# (bench/safetensors-as-gdio.sh) on the GPU machine: torch with CUDA runs the device cases the
# build machine skips. gdio's wheel (.dev/wheel) on the path; fsspec from .whl.
# usage (through bench/gpu-session.sh stsuite): bench/gpu-phase-stsuite.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/stsuite}; mkdir -p "$out"
. bench/gpu-phase-lib.sh
gdio_wheel_on_path
python3 -c "import gdio, torch; print('gdio', gdio.__file__, 'torch', torch.__version__, torch.cuda.is_available())"
bash bench/safetensors-as-gdio.sh -rfEs -p no:randomly >"$out/pytest.txt" 2>&1
grep -E '^(FAILED|ERROR|SKIPPED) ' "$out/pytest.txt" | sed -E 's/ - .*//' | sort | uniq -c
grep -E '[0-9]+ (passed|failed)' "$out/pytest.txt" | tail -1
