#!/usr/bin/env bash
# Session 29 run 3: the build with `gather_write_disk_min_bytes` 48 KiB (run 2: 48 KiB writes
# into ext4 gained from gathering). First small writes into a 512 MiB ext4 file, the new
# default against every small write gathered (0) and against the old minimum (64 KiB),
# alternating, two reps; then the ext4 write table (`gdio bench --sweep --mode write`, 8 GiB)
# beside KvikIO's `pwrite` futures (compat ON, 16 threads).
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITE_DISK_MIN_BYTES=0 GDIO_GATHER_WRITE_DISK_MIN_BYTES=65536" \
  WRITEAB_SHAPES="32K:32:random 48K:32:random 48K:64:seq" \
  timeout 150 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep|^test" $O/w/logs/writeab.txt | tee $O/writeab.txt
echo ">> writeab: $(( $(date +%s) - T0 )) s"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
log=$O/results.txt; : > $log
f=/tmp/gdio-sweep-8g.bin
[ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
cat $f >/dev/null
timeout 270 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>>$O/gdio-stderr.txt \
  | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='ext4'; print(json.dumps(d))" >> $log
echo ">> gdio ext4: $(( $(date +%s) - T0 )) s"
python3 bench/sweep_summary.py $log
SWEEP_SMALL_BYTES=$((512<<20)) timeout $(( 570 - ($(date +%s) - T0) )) python3 bench/kvikio_peer.py sweep $f 16 1 ext4 write >> $log 2>>$O/kvikio-stderr.txt
echo ">> kvikio ext4: exit $? after $(( $(date +%s) - T0 )) s"
python3 bench/sweep_summary.py $log | tee $O/summary.txt
