#!/usr/bin/env bash
# Session 47 run 7, typed as one line into the call on run 6's warm H200 (the build of runs
# 1-6): run 6's lead again, split_min_bytes 1 MiB (the default) against 2 MiB at four reads in
# flight, ABBA, two reps: KvikIO compat OFF at 4 threads, `gdio bench` 4 MiB x 4, KvikIO ON.
#   OUT=$OUT bash bench/results/2026-12-05-s47-run7/command.sh
O=$OUT; f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4" ABBA_SHAPES="4M:4" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_MIN_BYTES=1048576 GDIO_SPLIT_MIN_BYTES=2097152" ABBA_REPS=2 ABBA_PASSES=3 \
  ABBA_BUDGET_S=50 timeout 95 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
