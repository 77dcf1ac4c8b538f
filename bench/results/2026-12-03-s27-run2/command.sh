#!/usr/bin/env bash
# Session 27 run 2: the build with `gather_writes` on by default. The GPU tests and gdio's whole
# Python suite on the GPU (new wheel), the small-write shapes with the new default against
# `gather_writes` off (alternating, two reps), issue 9's row (two more reps), the default bench.
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
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 450 ] && { echo "rep $rep: no time left"; break; }
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
[ $(( $(date +%s) - T0 )) -lt 510 ] && echo "default bench: $(timeout 40 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']} gathered_writes {r.get('gathered_writes')}\" for r in json.load(sys.stdin)['results']))")" | tee $O/bench.txt
echo "total $(( $(date +%s) - T0 )) s"
