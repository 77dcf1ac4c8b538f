#!/usr/bin/env bash
# Session 52 run 3 (`OUT=$OUT timeout 590 bash bench/results/2026-12-06-s52-run3/command.sh`).
# Run 2 (H200): with read-ahead into GPU memory, `read_ahead_max_callers` 16 led 8 (the
# default) at sixteen threads in 3 of 3 reps (51.34 against 50.69 GB/s; off 50.99) and matched
# it elsewhere. Here: ABBA three reps, off / the default (8) / 16, at 1, 16, 32 threads and
# `gdio bench` 4 MiB x 16, 1 MiB x 32.
O=${OUT:?}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
OUT=$O/a ABBA_THREADS="1 16 32" ABBA_SHAPES="4M:16 1M:32" \
  ABBA_SETTINGS="GDIO_READ_AHEAD_BYTES=0 GDIO_NONE=1 GDIO_READ_AHEAD_MAX_CALLERS=16" \
  ABBA_REPS=3 ABBA_PASSES=4 ABBA_BUDGET_S=250 \
  timeout 400 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
