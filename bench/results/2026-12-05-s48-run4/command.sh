#!/usr/bin/env bash
# Session 48 run 4 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s48-run4/command.sh`),
# the build of commit 2372b8e with `wake_at_last_copy.patch` (beside this file) applied: the key
# `wake_at_last_copy` (a synchronous caller of a read of one or two tasks, or
# one split read, is woken when its last copy is queued and polls the landing, on the cores
# the workers and the watcher leave over), off by default in that build. It lost; the patch
# was not kept (BENCHMARKS.md session 48 run 4):
# (1) the library's summary (CUFILE_LOGGING_LEVEL=INFO) for one KvikIO compat OFF pass at four
#     and eight threads with the key off and on: how many callers polled their landing, how late the
#     others woke;
# (2) ABBA of the key off against on at 2, 4, 8, 16 threads and `gdio bench` 4 MiB x 2/4/8 on
#     the same ext4 file, three reps (session 48 run 3: callers woke 0.013-0.028 ms after
#     their read was done, in calls of 0.25-0.70 ms; OFF / bench 0.946 of the medians at four).
# Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
lscpu | grep -iE 'model name|^cpu\(s\)'
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
echo "== file ready ($((SECONDS - t0)) s)"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > $O/pip.txt 2>&1
cat $f > /dev/null
for t in 4 8; do for w in 0 1; do
  GDIO_WAKE_AT_LAST_COPY=$w CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why-t$t-w$w.log LD_PRELOAD=$LIB \
    PYTHONPATH=/tmp/site timeout 60 python3 bench/cufile_kvikio_read.py off $f $t 2 > $O/why-t$t-w$w.out 2>&1
  echo "why t$t wake $w: $(tail -1 $O/why-t$t-w$w.out | cut -c1-60) | $(grep -h "synchronous I/O" $O/why-t$t-w$w.log | grep -oE "a call [0-9.]+ ms|[0-9]+ callers woke [0-9.]+ ms|[0-9]+ callers were woken as their last copy|[0-9]+ callers polled their read alone" | tr '\n' ';')"
done; done
echo "== why ($((SECONDS - t0)) s)"
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="2 4 8 16" ABBA_SHAPES="4M:2 4M:4 4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_WAKE_AT_LAST_COPY=0 GDIO_WAKE_AT_LAST_COPY=1" \
  ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$(( 420 - (SECONDS - t0) )) \
  timeout $(( 570 - (SECONDS - t0) )) bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-150 $O/a/logs/abba.txt 2>/dev/null || tail -20 $O/a/logs/abba.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
(cd $O && tar czf why.tgz why-t* && rm -f why-t*)
