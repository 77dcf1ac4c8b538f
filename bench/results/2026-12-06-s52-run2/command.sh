#!/usr/bin/env bash
# Session 52 run 2 (`OUT=$OUT timeout 590 bash bench/results/2026-12-06-s52-run2/command.sh`).
# Run 1 (bench/read-ahead-gpu-memory-ab.sh, H100): read-ahead into GPU memory read one to
# eight KvikIO threads at 46-48 GB/s (2.36 x off at one, 0.995 x at eight, where pinned memory
# read 0.868 x), but sixteen threads 0.939 x off (pinned 0.946 x). Here: the GPU test that
# failed there (its rewrite came after every range was used: now mid-file), then ABBA three
# reps at 4, 8, 16 threads and `gdio bench` 4 MiB x 4 and x 8: off, GPU memory with
# `read_ahead_max_callers` 8 (the default), 16, 4.
O=${OUT:?}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 gpu_read_ahead > "$O/gpu-tests.txt" 2>&1
echo "== gpu test rc=$? ($((SECONDS - t0)) s): $(grep -E '^test |test result|panicked' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-600)"
OUT=$O/a ABBA_THREADS="4 8 16" ABBA_SHAPES="4M:4 4M:8" \
  ABBA_SETTINGS="GDIO_READ_AHEAD_BYTES=0 GDIO_NONE=1 GDIO_READ_AHEAD_MAX_CALLERS=16 GDIO_READ_AHEAD_MAX_CALLERS=4" \
  ABBA_REPS=3 ABBA_PASSES=4 ABBA_BUDGET_S=330 \
  timeout 450 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
