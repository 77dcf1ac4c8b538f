#!/usr/bin/env bash
# Session 51 run 2 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s51-run2/command.sh`),
# the build of run 1. Run 1 (another H100 host than session 50's) read with 256 MiB of
# read-ahead 1.69 x off at one KvikIO thread, 1.96 x at two, 1.24 x at four, but 0.931 x at
# eight and 0.986 x at sixteen; the workers sat 1-5 % idle, reading ahead at ~40 GB/s where
# without read-ahead sixteen threads read 50. So: read-ahead only while few reads are in flight.
# GPU tests of read-ahead, the pins and random ranges; then ABBA two reps: off against 256 MiB
# with `read_ahead_max_callers` 8 (now) and 4, KvikIO compat OFF at 4, 8, 16 threads (device time was short after refused starts) and
# `gdio bench` 4 MiB x 4 (tmpfs); the default `gdio bench` off and with 4 callers;
# then the cold ext4 file at one and eight threads (one rep), off against 256 MiB with 4 callers.
O=${OUT:?}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 gpu_read_ahead gpu_page_cache_pins \
  gpu_reads_random > "$O/gpu-tests.txt" 2>&1
echo "== gpu tests rc=$? ($((SECONDS - t0)) s): $(grep -E '^test |test result' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
on8=GDIO_READ_AHEAD_BYTES=268435456 on4=GDIO_READ_AHEAD_BYTES=268435456,GDIO_READ_AHEAD_MAX_CALLERS=4
OUT=$O/a ABBA_THREADS="4 8 16" ABBA_SHAPES="4M:4" \
  ABBA_SETTINGS="GDIO_NONE=1 $on8 $on4" ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=110 \
  timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
i=0; for v in GDIO_NONE=1 $on4; do
  [ $((SECONDS - t0)) -gt 215 ] && break
  i=$((i + 1)); (export ${v//,/ }; timeout 60 $GDIO bench > $O/bench-default-$i.txt 2>&1)
  echo "default bench $v: $(grep -E '^read|^write|ahead' $O/bench-default-$i.txt | head -6 | tr '\n' '|' | cut -c1-400)"
done | tee $O/default-bench.txt
f=/tmp/gdio-bench-8g.bin
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for rep in 1; do
  for t in 1 8; do
    for v in GDIO_NONE=1 $on4; do
      [ $((SECONDS - t0)) -gt 225 ] && break 3
      sync; echo 3 > /proc/sys/vm/drop_caches
      r=$(export ${v//,/ }; LD_PRELOAD=$LIB timeout 30 python3 bench/cufile_kvikio_read.py off $f $t 0 2>>$O/cold-stderr.txt | tail -1)
      echo "cold rep $rep t$t $v: $(echo "$r" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(round(r["gbps"], 2), "verified", r["verified"])' 2>&1)"
    done
  done
done | tee $O/cold.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
