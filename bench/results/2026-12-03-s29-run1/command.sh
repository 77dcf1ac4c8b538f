#!/usr/bin/env bash
# Session 29 run 1: the final build (HEAD 4a80955, `gather_write_disk_min_bytes`) through every
# GPU check of issue 9 and the engine: the GPU test binaries and the C program, gdio's Python
# suite on the GPU, KvikIO 26.10's own suite compat OFF through gdio's libcufile and the
# torch.cuda.gds round trips and 8 GiB load, then issue 9's KvikIO row beside the ceilings.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 150 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; grep -c ": ok" $O/t/logs/tests.txt; grep -E "FAILED|C api" $O/t/logs/tests.txt
el tests
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -4 $O/pytest.txt)
el pytest
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 150 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -14 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | head -10
el cufile
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_BUDGET_S=$(( 480 - ($(date +%s) - T0) )) timeout 200 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total
