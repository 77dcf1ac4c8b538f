#!/usr/bin/env bash
# Session 40 run 1: where a KvikIO call's time goes beside `gdio bench` of the same shape.
# Per rep (four, order reversed every other rep) and per thread count (1 4 16): `gdio bench`
# 4 MiB x N from the ext4 page cache; bench/cufile-loop.c (cuFileRead of 4 MiB pieces in a C
# loop, N threads, through gdio's libcufile) on a plain descriptor, an O_DIRECT one (as KvikIO
# registers) and that with the buffer registered; KvikIO 26.10 compat
# OFF through gdio's libcufile. Three timed passes each over the 8 GiB file. The library's
# summary (CUFILE_LOGGING_LEVEL=INFO) gives the time inside cuFileRead; the loop gives it
# around the call.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
cc -O2 -pthread -Icrates/gdio-cufile/include bench/cufile-loop.c -o /tmp/cufile-loop -ldl || exit 1
nproc; lscpu | grep -iE 'numa node|thread.s. per core'
cat $f > /dev/null
el setup
call() { grep -h 'synchronous I/O' "$1" 2>/dev/null | grep -oE 'a call [0-9.]+ ms' | head -1 | grep -oE '[0-9.]+'; }
b() { timeout 60 $GDIO bench --json --file $f --mode read --iterations 3 --io-size 4M --queue-depth $1 2>>$O/stderr.txt | python3 -c "
import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f}\" + ('' if r['verified'] else ' UNVERIFIED'))"; }
l() { local log=$O/loop-$3-t$1-r$2.log; rm -f $log
  local j; j=$(CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$log timeout 60 /tmp/cufile-loop $f 4 $1 3 $3 2>>$O/stderr.txt)
  echo "$j" >> $O/loop.jsonl
  echo "$j" | python3 -c "
import json,sys; r=json.loads(sys.stdin.read()); print(f\"{r['gbps']:.2f} around {r['call_us_mean']:.0f}/{r['call_us_median']:.0f}us\" + ('' if r['verified'] else ' UNVERIFIED'))" 2>/dev/null
  echo "inside $(call $log)ms"; }
k() { local log=$O/kvikio-t$1-r$2.log; rm -f $log
  CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$log LD_PRELOAD=$LIB timeout 90 python3 bench/cufile_kvikio_read.py off $f $1 3 2>>$O/stderr.txt | tee -a $O/kvikio.jsonl | python3 -c "
import json,sys; r=json.loads(sys.stdin.readlines()[-1]); print(f\"{r['gbps']:.2f}\" + ('' if r.get('verified', True) else ' UNVERIFIED'))"
  echo "inside $(call $log)ms"; }
for rep in 1 2 3 4; do
  [ $(( $(date +%s) - T0 )) -gt 300 ] && { echo "rep $rep: no time left"; break; }
  for t in 1 4 16; do
    if [ $((rep % 2)) = 1 ]; then
      B=$(b $t); L=$(l $t $rep plain | tr '\n' ' '); D=$(l $t $rep direct | tr '\n' ' '); K=$(k $t $rep | tr '\n' ' '); R=$(l $t $rep reg | tr '\n' ' ')
    else
      R=$(l $t $rep reg | tr '\n' ' '); K=$(k $t $rep | tr '\n' ' '); D=$(l $t $rep direct | tr '\n' ' '); L=$(l $t $rep plain | tr '\n' ' '); B=$(b $t)
    fi
    echo "rep $rep t$t | bench $B | loop $L | loop direct $D | loop direct+reg $R | KvikIO OFF $K"
  done
done | tee $O/decomp.txt
el total
