#!/usr/bin/env bash
# Session 24 run 4: inline_max_callers (at most N callers run small GPU requests on their own
# lanes at once; the rest go to the workers): the default (the number of cores, 16 here), 0 (no
# limit: the build before), 8, 4, and inline_max_bytes 0 (every request to the workers), on
# `gdio bench` rows of many synchronous callers (tmpfs file, first GiB), alternating, two reps.
O=$OUT; mkdir -p $O
OUT=$O/k KNOBAB_PARTS=bench KNOBAB_DEFAULT_BENCH=0 KNOBAB_BENCH_ARGS="--size 1G" \
  KNOBAB_SHAPES="4K:64 4K:8 64K:64 64K:32 64K:16 256K:32 256K:16 256K:8" \
  KNOBAB_SETTINGS="GDIO_NONE=1 GDIO_INLINE_MAX_CALLERS=0 GDIO_INLINE_MAX_CALLERS=8 GDIO_INLINE_MAX_CALLERS=4 GDIO_INLINE_MAX_BYTES=0" KNOBAB_REPS=2 \
  timeout 540 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
cat $O/k/summary.txt | head -3; cat $O/k/logs/knobab.txt
