#!/usr/bin/env bash
# Session 42 run 3: callers polling beside other reads (`polling_callers_max`, new). Run 2 had
# 4 MiB x 2 read no faster than 4 MiB x 1 (19.4 against 20-22 GB/s): two callers sleep and are
# woken tens of µs late, a lone one polls. ABBA, two reps: 1 (the behaviour so far: only a lone
# caller polls), 2 and 3 (12 workers and the watcher leave 3 of 16 cores). Rows: KvikIO compat
# OFF through gdio at 1, 2, 4 and 16 threads; `gdio bench` 4 MiB x 1/2/3/4, 2 MiB x 2, 1 MiB x 2
# from the ext4 page cache; KvikIO ON beside. First the unit test that two callers poll on
# four cores or more (the build machine has two).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
[ -f $f ] || $GDIO make-file $f --size 8G >/dev/null
timeout 60 .dev/tests/gdio_lib callers_ --test-threads 1 2>&1 | tail -4
el unit
S="GDIO_POLLING_CALLERS_MAX=1 GDIO_POLLING_CALLERS_MAX=2 GDIO_POLLING_CALLERS_MAX=3"
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=260 ABBA_THREADS="1 2 4 16" ABBA_PASSES=3 ABBA_SHAPES="4M:1 4M:2 4M:3 4M:4 2M:2 1M:2" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="$S" timeout 420 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt 2>/dev/null || cat $O/a/logs/abba.txt
el total
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a/logs
