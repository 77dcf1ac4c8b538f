#!/usr/bin/env bash
# Session 36 run 3, this session's final build (page-cache pins off by default): issue 9's
# checks: gdio's Python suite on the GPU, KvikIO 26.10's suite compat OFF through gdio and
# torch.cuda.gds (`cufile` phase); the pins opted in where reads leave gaps (KvikIO OFF, six
# passes with 300 ms after each, GDIO_PAGE_CACHE_PINS_MAX_BYTES=16 GiB against 0, ext4 and
# tmpfs, 16 threads, the last pass compared byte for byte); then `kvrow` (issue 9's row at 8
# and 16 threads, the link beside it) with the time left.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
el setup
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 110 python3 -m pytest -q -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -2 $O/pytest.txt; grep -E '^(FAILED|ERROR)' $O/pytest.txt | head)
el pytest
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 110 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -6 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -8
el cufile
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do
  for pins in 17179869184 0; do
    echo "gaps $f pins $pins: $(GAP_MS=300 VERIFY_ALL=1 GDIO_PAGE_CACHE_PINS_MAX_BYTES=$pins LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 60 python3 bench/cufile_kvikio_read.py off $f 16 5 2>>$O/gaps-stderr.txt | tail -1 | python3 -c "
import json,sys; r=json.loads(sys.stdin.read()); print(r['gbps'], 'verified', r['verified'], 'passes', r['pass_gbps'])")"
  done
done | tee $O/gaps.txt
el gaps
left=$(( 540 - ($(date +%s) - T0) ))
[ $left -gt 45 ] && OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_WHY=0 KVROW_BUDGET_S=$(( left - 45 )) PYTHONPATH=/tmp/site timeout $left bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt 2>/dev/null
el total
tar czf $O/logs.tgz --exclude=pcprobe --exclude="*.so*" --exclude=kt --exclude=examples --exclude=lib -C $O c/logs k/logs 2>/dev/null
