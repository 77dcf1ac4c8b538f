#!/usr/bin/env bash
# Session 26 run 2: run 1's write table again (run 1's sweep ran past its 330 s and its log did
# not come back): gdio's write rows first on tmpfs and ext4, then KvikIO's pwrite futures (compat
# ON, 16 threads) on each while time is left; each table printed as soon as it exists.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
log=$O/results.txt; : > $log
for dir in /dev/shm /tmp; do
  fs=$(stat -f -c %T "$dir" | sed 's/ext2\/ext3/ext4/')
  f=$dir/gdio-sweep-8g.bin
  [ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
  cat $f >/dev/null
  t=$(date +%s)
  timeout 200 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>>$O/gdio-stderr.txt \
    | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='$fs'; print(json.dumps(d))" >> $log
  echo ">> gdio $fs: $(( $(date +%s) - t )) s"
done
python3 bench/sweep_summary.py $log
for dir in /dev/shm /tmp; do
  [ $(( $(date +%s) - T0 )) -gt 380 ] && { echo ">> no time left for KvikIO on $dir"; continue; }
  fs=$(stat -f -c %T "$dir" | sed 's/ext2\/ext3/ext4/')
  t=$(date +%s)
  SWEEP_SMALL_BYTES=$((512<<20)) timeout $(( 540 - ($(date +%s) - T0) )) python3 bench/kvikio_peer.py sweep $dir/gdio-sweep-8g.bin 16 1 $fs write >> $log 2>>$O/kvikio-stderr.txt
  echo ">> kvikio $fs: exit $? $(( $(date +%s) - t )) s"
done
python3 bench/sweep_summary.py $log | tee $O/summary.txt
echo "total $(( $(date +%s) - T0 )) s"
