#!/usr/bin/env bash
# Session 29 run 2: the write tables with the final build (`gather_write_disk_min_bytes` 64 KiB):
# `gdio bench --sweep --mode write` on the 8 GiB files of ext4 and tmpfs beside KvikIO's
# `pwrite` futures (compat ON, 16 threads) in the same run; then small writes into ext4 at the
# sizes around the rule's 64 KiB minimum that session 28 did not measure (48 KiB), gathered
# (GDIO_GATHER_WRITE_DISK_MIN_BYTES=0) against the default, alternating, two reps.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
log=$O/results.txt; : > $log
for f in /tmp/gdio-sweep-8g.bin /dev/shm/gdio-sweep-8g.bin; do
  fs=ext4; case $f in /dev/shm/*) fs=tmpfs ;; esac
  [ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
  cat $f >/dev/null
  timeout 150 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json 2>>$O/gdio-stderr.txt \
    | python3 -c "import json,sys; d=json.load(sys.stdin); d['fs']='$fs'; print(json.dumps(d))" >> $log
  echo ">> gdio $fs: $(( $(date +%s) - T0 )) s"
  SWEEP_SMALL_BYTES=$((512<<20)) timeout 120 python3 bench/kvikio_peer.py sweep $f 16 1 $fs write >> $log 2>>$O/kvikio-stderr.txt
  echo ">> kvikio $fs: exit $? after $(( $(date +%s) - T0 )) s"
  rm -f $f.kvikio-out
done
python3 bench/sweep_summary.py $log | tee $O/summary.txt
rm -f /dev/shm/gdio-sweep-8g.bin
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 WRITEAB_FILE=/tmp/gdio-writeab.bin \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITE_DISK_MIN_BYTES=0" \
  WRITEAB_SHAPES="48K:32:random 48K:64:seq" \
  timeout $(( 560 - ($(date +%s) - T0) )) bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep|^test" $O/w/logs/writeab.txt | tee $O/writeab.txt
echo "total $(( $(date +%s) - T0 )) s"
