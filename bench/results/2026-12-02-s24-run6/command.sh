#!/usr/bin/env bash
# Session 24 run 6: inline_max_callers with hysteresis (small requests go to the workers once
# more than 12 callers have them in flight, and come back once at most 6 do): the default
# against 0 (no limit: the build before this session) and inline_max_bytes 0 (every request to
# the workers); `gdio bench` rows of synchronous callers (tmpfs file, first GiB), then the
# default bench, alternating, two reps.
O=$OUT; mkdir -p $O
OUT=$O/k KNOBAB_PARTS=bench KNOBAB_DEFAULT_BENCH=0 KNOBAB_BENCH_ARGS="--size 1G" \
  KNOBAB_SHAPES="4K:64 4K:8 64K:64 64K:16 256K:32 256K:16 256K:8" \
  KNOBAB_SETTINGS="GDIO_NONE=1 GDIO_INLINE_MAX_CALLERS=0 GDIO_INLINE_MAX_BYTES=0" KNOBAB_REPS=2 \
  timeout 300 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
head -1 $O/k/summary.txt; cat $O/k/logs/knobab.txt
for rep in 1 2; do echo "rep $rep default bench: $(timeout 60 .dev/bin/gdio bench 2>&1 | grep -E 'GB/s' | head -3 | tr '\n' ' ')"; done
