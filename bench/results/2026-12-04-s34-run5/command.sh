#!/usr/bin/env bash
# Session 34 run 5: run 4 ran on a slow, noisy machine (KvikIO ON t8 37-39 GB/s, 64 MiB x 4
# 32-52 with no code difference between settings): again, fewer rows, more reps. The ring's
# speed (probe, 4 MiB pread + copy, 12 threads, an event per copy) before and after, then ABBA
# five reps: markers (new default) against the progress word, and markers out of cuMemHostAlloc
# buffers; KvikIO compat OFF through gdio at 8 and 16 threads beside compat ON, `gdio bench` 4
# MiB x 16 from tmpfs.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
ring() { echo "ring $1: hp $(PINALLOC=hp NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 12 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( ') host $(PINALLOC=host NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 12 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( ')"; }
ring before | tee $O/ring.txt
el ring
OUT=$O/a SKIP_FILES=1 ABBA_REPS=6 ABBA_BUDGET_S=330 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_COMPLETION_WATCH_EVENTS=false GDIO_PINNED_HUGE_PAGES=false" timeout 450 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
ring after | tee -a $O/ring.txt
el total
tar czf $O/logs.tgz -C $O a/logs 2>/dev/null
