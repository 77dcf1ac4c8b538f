#!/usr/bin/env bash
# Session 34 run 3: run 2's probe found gdio's marker (an event and a stream-written word after
# each copy) 1.5-2.3 % slower than an event alone, and the engine no faster out of
# cuMemHostAlloc buffers. What does each marker after a copy cost the ring? The probe's bounce
# ring (pread + copy) and its copy ring alone (pinnedq), 12 and 16 threads, both buffer kinds,
# markers: event, eventwv (gdio's), wv (only the word, polled before reuse), none (pinnedq).
O=$OUT; mkdir -p $O
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
cat $f > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
p() { PINALLOC=$1 MARKER=$2 NSTREAMS=1 timeout 30 /tmp/pcprobe $f 4 $3 $4 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( '; }
for rep in 1 2; do
  for t in 12 16; do for a in hp host; do
    echo "rep $rep bouncehp t$t $a: event $(p $a event $t bouncehp) eventwv $(p $a eventwv $t bouncehp) wv $(p $a wv $t bouncehp)"
    echo "rep $rep pinnedq  t$t $a: event $(p $a event $t pinnedq) eventwv $(p $a eventwv $t pinnedq) wv $(p $a wv $t pinnedq) none $(p $a none $t pinnedq)"
  done; done
done | tee $O/probe.txt
