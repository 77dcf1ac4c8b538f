#!/usr/bin/env bash
# Session 33 run 1: session 32's final build (split_into_one_buffer on, split_pieces_per_worker
# 4) through every GPU check of issue 9: the GPU test binaries and the C program, an 8 GiB
# KvikIO compat-OFF read through gdio's libcufile compared byte for byte, gdio's Python suite on
# the GPU, KvikIO 26.10's suite compat OFF through gdio and the torch.cuda.gds round trips and
# 8 GiB load, the default `gdio bench`, cold (O_DIRECT) 4 MiB x 8 reads of a 2 GiB ext4 file
# with the split into one buffer on / off / no split (ABBA, two reps), and `kvrow` (issue 9's
# row beside the ceilings) with what time is left.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 150 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
VERIFY_ALL=1 LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 PYTHONPATH=/tmp/site timeout 90 \
  python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 8 1 2>$O/verify-stderr.txt | tail -1 | tee $O/verify-all.txt
el verify
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -p no:cacheprovider . > $O/pytest.txt 2>&1; tail -3 $O/pytest.txt; grep -E '^(FAILED|ERROR)' $O/pytest.txt | head)
el pytest
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 150 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -10 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | sort | uniq -c | head -10
el cufile
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -8) | tee $O/default-bench.txt
el default-bench
timeout 60 $GDIO make-file /tmp/gdio-cold-2g.bin --size 2G >/dev/null
cold() { env $1 timeout 60 $GDIO bench --file /tmp/gdio-cold-2g.bin --mode read --cold --iterations 1 --warmup 0 --io-size 4M --queue-depth 8 --json 2>>$O/cold-stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]
print(f\"{r['gbps']:.2f} GB/s, limit {r.get('limit_gbps')}, direct {r['direct_bytes']>>20} MiB, split {r.get('split_reads')} helped {r.get('split_pieces_helped')}, verified {r['verified']}\")"; }
S=(GDIO_NONE=1 GDIO_SPLIT_INTO_ONE_BUFFER=false GDIO_SPLIT_MIN_BYTES=0)
for rep in 1 2; do
  order="0 1 2"; [ $rep = 2 ] && order="2 1 0"
  for i in $order; do echo "cold rep $rep 4M x 8 ${S[$i]}: $(cold ${S[$i]})"; done
done | tee $O/cold.txt
el cold
left=$(( 560 - ($(date +%s) - T0) ))
OUT=$O/k SKIP_FILES=1 KVROW_REPS=3 KVROW_BUDGET_S=$(( left - 80 )) PYTHONPATH=/tmp/site timeout $left bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el total
tar czf $O/logs.tgz --exclude=pcprobe --exclude="*.so*" --exclude=kt --exclude=examples --exclude=lib -C $O t/logs c/logs k/logs 2>/dev/null
