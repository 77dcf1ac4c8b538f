#!/usr/bin/env bash
# Session 39 run 1, this session's build (session 38's final code): 1. GPU tests and the C
# program; 2. ABBA, reps alternating, defaults against split_early_copy=true (a split read
# alone in flight copies its first half as soon as it is read): KvikIO compat OFF through gdio
# at 1 2 4 8 threads, `gdio bench` 4 MiB x 1 / 1 MiB x 1 / 512 KiB x 1 / 4 MiB x 2 / x 8 from
# the ext4 page cache, KvikIO ON beside; 3. the library's summary at one thread, each setting;
# 4. the probe's lone copy: queue-to-landing of one 4 MiB and one 2 MiB copy, one thread.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
S="GDIO_NONE=1 GDIO_SPLIT_EARLY_COPY=true"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=4 ABBA_BUDGET_S=280 ABBA_THREADS="1 2 4 8" ABBA_PASSES=3 ABBA_SHAPES="4M:1 1M:1 512K:1 4M:2 4M:8" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="$S" timeout 420 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
export PYTHONPATH=/tmp/site
for v in $S; do
  rm -f $O/why.log
  (export ${v//,/ }; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB timeout 40 python3 bench/cufile_kvikio_read.py off $f 1 1 >/dev/null 2>>$O/stderr.txt)
  echo "why t1 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el why
nvcc -O2 -o /tmp/smprobe bench/h2d-sm-probe.cu 2>&1 | tail -5
for c in 4 2 4 2; do LAT=1 PINALLOC=hp NBUF=1 PASSES=1 timeout 40 /tmp/smprobe $f $c 1 ce 2>&1 | grep -v '^link'; done | tee $O/probe-lat.txt
el total
