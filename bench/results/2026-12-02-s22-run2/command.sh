f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P=/tmp/pcprobe
for rep in 1 2; do
 for c in 1 2 4 8 16; do for mk in none event; do MARKER=$mk NBUF=2 NSTREAMS=1 $P $f $c 12 pinnedq; done; done
 NBUF=1 NSTREAMS=1 $P $f 2 16 bouncehp
 NBUF=1 NSTREAMS=1 $P $f 4 8 bouncesplit
 NBUF=1 NSTREAMS=1 $P $f 4 8 bouncehp
 NBUF=2 NSTREAMS=1 $P $f 2 12 bouncehp
 NBUF=2 NSTREAMS=1 $P $f 4 6 bouncesplit
 NBUF=2 NSTREAMS=1 $P $f 4 12 bouncehp
done 2>&1 | tee $OUT/probe.txt | awk '{printf "%s %s nbuf%s st%s %sKiB %s %s\n",$1,$2,$4,$6,$8,$10,$11}'
