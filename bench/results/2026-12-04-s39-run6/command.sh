#!/usr/bin/env bash
# Session 39 run 6 (the session's last device seconds): early copies in halves (the default),
# quarters and eighths (`split_early_copy_parts`), ABBA, reps while time lasts: KvikIO compat
# OFF through gdio at its default one thread and `gdio bench` 4 MiB x 1 from the ext4 page
# cache, KvikIO ON beside.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
el file
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=70 ABBA_THREADS="1" ABBA_PASSES=3 ABBA_SHAPES="4M:1" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_SPLIT_EARLY_COPY_PARTS=4 GDIO_SPLIT_EARLY_COPY_PARTS=8" timeout 150 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
