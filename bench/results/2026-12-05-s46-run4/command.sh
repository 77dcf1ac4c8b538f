#!/usr/bin/env bash
# Session 46 run 4 (`OUT=$OUT timeout 280 bash bench/results/2026-12-05-s46-run4/command.sh`),
# the build of runs 1-3: where the spread between processes at four reads in flight comes from
# (bench/gpu-phase-spread.sh: eight KvikIO compat OFF processes at four threads, each with the
# library's summary and where its gdio workers ran). Logs tarred under $OUT.
O=$OUT; mkdir -p $O
R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$O/s SKIP_FILES=1 SPREAD_PROCS=8 timeout 200 bash bench/gpu-session.sh spread > $O/spread-session.txt 2>&1
cat $O/s/logs/spread.txt | cut -c1-400
[ -d $O/s/logs ] && tar czf $O/s-logs.tgz -C $O/s logs && rm -rf $O/s/logs
