#!/usr/bin/env bash
# Session 37 run 9: a read task's page-cache check (direct_io auto) asked cachestat about
# every page of the task: 29 us for 4 MiB, 61 us for 8 MiB on the build machine, on the
# worker's path before each pread. This build samples 8 windows of 16 KiB. 1. GPU tests and
# the C program; 2. cachestat's cost on this host by range size; 3. ABBA, this build /
# the build before it (.dev/before) / this build with direct_io off (no check at all):
# KvikIO compat OFF through gdio at 16 threads, `gdio bench` 4 MiB x 16, 4 MiB x 32 and
# 1 GiB x 2 (8 MiB tasks) from the ext4 page cache, KvikIO ON beside.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
cat $f > /dev/null
cc -O2 bench/cachestat-cost.c -o /tmp/cscost && /tmp/cscost $f | tee $O/cachestat.txt
cc -O2 bench/cachestat-cost.c -o /tmp/cscost && /tmp/cscost /dev/shm/gdio-bench-8g.bin | sed 's/^/tmpfs /' | tee -a $O/cachestat.txt
B=$PWD/.dev/before
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=170 ABBA_THREADS="16" ABBA_PASSES=3 ABBA_SHAPES="4M:16 4M:32 1G:2" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 LIB=$B/lib/libcufile.so.0,GDIO=$B/bin/gdio GDIO_DIRECT_IO=off" timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
