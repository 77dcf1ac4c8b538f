#!/usr/bin/env bash
# Session 28 run 5: on ext4, gathering lost 4 KiB and 16 KiB random writes (runs 3-4, six reps)
# and won 64 KiB sequential ones. Size or pattern? 64 KiB random, 16 KiB sequential, 32 KiB
# random into the ext4 file, gathered and not, alternating, two reps.
O=$OUT; mkdir -p $O
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITES=false" WRITEAB_SHAPES="64K:64:random 16K:32:seq 32K:32:random" \
  timeout 150 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep" $O/w/logs/writeab.txt | tee $O/writeab.txt
