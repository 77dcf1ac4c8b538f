#!/usr/bin/env bash
# Session 38 run 3: issue 9's row at every thread count KvikIO users set (1 2 4 8 16 32; its
# default is 1), two reps beside the link and ring (`kvrow`); then the row at 16 threads with
# page-cache pins opted in (GDIO_PAGE_CACHE_PINS_MAX_BYTES=16 GiB: one DMA straight out of the
# registered page cache, no CPU copy), six passes 1 s apart so that the pins can register in
# the quiet, against the defaults and KvikIO ON with the same gaps, ABBA.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
OUT=$O/k KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=2 KVROW_WHY=0 KVROW_BUDGET_S=200 timeout 400 bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt
el kvrow
export PYTHONPATH=/tmp/site
cat $f > /dev/null
p() { python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(round(r['gbps'],2), 'passes', r.get('pass_gbps'), 'verified', r['verified'])"; }
for rep in 1 2; do
  order="pins off on"; [ $rep = 2 ] && order="on off pins"
  for s in $order; do
    case $s in
      pins) echo "rep $rep t16 OFF on gdio, pins 16 GiB: $(GAP_MS=1000 GDIO_PAGE_CACHE_PINS_MAX_BYTES=17179869184 LD_PRELOAD=$LIB timeout 90 python3 bench/cufile_kvikio_read.py off $f 16 6 2>>$O/stderr.txt | p)" ;;
      off) echo "rep $rep t16 OFF on gdio, defaults: $(GAP_MS=1000 LD_PRELOAD=$LIB timeout 90 python3 bench/cufile_kvikio_read.py off $f 16 6 2>>$O/stderr.txt | p)" ;;
      on) echo "rep $rep t16 KvikIO ON: $(GAP_MS=1000 timeout 90 python3 bench/cufile_kvikio_read.py on $f 16 6 2>>$O/stderr.txt | p)" ;;
    esac
  done
done | tee $O/pins.txt
el total
