#!/usr/bin/env bash
# Session 42 run 4: issue 9's row at every thread count with `polling_callers_max` 3 (run 3's
# choice, made the default after this run; set here by environment on run 3's build, whose code
# differs only in that default): `kvrow` at 1, 2, 4, 8, 16, 32 threads, each OFF row paired with
# `gdio bench` of the same shape (KVROW_BENCH=1); then the default `gdio bench`.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0 GDIO_POLLING_CALLERS_MAX=3
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
el setup
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=0 KVROW_BUDGET_S=140 timeout 230 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
(cd /tmp && timeout 25 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
[ -d $O/k/logs ] && tar czf $O/k-logs.tgz -C $O/k logs && rm -rf $O/k/logs
