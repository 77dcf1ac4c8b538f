#!/usr/bin/env bash
# Session 37 run 7: the probe's pread + copy ring moves 52.1-52.6 GB/s out of cuMemHostAlloc
# buffers, the engine 51 with either kind, its copy queue full (copies land 0.6 ms after
# queueing). Two suspects, one call: A. the engine's waits: its workers poll a buffer's event
# every 4 us (the probe synchronized it) and a watcher thread asks every event; the probe now
# does both (MARKER=eventpoll, WATCHER=1), host and huge-page buffers, 12 and 16 threads;
# B. requests in flight: `gdio bench` 4 MiB x 16 / 32 / 64 from the ext4 page cache, defaults
# against pinned_huge_pages=false (ABBA, with KvikIO OFF and ON at 16 threads).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
for x in $f /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
cat $f > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
rows=("host 12 event 0" "host 12 eventpoll 0" "host 12 eventpoll 1" "hp 12 event 0" "hp 12 eventpoll 1" "host 16 event 0" "host 16 eventpoll 1")
for pass in 1 2; do
  order=("${rows[@]// /_}"); [ $pass = 2 ] && order=($(printf '%s\n' "${order[@]}" | tac))
  for r in "${order[@]}"; do
    set -- ${r//_/ }
    echo "pass $pass bouncehp $1 t$2 marker $3 watcher $4: $(PINALLOC=$1 MARKER=$3 WATCHER=$4 NBUF=2 NSTREAMS=1 timeout 40 /tmp/pcprobe $f 4 $2 bouncehp 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  done
done | tee $O/probe.txt
el probe
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=200 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16 4M:32 4M:64" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" timeout 300 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
