#!/usr/bin/env bash
# Session 49 run 6 (`OUT=$OUT timeout 300 bash bench/results/2026-12-05-s49-run6/command.sh`): run 5
# had gdio's workers copy 3.2-3.9 GB/s each out of the page cache at 1-8 reads in flight (4.5 at
# sixteen) on the machine where bench/split-pread.c's twelve threads copied 5.4-6.2, spinning
# threads and naps beside them or not (runs 4-5). What split-pread lacks of the engine: its
# destinations registered with the GPU (PIN=1) and the GPU's DMA reading host memory beside the
# copies (DMA=other: a buffer of its own; DMA=same: the readers' destinations). Two reps, then
# `gdio bench` 4 MiB x 4 and x 16 for this machine's engine rate (session 48's build, .dev/).
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
lscpu | grep -iE 'model name'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
cc -O2 -pthread bench/split-pread.c -o /tmp/split-pread -ldl || exit 1
for rep in 1 2; do
  for env in "PIN=0" "PIN=1" "DMA=other" "PIN=1 DMA=same"; do
    for args in "12 4 256 interleaved" "12 12 4096 whole"; do
      echo "rep $rep | $env | $args | $(env $env /tmp/split-pread $f $args 2>&1 | tail -2 | sed 's/threads [0-9]* groups [0-9]* piece [0-9]* KiB [a-z]* //' | tr '\n' ' ')"
    done
  done
done 2>&1 | tee $O/split-pread.txt
row() {
  "$GDIO" bench --json --file $f --mode read --iterations 3 --io-size "$1" --queue-depth "$2" 2>>$O/stderr.txt | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
w = r.get('workers', {})
s = r.get('cpu_steal')
rate = w.get('file_io_gbps')
print(f\"{r['gbps']:.2f} GB/s; workers: file I/O {100 * w.get('file_io', 0):.0f}% at {'-' if rate is None else f'{rate:.2f}'} GB/s a worker, idle {100 * w.get('idle', 0):.0f}%; steal {'-' if s is None else f'{100 * s:.1f}'}%; verified {r['verified']}\")"
}
for d in 4 16; do echo "4M x $d | $(row 4M $d)"; done 2>&1 | tee $O/bench-rows.txt
