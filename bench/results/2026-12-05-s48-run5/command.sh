#!/usr/bin/env bash
# Session 48 run 5 (`OUT=$OUT timeout 560 bash bench/results/2026-12-05-s48-run5/command.sh`),
# the build of runs 1-3 (session 47's final code; the engine unchanged since): an A/A test,
# the `abba` phase with two identical settings (GDIO_NONE=1 and GDIO_NONE=2, a variable gdio
# does not read) at 4, 8, 16 threads and `gdio bench` 4 MiB x 4/8/16 on the ext4 file, three
# reps: how far apart two identical settings land, rep by rep, which is the floor under every
# ABBA verdict of these sessions; and the first run of bench/abba_verdict.py on the machine.
# Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
echo "== file ready ($((SECONDS - t0)) s)"
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4 8 16" ABBA_SHAPES="4M:4 4M:8 4M:16" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_NONE=2" ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$(( 330 - (SECONDS - t0) )) \
  timeout $(( 500 - (SECONDS - t0) )) bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO OFF t|gdio bench|issue 9|[0-9]+ samples)" $O/a/logs/abba.txt | cut -c1-260
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
