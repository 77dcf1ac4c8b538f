#!/usr/bin/env bash
# Session 37 run 4: run 3 found the probe's ring DMA 3.8-7 % faster out of cuMemHostAlloc
# buffers than out of registered huge pages (4 and 16 MiB x 12 threads; pread + copy 52.1-52.4
# against 49.3-50.9), whatever the flags, while session 35's engine gained nothing from
# `pinned_huge_pages=false`. Where does the engine lose it? 1. the probe's whole lines (mean
# pread, wait and copy-queue time per chunk) for both buffer kinds at 12 and 16 threads;
# 2. ABBA, KvikIO compat OFF through gdio at 16 threads and `gdio bench` 4 MiB x 16, defaults
# against pinned_huge_pages=false; 3. the library's summary (3 passes) for both.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
f=/tmp/gdio-bench-8g.bin
for x in $f /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
cat $f > /dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
for pass in 1 2; do for t in 12 16; do for a in hp host; do
  echo "pass $pass $a t$t: $(PINALLOC=$a NBUF=2 NSTREAMS=1 timeout 40 /tmp/pcprobe $f 4 $t bouncehp 2>&1 | tail -1)"
done; done; done | tee $O/probe.txt
el probe
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=150 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" timeout 240 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
for v in GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false; do
  rm -f $O/why.log
  (export $v; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 40 python3 bench/cufile_kvikio_read.py off $f 16 3 2>>$O/why-stderr.txt | tail -1 | cut -c1-200)
  echo "why t16 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
