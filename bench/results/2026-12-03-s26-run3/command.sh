#!/usr/bin/env bash
# Session 26 run 3: the ext4 half of run 2's write table (run 2's gdio ext4 sweep took 206 s,
# past its 200 s timeout): gdio, then KvikIO's pwrite futures (compat ON, 16 threads) if time is left.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
log=$O/results.txt; : > $log
f=/tmp/gdio-sweep-8g.bin
[ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
cat $f >/dev/null
timeout 330 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>>$O/gdio-stderr.txt \
  | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='ext4'; print(json.dumps(d))" >> $log
echo ">> gdio ext4: $(( $(date +%s) - T0 )) s"
python3 bench/sweep_summary.py $log
if [ $(( $(date +%s) - T0 )) -lt 330 ]; then
  SWEEP_SMALL_BYTES=$((512<<20)) timeout $(( 420 - ($(date +%s) - T0) )) python3 bench/kvikio_peer.py sweep $f 16 1 ext4 write >> $log 2>>$O/kvikio-stderr.txt
  echo ">> kvikio ext4: exit $?"
  python3 bench/sweep_summary.py $log | tee $O/summary.txt
fi
echo "total $(( $(date +%s) - T0 )) s"
