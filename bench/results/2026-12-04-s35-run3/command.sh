#!/usr/bin/env bash
# Session 35 run 3: run 1 found the engine no faster out of cuMemHostAlloc buffers even with
# markers (KvikIO compat OFF through gdio at 16 threads 50.2-51.3 GB/s either way), while the
# probe's ring out of them ran 52.1-53.1 against 49.2-50.3. The engine runs 12 workers on one
# shared copy stream; the probe ran 12 or 16 threads. Do 16 workers, or two copy streams, let
# the engine follow the probe at 16 callers? ABBA, six reps: defaults; 16 workers; 16 workers
# out of cuMemHostAlloc; two copy streams; KvikIO compat OFF through gdio at 16 threads and
# `gdio bench` 4 MiB x 16 from tmpfs; KvikIO compat ON at 16 threads; the ring before and after.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
[ -x /tmp/pcprobe ] || cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
p() { PINALLOC=$1 NSTREAMS=1 MARKER=event timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 $2 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( '; }
ring() { echo "ring $1: t12 hp $(p hp 12) host $(p host 12); t16 hp $(p hp 16) host $(p host 16)"; }
ring before | tee $O/ring.txt
OUT=$O/a SKIP_FILES=1 ABBA_REPS=6 ABBA_BUDGET_S=250 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_THREADS=16 GDIO_THREADS=16,GDIO_PINNED_HUGE_PAGES=false GDIO_COPY_STREAMS=2" \
  timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
ring after | tee -a $O/ring.txt
el total
tar czf $O/logs.tgz -C $O a/logs 2>/dev/null
