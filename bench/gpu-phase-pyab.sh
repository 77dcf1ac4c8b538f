#!/usr/bin/env bash
# Python futures before and after a change (issue 11): part B of bench/python-h200.py (100,000
# `pread` futures of 64 KiB into one GPU buffer, every byte of 32 samples checked) with the
# wheel of the build before (.dev/before-wheel) and the one after (.dev/wheel), alternating,
# PYAB_REPS times; KvikIO beside them in the "after" runs (the same-run peer).
# usage (through bench/gpu-session.sh pyab): bench/gpu-phase-pyab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/pyab}; mkdir -p "$out"
for w in before after; do
  whl=$([ $w = before ] && echo .dev/before-wheel || echo .dev/wheel)
  python3 -m pip install -q --no-index --no-deps --no-compile --target "/tmp/gdsite-$w" "$whl"/gdio-*.whl || exit 1
done
base=${PYTHONPATH:-}
for rep in $(seq "${PYAB_REPS:-2}"); do
  for w in before after; do
    extra=(--no-kvikio); [ $w = after ] && extra=()
    echo "== rep $rep $w"
    PYTHONPATH=/tmp/gdsite-$w${base:+:$base} python3 bench/python-h200.py --file /dev/shm/gdio-bench-8g.bin \
      --gdio "$GDIO" --out "$out/$w-$rep" --iterations 2 --futures "${PY_FUTURES:-100000}" --parts B "${extra[@]}" 2>&1 \
      | grep -E "pread|preadv|B:" | tail -12
  done
done
