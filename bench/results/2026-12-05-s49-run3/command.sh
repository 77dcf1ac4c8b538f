#!/usr/bin/env bash
# Session 49 run 3 (`OUT=$OUT timeout 300 bash bench/results/2026-12-05-s49-run3/command.sh`), no
# GPU work: run 2's library summary had a worker's pread at 3.5-4.7 GB/s where reads are split
# into pieces (1-8 KvikIO threads) and 6.3 reading whole 4 MiB tasks (16). Is it the kernel's
# copy when several CPUs share each 4 MiB window (bench/split-pread.c), or the engine around it?
# The 8 GiB ext4 file, page-cached; twelve threads (gdio's workers) in 1, 4 or 12 groups (reads
# in flight), whole windows against pieces taken one at a time (interleaved) or contiguous shares.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
lscpu | grep -iE 'model name|^cpu\(s\)|numa node\(s\)|thread\(s\) per core'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
cc -O2 -pthread bench/split-pread.c -o /tmp/split-pread || exit 1
echo "== file ready ($((SECONDS - t0)) s)"
sp() { /tmp/split-pread $f "$@" | tail -2 | tr '\n' ' ' | sed 's/threads [0-9]* groups [0-9]* piece [0-9]* KiB [a-z]* pass 1: //; s/threads [0-9]* groups [0-9]* piece [0-9]* KiB [a-z]* pass 2:/|/'; }
for rep in 1 2; do
  for args in "1 1 4096 whole" "1 1 256 whole" "4 4 4096 whole" "12 12 4096 whole" "12 12 256 whole" \
              "12 4 4096 whole" "12 4 256 interleaved" "12 4 128 interleaved" "12 4 256 shares" "12 4 1024 shares" \
              "12 1 256 interleaved" "12 1 256 shares" "12 2 256 interleaved" "8 8 4096 whole" "16 8 256 interleaved"; do
    echo "rep $rep | $args | $(sp $args)"
  done
done 2>&1 | tee $O/split-pread.txt
echo "== done in $((SECONDS - t0)) s"
