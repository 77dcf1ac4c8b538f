#!/usr/bin/env bash
# Session 37 run 10: the sampled page-cache check where it saves most, tmpfs's 4 KiB pages
# (cachestat 10.8 us per 4 MiB task, 21.1 per 8 MiB on this host, run 9): ABBA, this build
# against the build before (.dev/before), `gdio bench` 4 MiB x 8, 4 MiB x 16 and 1 GiB x 2
# (8 MiB tasks) from /dev/shm, three reps.
O=$OUT; mkdir -p $O
T0=$(date +%s)
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
for x in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
B=$PWD/.dev/before
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=120 ABBA_THREADS=" " ABBA_SHAPES="4M:8 4M:16 1G:2" \
  ABBA_SETTINGS="GDIO_NONE=1 LIB=$B/lib/libcufile.so.0,GDIO=$B/bin/gdio" timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
echo "== total after $(( $(date +%s) - T0 )) s"
