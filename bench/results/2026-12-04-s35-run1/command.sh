#!/usr/bin/env bash
# Session 35 run 1: the one lever left for issue 9's 16-thread row. Session 34 (run 3) measured
# the probe's ring (4 MiB pread + copy, 12 threads, an event per copy) at 52.2-52.9 GB/s out of
# cuMemHostAlloc buffers against 50.3-50.5 out of registered huge pages; earlier sessions found
# the engine the same either way, but then every copy also carried the stream-written word.
# With markers (session 34's default), does the engine follow the probe? ABBA, six reps:
# huge pages (the default) against cuMemHostAlloc (GDIO_PINNED_HUGE_PAGES=false), KvikIO compat
# OFF through gdio at 8 and 16 threads, `gdio bench` 4 MiB x 16 from tmpfs, KvikIO compat ON;
# the probe's ring out of both buffer kinds before and after as the gauge of the machine;
# then the default `gdio bench` under both settings.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
p() { PINALLOC=$1 NSTREAMS=1 MARKER=event timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 $2 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( '; }
ring() { echo "ring $1: t12 hp $(p hp 12) host $(p host 12); t16 hp $(p hp 16) host $(p host 16)"; }
ring before | tee $O/ring.txt
el ring
OUT=$O/a SKIP_FILES=1 ABBA_REPS=6 ABBA_BUDGET_S=230 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" timeout 320 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
ring after | tee -a $O/ring.txt
for s in GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false; do
  echo "-- default gdio bench, $s"
  (cd /tmp && env $s timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench-$s.txt; grep -E "^(read|write) " $O/default-bench-$s.txt
done
el total
tar czf $O/logs.tgz -C $O a/logs 2>/dev/null
