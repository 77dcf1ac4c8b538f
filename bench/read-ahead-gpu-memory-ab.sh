#!/usr/bin/env bash
# Read-ahead into GPU memory against pinned host memory (`read_ahead_gpu_memory`, session 52).
# Session 51 measured read-ahead into pinned memory capped near 40 GB/s on the H100 hosts
# (the workers fill the arena with CPU copies, and each read copies it over the link), below
# what eight KvikIO threads read without it. Here read-ahead goes through the workers' usual
# pipeline into GPU memory of the engine's own, and each read copies device to device.
# On the GPU machine, from the repository root, with .dev/ (bash bench/build-dev.sh
# --no-wheel) and .whl/ carried:
#   OUT=$OUT timeout 590 bash bench/read-ahead-gpu-memory-ab.sh
# 1. gpu_cuda (every test, GDIO_REQUIRE_GPU=1); 2. ABBA two reps: read-ahead off, into pinned
# memory, into GPU memory (the new default): KvikIO compat OFF at 1, 2, 4, 8, 16 threads (hot
# ext4 8 GiB file) and KvikIO ON; `gdio bench` 4 MiB x 1, x 4, 1 MiB x 8, 16 MiB x 2 (tmpfs);
# 3. the default `gdio bench`; 4. the cold ext4 file (page cache dropped) at one and eight
# KvikIO threads, pinned against GPU memory. Logs under $OUT.
O=${OUT:?OUT: where the logs go}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 150 .dev/tests/gpu_cuda --test-threads 1 > "$O/gpu-tests.txt" 2>&1
echo "== gpu_cuda rc=$? ($((SECONDS - t0)) s): $(grep -E 'test result|FAILED|panicked' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
off=GDIO_READ_AHEAD_BYTES=0 host=GDIO_READ_AHEAD_GPU_MEMORY=false gpu=GDIO_NONE=1
OUT=$O/a ABBA_THREADS="1 2 4 8 16" ABBA_SHAPES="4M:1 4M:4 1M:8 16M:2" \
  ABBA_SETTINGS="$off $host $gpu" ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=230 \
  timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
timeout 60 $GDIO bench > $O/bench-default.txt 2>&1
echo "== default bench: $(grep -E '^read|^write|ahead' $O/bench-default.txt | head -6 | tr '\n' '|' | cut -c1-400)"
f=/tmp/gdio-bench-8g.bin
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for t in 1 8; do
  for v in $host $gpu; do
    [ $((SECONDS - t0)) -gt 560 ] && break 2
    sync; echo 3 > /proc/sys/vm/drop_caches
    r=$(export $v; LD_PRELOAD=$LIB timeout 30 python3 bench/cufile_kvikio_read.py off $f $t 0 2>>$O/cold-stderr.txt | tail -1)
    echo "cold t$t $v: $(echo "$r" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(round(r["gbps"], 2), "verified", r["verified"])' 2>&1)"
  done
done | tee $O/cold.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
