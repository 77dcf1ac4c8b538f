#!/usr/bin/env bash
# Session 49 run 2 (`OUT=$OUT timeout 560 bash bench/results/2026-12-05-s49-run2/command.sh`),
# the build of run 1 (its `split_caller_reads_max` at 0, the shipped behaviour) on the same
# warm H100: issue 9's row, `kvrow` at 1, 2, 4, 8, 16, 32 threads, three reps, each
# OFF row paired with `gdio bench` of the same shape (each bench row with its steal), then the
# library's summary (CUFILE_LOGGING_LEVEL=INFO, now with the steal since the first call) for one
# more OFF pass per thread count (KVROW_WHY=1). Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=1 KVROW_BUDGET_S=230 \
  timeout $(( 540 - (SECONDS - t0) )) bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cut -c1-400 $O/k/logs/kvrow.txt
for w in $O/k/logs/kvrow/why-t*.log; do echo "$(basename $w .log): $(grep -h "at exit" $w | grep -oE "a call [0-9.]+ ms|callers woke [0-9.]+ ms|CPUs [0-9.]+ % of their time" | tr '\n' ' ')"; done
echo "== done in $((SECONDS - t0)) s"
[ -d $O/k/logs ] && tar czf $O/k-logs.tgz -C $O/k logs && rm -rf $O/k
