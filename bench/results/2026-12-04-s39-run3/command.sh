#!/usr/bin/env bash
# Session 39 run 3, the final build (run 2's): issue 9's checks through the `cufile` phase:
# KvikIO 26.10's suite compat OFF through gdio's libcufile, torch.cuda.gds round trips and an
# 8 GiB load against the pinned copy, NVIDIA's compat mode (udev recipe, removed before gdio's
# rows) against gdio's library, hot and cold; then `kvrow` at 1 and 16 threads, four reps.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
el setup
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch nvidia" timeout 240 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -12 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -8
el cufile
ls /run/udev/data/ 2>/dev/null | head -3
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 16" KVROW_REPS=4 KVROW_WHY=0 KVROW_BUDGET_S=110 timeout 170 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total
