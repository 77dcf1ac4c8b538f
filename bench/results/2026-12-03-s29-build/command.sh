#!/usr/bin/env bash
# Session 29, the build machine (2 cores, no GPU): what one pread/pwrite call's size costs one
# thread through the page cache (bench/call-size-probe.c), and `gdio bench --sim-gpu` 64 KiB x 64
# with `gather_adjacent_runs` off and on, alternating (the simulated GPU's copies run on one
# thread, so its GB/s say little; the calls saved are the point).
G=./target/release/gdio
$G make-file /dev/shm/adj.bin --size 512M >/dev/null; $G make-file /tmp/adj.bin --size 512M >/dev/null
cc -O2 bench/call-size-probe.c -o /tmp/csp
for rep in 1 2; do for f in /dev/shm/adj.bin /tmp/adj.bin; do for c in 4096 65536 262144 1048576; do
  echo "rep $rep $f $(/tmp/csp $f $c) | $(/tmp/csp $f $c w)"; done; done; done | tee call-size-probe.txt
for rep in 1 2 3; do for fs in /dev/shm /tmp; do for mode in read write; do for v in false true; do
  r=$(GDIO_GATHER_ADJACENT_RUNS=$v $G bench --sim-gpu --json --file $fs/adj.bin --mode $mode --io-size 64K \
    --queue-depth 64 --iterations 2 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s gathered {r['gathered_reads']+r['gathered_writes']} adjacent {r['adjacent_pieces']} cpu {r['cpu_seconds']:.2f}\")")
  echo "rep $rep $fs $mode runs=$v: $r"; done; done; done; done | tee sim-gpu-adjacent-runs.txt
