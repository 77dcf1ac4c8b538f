#!/usr/bin/env bash
# Session 46 run 3, as run on the warm H200 of run 2 right after it (typed as one line into the
# call; the build of runs 1-2): issue 9's row again, `kvrow` at 1, 2, 4, 8, 16, 32 threads,
# three reps, each OFF row paired with `gdio bench` of the same shape, no library summary.
#   OUT=$OUT bash bench/results/2026-12-05-s46-run3/command.sh
O=$OUT; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=0 KVROW_BUDGET_S=200 \
  timeout 330 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
tar czf $O/k-logs.tgz -C $O/k logs && rm -rf $O/k/logs
