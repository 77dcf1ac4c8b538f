#!/usr/bin/env bash
# Session 30 run 4: why large writes into ext4 read 0.87-0.88 x the plain `pwrite` in run 3.
# First bench/write-threads-probe.c: 8 GiB into one fresh ext4 file (and tmpfs) by 1-16 threads
# in 4 MiB (the engine's bounce chunk) and 64 MiB calls, the fsync untimed; then `gdio bench`
# 4 MiB x 16 and 1 GiB x 2 writes into a 4 GiB ext4 file, defaults against 4 workers and against
# 16 MiB bounce buffers and chunks, alternating.
O=$OUT; mkdir -p $O
T0=$(date +%s)
cc -O2 -pthread bench/write-threads-probe.c -o /tmp/wtp || exit 1
for fs in /tmp /dev/shm; do
  for c in 4194304 67108864; do
    for t in 1 2 4 8 12 16; do
      [ $fs = /dev/shm ] && [ $c = 67108864 ] && continue
      echo "$fs $(timeout 40 /tmp/wtp $fs/wtp.bin 8 $t $c)"
      rm -f $fs/wtp.bin
    done
  done
done | tee $O/probe.txt
echo "probe done after $(( $(date +%s) - T0 )) s"
GDIO=$PWD/.dev/bin/gdio
f=/tmp/gdio-w4g.bin
$GDIO make-file "$f" --size 4G >/dev/null
for rep in 1 2; do
  for shape in "4M 16" "1G 2"; do
    read -r io qd <<<"$shape"
    for s in GDIO_NONE=1 GDIO_THREADS=4 GDIO_BOUNCE_BUFFER_SIZE=16777216,GDIO_BUFFERED_CHUNK_SIZE=16777216; do
      line=$(env ${s//,/ } timeout 60 $GDIO bench --json --file $f --mode write --io-size $io --queue-depth $qd --iterations 1 2>>$O/stderr.txt \
        | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s limit {r['limit_gbps']:.2f} ({r['ratio_to_limit']:.2f} x) fsync {r['fsync_seconds']:.1f} s verified {r['verified']}\")")
      echo "rep $rep write $io x $qd | $s | ${line:-failed}"
      [ $(( $(date +%s) - T0 )) -gt 380 ] && break 3
    done
  done
done | tee $O/ab.txt
echo "total $(( $(date +%s) - T0 )) s"
