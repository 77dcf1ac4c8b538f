#!/usr/bin/env bash
# Python futures taken apart (issue 11): bench/futures_split.py (submission loop apart from the
# collection loop, 100,000 64 KiB `pread` futures into one torch buffer) for each wheel of
# PYPROF_WHEELS (`after` = .dev/wheel, `before` = .dev/before-wheel) under each setting of
# PYPROF_SETTINGS (environment assignments joined by commas; GDIO_NONE=1 for the defaults), at
# the default thread count and at 16; with PYPROF_SPY=1, once more under py-spy (its wheel
# carried in .whl/) with native frames, raw collapsed stacks in OUTDIR/pyspy-default.txt.
# usage (through bench/gpu-session.sh pyprof): bench/gpu-phase-pyprof.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/pyprof}; mkdir -p "$out"
base=${PYTHONPATH:-}
f=/dev/shm/gdio-bench-8g.bin
for w in ${PYPROF_WHEELS:-after}; do
  whl=$([ "$w" = before ] && echo .dev/before-wheel || echo .dev/wheel)
  python3 -m pip install -q --no-index --no-deps --no-compile --target "/tmp/gdsite-$w" "$whl"/gdio-*.whl || exit 1
done
for rep in $(seq "${PYPROF_REPS:-1}"); do
  for w in ${PYPROF_WHEELS:-after}; do
    for v in ${PYPROF_SETTINGS:-GDIO_NONE=1}; do
      for t in 0 16; do
        env ${v//,/ } PYTHONPATH=/tmp/gdsite-$w${base:+:$base} python3 bench/futures_split.py "$f" --threads $t \
          --iterations 3 2>&1 | sed "s/^/rep $rep $w $v /"
      done
    done
  done
done
# Profiles use this build's module with its symbols where carried (.dev/symlib/_native.abi3.so:
# `cargo build --release -p gdio-py`, then `strip --strip-debug`), not the wheel's stripped one.
if [ -n "${PYPROF_SPY:-}" ]; then
  [ -f .dev/symlib/_native.abi3.so ] && cp -f .dev/symlib/_native.abi3.so /tmp/gdsite-after/gdio/_native.abi3.so
  spy=$(ls /tmp/site/bin/py-spy 2>/dev/null)
  [ -n "$spy" ] && PYTHONPATH=/tmp/gdsite-after${base:+:$base} "$spy" record --native --idle --format raw -r 250 \
    -o "$out/pyspy-default.txt" -- python3 bench/futures_split.py "$f" --iterations 4 2>&1 | tail -4
  if command -v perf >/dev/null; then
    PYTHONPATH=/tmp/gdsite-after${base:+:$base} perf record -F 999 -g -o "$out/perf.data" -- \
      python3 bench/futures_split.py "$f" --iterations 4 2>&1 | tail -4
    perf report -i "$out/perf.data" --comm python3 --no-children --sort dso,sym --stdio -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | head -120 >"$out/perf-main-thread.txt"
    perf report -i "$out/perf.data" --no-children --sort comm,dso --stdio -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | head -40 >"$out/perf-threads.txt"
    rm -f "$out/perf.data"
  else
    echo "no perf on this machine"
  fi
fi
