f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 60 /tmp/pcprobe"
for rep in 1 2; do
 NSTREAMS=1 $P $f 1024 1 pinned
 for c in 2 4 8; do for mk in none event; do MARKER=$mk NBUF=2 NSTREAMS=1 $P $f $c 12 pinnedq; done; done
 echo -n "HOSTALLOC "; PINALLOC=host MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq
 MARKER=none NBUF=2 NSTREAMS=0 $P $f 4 12 pinnedq
 MARKER=none NBUF=1 NSTREAMS=1 $P $f 256 4 pinnedq
 NBUF=2 NSTREAMS=1 $P $f 2 12 bouncehp
 NBUF=2 NSTREAMS=1 $P $f 4 12 bouncehp
 echo -n "HOSTALLOC "; PINALLOC=host NBUF=2 NSTREAMS=1 $P $f 4 12 bouncehp
 NBUF=2 NSTREAMS=1 $P $f 4 6 bouncesplit
 NBUF=2 NSTREAMS=1 $P $f 4 16 bouncehp
 NBUF=1 NSTREAMS=1 $P $f 2 16 bouncehp
 NBUF=1 NSTREAMS=1 $P $f 4 8 bouncesplit
 NBUF=1 NSTREAMS=1 $P $f 4 8 bouncehp
done 2>&1 | tee $OUT/probe.txt | sed 's/ GB\/s (/ /; s/without set-up/w\/o setup/' | cut -c1-110
