#!/usr/bin/env bash
# Session 25 run 2: the Python GIL test with its new floor; issue 9's row beside the ceilings
# of this host in one run (the 1 GiB pinned copy, the 4 MiB bounce ring with no CPU copy out of
# registered huge pages and out of cuMemHostAlloc buffers, KvikIO compat ON and OFF through
# gdio at 8 and 16 threads, three reps); the crowd rule (session 24's unrun run 7, JSON this
# time); the default bench and a cold read; the request-shape table (tmpfs and ext4, hot).
O=$OUT; mkdir -p $O
export GDIO=$PWD/.dev/bin/gdio
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gdsite .dev/wheel/gdio-*.whl
(cd python/tests && PYTHONPATH=/tmp/gdsite:/tmp/site GDIO_REQUIRE_GPU=1 timeout 60 python3 -m pytest -q -p no:cacheprovider test_gil.py >$O/pytest-gil.txt 2>&1; echo "pytest test_gil: exit $? $(tail -1 $O/pytest-gil.txt)")
f=/tmp/gdio-bench-8g.bin; [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
[ -f /dev/shm/gdio-bench-8g.bin ] || $GDIO make-file /dev/shm/gdio-bench-8g.bin --size 8G >/dev/null
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || exit 1
P="timeout 30 /tmp/pcprobe"
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
gb() { python3 -c "import json,sys; print(round(json.loads(sys.stdin.readlines()[-1])['gbps'],2))"; }
for rep in 1 2 3; do
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
  for a in hp host; do
    echo "rep $rep ring 4 MiB x 12 no CPU copy ($a): $(PINALLOC=$a MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  done
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
g1=/dev/shm/g1.bin; [ -f $g1 ] || $GDIO make-file $g1 --size 1G >/dev/null
for rep in 1 2; do
  for shape in "64K 64" "64K 16" "256K 32" "256K 16" "4K 64" "4K 8"; do
    set -- $shape
    for v in GDIO_NONE=1 GDIO_INLINE_MAX_BYTES=0 GDIO_INLINE_MAX_CALLERS=0; do
      echo "rep $rep $1 x $2 | $v | $(env $v timeout 30 $GDIO bench --json --file $g1 --mode read --io-size $1 --queue-depth $2 --iterations 2 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(f\"{r['gbps']:.2f} GB/s, {r.get('inline_requests')} inline, {r.get('inline_busy')} sent for a crowd\")")"
    done
  done
done 2>&1 | tee $O/crowd.txt
for rep in 1 2; do echo "rep $rep default bench: $(timeout 60 $GDIO bench --json | python3 -c "import json,sys; print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s limit {r.get('limit_gbps')} verified {r['verified']}\" for r in json.load(sys.stdin)['results']))")"; done | tee $O/bench.txt
OUT=$O/c SKIP_FILES=1 timeout 60 bash bench/gpu-session.sh cold >/dev/null 2>&1; cat $O/c/logs/cold.txt | tee -a $O/bench.txt
OUT=$O/s DIRS="/dev/shm /tmp" THREADS=16,32 ITER=1 SWEEP_LIMIT=575 SKIP_FILES=1 timeout 250 bash bench/gpu-session.sh sweep >$O/sweep.txt 2>&1
tail -20 $O/s/summary.txt
