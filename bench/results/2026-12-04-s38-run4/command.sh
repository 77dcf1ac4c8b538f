#!/usr/bin/env bash
# Session 38 run 4: a lone caller's 4 MiB read. KvikIO's default (one thread) reads 10.8 GB/s
# through gdio (a call 0.39 ms; the copy alone takes 0.08): a read is split over at most
# len / split_min_bytes = 4 workers. ABBA, two reps, KvikIO OFF through gdio at 1 2 4 8
# threads and `gdio bench` 4 MiB x 1 / x 2, 1 MiB x 1, 4 MiB x 8 (ext4 page cache), settings:
# defaults (1 MiB), split_min_bytes 512 KiB, 256 KiB, 256 KiB with 2 pieces per worker; then
# the library's summary at one thread for each setting.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
S="GDIO_NONE=1 GDIO_SPLIT_MIN_BYTES=524288 GDIO_SPLIT_MIN_BYTES=262144 GDIO_SPLIT_MIN_BYTES=262144,GDIO_SPLIT_PIECES_PER_WORKER=2"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=330 ABBA_THREADS="1 2 4 8" ABBA_PASSES=3 ABBA_SHAPES="4M:1 4M:2 1M:1 4M:8" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="$S" timeout 480 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
export PYTHONPATH=/tmp/site
for v in $S; do
  rm -f $O/why.log
  (export ${v//,/ }; CUFILE_LOGGING_LEVEL=INFO CUFILE_LOGFILE_PATH=$O/why.log LD_PRELOAD=$LIB timeout 40 python3 bench/cufile_kvikio_read.py off $f 1 1 >/dev/null 2>>$O/stderr.txt)
  echo "why t1 $v: $(grep -h 'synchronous I/O' $O/why.log 2>/dev/null | sed 's/.*synchronous I\/O: //')"
done | tee $O/why.txt
el total
