f=/tmp/gdio-bench-8g.bin
[ -f $f ] || .dev/bin/gdio make-file $f --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P=/tmp/pcprobe
for rep in 1 2; do
 NSTREAMS=1 $P $f 1024 1 pinned
 MARKER=none NBUF=1 NSTREAMS=1 $P $f 1024 1 pinnedq
  echo -n "HOSTALLOC "; PINALLOC=host MARKER=none NBUF=1 NSTREAMS=1 $P $f 1024 1 pinnedq
 for c in 4 64; do
  MARKER=none NBUF=2 NSTREAMS=1 $P $f $c 12 pinnedq
  echo -n "HOSTALLOC "; PINALLOC=host MARKER=none NBUF=2 NSTREAMS=1 $P $f $c 12 pinnedq
 done
 MARKER=none NBUF=2 NSTREAMS=1 $P $f 64 1 pinnedq
  echo -n "HOSTALLOC "; PINALLOC=host MARKER=none NBUF=2 NSTREAMS=1 $P $f 64 1 pinnedq
 NBUF=2 NSTREAMS=1 $P $f 4 12 bouncehp
  echo -n "HOSTALLOC "; PINALLOC=host NBUF=2 NSTREAMS=1 $P $f 4 12 bouncehp
done 2>&1 | tee $OUT/probe.txt | cut -c1-120
nvidia-smi -q | grep -iE "link|gen|width" | head -12
