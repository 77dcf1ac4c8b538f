#!/usr/bin/env bash
# Session 49 run 4 (`OUT=$OUT timeout 300 bash bench/results/2026-12-05-s49-run4/command.sh`), no
# GPU work: run 3 had twelve threads sharing 4 MiB windows in four groups copy 5-6 GB/s each out
# of the page cache (bench/split-pread.c), while gdio's workers at four KvikIO threads copied 3.5
# (run 2's library summary). What the engine adds around the copies: threads spinning while
# they wait (idle workers poll for work up to 1 ms, callers poll, split partners spin), and
# workers idle between requests (30 % at four threads). SPINNERS=N threads spinning beside the
# readers; NAP_US=N a sleep after each window.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
lscpu | grep -iE 'model name|^cpu\(s\)'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
cc -O2 -pthread bench/split-pread.c -o /tmp/split-pread || exit 1
echo "== file ready ($((SECONDS - t0)) s)"
sp() { /tmp/split-pread $f "$@" | tail -2 | tr '\n' ' ' | sed 's/threads [0-9]* groups [0-9]* piece [0-9]* KiB [a-z]* pass 1: //; s/threads [0-9]* groups [0-9]* piece [0-9]* KiB [a-z]* pass 2:/|/'; }
for rep in 1 2 3; do
  for env in "SPINNERS=0 NAP_US=0" "SPINNERS=4 NAP_US=0" "SPINNERS=0 NAP_US=50" "SPINNERS=0 NAP_US=200" "SPINNERS=3 NAP_US=100"; do
    for args in "12 4 256 interleaved" "12 12 4096 whole"; do
      echo "rep $rep | $env | $args | $(env $env bash -c "$(declare -f sp); f=$f; sp $args")"
    done
  done
done 2>&1 | tee $O/split-pread.txt
echo "== done in $((SECONDS - t0)) s"
