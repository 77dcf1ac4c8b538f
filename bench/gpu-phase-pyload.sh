#!/usr/bin/env bash
# Where gdio.safetensors.torch.load_file's time goes (bench/load_file_phases.py) beside `gdio
# load --json` (its warm-up, opening and transfer), on the checkpoint of
# bench/safetensors-h200.py (LOADAB_GIB GiB, written if missing) in tmpfs and the hot ext4
# page cache, PYLOAD_REPS loads each.
# usage (through bench/gpu-session.sh pyload): bench/gpu-phase-pyload.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/pyload}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
. bench/gpu-phase-lib.sh
gdio_wheel_on_path
ensure_checkpoint "${LOADAB_GIB:-16}" "$out"
for where in /dev/shm/gdio-st /tmp/gdio-st; do
  [ "$where" = /tmp/gdio-st ] && cat "$where"/model-*.safetensors >/dev/null
  echo "$where gdio load: $("$GDIO" load "$where/model.safetensors.index.json" --target gpu:0 --json 2>>"$out/stderr.txt" \
    | python3 -c "import json,sys; d=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); print({k: d.get(k) for k in ('gbps','seconds','transfer_seconds','warm_seconds','open_seconds','cuda_init_seconds')})")"
  echo "$where load_file phases: $(python3 bench/load_file_phases.py "$where/model.safetensors.index.json" "${PYLOAD_REPS:-3}" 2>>"$out/stderr.txt")"
done
