#!/usr/bin/env bash
# Session 40 run 4, the final build (lone_caller_polls on, split_pieces_per_worker 8): 1. GPU
# test binaries and the C program; 2. `kvrow` at 1 and 16 threads, two reps, with the library's
# summary (why); 3. `gdio bench` of KvikIO's shape at those thread counts; 4. KvikIO 26.10's
# suite compat OFF through gdio's libcufile and torch.cuda.gds (`cufile` phase); 5. the
# default `gdio bench`. Each part under a time limit (the session's last device seconds).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/t SKIP_FILES=1 timeout 50 bash bench/gpu-session.sh tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 16" KVROW_REPS=2 KVROW_WHY=1 KVROW_BUDGET_S=50 timeout 90 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
for n in 1 16; do
  echo "gdio bench 4M x $n: $(timeout 10 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth $n 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s verified {r['verified']}\")")"
done | tee $O/bench-shapes.txt
el bench
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 95 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -8 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -8
el cufile
(cd /tmp && timeout 25 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
for d in t k c; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
