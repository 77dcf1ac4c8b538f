#!/usr/bin/env bash
# Session 23 run 1: the small rows that run on the calling threads (inline_max_bytes), and the
# completion knobs that govern their waits, ext4-cached 8 GiB file.
set -uo pipefail
O=$OUT
OUT=$O/w WHY_FILE=/tmp/gdio-bench-8g.bin WHY_SHAPES="64K:64 64K:16 128K:32 256K:16 256K:32 1M:32" \
  WHY_SETTINGS="GDIO_NONE=1 GDIO_INLINE_MAX_BYTES=65536 GDIO_INLINE_MAX_BYTES=0 GDIO_COMPLETION_POLL_US=32 GDIO_COMPLETION_SPIN_US=0" \
  WHY_REPS=2 WHY_DEFAULT_BENCH=0 bash bench/gpu-session.sh why
grep -h "^rep" $O/w/logs/why.txt
cp $O/w/logs/why.txt $O/why.txt; rm -rf $O/w/logs
