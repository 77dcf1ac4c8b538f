#!/usr/bin/env bash
# Session 32 run 3: `split_into_one_buffer` on (the build's default) against off again, in
# ABBA order (run 1 ran "on" first in every pair, and its control row, 8 MiB x 8, whose tasks
# do not fit one buffer and so take the same path either way, read 4-12 % lower in the first
# place of each pair). Four reps of: KvikIO 26.10 compat OFF through gdio's libcufile at 8
# threads (five timed passes each, median and best), KvikIO compat ON at 8 threads, `gdio bench`
# 4 MiB x 8 and the 8 MiB x 8 control on the tmpfs file; then the default bench per setting.
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
kv() { python3 bench/cufile_kvikio_read.py "$1" /tmp/gdio-bench-8g.bin 8 5 2>>$O/stderr.txt | python3 -c "import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(f\"{r['gbps']:.2f} best {r['best_gbps']:.2f} verified {r['verified']}\")"; }
row() { $GDIO bench --json --file /dev/shm/gdio-bench-8g.bin --mode read --iterations 3 --io-size $1 --queue-depth $2 2>>$O/stderr.txt | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} split {r.get('split_reads')} helped {r.get('split_pieces_helped')} verified {r['verified']}\")"; }
one() { # setting rep
  local v=$1 rep=$2 s; [ "$v" = on ] && s=true || s=false
  echo "rep $rep t8 OFF on gdio one_buffer=$v: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s LD_PRELOAD=$LIB kv off)"
  echo "rep $rep 4M x 8 one_buffer=$v: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s row 4M 8)"
  echo "rep $rep 8M x 8 one_buffer=$v: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s row 8M 8)"
}
for rep in 1 2 3 4; do
  if [ $((rep % 2)) = 1 ]; then one on $rep; one off $rep; else one off $rep; one on $rep; fi
  echo "rep $rep t8 KvikIO ON: $(kv on)"
  [ $(( $(date +%s) - T0 )) -gt 430 ] && { echo "no time for more reps"; break; }
done | tee $O/abba.txt
el abba
for s in true false false true; do
  echo "default bench one_buffer=$s: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s timeout 40 $GDIO bench --json 2>>$O/stderr.txt | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s (verified {r['verified']})\" for r in json.load(sys.stdin)['results']))")"
  [ $(( $(date +%s) - T0 )) -gt 530 ] && break
done | tee $O/default.txt
el total
