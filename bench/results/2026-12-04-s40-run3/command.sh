#!/usr/bin/env bash
# Session 40 run 3: a lone caller's levers, ABBA, two reps: the defaults; each worker's share
# of a split read in 8 and 16 pieces (`split_pieces_per_worker`, default 4; run 2's knob sweep:
# 8 read 4 MiB x 1 at 16.24 / 14.87 GB/s against 14.18 / 13.00); the lone caller polling its
# request (`lone_caller_polls`, new, off); both. Rows: KvikIO compat OFF through gdio at 1 and
# 4 threads, `gdio bench` 4 / 2 / 1 MiB x 1 and 4 MiB x 2 / 4 / 8 from the ext4 page cache;
# KvikIO ON beside.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
el file
S="GDIO_NONE=1 GDIO_SPLIT_PIECES_PER_WORKER=8 GDIO_SPLIT_PIECES_PER_WORKER=16 GDIO_LONE_CALLER_POLLS=true GDIO_SPLIT_PIECES_PER_WORKER=8,GDIO_LONE_CALLER_POLLS=true"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=300 ABBA_THREADS="1 4" ABBA_PASSES=3 ABBA_SHAPES="4M:1 2M:1 1M:1 4M:2 4M:4 4M:8" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="$S" timeout 540 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
