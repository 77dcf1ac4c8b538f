#!/usr/bin/env bash
# Session 24 run 5: inline_max_callers counted over every caller with a small request in flight
# (inline or not), so that many callers all go to the workers instead of a mix: the default
# (the worker count, 12 here), 0 (no limit: the build before this session), 16, and
# inline_max_bytes 0 (every request to the workers); `gdio bench` rows of synchronous callers
# (tmpfs file, first GiB), alternating, two reps.
O=$OUT; mkdir -p $O
OUT=$O/k KNOBAB_PARTS=bench KNOBAB_DEFAULT_BENCH=0 KNOBAB_BENCH_ARGS="--size 1G" \
  KNOBAB_SHAPES="4K:64 4K:8 64K:64 64K:16 256K:32 256K:16 256K:8" \
  KNOBAB_SETTINGS="GDIO_NONE=1 GDIO_INLINE_MAX_CALLERS=0 GDIO_INLINE_MAX_CALLERS=16 GDIO_INLINE_MAX_BYTES=0" KNOBAB_REPS=2 \
  timeout 400 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
head -1 $O/k/summary.txt; cat $O/k/logs/knobab.txt
