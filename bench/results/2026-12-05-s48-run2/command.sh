#!/usr/bin/env bash
# Session 48 run 2 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s48-run2/command.sh`),
# the build of run 1 (session 47's final commit 8a45f43: the steal lines, also in the library's
# summary), the rest of issue 9's checks on it: 1. the GPU test binaries and the C ABI program;
# 2. KvikIO 26.10's Python tests compat OFF through gdio's libcufile (the stored suite, then
# test_http_io.py with its two retry checks reading standard error,
# bench/kvikio-http-release-logging.py), torch.cuda.gds, and NVIDIA's own compat mode (udev
# properties written, then removed) against gdio's library, hot and cold; 3. gdio's Python suite
# on the GPU. Logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
R=$(pwd)
export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$O/t SKIP_FILES=1 timeout 90 bash bench/gpu-session.sh tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests kvikio-http-release torch nvidia" timeout 300 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -14 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -8
for p in kvikio-tests kvikio-http-release; do echo "$p: $(grep -E "passed|failed" $O/c/logs/cufile/$p.txt | tail -1)"; done
el cufile
( python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl \
  && cd python/tests && GDIO_REQUIRE_GPU=1 PYTHONPATH=/tmp/gdsite:/tmp/site timeout 120 python3 -m pytest -q -p no:cacheprovider . ) > $O/pytest.txt 2>&1
tail -4 $O/pytest.txt
el pytest
for d in t c; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
