#!/usr/bin/env bash
# Session 32 run 2: the build with `split_into_one_buffer` through the rest of issue 9's GPU
# checks: gdio's Python suite on the GPU (this build's wheel), KvikIO 26.10's own suite compat
# OFF through gdio's libcufile and the torch.cuda.gds round trips and 8 GiB load, the default
# `gdio bench` (read and write), and issue 9's KvikIO row beside the ceilings (three reps).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
el files
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -4 $O/pytest.txt; grep -E '^(FAILED|ERROR)' $O/pytest.txt | head)
el pytest
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 150 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -10 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | head -10
el cufile
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -8) | tee $O/default-bench.txt
el default-bench
left=$(( 560 - ($(date +%s) - T0) ))
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_BUDGET_S=$(( left - 75 )) PYTHONPATH=/tmp/site timeout $left bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total
tar czf $O/logs.tgz -C $O c/logs k/logs 2>/dev/null
