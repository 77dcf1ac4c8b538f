#!/usr/bin/env bash
# As run: `OUT=$OUT timeout 420 bash bench/results/2026-12-05-s45-run2/command.sh`, on the warm
# machine of run 1, after a prefix meant to run the default `gdio bench` twice more that failed to
# start it (it named the binary through $PWD after a `cd /tmp`): those two rows are missing.
# Session 45 run 2, the build of run 1: 1. gdio's Python suite on the GPU (the Ctrl-C tests
# of session 44 among them); 2. `polling_callers_max` 3 (compiled in) against 1 where it was never measured: ABBA, two
# reps, `gdio bench` 4 MiB × 1/2/3, 2 MiB × 2, 1 MiB × 2 from tmpfs (and KvikIO OFF at two
# threads from ext4), then cold `O_DIRECT` reads (`--cold`, the page cache dropped before each
# timed read) of a 2 GiB ext4 file, 4 MiB × 1/2/3. Logs tarred under $OUT.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin shm=/dev/shm/gdio-bench-4g.bin cold=/tmp/gdio-cold-2g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f $shm ] || $GDIO make-file $shm --size 4G >/dev/null
[ -f $cold ] || $GDIO make-file $cold --size 2G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
nvidia-smi --query-gpu=name --format=csv,noheader
el setup
( python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
  && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl \
  && cd python/tests && GDIO_REQUIRE_GPU=1 PYTHONPATH=/tmp/gdsite:/tmp/site timeout 110 python3 -m pytest -q -p no:cacheprovider . ) > $O/pytest.txt 2>&1
tail -4 $O/pytest.txt
el pytest
mkdir -p $O/a
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=60 ABBA_THREADS="2" ABBA_PASSES=3 ABBA_FILE=$f ABBA_BENCH_FILE=$shm \
  ABBA_SHAPES="4M:1 4M:2 4M:3 2M:2 1M:2" ABBA_SETTINGS="GDIO_POLLING_CALLERS_MAX=1 GDIO_POLLING_CALLERS_MAX=3" \
  timeout 150 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba.txt
el tmpfs
for rep in 1 2; do
  order="1 3"; [ $rep = 2 ] && order="3 1"
  for v in $order; do for n in 1 2 3; do
    echo "rep $rep cold 4M x $n polling_callers_max $v: $(GDIO_POLLING_CALLERS_MAX=$v timeout 30 $GDIO bench --json --cold --file $cold --mode read --iterations 2 --io-size 4M --queue-depth $n 2>>$O/stderr.txt | python3 -c "
import json,sys; d=json.load(sys.stdin); r=d['results'][0]; print(f\"{r['gbps']:.2f} GB/s verified {r['verified']} limit {r.get('limit_gbps') or 0:.2f}\")")"
  done; done
done | tee $O/cold.txt
el total
for d in a; do [ -d $O/$d/logs ] && tar czf $O/$d-logs.tgz -C $O/$d logs && rm -rf $O/$d/logs; done
