#!/usr/bin/env bash
# Session 24 run 3: with small copies on the workers' own streams, do requests up to 256 KiB
# still belong on their callers' lanes (inline_max_bytes 256 KiB) or on the workers (0), or
# up to 64 KiB inline? `gdio bench` rows of many synchronous callers on the tmpfs file (first
# GiB), alternating, two reps.
O=$OUT; mkdir -p $O
OUT=$O/k KNOBAB_PARTS=bench KNOBAB_DEFAULT_BENCH=0 KNOBAB_BENCH_ARGS="--size 1G" \
  KNOBAB_SHAPES="4K:64 4K:8 64K:64 64K:16 256K:32 256K:8" \
  KNOBAB_SETTINGS="GDIO_NONE=1 GDIO_INLINE_MAX_BYTES=0 GDIO_INLINE_MAX_BYTES=65536" KNOBAB_REPS=2 \
  timeout 500 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
cat $O/k/summary.txt
