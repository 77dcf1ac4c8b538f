#!/usr/bin/env bash
# Session 39 run 2, the final build (split_early_copy on for lone split reads of 4 MiB and
# more): 1. GPU tests and the C program; 2. gdio's Python suite on the GPU; 3. `kvrow`, issue
# 9's row at 1 8 16 32 threads, three reps, with the link and ring; 4. ABBA, two reps: the
# defaults, split_early_copy=false, and the floor at 2 MiB: KvikIO compat OFF at 1 and 16
# threads, `gdio bench` 4 / 3 / 2 MiB x 1 and 4 MiB x 16 from the ext4 page cache; 5. the
# default `gdio bench`.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -rs -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -2 $O/pytest.txt; grep -E '^(FAILED|ERROR|SKIPPED)' $O/pytest.txt | head)
el pytest
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 8 16 32" KVROW_REPS=3 KVROW_WHY=1 KVROW_BUDGET_S=130 timeout 200 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
S="GDIO_NONE=1 GDIO_SPLIT_EARLY_COPY=false GDIO_SPLIT_EARLY_COPY_MIN_BYTES=2097152"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=120 ABBA_THREADS="1 16" ABBA_PASSES=3 ABBA_SHAPES="4M:1 3M:1 2M:1 4M:16" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="$S" timeout 230 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path" $O/default-bench.txt
el total
