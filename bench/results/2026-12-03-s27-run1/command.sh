#!/usr/bin/env bash
# Session 27 run 1: session 26's build on the GPU. The GPU tests (the CUDA batch copy moved into
# one helper for both directions; gathered writes are new), then the A/B of small writes out of
# GPU memory (`gather_writes` batched and per piece, the crowd rule) and the GPU tests of gathered
# writes, then issue 9's row beside this host's ceilings (three reps) and the default bench.
O=$OUT; mkdir -p $O
T0=$(date +%s)
OUT=$O/session timeout 150 bash bench/gpu-session.sh setup tests > $O/session.txt 2>&1
cat $O/session/summary.txt
grep -h -E "FAILED|panicked" $O/session/logs/test-*.log | head -20
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=2 timeout 240 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
cat $O/w/logs/writeab.txt
echo "writeab done after $(( $(date +%s) - T0 )) s"
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 30 /tmp/pcprobe"
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2 3; do
  [ $(( $(date +%s) - T0 )) -gt 440 ] && { echo "rep $rep: no time left"; break; }
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
  echo "rep $rep ring 4 MiB x 12 no CPU copy (hp): $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
[ $(( $(date +%s) - T0 )) -lt 500 ] && echo "default bench: $(timeout 40 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']}\" for r in json.load(sys.stdin)['results']))")" | tee $O/bench.txt
echo "total $(( $(date +%s) - T0 )) s"
