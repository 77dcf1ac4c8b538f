#!/usr/bin/env bash
# gdio.safetensors.torch.load_file with the wheel before a change (.dev/before-wheel) and
# after (.dev/wheel), alternating in one run: bench/load_file_phases.py on the checkpoint of
# bench/safetensors-h200.py (LDAB_GIB GiB, written if missing) in tmpfs and the hot ext4 page
# cache, LDAB_REPS reps, each a fresh process timing LDAB_LOADS loads; then the get_tensor walk
# (bench/get_tensor_walk.py --device cuda:0) with each wheel (with LDAB_PARTS=1 also where a
# shuffled get_tensor's time goes).
# usage (through bench/gpu-session.sh ldab): bench/gpu-phase-ldab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/ldab}; mkdir -p "$out"
GDIO=${GDIO:-$PWD/.dev/bin/gdio}
for w in before after; do
  src=.dev/wheel; [ $w = before ] && src=.dev/before-wheel
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gd-$w $src/gdio-*.whl 2>>"$out/pip.txt"
done
[ -f /tmp/gdio-st/model.safetensors.index.json ] ||
  PYTHONPATH=/tmp/gd-after${PYTHONPATH:+:$PYTHONPATH} python3 bench/safetensors-h200.py --gdio "$GDIO" --out "$out/st" \
    --size-gib "${LDAB_GIB:-16}" --rows none --peers "" >/dev/null 2>&1
for rep in $(seq "${LDAB_REPS:-2}"); do
  for where in /dev/shm/gdio-st /tmp/gdio-st; do
    for w in before after; do
      [ "$where" = /tmp/gdio-st ] && cat "$where"/model-*.safetensors >/dev/null
      echo "rep $rep $where $w: $(PYTHONPATH=/tmp/gd-$w${PYTHONPATH:+:$PYTHONPATH} python3 bench/load_file_phases.py \
        "$where/model.safetensors.index.json" "${LDAB_LOADS:-2}" 2>>"$out/stderr.txt")"
    done
  done
done
for w in before after; do
  echo "== walk, wheel $w"
  PYTHONPATH=/tmp/gd-$w${PYTHONPATH:+:$PYTHONPATH} python3 bench/get_tensor_walk.py --dir /dev/shm --device cuda:0 \
    --cols "${LDAB_COLS:-256}" --reps 3 ${LDAB_PARTS:+--parts} 2>>"$out/stderr.txt" || echo "walk exit $?"
done
