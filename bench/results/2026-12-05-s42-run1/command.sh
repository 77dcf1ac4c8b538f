#!/usr/bin/env bash
# Session 42 run 1, the build of this session (session 41's stream-ordered parameter checks and
# atomic result store never ran on a GPU): 1. GPU test binaries and the C ABI program (device
# stream-ordered I/O among them); 2. gdio's Python suite on the GPU (session 40 had no time for
# it); 3. `kvrow` at 1 and 16 threads, three reps, with the library's summary; 4. `gdio bench`
# of KvikIO's shape at those thread counts; 5. KvikIO 26.10's suite compat OFF through gdio's
# libcufile with its HTTP/S3 test dependencies, and torch.cuda.gds; 6. the default `gdio bench`.
# Each part under a time limit; logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
OUT=$O/t SKIP_FILES=1 timeout 70 bash bench/gpu-session.sh tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
( python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl \
  && cd python/tests && GDIO_REQUIRE_GPU=1 PYTHONPATH=/tmp/gdsite:/tmp/site timeout 110 python3 -m pytest -q -p no:cacheprovider . ) > $O/pytest.txt 2>&1
tail -4 $O/pytest.txt
el pytest
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 16" KVROW_REPS=3 KVROW_WHY=1 KVROW_BUDGET_S=110 timeout 170 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
for n in 1 16; do
  echo "gdio bench 4M x $n: $(timeout 10 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth $n 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s verified {r['verified']}\")")"
done | tee $O/bench-shapes.txt
el bench
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 110 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -8 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -8
el cufile
(cd /tmp && timeout 25 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
for d in t k c; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
