#!/usr/bin/env bash
# Session 47 run 4 (the build of runs 1-3, an H100 asked for): on the H100 host type where
# KvikIO's compat mode (eight readers of whole 4 MiB calls) kept up with gdio at four to sixteen
# threads, do split reads (pieces of 1 MiB over the free workers, `split_min_bytes`) cost more
# than they gain? ABBA, two reps: split_min_bytes 1 MiB (the default) against 0 (never split),
# KvikIO compat OFF at 4 and 8 threads, `gdio bench` 4 MiB x 8, KvikIO compat ON.
#   OUT=$OUT bash bench/results/2026-12-05-s47-run4/command.sh
O=$OUT; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4 8" ABBA_SHAPES="4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_MIN_BYTES=1048576 GDIO_SPLIT_MIN_BYTES=0" ABBA_REPS=2 ABBA_PASSES=3 \
  ABBA_BUDGET_S=100 timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cat $O/a/logs/abba/abba.txt 2>/dev/null || tail -20 $O/a/logs/abba.txt
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
