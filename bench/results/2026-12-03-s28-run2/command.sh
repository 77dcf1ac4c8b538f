#!/usr/bin/env bash
# Session 28 run 2: the ext4 half of the write table with `gather_writes` on by default (gdio,
# then KvikIO's pwrite futures, compat ON, 16 threads), then issue 9's KvikIO row again if time
# is left (two reps, beside the ring ceiling).
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
log=$O/results.txt; : > $log
f=/tmp/gdio-sweep-8g.bin
[ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
cat $f >/dev/null
timeout 260 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>>$O/gdio-stderr.txt \
  | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='ext4'; print(json.dumps(d))" >> $log
echo ">> gdio ext4: $(( $(date +%s) - T0 )) s"
python3 bench/sweep_summary.py $log
SWEEP_SMALL_BYTES=$((512<<20)) timeout 200 python3 bench/kvikio_peer.py sweep $f 16 1 ext4 write >> $log 2>>$O/kvikio-stderr.txt
echo ">> kvikio ext4: exit $? after $(( $(date +%s) - T0 )) s"
python3 bench/sweep_summary.py $log | tee $O/summary.txt
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && { echo "rep $rep: no time left"; break; }
  echo "rep $rep ring 4 MiB x 12 no CPU copy (hp): $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=1 timeout 30 /tmp/pcprobe $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
rm -f $f.kvikio-out
echo "total $(( $(date +%s) - T0 )) s"
