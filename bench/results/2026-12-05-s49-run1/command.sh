#!/usr/bin/env bash
# Session 49 run 1 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s49-run1/command.sh`),
# session 48's final commit f521a20 plus split_caller_reads.patch (beside this script, not in the
# code; built with bench/build-dev.sh, carried in .dev/):
# ABBA, three reps, of a synchronous caller reading pieces of its own split read
# (GDIO_SPLIT_CALLER_READS_MAX=4: while at most four reads into GPU memory are open, on 16 cores
# with 12 workers) against the shipped behaviour (0) at 1, 2, 4 and 8 threads of KvikIO compat
# OFF through gdio's libcufile and `gdio bench` 4 MiB x 1/2/4/8 on the same ext4 file. Issue 9's
# weakest row is four threads (OFF / ON 0.982, OFF / bench 0.877 in session 48), where the four
# callers sleep while twelve workers read their pieces and four cores idle. Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
lscpu | grep -iE 'model name|^cpu\(s\)'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
echo "== file ready ($((SECONDS - t0)) s)"
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="1 2 4 8" ABBA_SHAPES="4M:1 4M:2 4M:4 4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_CALLER_READS_MAX=0 GDIO_SPLIT_CALLER_READS_MAX=4" \
  ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$(( 420 - (SECONDS - t0) )) \
  timeout $(( 575 - (SECONDS - t0) )) bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-190 $O/a/logs/abba.txt 2>/dev/null || tail -20 $O/abba-session.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
