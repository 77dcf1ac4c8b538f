#!/usr/bin/env bash
# Session 47 run 1 (H200; the build of session 46's final commit 391f669, carried in .dev/):
# (1) phase `spread`: eight processes in turn, each KvikIO compat OFF through gdio's libcufile at
#     four threads, with the library's summary and where its workers ran (why one process at
#     four in flight reads 26 GB/s and the next 30);
# (2) ABBA of split_early_copy_max_others 0 (the default) vs 3 at 2, 4, 8 threads and
#     `gdio bench` 4 MiB x 2/4/8 on the same ext4 file, four reps;
# (3) the default `gdio bench` (the honest host-read limit, the workers' file-I/O rate line).
#   OUT=$OUT bash bench/results/2026-12-05-s47-run1/command.sh
O=$OUT; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
$GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
echo "file made in $((SECONDS - t0)) s"
OUT=$O/s SKIP_FILES=1 SPREAD_PROCS=8 SPREAD_THREADS=4 SPREAD_PASSES=3 \
  timeout 150 bash bench/gpu-session.sh spread > $O/spread-session.txt 2>&1
echo "== spread ($((SECONDS - t0)) s)"; cat $O/s/logs/spread/spread.txt 2>/dev/null || tail -20 $O/s/logs/spread.txt
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="2 4 8" ABBA_SHAPES="4M:2 4M:4 4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_EARLY_COPY_MAX_OTHERS=0 GDIO_SPLIT_EARLY_COPY_MAX_OTHERS=3" ABBA_REPS=4 ABBA_PASSES=3 \
  ABBA_BUDGET_S=230 timeout 320 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cat $O/a/logs/abba/abba.txt 2>/dev/null || tail -20 $O/a/logs/abba.txt
echo "== default gdio bench ($((SECONDS - t0)) s)"
timeout 90 $GDIO bench 2>&1 | tail -25
echo "== done in $((SECONDS - t0)) s"
for d in s a; do tar czf $O/$d-logs.tgz -C $O/$d logs 2>/dev/null && rm -rf $O/$d/logs; done
