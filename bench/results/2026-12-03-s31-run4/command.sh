#!/usr/bin/env bash
# Session 31 run 4: run 3's tmpfs write table read 64 MiB x 4 at 0.89 x the plain `pwrite`
# (session 30, `file_writers` 4: 1.09 x). `file_writers` 2 (default) against 4 and no limit on a
# 2 GiB tmpfs file, 64 MiB x 4 and 16 MiB x 8, alternating, three reps.
O=$OUT; mkdir -p $O
export GDIO=$PWD/.dev/bin/gdio
OUT=$O/wt SKIP_FILES=1 WRITEAB_REPS=3 WRITEAB_TESTS=0 WRITEAB_FILE=/dev/shm/gdio-w2g.bin WRITEAB_SIZE=2G \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_FILE_WRITERS=4 GDIO_FILE_WRITERS=0" WRITEAB_SHAPES="64M:4:seq 16M:8:seq" \
  timeout 200 bash bench/gpu-session.sh writeab > $O/writeab-tmpfs-session.txt 2>&1
grep -E "^rep" $O/wt/logs/writeab.txt | tee $O/writeab-tmpfs.txt
rm -rf $O/wt
