#!/usr/bin/env bash
# Session 33 run 3: (1) how far larger copies would lift the ring's link, the only lever left
# for issue 9's row at 16 threads (runs 1-2: gdio 49.99-50.75 = 0.98-1.00 x the 4 MiB ring,
# KvikIO ON 45.89-47.17): bench/pagecache-dma-probe.c `pinnedq` (no file) and `bouncehp` (pread
# + copy, gdio's way) at 4, 8 and 16 MiB per copy, 12 and 16 threads, registered huge pages
# and cuMemHostAlloc, two reps in alternating order; (2) is the weak `gdio bench` 4 MiB x 8 row
# of the one-buffer split (run 2: 39.2-41.8 against 37.5-43.9 off) a tmpfs trait? The same row
# from ext4's page cache and tmpfs, defaults against split_into_one_buffer false, ABBA, 3 reps.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
F=/tmp/gdio-bench-8g.bin; cat $F >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
el files
P="timeout 30 /tmp/pcprobe"
for rep in 1 2; do
  allocs="hp host"; [ $rep = 2 ] && allocs="host hp"
  for a in $allocs; do
    for mib in 4 8 16; do
      for t in 12 16; do
        q=$(PINALLOC=$a MARKER=none NBUF=2 NSTREAMS=1 $P $F $mib $t pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s \( *[0-9.]+ without' | head -1)
        b=$(PINALLOC=$a NBUF=2 NSTREAMS=1 $P $F $mib $t bouncehp 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s \( *[0-9.]+ without' | head -1)
        echo "rep $rep $a ${mib} MiB t$t: pinnedq $q | bouncehp $b"
      done
    done
  done
  echo "rep $rep pinned 1 GiB: $(NSTREAMS=1 $P $F 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
done | tee $O/probe.txt
el probe
row() { env $3 timeout 60 $GDIO bench --json --file $1 --mode read --iterations 3 --io-size 4M --queue-depth $2 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]
print(f\"{r['gbps']:.2f} split {r.get('split_reads')} helped {r.get('split_pieces_helped')} verified {r['verified']}\")"; }
for rep in 1 2 3; do
  S="GDIO_NONE=1 GDIO_SPLIT_INTO_ONE_BUFFER=false"; [ $((rep % 2)) = 0 ] && S="GDIO_SPLIT_INTO_ONE_BUFFER=false GDIO_NONE=1"
  for s in $S; do
    for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do
      echo "rep $rep 4M x 8 $f $s: $(row $f 8 $s)"
    done
  done
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "no time for more reps"; break; }
done | tee $O/rows.txt
el total
