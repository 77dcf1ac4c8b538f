#!/usr/bin/env bash
# Session 37 run 3: run 2's ring rows took the rate with set-up counted in (wrong field); this
# run takes the rate without set-up, and adds the pinning flags: gdio pins its bounce buffers
# with PORTABLE | DEVICEMAP (3), the probe's earlier "host" rows (4-6 % faster than gdio's
# huge pages in sessions 33-35, while the engine gained nothing from cuMemHostAlloc) used 0.
# pinnedq: copies only, no markers; bouncehp: pread + copy, an event per copy. Two passes, the
# second in reverse order.
O=$OUT; mkdir -p $O
T0=$(date +%s)
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
cat $f > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
P="timeout 40 /tmp/pcprobe"
rows=(
 "pinnedq hp 0 4 1 2" "pinnedq hp 3 4 1 2" "pinnedq hp 3 4 1 24" "pinnedq host 0 4 1 24"
 "pinnedq hp 0 4 12 2" "pinnedq hp 3 4 12 2" "pinnedq host 0 4 12 2" "pinnedq host 1 4 12 2" "pinnedq host 3 4 12 2"
 "pinnedq arena 3 4 12 2" "pinnedq arenahost 0 4 12 2" "pinnedq hp 3 16 12 2" "pinnedq host 0 16 12 2"
 "bouncehp hp 3 4 12 2" "bouncehp hp 0 4 12 2" "bouncehp host 0 4 12 2" "bouncehp host 3 4 12 2" "bouncehp arena 3 4 12 2"
 "bouncehp hp 3 4 16 2" "bouncehp host 0 4 16 2" "bouncehp host 3 4 16 2"
)
echo "pinned 1 GiB copies, 1 stream (link): $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
for pass in 1 2; do
  order=("${rows[@]// /_}"); [ $pass = 2 ] && order=($(printf '%s\n' "${order[@]}" | tac))
  for r in "${order[@]}"; do
    set -- ${r//_/ }
    m=none; [ $1 = bouncehp ] && m=event
    echo "pass $pass $1 alloc $2 flags $3 $4 MiB x $5 threads x $6 buffers: $(PINALLOC=$2 PINFLAGS=$3 MARKER=$m NBUF=$6 NSTREAMS=1 $P $f $4 $5 $1 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  done
done | tee $O/probe.txt
echo "== total after $(( $(date +%s) - T0 )) s"
