#!/usr/bin/env bash
# Session 26 run 1: the request-shape table for writes (new: `gdio bench --sweep --mode write`)
# from GPU memory into tmpfs and ext4, beside KvikIO's pwrite futures (compat ON, 16 and 32
# threads); then issue 9's row beside this host's ceilings (three reps); the default bench with
# the write limit that now counts the device->host copy.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,pci.bus_id,memory.total --format=csv,noheader > $O/gpu.txt 2>&1
df -h /dev/shm /tmp > $O/df.txt 2>&1
# The write table: gdio and KvikIO on 8 GiB files in tmpfs and the ext4 page cache.
OUT=$O/s MODE=write DIRS="/dev/shm /tmp" THREADS=16,32 ITER=1 timeout 330 bash bench/sweep-h200.sh >$O/sweep.txt 2>&1
echo "sweep exit $? after $(( $(date +%s) - T0 )) s" | tee -a $O/sweep.txt
cat $O/s/summary.txt
rm -f /dev/shm/gdio-sweep-8g.bin
f=/tmp/gdio-sweep-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 30 /tmp/pcprobe"
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2 3; do
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "rep $rep: no time left"; break; }
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
  echo "rep $rep ring 4 MiB x 12 no CPU copy (hp): $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
[ $(( $(date +%s) - T0 )) -lt 540 ] && echo "default bench: $(timeout 40 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']}\" for r in json.load(sys.stdin)['results']))")" | tee $O/bench.txt
echo "total $(( $(date +%s) - T0 )) s"
