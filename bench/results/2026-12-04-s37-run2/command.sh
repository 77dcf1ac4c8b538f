#!/usr/bin/env bash
# Session 37 run 2: why does the DMA of gdio's bounce ring stop at 50.5-51.3 GB/s (12 threads,
# 2 x 4 MiB buffers each, no file read: run 1) when one thread reaches 52.9 with 4 MiB copies
# and 54.1 with 16 MiB, and one 1 GiB buffer 55.1? Run 1's workers at 16 threads waited 0.6 ms
# for copies to land (the link's queue is the bottleneck, the CPU side has 16 % idle). Probe
# (bench/pagecache-dma-probe.c pinnedq, no file read, no markers) over: threads x buffers per
# thread, buffers made per thread (huge pages registered one by one, gdio's way), from
# cuMemHostAlloc, or as slices of one arena pinned once; then the same with pread (bouncehp).
# Each row twice, the second pass in reverse order. Plus what the VM says of its IOMMU.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
cat $f > /dev/null
{ uname -r; cat /proc/cmdline; ls /sys/class/iommu/ 2>&1; ls /sys/kernel/iommu_groups 2>&1 | wc -l;
  dmesg 2>/dev/null | grep -i -E "iommu|dmar|amd-vi" | head -8; lscpu | grep -E "Model name|Thread|Core|Socket|L3|NUMA node";
  nvidia-smi -q | grep -i -E -A2 "bar1 memory|addressing mode" | head -12; cat /sys/kernel/mm/transparent_hugepage/enabled; } 2>&1 | tee $O/host.txt
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
P="timeout 40 /tmp/pcprobe"
rows=(
 "hp 4 1 2" "hp 4 1 24" "hp 4 6 2" "hp 4 12 2" "hp 4 12 1" "host 4 1 24" "host 4 12 2"
 "arena 4 1 24" "arena 4 12 2" "arenahost 4 12 2"
 "hp 16 12 2" "host 16 12 2" "arena 16 12 2" "hp 64 12 2" "host 64 12 2" "arena 64 12 2" "arenahost 64 12 2"
)
probe() { # alloc chunk threads nbuf mode
  PINALLOC=$1 MARKER=none NBUF=$4 NSTREAMS=1 $P $f $2 $3 $5 2>&1 | tail -1 | grep -oE '[0-9.]+ (without|GB/s)' | head -1
}
echo "pinned 1 GiB copies, 1 stream (link): $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
echo "pinned 4 MiB copies of one buffer, 1 stream: $(NSTREAMS=1 $P $f 4 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
for pass in 1 2; do
  order=("${rows[@]}"); [ $pass = 2 ] && order=($(printf '%s\n' "${rows[@]}" | tac | tr ' ' '_'))
  for r in "${order[@]}"; do
    set -- ${r//_/ }
    echo "pass $pass ring $1 ${2} MiB x $3 threads x $4 buffers: $(probe $1 $2 $3 $4 pinnedq)"
  done
done | tee $O/ring.txt
el ring
for pass in 1 2; do
  for r in "hp 4 12 2" "arena 4 12 2" "host 4 12 2" "hp 4 16 2" "arena 4 16 2"; do
    set -- $r
    echo "pass $pass bounce (pread + copy, event markers) $1 $2 MiB x $3 threads x $4: $(PINALLOC=$1 NBUF=$4 NSTREAMS=1 $P $f $2 $3 bouncehp 2>&1 | tail -1 | grep -oE "[0-9.]+ without" | head -1)"
  done
done | tee $O/bounce.txt
el total
