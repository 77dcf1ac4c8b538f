#!/usr/bin/env bash
# Session 35 run 4: the weakest read row, `gdio bench` 4 MiB x 8 from tmpfs (38 GB/s in session
# 34 run 1 against 45 from the ext4 page cache; workers idle 12 %, split partners waiting 5 %).
# Session 14's probe found tmpfs's ring at 8 threads 10 % under ext4's with pread alone equal.
# Would finer split pieces (GDIO_SPLIT_MIN_BYTES 1 MiB: up to four pieces per 4 MiB read, all
# twelve workers reading) lift tmpfs, and what do they do to ext4 and to KvikIO's 8 threads?
# First the kernel's tmpfs facts and the probe's ring from each file at 8 and 12 threads.
# ABBA, three reps: default against 1 MiB pieces; `gdio bench` 4M x 8, 8M x 8, 4M x 16 from
# tmpfs and from ext4; KvikIO compat OFF through gdio at 8 threads; KvikIO ON at 8.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
uname -r; grep -E ' /dev/shm | /tmp | / ' /proc/mounts; cat /sys/kernel/mm/transparent_hugepage/shmem_enabled /sys/kernel/mm/transparent_hugepage/enabled 2>&1
[ -x /tmp/pcprobe ] || cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
p() { PINALLOC=hp NSTREAMS=1 MARKER=event timeout 30 /tmp/pcprobe $1 $2 $3 $4 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( '; }
for f in /dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin; do
  echo "probe $f: preadonly 4M t8 $(p $f 4 8 preadonly) | bouncehp 4M t8 $(p $f 4 8 bouncehp) t12 $(p $f 4 12 bouncehp) | 1M t12 $(p $f 1 12 bouncehp) | 2M t12 $(p $f 2 12 bouncehp)"
done | tee $O/probe.txt
el probe
S="GDIO_NONE=1 GDIO_SPLIT_MIN_BYTES=1048576"
for file in /dev/shm/gdio-bench-8g.bin /tmp/gdio-bench-8g.bin; do
  n=$(basename $(dirname $file)); th=" "; [ $n = tmp ] && th=8
  echo "-- $file"
  OUT=$O/$n SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=100 ABBA_THREADS="$th" ABBA_PASSES=3 ABBA_BENCH_FILE=$file ABBA_SHAPES="4M:8 8M:8 4M:16" \
    ABBA_SETTINGS="$S" timeout 200 bash bench/gpu-session.sh abba > $O/abba-session-$n.txt 2>&1
  cat $O/$n/logs/abba/abba.txt
  el abba-$n
done
el total
tar czf $O/logs.tgz -C $O shm/logs tmp/logs 2>/dev/null
