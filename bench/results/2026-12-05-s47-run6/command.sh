#!/usr/bin/env bash
# Session 47 run 6 (the build of runs 1-5; the session's last device seconds): at four reads in
# flight, do fewer pieces per 4 MiB read help? split_min_bytes 1 MiB (the default: up to four
# pieces, twelve workers shared by four reads) against 1398102 (at most three: a fair share of
# twelve) and 2 MiB (at most two). ABBA, two reps: KvikIO compat OFF at 4 threads, `gdio bench`
# 4 MiB x 4, KvikIO ON.
#   OUT=$OUT bash bench/results/2026-12-05-s47-run6/command.sh
O=$OUT; f=/tmp/gdio-bench-8g.bin; nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4" ABBA_SHAPES="4M:4" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_MIN_BYTES=1048576 GDIO_SPLIT_MIN_BYTES=1398102 GDIO_SPLIT_MIN_BYTES=2097152" \
  ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=60 timeout 120 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt; tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
