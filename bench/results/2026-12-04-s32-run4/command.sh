#!/usr/bin/env bash
# Session 32 run 4: `split_into_one_buffer` on against off in ABBA order once more, now at 16
# threads too: KvikIO 26.10 compat OFF through gdio's libcufile at 8 and 16 threads (five timed
# passes each) beside compat ON at both, and `gdio bench` 4 MiB x 8 (run 3: on 37.8-43.7, off
# 41.3-43.2, inside the control row's spread) on the tmpfs file, with the library's summary of
# one untimed 8-thread pass per setting at the end.
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
one() { # setting rep
  local v=$1 rep=$2 s; [ "$v" = on ] && s=true || s=false
  for t in 8 16; do echo "rep $rep t$t OFF on gdio one_buffer=$v: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s LD_PRELOAD=$LIB kv off $t)"; done
  echo "rep $rep 4M x 8 one_buffer=$v: $(GDIO_SPLIT_INTO_ONE_BUFFER=$s row 4M 8)"
}
for rep in 1 2 3 4; do
  if [ $((rep % 2)) = 1 ]; then one on $rep; one off $rep; else one off $rep; one on $rep; fi
  for t in 8 16; do echo "rep $rep t$t KvikIO ON: $(kv on $t)"; done
  [ $(( $(date +%s) - T0 )) -gt 300 ] && { echo "no time for more reps"; break; }
done | tee $O/abba.txt
el abba
for s in true false; do
  rm -f $O/why.log
  GDIO_SPLIT_INTO_ONE_BUFFER=$s CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB \
    python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 8 1 >/dev/null 2>>$O/stderr.txt
  echo "why t8 one_buffer=$s: $(grep -h 'synchronous I/O' $O/why.log | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
