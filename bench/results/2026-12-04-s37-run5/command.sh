#!/usr/bin/env bash
# Session 37 run 5: the probe's pread + copy ring out of cuMemHostAlloc buffers moves 52.1-52.6
# GB/s at 12-16 threads (run 4), the engine 51.0-51.4 with either buffer kind, its copies
# landing 0.61-0.63 ms after queueing both ways. Bisect engine against probe: the engine made
# probe-like step by step (cuMemHostAlloc buffers; no completion watcher; workers block on the
# marker instead of polling it; no split), ABBA, KvikIO OFF through gdio at 16 threads and
# `gdio bench` 4 MiB x 16 from the ext4 page cache; the probe's rings before and after.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
for x in $f /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
cat $f > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
ring() { for a in hp host; do echo "ring $1 $a t16: $(PINALLOC=$a NBUF=2 NSTREAMS=1 timeout 40 /tmp/pcprobe $f 4 16 bouncehp 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"; done; }
ring before
H=GDIO_PINNED_HUGE_PAGES=false
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=200 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 $H,GDIO_COMPLETION_WATCHER=false,GDIO_COMPLETION_SPIN_US=0,GDIO_SPLIT_MIN_BYTES=0 $H,GDIO_COMPLETION_WATCHER=false $H,GDIO_COMPLETION_SPIN_US=0" \
  timeout 300 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
ring after
el total
