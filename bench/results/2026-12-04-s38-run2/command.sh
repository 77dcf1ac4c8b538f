#!/usr/bin/env bash
# Session 38 run 2, this session's build: 1. the GPU test binaries and the C ABI program;
# 2. gdio's Python suite on the GPU; 3. would larger copies lift the bounce ceiling? the probe
# (copy engine, pread + copy) with 4 / 8 / 16 MiB chunks, cuMemHostAlloc and huge-page buffers,
# 12 and 16 threads; 4. `kvrow` (issue 9's row at 8 and 16 threads, three reps, with the link
# and ring); 5. cold reads from the disk (1 GiB x 2 and 4 MiB x 16, O_DIRECT after the sampled
# check); 6. the default `gdio bench`.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -rs -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -2 $O/pytest.txt; grep -E '^(FAILED|ERROR|SKIPPED)' $O/pytest.txt | head)
el pytest
nvcc -O2 -o /tmp/smprobe bench/h2d-sm-probe.cu 2>&1 | tail -5
cat $f > /dev/null
{
for alloc in host hp; do for t in 16 12; do
  for c in 4 16 8 4 16 8; do PINALLOC=$alloc PASSES=1 timeout 40 /tmp/smprobe $f $c $t ce 2>&1 | grep -v '^link'; done
done; done
} | tee $O/probe.txt
el probe
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_WHY=1 KVROW_BUDGET_S=200 timeout 320 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
for shape in "1G 2" "4M 16"; do set -- $shape
  echo "cold $1 x $2: $(timeout 60 $GDIO bench --file $f --mode read --cold --iterations 1 --warmup 0 --io-size $1 --queue-depth $2 --json | python3 -c "
import json,sys; d=json.load(sys.stdin); r=d['results'][0]
print(f\"{r['gbps']:.2f} GB/s, {r.get('ratio_to_limit') or 0:.2f} x limit {r.get('limit_gbps')}, direct {r['direct_bytes']>>20} MiB, verified {r['verified']}\")")"
done | tee $O/cold.txt
el cold
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
tar czf $O/logs.tgz -C $O t/logs k/logs 2>/dev/null
