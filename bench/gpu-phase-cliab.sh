#!/usr/bin/env bash
# `gdio load` of the checkpoint of bench/safetensors-h200.py (CLIAB_GIB GiB, written if
# missing) with the CLI before a change (.dev/before/gdio) and after (.dev/bin/gdio),
# alternating in one run, tmpfs and the hot ext4 page cache, CLIAB_REPS reps; GB/s of
# checkpoint data, one line per load.
# usage (through bench/gpu-session.sh cliab): bench/gpu-phase-cliab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/cliab}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
. bench/gpu-phase-lib.sh
gdio_wheel_on_path
ensure_checkpoint "${CLIAB_GIB:-16}" "$out"
gb() { python3 -c "import json,sys; d=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); print(f\"{d.get('checkpoint_bytes', d['bytes'])/d['seconds']/1e9:.2f}\")"; }
for rep in $(seq "${CLIAB_REPS:-3}"); do
  for where in /dev/shm/gdio-st /tmp/gdio-st; do
    for bin in .dev/before/gdio "$GDIO"; do
      [ "$where" = /tmp/gdio-st ] && cat "$where"/model-*.safetensors >/dev/null
      echo "rep $rep $where $bin: $("$bin" load "$where/model.safetensors.index.json" --target gpu:0 --json 2>>"$out/stderr.txt" | gb)"
    done
  done
done
