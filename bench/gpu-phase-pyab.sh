#!/usr/bin/env bash
# Python futures before and after a change (issue 11): part B of bench/python-h200.py (100,000
# `pread` futures of 64 KiB into one GPU buffer, every byte of 32 samples checked), alternating
# the arms of PYAB_ARMS, PYAB_REPS times; KvikIO beside them in the "after" runs (the same-run
# peer). Arms: `before` = the wheel in .dev/before-wheel (the build before the change), `pool` =
# this build's wheel (.dev/wheel) with GDIO_PY_POOL=1 (every GPU future read on the Python pool,
# the route before session 12), `after` = this build's wheel on its defaults.
# usage (through bench/gpu-session.sh pyab): bench/gpu-phase-pyab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/pyab}; mkdir -p "$out"
arms=${PYAB_ARMS:-pool after}
for w in before after; do
  case " $arms " in *" $w "*|*" pool "*) ;; *) continue ;; esac
  whl=$([ $w = before ] && echo .dev/before-wheel || echo .dev/wheel)
  [ -d "$whl" ] || continue
  python3 -m pip install -q --no-index --no-deps --no-compile --target "/tmp/gdsite-$w" "$whl"/gdio-*.whl || exit 1
done
base=${PYTHONPATH:-}
for rep in $(seq "${PYAB_REPS:-2}"); do
  for arm in $arms; do
    site=/tmp/gdsite-after; env=(); extra=(--no-kvikio)
    case $arm in
      before) site=/tmp/gdsite-before ;;
      pool) env=(GDIO_PY_POOL=1) ;;
      after) extra=() ;;
    esac
    echo "== rep $rep $arm"
    env "${env[@]}" PYTHONPATH=$site${base:+:$base} python3 bench/python-h200.py --file /dev/shm/gdio-bench-8g.bin \
      --gdio "$GDIO" --out "$out/$arm-$rep" --iterations 2 --futures "${PY_FUTURES:-100000}" --parts B "${extra[@]}" 2>&1 \
      | grep -E "pread|preadv|B:" | tail -12
  done
done
