#!/usr/bin/env bash
# Session 48 run 6 (`OUT=$OUT timeout 170 bash bench/results/2026-12-05-s48-run6/command.sh`),
# the build of run 5, the bench scripts of commit "Bench scripts read the hypervisor's steal
# for KvikIO's rows too": a short check that they run on the machine: the `abba` phase with
# two identical settings, one rep at four threads and `gdio bench` 4 MiB x 4, one timed pass
# (KvikIO's rows now with their steal, bench/abba_verdict.py's marks), and one rep of `kvrow`
# at four threads with the bench row (KvikIO's steal at the end of the row).
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4" ABBA_SHAPES="4M:4" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_NONE=2" ABBA_REPS=1 ABBA_PASSES=1 \
  timeout 70 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-200 $O/a/logs/abba.txt
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="4" KVROW_REPS=1 KVROW_BENCH=1 KVROW_WHY=0 \
  timeout 60 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
echo "== kvrow ($((SECONDS - t0)) s)"; cut -c1-250 $O/k/logs/kvrow.txt; tail -3 $O/k/logs/kvrow/stderr.txt 2>/dev/null
for d in a k; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d; done
