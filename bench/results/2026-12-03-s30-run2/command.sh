#!/usr/bin/env bash
# Session 30 run 2: session 29's final build (032eca5). The default `gdio bench`; the write table
# on tmpfs (`gdio bench --sweep --mode write`, 8 GiB, every row beside the plain `pwrite` of the
# same shape, verified; first time with adjacent runs) beside KvikIO's `pwrite` futures (compat
# ON, 16 threads); then why 4 MiB x 16 writes into tmpfs lag the plain `pwrite` (session 27:
# 0.83 x): 16 workers (as many as the plain `pwrite`'s threads) against the default 12,
# alternating, on a 4 GiB tmpfs file.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
echo "default bench: $(timeout 60 $GDIO bench --json 2>$O/bench-stderr.txt | python3 -c "import json,sys; print(' | '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']}\" for r in json.load(sys.stdin)['results']))")"
el bench
log=$O/results.txt; : > $log
f=/dev/shm/gdio-sweep-8g.bin
$GDIO make-file "$f" --size 8G >/dev/null
timeout 240 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>$O/gdio-stderr.txt \
  | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='tmpfs'; print(json.dumps(d))" >> $log
grep "gdio bench: row" $O/gdio-stderr.txt
el gdio-tmpfs-sweep
SWEEP_SMALL_BYTES=$((512<<20)) timeout 150 python3 bench/kvikio_peer.py sweep $f 16 1 tmpfs write >> $log 2>$O/kvikio-stderr.txt
echo "kvikio exit $?"
python3 bench/sweep_summary.py $log | tee $O/summary.txt
rm -f $f $f.kvikio-out
el kvikio-tmpfs-sweep
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/dev/shm/gdio-writeab-4g.bin WRITEAB_SIZE=4G \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_THREADS=16" WRITEAB_SHAPES="4M:16:seq 16M:8:seq 1M:32:seq" \
  timeout $(( 575 - ($(date +%s) - T0) )) bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep" $O/w/logs/writeab.txt | tee $O/writeab-tmpfs-4g.txt
tar czf $O/w.tgz -C $O w && rm -rf $O/w
el total
