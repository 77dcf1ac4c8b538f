#!/usr/bin/env bash
# Session 38 run 1: does the GPU pull gdio's bounce buffers faster with its SMs than with a
# copy engine? bench/h2d-sm-probe.cu (nvcc here): the 1 GiB link each way; the 4 MiB ring
# without a file (NOFILE) and with pread from the cached ext4 file, copy engine (ce) against
# a copy kernel (sm) of 66 / 132 / 264 blocks, cuMemHostAlloc (host) and registered huge
# pages (hp), 12 and 16 threads; then KvikIO compat ON and OFF through gdio at 16 threads.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
for x in $f /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
cat $f > /dev/null
nvcc -O2 -o /tmp/smprobe bench/h2d-sm-probe.cu 2>&1 | tail -5
el build
P() { echo "# $*"; env "$@" timeout 60 /tmp/smprobe $f 4 $T $M 2>&1 | grep -v '^$'; }
{
T=12 M="ce sm ce sm"; P NOFILE=1 BLOCKS=132
T=12 M="sm sm"; P NOFILE=1 BLOCKS=66; P NOFILE=1 BLOCKS=264
T=12 M="ce sm ce sm"; P NOFILE=1 BLOCKS=132 PINALLOC=hp
T=16 M="ce sm mix sm ce mix"; P BLOCKS=132
T=16 M="sm sm"; P BLOCKS=66; P BLOCKS=264
T=16 M="ce sm mix sm ce"; P BLOCKS=132 PINALLOC=hp
T=16 M="ce sm sm ce"; P BLOCKS=132 NSTREAMS=2
T=12 M="ce sm sm ce"; P BLOCKS=132
} | tee $O/probe.txt
el probe
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=150 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" timeout 240 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
