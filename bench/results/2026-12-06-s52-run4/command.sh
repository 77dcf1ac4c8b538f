#!/usr/bin/env bash
# Session 52 run 4 (`OUT=$OUT timeout 400 bash bench/results/2026-12-06-s52-run4/command.sh`):
# the session's final build (read-ahead's GPU memory also let go by the `gdio-read-ahead`
# thread after 0.5 s idle). Every gpu_cuda test; ABBA two reps, read-ahead off against the
# default (GPU memory) at 1, 8, 16 KvikIO threads and `gdio bench` 4 MiB x 4; the default
# `gdio bench`.
O=${OUT:?}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 150 .dev/tests/gpu_cuda --test-threads 1 > "$O/gpu-tests.txt" 2>&1
echo "== gpu_cuda rc=$? ($((SECONDS - t0)) s): $(grep -E 'test result|FAILED|panicked' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
OUT=$O/a ABBA_THREADS="1 8 16" ABBA_SHAPES="4M:4" \
  ABBA_SETTINGS="GDIO_READ_AHEAD_BYTES=0 GDIO_NONE=1" ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=120 \
  timeout 220 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
timeout 60 $GDIO bench > $O/bench-default.txt 2>&1
echo "== default bench: $(grep -E '^read|^write' $O/bench-default.txt | head -4 | tr '\n' '|' | cut -c1-300)"
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
