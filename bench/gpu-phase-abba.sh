#!/usr/bin/env bash
# Phase `abba`: one build under two or more settings in balanced order, rep after rep: odd reps
# run the settings in the order given, even reps in reverse (A B, B A, ...), so a drift over
# the call or a penalty for going first (session 32 run 1: `knobab`'s fixed order read a
# control row 4-12 % lower in first place) falls on every setting alike. ABBA_SETTINGS: the
# settings, space-separated, each environment assignments joined by commas ("GDIO_NONE=1
# GDIO_X=1,GDIO_Y=2"). Per rep and setting: KvikIO 26.10 compat OFF through gdio's
# libcufile.so.0 (LIB) reading ABBA_FILE (the 8 GiB ext4 file, page-cached first) at each of
# ABBA_THREADS ("8 16"), ABBA_PASSES (5) timed passes, median and best; `gdio bench` read rows
# ABBA_SHAPES ("4M:8", SIZE:DEPTH) on ABBA_BENCH_FILE (the tmpfs file) with its split counts;
# then KvikIO compat ON at each thread count once. ABBA_REPS (4) reps; no rep starts after
# ABBA_BUDGET_S (300) s. Last, bench/abba_verdict.py's summary.
#   bash bench/gpu-phase-abba.sh LOGDIR   (repo root; through bench/gpu-session.sh abba)
# needs: GDIO (the CLI), LIB, KvikIO and CuPy on PYTHONPATH (bench/gpu-session.sh sets all three).
set -uo pipefail
out=${1:-/tmp/abba}; mkdir -p "$out"
read -ra settings <<<"${ABBA_SETTINGS:?ABBA_SETTINGS: two or more settings}"
f=${ABBA_FILE:-/tmp/gdio-bench-8g.bin} shm=${ABBA_BENCH_FILE:-/dev/shm/gdio-bench-8g.bin}
for x in "$f" "$shm"; do [ -f "$x" ] || { echo "abba: no file $x (bench/gpu-session.sh makes it)"; exit 2; }; done
cat "$f" >/dev/null
[ -z "${CUFILE_ENV_PATH_JSON:-}" ] && [ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
kv() { # on|off threads
  python3 bench/cufile_kvikio_read.py "$1" "$f" "$2" "${ABBA_PASSES:-5}" 2>>"$out/stderr.txt" | python3 -c "
import json, sys
r = json.loads(sys.stdin.readlines()[-1])
s = r.get('cpu_steal')
print(f\"{r['gbps']:.2f} best {r['best_gbps']:.2f} steal {'-' if s is None else f'{100 * s:.1f}'}% verified {r['verified']} passes {r.get('pass_gbps')}\")"
}
row() { # size depth
  "$GDIO" bench --json --file "$shm" --mode read --iterations 3 --io-size "$1" --queue-depth "$2" 2>>"$out/stderr.txt" | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
w = r.get('workers', {})
s = r.get('cpu_steal')
print(f\"{r['gbps']:.2f} read-ahead {r.get('read_ahead_reads')} split {r.get('split_reads')} helped {r.get('split_pieces_helped')} early {r.get('split_early_copies')} split_wait {100 * w.get('split_wait', 0):.0f}% idle {100 * w.get('idle', 0):.0f}% steal {'-' if s is None else f'{100 * s:.1f}'}% verified {r['verified']}\")"
}
one() { # setting rep
  local v=$1 rep=$2 t shape
  for t in ${ABBA_THREADS:-8 16}; do
    echo "rep $rep t$t KvikIO OFF on gdio $v: $(export ${v//,/ }; LD_PRELOAD="$LIB" kv off "$t")"
  done
  for shape in ${ABBA_SHAPES:-4M:8}; do
    echo "rep $rep ${shape/:/ x } $v: $(export ${v//,/ }; row "${shape%%:*}" "${shape##*:}")"
  done
}
t0=$SECONDS
for rep in $(seq "${ABBA_REPS:-4}"); do
  [ $((SECONDS - t0)) -gt "${ABBA_BUDGET_S:-300}" ] && { echo "rep $rep: no time left"; break; }
  order=("${settings[@]}")
  if [ $((rep % 2)) = 0 ]; then
    order=(); for ((i = ${#settings[@]} - 1; i >= 0; i--)); do order+=("${settings[i]}"); done
  fi
  for v in "${order[@]}"; do one "$v" "$rep"; done
  for t in ${ABBA_THREADS:-8 16}; do echo "rep $rep t$t KvikIO ON: $(kv on "$t")"; done
done | tee "$out/abba.txt"
# Each setting against the first, rep by rep, and issue 9's ratios (bench/abba_verdict.py).
python3 bench/abba_verdict.py "$out/abba.txt" | tee -a "$out/abba.txt"
