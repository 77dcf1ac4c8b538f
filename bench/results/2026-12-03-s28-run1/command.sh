#!/usr/bin/env bash
# Session 28 run 1: issue 9's checks with `gather_writes` on by default (session 27's build):
# KvikIO 26.10's own suite, compat OFF through gdio's libcufile (with the HTTP/S3 test
# packages), torch.cuda.gds round trips and the 8 GiB load; then the 16 KiB-ish random write
# rows with three reps (default against `gather_writes` off); then issue 9's KvikIO row beside
# this host's ceilings (three reps).
O=$OUT; mkdir -p $O
T0=$(date +%s)
OUT=$O/c CUFILE_PARTS="kvikio-tests torch" timeout 200 bash bench/gpu-session.sh cufile > $O/cufile-session.txt 2>&1
cat $O/c/summary.txt; tail -25 $O/c/logs/cufile.txt
grep -E "^(FAILED|ERROR)" $O/c/logs/cufile/kvikio-tests.txt | head -20
echo "cufile done after $(( $(date +%s) - T0 )) s"
OUT=$O/w SKIP_FILES=1 WRITEAB_REPS=3 WRITEAB_SETTINGS="GDIO_NONE=1 GDIO_GATHER_WRITES=false" \
  WRITEAB_SHAPES="16K:32:random 16K:64:random 32K:32:random" \
  timeout 170 bash bench/gpu-session.sh writeab > $O/writeab-session.txt 2>&1
grep -E "^rep|^test" $O/w/logs/writeab.txt | tee $O/writeab.txt
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
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { echo "rep $rep: no time left"; break; }
  echo "rep $rep pinned 1 GiB copies: $(NSTREAMS=1 $P $f 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"
  echo "rep $rep ring 4 MiB x 12 no CPU copy (hp): $(PINALLOC=hp MARKER=none NBUF=2 NSTREAMS=1 $P $f 4 12 pinnedq 2>&1 | tail -1 | grep -oE '[0-9.]+ without' | head -1)"
  for t in 8 16; do
    on=$(python3 bench/cufile_kvikio_read.py on $f $t 3 2>>$O/stderr.txt | gb)
    off=$(LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/stderr.txt | gb)
    echo "rep $rep t$t KvikIO ON $on | OFF on gdio $off | ratio $(python3 -c "print(round($off/$on,3))")"
  done
done 2>&1 | tee $O/issue9.txt
echo "total $(( $(date +%s) - T0 )) s"
