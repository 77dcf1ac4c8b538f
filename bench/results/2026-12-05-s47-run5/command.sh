#!/usr/bin/env bash
# Session 47 run 5, typed as one line into the call on run 4's warm H100 (the build of runs
# 1-4): the bounce buffers as huge-page memory registered with cuMemHostRegister (the default,
# pinned_huge_pages=true) against cuMemHostAlloc (false, as KvikIO's compat mode pins its
# buffers), ABBA, two reps: KvikIO compat OFF at 4 and 8 threads, `gdio bench` 4 MiB x 8, KvikIO ON.
#   OUT=$OUT bash bench/results/2026-12-05-s47-run5/command.sh
O=$OUT; f=/tmp/gdio-bench-8g.bin; nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4 8" ABBA_SHAPES="4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_PINNED_HUGE_PAGES=true GDIO_PINNED_HUGE_PAGES=false" ABBA_REPS=2 ABBA_PASSES=3 \
  ABBA_BUDGET_S=100 timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt; tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
