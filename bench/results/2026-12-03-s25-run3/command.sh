#!/usr/bin/env bash
# Session 25 run 3: run 2's issue-9 rows again (run 2 left PYTHONPATH unset for the peers' wheels, so
# KvikIO did not import): ceilings of this host and KvikIO compat ON / OFF through gdio, four reps.
O=$OUT; mkdir -p $O
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /dev/shm/gdio-bench-8g.bin ] || $GDIO make-file /dev/shm/gdio-bench-8g.bin --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 30 /tmp/pcprobe"
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2 3 4; do
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | cut -c1-110)"
  for a in hp host; do
    echo "rep $rep ring 4 MiB x 12 no CPU copy ($a): $(PINALLOC=$a MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  done
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
