#!/usr/bin/env bash
# One build under several settings of its knobs, alternating in one run: KNOBAB_SETTINGS is a
# space-separated list of settings, each environment assignments joined by commas
# ("GDIO_NONE=1 GDIO_X=1,GDIO_Y=2"; or KNOBAB_A and KNOBAB_B for two; LIB=path puts another
# build's libcufile.so.0 under KvikIO, as LIB=.dev/before/libcufile.so.0; BEFORE=1 runs every
# row on the build in .dev/before, its gdio and its libcufile.so.0). Rows: KvikIO compat OFF through
# gdio's libcufile.so.0 on the 8 GiB ext4-cached file (4 MiB tasks) at KNOBAB_THREADS threads
# beside KvikIO compat ON (issue 9), the request-shape rows KNOBAB_SHAPES on tmpfs and the
# default `gdio bench` (issue 7), KNOBAB_REPS times. KNOBAB_PARTS picks kvikio and/or bench,
# and `why`: after the timed rows, one untimed KvikIO OFF run per thread count and setting at
# CUFILE_LOGGING_LEVEL=INFO, printing the library's summary at exit (calls in flight, where the
# engine's workers spent the time, the verdict). The shape rows read KNOBAB_BENCH_FILE (default
# the tmpfs file; a path that does not exist is made by `gdio bench`) with KNOBAB_BENCH_ARGS
# added (as "--cold --size 1G --keep"); KNOBAB_DEFAULT_BENCH=0 leaves out the default bench.
# Every rep runs the settings in the order given; bench/gpu-phase-abba.sh balances the order
# (session 32 run 1 found the first place of each pair read up to 12 % lower).
# usage (through bench/gpu-session.sh knobab): bench/gpu-phase-knobab.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/knobab}; mkdir -p "$out"
read -ra settings <<<"${KNOBAB_SETTINGS:-${KNOBAB_A:?KNOBAB_SETTINGS or KNOBAB_A and KNOBAB_B} ${KNOBAB_B:?}}"
parts=${KNOBAB_PARTS:-kvikio,bench}
ext4=/tmp/gdio-bench-8g.bin shm=/dev/shm/gdio-bench-8g.bin
cat "$ext4" "$shm" >/dev/null || { echo "knobab: $ext4 and $shm must exist (bench/gpu-session.sh makes them)"; exit 1; }
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gbps() { python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(r['gbps'], r.get('verified'))"; }
# BEFORE=1 in a setting: the build in .dev/before for every row of that setting.
before() { [[ $1 == *BEFORE=1* ]] && echo "LIB=$PWD/.dev/before/libcufile.so.0 GDIO=$PWD/.dev/before/gdio"; }
row() { "$GDIO" bench --json --file "${KNOBAB_BENCH_FILE:-$shm}" --mode read --iterations 3 --io-size "$1" --queue-depth "$2" ${KNOBAB_BENCH_ARGS:-} \
  | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s ({r.get('ratio_to_limit') or 0:.2f} x limit, verified {r['verified']})\")"; }
for rep in $(seq "${KNOBAB_REPS:-2}"); do
  if [[ $parts == *kvikio* ]]; then
    for t in ${KNOBAB_THREADS:-8 16 32}; do
      for v in "${settings[@]}"; do
        echo "rep $rep t$t KvikIO OFF on gdio $v: $(export ${v//,/ } $(before "$v"); LD_PRELOAD="$LIB" python3 bench/cufile_kvikio_read.py off "$ext4" "$t" 3 2>>"$out/stderr.txt" | gbps)"
      done
      echo "rep $rep t$t KvikIO ON: $(python3 bench/cufile_kvikio_read.py on "$ext4" "$t" 3 2>>"$out/stderr.txt" | gbps)"
    done
  fi
  if [[ $parts == *bench* ]]; then
    for shape in ${KNOBAB_SHAPES:-1M:32 4M:16 16M:8 64M:4}; do
      for v in "${settings[@]}"; do
        echo "rep $rep ${shape/:/ x } $v: $(export ${v//,/ } $(before "$v"); row "${shape%%:*}" "${shape##*:}")"
      done
    done
    [ "${KNOBAB_DEFAULT_BENCH:-1}" = 0 ] || for v in "${settings[@]}"; do
      echo "rep $rep default bench $v: $(export ${v//,/ } $(before "$v"); "$GDIO" bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s (verified {r['verified']})\" for r in json.load(sys.stdin)['results']))")"
    done
  fi
done
if [[ $parts == *why* ]]; then
  for t in ${KNOBAB_THREADS:-8 16 32}; do
    for v in "${settings[@]}"; do
      rm -f "$out/why.log"
      (export ${v//,/ } $(before "$v"); CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH="$out/why.log" \
        LD_PRELOAD="$LIB" python3 bench/cufile_kvikio_read.py off "$ext4" "$t" 1 >/dev/null 2>>"$out/stderr.txt")
      echo "why t$t $v: $(grep -h 'synchronous I/O' "$out/why.log" | sed 's/.*synchronous I\/O: //')"
    done
  done
fi
