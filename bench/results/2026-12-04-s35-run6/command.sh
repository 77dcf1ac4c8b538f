#!/usr/bin/env bash
# Session 35 run 6 (the warm machine of run 5, the last of the session's device time): run 5
# put 2 MiB x 16 from tmpfs 2.5 % lower with 1 MiB split pieces; again, ABBA, beside 4 MiB x 8
# and x 16. Given to the device tool as one command line:
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0; mkdir -p $OUT
OUT=$OUT/a SKIP_FILES=1 ABBA_REPS=6 ABBA_BUDGET_S=100 ABBA_THREADS=" " ABBA_SHAPES="2M:16 4M:8 4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_SPLIT_MIN_BYTES=2097152" timeout 150 bash bench/gpu-session.sh abba > $OUT/abba-session.txt 2>&1
cat $OUT/a/logs/abba/abba.txt | tee $OUT/abba.txt
