#!/usr/bin/env bash
# Session 50 run 2 (`OUT=$OUT timeout 580 bash bench/results/2026-12-05-s50-run2/command.sh`),
# run 1's build. Run 1: with 64 MiB read ahead every row stopped at 44-46 GB/s (KvikIO OFF
# t1 +60 %, t4 -10 %, t8 -15 %; `gdio bench` 4 MiB x 4 +36 %, x 8 -13 %) while the workers sat
# idle half the time: 16 slots of 4 MiB, each one read, taken, copied and refilled in turn,
# cap what is in flight. The test: ABBA two reps, off against 64, 128 and 256 MiB at 1, 4, 8,
# 16 KvikIO threads and `gdio bench` 4 MiB x 4 / x 8; then one `gdio bench` 4 MiB x 8 row per
# setting with its path line (reads out of read-ahead) and workers' line. Logs under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$O/a ABBA_THREADS="1 4 8 16" ABBA_SHAPES="4M:4 4M:8" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_READ_AHEAD_BYTES=67108864 GDIO_READ_AHEAD_BYTES=134217728 GDIO_READ_AHEAD_BYTES=268435456" \
  ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=300 \
  timeout 470 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
for b in 0 67108864 268435456; do
  [ $((SECONDS - t0)) -gt 540 ] && break
  GDIO_READ_AHEAD_BYTES=$b timeout 30 $GDIO bench --file /dev/shm/gdio-bench-8g.bin --mode read --io-size 4M --queue-depth 8 --iterations 2 > $O/bench-4Mx8-ra$b.txt 2>&1
  echo "== 4M x 8 read-ahead $b: $(grep -E '^read|path:|workers:' $O/bench-4Mx8-ra$b.txt | cut -c1-300 | tr '\n' '|')"
done
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
