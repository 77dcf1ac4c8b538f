#!/usr/bin/env bash
# Session 39 run 4, the final build: issue 9's row at every thread count KvikIO users set
# (1 2 4 8 16 32) in one run, three reps, with the link and the ring beside it (`kvrow`).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/k KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_WHY=0 KVROW_BUDGET_S=190 timeout 300 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total
