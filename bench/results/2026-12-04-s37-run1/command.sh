#!/usr/bin/env bash
# Session 37 run 1. 1. GPU tests (new: page-cache pins on the real GPU, byte for byte) and the
# C program; 2. the 4 MiB ring's own ceiling across copy sizes and threads (pinnedq, no file:
# does a bigger copy or fewer threads carry the link that one 1 GiB copy reaches?);
# 3. ABBA on issue 9's t16 row: completion_poll_us 4 (default) / 20 / 60 (12 workers and the
# watcher ask cuEventQuery every 4 us while a worker's copies are in flight; session 35's
# summary showed 7 % of the workers' time queueing copies at 16 threads); 4. the library's
# summary at t16 for each setting (where the workers' time went).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked|pins" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
f=/tmp/gdio-bench-8g.bin
cat $f > /dev/null
echo "pinned 1 GiB copies, 1 stream (link): $(NSTREAMS=1 timeout 30 /tmp/pcprobe $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
for c in 4 16 64; do for t in 1 4 12; do for ns in 1 $t; do
  [ $t = 1 ] && [ $ns != 1 ] && continue
  echo "ring ${c} MiB x $t threads, $ns streams, no CPU copy: $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=$ns timeout 30 /tmp/pcprobe $f $c $t pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
done; done; done | sort -u | tee $O/ring.txt
el ring
OUT=$O/a SKIP_FILES=1 ABBA_REPS=4 ABBA_BUDGET_S=200 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16 64M:4" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_COMPLETION_POLL_US=20 GDIO_COMPLETION_POLL_US=60" timeout 300 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
for v in GDIO_NONE=1 GDIO_COMPLETION_POLL_US=60; do
  rm -f $O/why.log
  (export $v; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 40 python3 bench/cufile_kvikio_read.py off $f 16 1 >/dev/null 2>>$O/why-stderr.txt)
  echo "why t16 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
tar czf $O/logs.tgz -C $O a/logs t/logs 2>/dev/null
