#!/usr/bin/env bash
# Session 45 run 1, this session's build (sessions 43-44: `polling_callers_max` 3 compiled in,
# the safetensors shape keys, Ctrl-C-able Python loads and saves; never on a GPU):
# 1. GPU test binaries and the C ABI program; 2. issue 9's row: `kvrow` at 1, 2, 4, 8, 16, 32
# threads, three reps, each OFF row paired with `gdio bench` of the same shape (KVROW_BENCH=1);
# 3. the default `gdio bench`; 4. KvikIO's test_http_io.py through gdio's libcufile with its two
# retry checks reading standard error, where the released wheel logs
# (bench/kvikio-http-release-logging.py), and torch.cuda.gds. Logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
el setup
OUT=$O/t SKIP_FILES=1 timeout 75 bash bench/gpu-session.sh tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=3 KVROW_BENCH=1 KVROW_WHY=0 KVROW_BUDGET_S=200 timeout 320 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
(cd /tmp && timeout 25 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el bench
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-http-release torch" timeout 100 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -8 $O/c/logs/cufile.txt
grep -E "passed|failed" $O/c/logs/cufile/kvikio-http-release.txt | tail -2
el total
for d in t k c; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
