#!/usr/bin/env bash
# Session 46 run 2 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s46-run2/command.sh`),
# the build of run 1 on the same warm machine: where four and eight reads of 4 MiB in flight
# lose time, by the engine's knobs, ABBA (bench/gpu-phase-abba.sh), two reps: KvikIO compat
# OFF through gdio's libcufile at 4 and 8 threads and `gdio bench` 4 MiB x 4 and x 8 from the
# ext4-cached file, under the defaults, 16 workers, every caller polling, and 512 KiB split
# pieces; then the library's summary at 4 and 8 threads under each setting; then the GPU
# test binaries. Logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
R=$(pwd)
export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
nvidia-smi --query-gpu=name --format=csv,noheader
S="GDIO_NONE=1 GDIO_THREADS=16 GDIO_POLLING_CALLERS_MAX=8 GDIO_SPLIT_MIN_BYTES=524288"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=150 ABBA_THREADS="4 8" ABBA_PASSES=3 ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SHAPES="4M:4 4M:8" ABBA_SETTINGS="$S" timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba.txt
el abba
for t in 4 8; do for v in $S; do
  rm -f $O/why.log
  (export $v; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB \
    timeout 30 python3 bench/cufile_kvikio_read.py off $f $t 1 >/dev/null 2>>$O/stderr.txt)
  echo "why t$t $v: $(grep -h 'synchronous I/O' $O/why.log | sed 's/.*synchronous I\/O: //')"
done; done | tee $O/why.txt | cut -c1-700
el why
OUT=$O/t SKIP_FILES=1 timeout 90 bash bench/gpu-session.sh tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el total
for d in a t; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
