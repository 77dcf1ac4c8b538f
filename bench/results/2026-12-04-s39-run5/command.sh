#!/usr/bin/env bash
# Session 39 run 5, the final build: every part of issue 9's performance row in one run.
# 1. `kvrow` at 1 2 4 8 16 32 threads, two reps (link and ring beside it); 2. `gdio bench` with
# KvikIO's request shape at each thread count (4 MiB x N from the same ext4 page cache, three
# timed passes); 3. torch.cuda.gds's 8 GiB load against the pinned copy (`cufile` phase).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/k KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=2 KVROW_WHY=0 KVROW_BUDGET_S=100 timeout 200 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
cat $f > /dev/null
for n in 1 2 4 8 16 32; do
  echo "gdio bench 4M x $n: $(timeout 40 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth $n 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s verified {r['verified']}\")")"
done | tee $O/bench-shapes.txt
el bench
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="torch" timeout 90 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
grep -E "torch" $O/c/logs/cufile.txt | tail -5
el total
