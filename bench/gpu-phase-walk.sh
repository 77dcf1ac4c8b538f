#!/usr/bin/env bash
# safe_open(...).get_tensor(k) down keys() into GPU memory (bench/get_tensor_walk.py --device
# cuda:0): the safetensors package, gdio reading ahead (the default) and one load per tensor,
# and gdio's load_file, for each tensor width in WALK_COLS (720 tensors each, tmpfs); with
# WALK_PARTS=1 also where a shuffled get_tensor's time goes (--parts).
# usage (through bench/gpu-session.sh walk): bench/gpu-phase-walk.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/walk}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl 2>/dev/null
export PYTHONPATH=/tmp/gdsite${PYTHONPATH:+:$PYTHONPATH}
for cols in ${WALK_COLS:-256 4096}; do
  python3 bench/get_tensor_walk.py --dir /dev/shm --device cuda:0 --cols "$cols" --reps "${WALK_REPS:-3}" ${WALK_PARTS:+--parts} 2>>"$out/stderr.txt" \
    || echo "walk --cols $cols exit $?"
done
