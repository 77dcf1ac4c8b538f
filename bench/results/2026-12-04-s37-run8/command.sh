#!/usr/bin/env bash
# Session 37 run 8, the final build (pinned reads synchronize on a failed copy, marker or
# wait): 1. the GPU test binaries (the pins' GPU test among them) and the C ABI program;
# 2. `kvrow`: issue 9's row at 8 and 16 threads beside the link and the 4 MiB ring, three reps,
# and the library's summary per thread count; 3. the default `gdio bench`.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked|pins" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_WHY=1 KVROW_BUDGET_S=200 timeout 320 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
tar czf $O/logs.tgz --exclude=pcprobe -C $O t/logs k/logs 2>/dev/null
