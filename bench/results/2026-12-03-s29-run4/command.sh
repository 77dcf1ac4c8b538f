#!/usr/bin/env bash
# Session 29 run 4: why did `gdio bench --sweep --mode write` on the 8 GiB ext4 file not finish
# in 150 s (run 2) or 270 s (run 3)? The sweep's write rows one by one, each with its own time
# limit and wall clock, on the build of run 3.
O=$OUT; mkdir -p $O
T0=$(date +%s)
GDIO=$PWD/.dev/bin/gdio
f=/tmp/gdio-sweep-8g.bin
[ -f "$f" ] || $GDIO make-file "$f" --size 8G >/dev/null
cat $f >/dev/null
echo ">> file ready after $(( $(date +%s) - T0 )) s"
for row in "4K 64 random" "64K 64 seq" "1M 32 seq" "1G 2 seq"; do
  read -r io qd pat <<<"$row"
  t=$(date +%s.%N)
  line=$(timeout 90 $GDIO bench --json --file $f --mode write --io-size $io --queue-depth $qd --pattern $pat --iterations 1 2>>$O/stderr-$io.txt \
    | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s in {r['seconds']:.1f} s limit {r['limit_gbps']:.2f} fsync {r['fsync_seconds']:.1f} s gathered {r['gathered_writes']}\")")
  echo "$io x $qd $pat: ${line:-FAILED/timeout} | wall $(python3 -c "print(round($(date +%s.%N)-$t,1))") s"
  [ $(( $(date +%s) - T0 )) -gt 190 ] && { echo "no time left"; break; }
done | tee $O/rows.txt
echo "total $(( $(date +%s) - T0 )) s"
