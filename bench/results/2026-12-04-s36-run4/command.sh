#!/usr/bin/env bash
# Session 36 run 4 (final build, pins off by default), the rows not measured yet:
# 1. cold O_DIRECT reads (`gdio bench --cold`, a 2 GiB ext4 file) 4 MiB x 8 and 2 MiB x 8 with
#    split pieces of 1 MiB (default) against 2 MiB, ABBA, two reps;
# 2. is the slow first tmpfs pass of runs 1-3 the pins' or the first tmpfs process's? KvikIO
#    OFF t16, tmpfs, alternating pins off / on / off / on, every pass;
# 3. `gdio bench` from a tmpfs mounted huge=within_size (the lever `gdio check` names) against
#    /dev/shm (4 KiB pages), 4 MiB x 8 and 64 MiB x 4, ABBA, two reps;
# 4. 2 MiB x 16 with split pieces of 1 MiB against 2 MiB from tmpfs and ext4, ABBA, two reps.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
$GDIO make-file /tmp/cold-2g.bin --size 2G >/dev/null
mkdir -p /mnt/hp && mount -t tmpfs -o huge=within_size,size=10g none /mnt/hp && $GDIO make-file /mnt/hp/gdio-bench-8g.bin --size 8G >/dev/null
cat /sys/kernel/mm/transparent_hugepage/shmem_enabled; grep -i -E "ShmemHugePages|ShmemPmdMapped" /proc/meminfo
$GDIO check /mnt/hp/gdio-bench-8g.bin 2>&1 | grep -i "tmpfs pages"; $GDIO check /dev/shm/gdio-bench-8g.bin 2>&1 | grep -i "tmpfs pages"
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
el setup
row() { # label env file size depth [extra]
  echo "$1 $3 $4 x $5: $(env $2 $GDIO bench --json --file $3 --mode read --iterations 2 --io-size $4 --queue-depth $5 $6 2>>$O/stderr.txt | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
print(f\"{r['gbps']:.2f} split {r.get('split_reads')} direct {r.get('direct_bytes')} verified {r['verified']}\")")"
}
for rep in 1 2; do
  order="1048576 2097152"; [ $rep = 2 ] && order="2097152 1048576"
  for s in $order; do
    row "rep $rep cold split $s" GDIO_SPLIT_MIN_BYTES=$s /tmp/cold-2g.bin 4M 8 --cold
    row "rep $rep cold split $s" GDIO_SPLIT_MIN_BYTES=$s /tmp/cold-2g.bin 2M 8 --cold
  done
done | tee $O/cold.txt
el cold
for pins in 0 17179869184 0 17179869184; do
  echo "tmpfs t16 pins $pins: $(GDIO_PAGE_CACHE_PINS_MAX_BYTES=$pins LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 60 python3 bench/cufile_kvikio_read.py off /dev/shm/gdio-bench-8g.bin 16 2 2>>$O/stderr.txt | tail -1 | python3 -c "
import json,sys; r=json.loads(sys.stdin.read()); print(r['gbps'], 'verified', r['verified'], 'passes', r['pass_gbps'])")"
done | tee $O/tmpfs-first.txt
el tmpfs-first
for rep in 1 2; do
  order="/dev/shm /mnt/hp"; [ $rep = 2 ] && order="/mnt/hp /dev/shm"
  for d in $order; do
    row "rep $rep" GDIO_NONE=1 $d/gdio-bench-8g.bin 4M 8
    row "rep $rep" GDIO_NONE=1 $d/gdio-bench-8g.bin 64M 4
  done
done | tee $O/hugetmpfs.txt
el hugetmpfs
for rep in 1 2; do
  order="1048576 2097152"; [ $rep = 2 ] && order="2097152 1048576"
  for s in $order; do
    row "rep $rep split $s" GDIO_SPLIT_MIN_BYTES=$s /dev/shm/gdio-bench-8g.bin 2M 16
    row "rep $rep split $s" GDIO_SPLIT_MIN_BYTES=$s /tmp/gdio-bench-8g.bin 2M 16
  done
done | tee $O/split2m.txt
el total
