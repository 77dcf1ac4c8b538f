#!/usr/bin/env bash
# Session 42 run 2, the same build as run 1: issue 9's performance row at every thread count in
# one run: 1. `kvrow` at 1, 2, 4, 8, 16 and 32 threads, three reps (KvikIO ON, OFF through gdio's
# libcufile, OFF ÷ ON, beside the pinned copy and the ring); 2. `gdio bench` of the same shape
# (4 MiB × N from the same ext4 page cache), twice per N, for OFF ÷ bench; 3. NVIDIA's own compat
# mode (udev recipe, removed before gdio's rows) against gdio's library, hot and cold, and
# KvikIO's suite with no libcufile at all and compat ON (which tests fail without any cuFile).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
el setup
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_WHY=0 KVROW_BUDGET_S=200 timeout 290 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
for pass in 1 2; do for n in 1 2 4 8 16 32; do
  echo "pass $pass gdio bench 4M x $n: $(timeout 10 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth $n 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s verified {r['verified']}\")")"
done; done | tee $O/bench-shapes.txt
el bench
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="nvidia kvikio-tests-plain" timeout 170 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -10 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests*.txt | sort | uniq -c | head -8
el total
for d in k c; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
