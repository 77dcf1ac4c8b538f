#!/usr/bin/env bash
# Session 31 run 1: session 30's final build (d60f662 + the writeab script's writer column) on
# the GPU: the GPU test binaries and the C program, then `file_writers` (new in session 30, default
# 4, never measured on the GPU) against no limit (0), 2 and 1, alternating, `gdio bench --mode
# write` out of GPU memory into a 4 GiB ext4 file (large sequential shapes, where session 30's
# write table read 0.87-0.88 x the plain `pwrite`), and into a 2 GiB tmpfs file.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 180 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; grep -c ": ok" $O/t/logs/tests.txt; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio
OUT=$O/we SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_TESTS=0 WRITEAB_FILE=/tmp/gdio-w4g.bin WRITEAB_SIZE=4G \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_FILE_WRITERS=0 GDIO_FILE_WRITERS=2" \
  WRITEAB_SHAPES="4M:16:seq 1G:2:seq 1M:32:seq" \
  timeout 250 bash bench/gpu-session.sh writeab > $O/writeab-ext4-session.txt 2>&1
grep -E "^rep" $O/we/logs/writeab.txt | tee $O/writeab-ext4.txt
el writeab-ext4
rm -f /tmp/gdio-w4g.bin
left=$(( 545 - ($(date +%s) - T0) ))
OUT=$O/wt SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_TESTS=1 WRITEAB_FILE=/dev/shm/gdio-w2g.bin WRITEAB_SIZE=2G \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_FILE_WRITERS=0 GDIO_FILE_WRITERS=1" \
  WRITEAB_SHAPES="4M:16:seq 1G:2:seq" \
  timeout $left bash bench/gpu-session.sh writeab > $O/writeab-tmpfs-session.txt 2>&1
grep -E "^rep|^test" $O/wt/logs/writeab.txt | tee $O/writeab-tmpfs.txt
el total
tar czf $O/logs.tgz -C $O t/logs we/logs wt/logs 2>/dev/null
