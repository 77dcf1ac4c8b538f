#!/usr/bin/env bash
# Session 34 run 6: runs 4 and 5 met a slow, noisy machine (the probe's ring fell from 49.4 to
# 40.4 GB/s across run 5). Again on a fresh machine, the one comparison: the completion watcher
# told by markers (the new default) against the progress word, KvikIO compat OFF through gdio
# at 16 threads beside compat ON and `gdio bench` 4 MiB x 16 from tmpfs, ABBA, with the probe's
# ring (4 MiB pread + copy, 12 threads, an event per copy) before and after as the gauge of the
# machine; then the default `gdio bench` of this build, its rows kept.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
ring() { echo "ring $1: hp $(PINALLOC=hp NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 12 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( ')"; }
ring before | tee $O/ring.txt
el ring
OUT=$O/a SKIP_FILES=1 ABBA_REPS=8 ABBA_BUDGET_S=200 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_COMPLETION_WATCH_EVENTS=false" timeout 300 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
ring after | tee -a $O/ring.txt
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |workers" $O/default-bench.txt
el total
tar czf $O/logs.tgz -C $O a/logs 2>/dev/null
