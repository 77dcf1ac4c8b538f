#!/usr/bin/env bash
# Session 32 run 6: `split_pieces_per_worker` 1 against 4 once more, ABBA (run 5 ran on a slower
# machine, KvikIO compat ON at 8 threads 34.5-39.1 GB/s against 41-42 in runs 3-4, and put 4
# ahead by 5 % on the means of 8-thread KvikIO and 4 MiB x 8, inside a wide spread): KvikIO
# 26.10 compat OFF through gdio's libcufile at 8 and 16 threads, `gdio bench` 4 MiB x 8 on
# tmpfs, KvikIO compat ON at 8 and 16 threads once per rep.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
cat /tmp/gdio-bench-8g.bin > /dev/null
el files
kv() { python3 bench/cufile_kvikio_read.py "$1" /tmp/gdio-bench-8g.bin "$2" 5 2>>$O/stderr.txt | python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(f\"{r['gbps']:.2f} best {r['best_gbps']:.2f} verified {r['verified']}\")"; }
row() { $GDIO bench --json --file /dev/shm/gdio-bench-8g.bin --mode read --iterations 3 --io-size $1 --queue-depth $2 2>>$O/stderr.txt | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} split {r.get('split_reads')} helped {r.get('split_pieces_helped')} verified {r['verified']}\")"; }
one() { # pieces-per-worker rep
  local v=$1 rep=$2
  for t in 8 16; do echo "rep $rep t$t OFF on gdio per=$v: $(GDIO_SPLIT_PIECES_PER_WORKER=$v LD_PRELOAD=$LIB kv off $t)"; done
  echo "rep $rep 4M x 8 per=$v: $(GDIO_SPLIT_PIECES_PER_WORKER=$v row 4M 8)"
}
for rep in 1 2 3 4; do
  if [ $((rep % 2)) = 1 ]; then order="1 4"; else order="4 1"; fi
  for v in $order; do one $v $rep; done
  for t in 8 16; do echo "rep $rep t$t KvikIO ON: $(kv on $t)"; done
  [ $(( $(date +%s) - T0 )) -gt 150 ] && { echo "no time for more reps"; break; }
done | tee $O/abba.txt
el total
