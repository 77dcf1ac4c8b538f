#!/usr/bin/env bash
# Session 31 run 3: the build with `file_writers` 2 (run 1: 2 beat 4 and no limit in every large
# ext4 write row). KvikIO 26.10's suite compat OFF through gdio's libcufile again, now with its
# HTTP test packages (run 2's .whl lacked them), and the torch.cuda.gds checks; the default
# `gdio bench`; the write tables into ext4 and tmpfs (`gdio bench --sweep --mode write`, 8 GiB,
# every row beside the plain `pwrite` of its shape, verified); then `file_writers` 2 (default)
# against 4 and 1 on a 2 GiB tmpfs file, alternating, with the time left.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
[ -f /tmp/gdio-bench-8g.bin ] || $GDIO make-file /tmp/gdio-bench-8g.bin --size 8G >/dev/null
OUT=$O/c SKIP_FILES=1 CUFILE_PARTS="kvikio-tests torch" timeout 120 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
tail -6 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | head -10
el cufile
echo "default bench: $(cd /tmp && timeout 60 $GDIO bench --json 2>$O/bench-stderr.txt | python3 -c "import json,sys; print(' | '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']} writers {r.get('most_writers_at_once')}\" for r in json.load(sys.stdin)['results']))")"
el default-bench
rm -f /tmp/gdio-bench-8g.bin
for fs in ext4 tmpfs; do
  f=/tmp/gdio-sweep-8g.bin; lim=240; [ $fs = tmpfs ] && { f=/dev/shm/gdio-sweep-8g.bin; lim=150; }
  $GDIO make-file "$f" --size 8G >/dev/null
  timeout $lim $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json > $O/sweep-$fs.json 2>$O/gdio-stderr-$fs.txt
  echo "$fs sweep exit $?"
  grep "gdio bench: row" $O/gdio-stderr-$fs.txt
  rm -f "$f"
  el sweep-$fs
done
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && OUT=$O/wt SKIP_FILES=1 WRITEAB_REPS=3 WRITEAB_TESTS=0 WRITEAB_FILE=/dev/shm/gdio-w2g.bin WRITEAB_SIZE=2G \
  WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_FILE_WRITERS=4 GDIO_FILE_WRITERS=1" WRITEAB_SHAPES="4M:16:seq 1G:2:seq" \
  timeout $left bash bench/gpu-session.sh writeab > $O/writeab-tmpfs-session.txt 2>&1
grep -E "^rep" $O/wt/logs/writeab.txt | tee $O/writeab-tmpfs.txt
el total
tar czf $O/logs.tgz -C $O c/logs 2>/dev/null; rm -rf $O/c $O/wt
