#!/usr/bin/env bash
# Session 49 run 8 (`OUT=$OUT timeout 280 bash bench/results/2026-12-05-s49-run8/command.sh`), the
# build of commit "gdio bench: a GPU read row says when its workers copied ... slower than the
# plain read's threads" (carried in .dev/): the default `gdio bench` once, then 4 MiB x 4 and
# x 16 reads of the 8 GiB ext4 file, each row's text as a user sees it.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
nvidia-smi --query-gpu=name --format=csv,noheader
(cd /tmp && timeout 90 $GDIO bench 2>&1 | tail -32) > $O/default-bench.txt
grep -E "^(read|write) |host side|hypervisor|limit" $O/default-bench.txt | cut -c1-400
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
for d in 4 16; do
  timeout 80 $GDIO bench --file $f --mode read --io-size 4M --queue-depth $d --iterations 3 > $O/bench-4m-x$d.txt 2>&1
  grep -E "^read |host side|a worker's file I/O" $O/bench-4m-x$d.txt | cut -c1-420
done
