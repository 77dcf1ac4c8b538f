#!/usr/bin/env bash
# Session 42 run 5 (the command as run, one line there): run 4's build and setting
# (GDIO_POLLING_CALLERS_MAX=3 by environment), `kvrow` at 8 and 16 threads only, three reps,
# each OFF row paired with `gdio bench` of the same shape.
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0 GDIO_POLLING_CALLERS_MAX=3
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
mkdir -p $OUT/k
OUT=$OUT/k SKIP_FILES=1 KVROW_THREADS="8 16" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=0 KVROW_BUDGET_S=60 \
  timeout 100 bash bench/gpu-session.sh kvrow > $OUT/kvrow-session.txt 2>&1
cat $OUT/k/logs/kvrow.txt
tar czf $OUT/k-logs.tgz -C $OUT/k logs && rm -rf $OUT/k/logs
