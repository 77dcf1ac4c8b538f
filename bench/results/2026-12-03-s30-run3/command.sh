#!/usr/bin/env bash
# Session 30 run 3: the write table into ext4 (`gdio bench --sweep --mode write`, 8 GiB file on
# /tmp, every row beside the plain `pwrite` of the same shape, fsync, verified) on session 29's
# final build (032eca5: `gather_write_disk_min_bytes` 48 KiB and adjacent runs), gdio only.
O=$OUT; mkdir -p $O
T0=$(date +%s)
GDIO=$PWD/.dev/bin/gdio
f=/tmp/gdio-sweep-8g.bin
$GDIO make-file "$f" --size 8G >/dev/null
echo "file ready after $(( $(date +%s) - T0 )) s"
timeout 520 $GDIO bench --sweep --mode write --file "$f" --iterations 1 --json > $O/sweep-ext4.json 2>$O/gdio-stderr.txt
echo "sweep exit $? after $(( $(date +%s) - T0 )) s"
grep "gdio bench: row" $O/gdio-stderr.txt
