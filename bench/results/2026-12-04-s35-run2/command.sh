#!/usr/bin/env bash
# Session 35 run 2: the shapes whose copies take session 34's marker path but were not measured
# with it on a quiet machine: `gdio bench` 4 MiB x 8 and the two-task reads 8 and 16 MiB x 8,
# from tmpfs and from the hot ext4 file; markers (the default) against the progress word
# (GDIO_COMPLETION_WATCH_EVENTS=false), ABBA, four reps; the probe's ring before and after.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
[ -x /tmp/pcprobe ] || cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
p() { PINALLOC=$1 NSTREAMS=1 MARKER=event timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 $2 bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( '; }
ring() { echo "ring $1: t12 hp $(p hp 12) host $(p host 12)"; }
ring before | tee $O/ring.txt
S="GDIO_NONE=1 GDIO_COMPLETION_WATCH_EVENTS=false"
for file in /dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin; do
  n=$(basename $(dirname $file))
  echo "-- $file"
  OUT=$O/$n SKIP_FILES=1 ABBA_REPS=4 ABBA_BUDGET_S=110 ABBA_THREADS=" " ABBA_BENCH_FILE=$file ABBA_SHAPES="4M:8 8M:8 16M:8" \
    ABBA_SETTINGS="$S" timeout 200 bash bench/gpu-session.sh abba > $O/abba-session-$n.txt 2>&1
  cat $O/$n/logs/abba/abba.txt
  el abba-$n
done
ring after | tee -a $O/ring.txt
el total
tar czf $O/logs.tgz -C $O shm/logs tmp/logs 2>/dev/null
