#!/usr/bin/env bash
# Session 34 run 2: run 1 found 32 in flight no faster than 16 (4 MiB x 32 out of cuMemHostAlloc
# 50.96 / 51.27; KvikIO t32 51.0-51.3), so read-ahead cannot lift issue 9's 16-thread row; the
# engine caps near 51 GB/s whatever its buffers while the probe's pread + copy ring reached
# 52.37 out of cuMemHostAlloc (50.30 out of registered huge pages). What in the engine's copy
# path holds cuMemHostAlloc buffers back? (1) the probe with gdio's marker (an event and a
# stream-written word after each copy) against an event alone, both buffer kinds, 12 and 16
# threads; (2) ABBA, three reps, KvikIO compat OFF through gdio at 16 threads and `gdio bench`
# 4 MiB x 16 from ext4's page cache: defaults, cuMemHostAlloc, cuMemHostAlloc with no
# completion watcher (no stream-written word), cuMemHostAlloc with polls every 16 us;
# (3) the library's summary at 16 threads under each cuMemHostAlloc setting.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
cat /tmp/gdio-bench-8g.bin > /dev/null
el files
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
for t in 12 16; do for a in hp host; do for m in event eventwv; do
  echo "probe bouncehp 4 MiB x $t one stream $a $m: $(PINALLOC=$a MARKER=$m NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 $t bouncehp 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' )"
done; done; done | tee $O/probe.txt
el probe
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=250 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_BENCH_FILE=/tmp/gdio-bench-8g.bin \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false GDIO_PINNED_HUGE_PAGES=false,GDIO_COMPLETION_WATCHER=false GDIO_PINNED_HUGE_PAGES=false,GDIO_COMPLETION_POLL_US=16" \
  timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
export PYTHONPATH=/tmp/site
for v in GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false GDIO_PINNED_HUGE_PAGES=false,GDIO_COMPLETION_WATCHER=false; do
  [ $(( $(date +%s) - T0 )) -gt 520 ] && break
  rm -f $O/why.log
  (export ${v//,/ }; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB timeout 40 \
    python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 16 1 >/dev/null 2>>$O/why-stderr.txt)
  echo "why t16 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
tar czf $O/logs.tgz --exclude=pcprobe --exclude="*.so*" --exclude=kt --exclude=examples --exclude=lib -C $O a/logs 2>/dev/null
