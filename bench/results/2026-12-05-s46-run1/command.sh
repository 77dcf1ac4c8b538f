#!/usr/bin/env bash
# Session 46 run 1 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s46-run1/command.sh`),
# session 45's build with the honest host-read limit (per-thread scratch faulted in before the
# timed passes) and the bench's host-side line, never on a GPU before:
# 1. the default `gdio bench`, twice; 2. issue 9's row, `kvrow` at 1, 2, 4, 8, 16, 32 threads,
# three reps, each OFF row paired with `gdio bench` of the same shape, then the library's
# summary (CUFILE_LOGGING_LEVEL=INFO) for one more OFF pass per thread count (KVROW_WHY=1).
# Logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
R=$(pwd)
export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
lscpu | grep -iE 'model name|^cpu\(s\)|numa node\(s\)'
el setup
for i in 1 2; do
  (cd /tmp && timeout 40 $GDIO bench 2>&1 | tail -32) > $O/default-bench-$i.txt
  grep -E "^(read|write) |host side|host_read_gbps" $O/default-bench-$i.txt
done
el bench
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=1 KVROW_BUDGET_S=230 \
  timeout 470 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt | cut -c1-900
el total
for d in k; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
