#!/usr/bin/env bash
# Session 27 run 2: the build with `gather_writes` on by default. The GPU tests and gdio's whole
# Python suite on the GPU (new wheel), the small-write shapes with the new default against
# `gather_writes` off (alternating, two reps), the write table on tmpfs with the
# new default, the default bench.
O=$OUT; mkdir -p $O
T0=$(date +%s)
OUT=$O/session timeout 150 bash bench/gpu-session.sh setup tests > $O/session.txt 2>&1
cat $O/session/summary.txt
grep -h -E "FAILED|panicked" $O/session/logs/test-*.log | head -20
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl .whl/*.whl >/dev/null 2>&1
(cd python/tests && PYTHONPATH=/tmp/gdsite GDIO_REQUIRE_GPU=1 timeout 200 python3 -m pytest -q -p no:cacheprovider . 2>&1 | tail -8) | tee $O/pytest.txt
echo "pytest done after $(( $(date +%s) - T0 )) s"
export PYTHONPATH=/tmp/gdsite
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITES=false" \
  WRITEAB_SHAPES="4K:64:random 16K:32:random 64K:64:seq 64K:16:seq 4K:16:random 1M:32:seq" \
  timeout 200 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep|^test" $O/writeab-session.txt | tee $O/writeab.txt
echo "writeab done after $(( $(date +%s) - T0 )) s"
export GDIO=$PWD/.dev/bin/gdio
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
cat $f >/dev/null
# The write table on tmpfs with the new default (gdio only: each row beside the plain pwrite of
# the same shape measured just before it; one pass per row; every row verified).
rm -f /dev/shm/gdio-bench-8g.bin
timeout 200 $GDIO bench --sweep --mode write --json --file /tmp/gdio-bench-8g.bin --out /dev/shm/gdio-sweep-out.bin \
  --iterations 1 > $O/sweep-write.json 2>$O/sweep-write.err
echo "sweep exit $?"
python3 -c "
import json; d=json.load(open('$O/sweep-write.json'))
for r in d['results']: print(r.get('io_size'), 'x', r.get('queue_depth'), r.get('pattern'), round(r['gbps'],2), 'GB/s limit', round(r.get('limit_gbps') or 0,2), round(r.get('ratio_to_limit') or 0,2), 'x verified', r['verified'], 'gathered', r.get('gathered_writes'))
" | tee $O/sweep-write.txt
rm -f /dev/shm/gdio-sweep-out.bin
[ $(( $(date +%s) - T0 )) -lt 510 ] && echo "default bench: $(timeout 40 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']} gathered_writes {r.get('gathered_writes')}\" for r in json.load(sys.stdin)['results']))")" | tee $O/bench.txt
echo "total $(( $(date +%s) - T0 )) s"
