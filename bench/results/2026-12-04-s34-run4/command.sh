#!/usr/bin/env bash
# Session 34 run 4: the completion watcher told by the markers recorded after the copies
# (`completion_watch_events`, new, on) instead of a progress word the stream writes after them
# (run 3's probe: the word costs the ring 1.5-3 %; out of cuMemHostAlloc buffers an event alone
# reached 52.2-52.9 GB/s against 50.6-50.8 with the word). 1. the GPU test binaries (with the
# new gpu_landings_answer_from_any_thread_and_outlive_their_stream) and the C program;
# 2. ABBA, three reps: new defaults, the word (old), cuMemHostAlloc buffers with events, and
# with the word: KvikIO compat OFF through gdio at 8 and 16 threads beside compat ON, `gdio
# bench` 4 MiB x 8, x 16 and 64 MiB x 4 (the default bench's shape) from tmpfs; 3. the
# library's summary at 16 threads under each of the four settings.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked|landings" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
S="GDIO_NONE=1 GDIO_COMPLETION_WATCH_EVENTS=false GDIO_PINNED_HUGE_PAGES=false GDIO_PINNED_HUGE_PAGES=false,GDIO_COMPLETION_WATCH_EVENTS=false"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=300 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:8 4M:16 64M:4" \
  ABBA_SETTINGS="$S" timeout 450 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
export PYTHONPATH=/tmp/site
for v in $S; do
  [ $(( $(date +%s) - T0 )) -gt 540 ] && break
  rm -f $O/why.log
  (export ${v//,/ }; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB timeout 30 \
    python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 16 2 >/dev/null 2>>$O/why-stderr.txt)
  echo "why t16 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
tar czf $O/logs.tgz --exclude=pcprobe --exclude="*.so*" --exclude=kt --exclude=examples --exclude=lib -C $O t/logs a/logs 2>/dev/null
