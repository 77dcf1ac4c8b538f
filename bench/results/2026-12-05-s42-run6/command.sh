#!/usr/bin/env bash
# Session 42 run 6 (the command as run, one line there): does `polling_callers_max` 3 touch
# eight or sixteen reads in flight? ABBA, two reps, 1 against 3: KvikIO compat OFF through
# gdio at 8 and 16 threads, `gdio bench` 4 MiB x 8 and x 16 from the ext4 page cache.
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
mkdir -p $OUT/a
OUT=$OUT/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=50 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:8 4M:16" \
  ABBA_BENCH_FILE=$f ABBA_SETTINGS="GDIO_POLLING_CALLERS_MAX=1 GDIO_POLLING_CALLERS_MAX=3" \
  timeout 95 bash bench/gpu-session.sh abba > $OUT/abba-session.txt 2>&1
cat $OUT/a/logs/abba.txt
