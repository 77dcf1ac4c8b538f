#!/usr/bin/env bash
# Read-ahead across request sizes and on the cold file: the run that decided that
# `read_ahead_bytes` is 256 MiB by default (written in session 50 after its runs 1-2; ran as
# session 51 run 1, BENCHMARKS.md). On the GPU machine, from the repository root, with .dev/
# (bash bench/build-dev.sh) and .whl/ carried:
#   OUT=$OUT timeout 590 bash bench/read-ahead-shapes-ab.sh
# Session 50 runs 1-2 (H100, hot ext4 file): 256 MiB read one KvikIO thread at 45 GB/s against
# 26 off, `gdio bench` 4 MiB x 4 at 51 against 34, four to sixteen threads within 2 %; 64 MiB
# (sixteen slots) capped every row at 44-46. Here: ABBA two reps, off against 256 and 512
# MiB: KvikIO compat OFF at 1, 2, 4, 8, 16 threads (ext4, hot), `gdio bench` 1 MiB x 8,
# 4 MiB x 1, x 2, x 4, 16 MiB x 2 (tmpfs); then the cold ext4 file (page cache dropped before
# each pass, one timed pass) read by KvikIO compat OFF at one and eight threads, off against
# 256 MiB, two reps (read-ahead reads through the page cache where the engine reads a cold
# range with O_DIRECT). Logs under $OUT.
O=${OUT:?OUT: where the logs go}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$O/a ABBA_THREADS="1 2 4 8 16" ABBA_SHAPES="1M:8 4M:1 4M:2 4M:4 16M:2" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_READ_AHEAD_BYTES=268435456 GDIO_READ_AHEAD_BYTES=536870912" \
  ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=300 \
  timeout 430 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-220 || tail -20 $O/abba-session.txt
f=/tmp/gdio-bench-8g.bin
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for rep in 1 2; do
  for t in 1 8; do
    for b in 0 268435456; do
      [ $((SECONDS - t0)) -gt 545 ] && break 3
      sync; echo 3 > /proc/sys/vm/drop_caches
      r=$(GDIO_READ_AHEAD_BYTES=$b LD_PRELOAD=$LIB timeout 40 python3 bench/cufile_kvikio_read.py off $f $t 0 2>>$O/cold-stderr.txt | tail -1)
      echo "cold rep $rep t$t read-ahead $b: $(echo "$r" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["gbps"], "verified", r["verified"])' 2>&1)"
    done
  done
done | tee $O/cold.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
