#!/usr/bin/env bash
# Session 47 run 2 (the build of run 1): why a process at four reads in flight lands slow.
# Run 1 (an H100 host) showed every process's bounce buffers wholly on huge pages and its speed
# following how fast a worker's file I/O ran (3.93 GB/s in a 28 GB/s process, 6.26 in a 44):
# the copies out of the page cache themselves vary. So:
# (1) bench/vcpu-pairs.c: each CPU's copy out of the page cache alone, then every pair at once
#     (pairs that keep little of twice the solo rate share a host core the guest cannot see);
# (1b) bench/buffer-placement.c: from one pinned CPU (2, then 9), `pread` into 24 bounce buffers
#     mapped as gdio maps them, three rounds: does a buffer's memory set the copy's rate?
# (2) phase `spread` again, now naming the workers' group right (gdio-worker) and the CPUs the
#     busy workers ran on, to set beside (1);
# (3) issue 9's row, `kvrow` at 1-32 threads, three reps, each OFF row paired with `gdio bench`.
#   OUT=$OUT bash bench/results/2026-12-05-s47-run2/command.sh
O=$OUT; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
cc -O2 -pthread bench/vcpu-pairs.c -o /tmp/vcpu-pairs && timeout 60 /tmp/vcpu-pairs $f 200 > $O/vcpu-pairs.txt 2>&1
echo "== vcpu pairs ($((SECONDS - t0)) s)"; grep -E "alone|weakest|median" $O/vcpu-pairs.txt | tr '\n' ';' | sed 's/GB\/s;/;/g'; echo
cc -O2 bench/buffer-placement.c -o /tmp/buffer-placement && for c in 2 9; do
  timeout 30 /tmp/buffer-placement $f $c 24 60 3 > $O/buffer-placement-cpu$c.txt 2>&1; tail -1 $O/buffer-placement-cpu$c.txt; done
OUT=$O/s SKIP_FILES=1 SPREAD_PROCS=8 SPREAD_THREADS=4 SPREAD_PASSES=3 \
  timeout 150 bash bench/gpu-session.sh spread > $O/spread-session.txt 2>&1
echo "== spread ($((SECONDS - t0)) s)"; cat $O/s/logs/spread/spread.txt 2>/dev/null || tail -20 $O/s/logs/spread.txt
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=0 KVROW_BUDGET_S=200 \
  timeout 330 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
echo "== kvrow ($((SECONDS - t0)) s)"; cat $O/k/logs/kvrow.txt | cut -c1-400
echo "== done in $((SECONDS - t0)) s"
for d in s k; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d; done
