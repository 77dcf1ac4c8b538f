#!/usr/bin/env bash
# Session 38 run 5, this session's final build: a read with few others in flight takes its
# share of the workers (threads / reads in flight) in pieces down to a quarter of
# split_min_bytes (run 4: 256 KiB pieces lifted one thread +25-41 % but cost 4 in flight up
# to 11 %, which the share leaves as it was). 1. GPU tests and the C program; 2. ABBA, two
# reps, this build against the build before (.dev/before): KvikIO compat OFF through gdio at
# 1 2 4 8 16 threads, `gdio bench` 4 MiB x 1 / 1 MiB x 1 / 4 MiB x 2 / x 8 / x 16 from the
# ext4 page cache, KvikIO ON beside; 3. the default `gdio bench`, each build.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
B=$PWD/.dev/before
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=200 ABBA_THREADS="1 2 4 8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:1 1M:1 4M:2 4M:8 4M:16" ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_NONE=1 LIB=$B/lib/libcufile.so.0,GDIO=$B/bin/gdio" timeout 380 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
for g in $GDIO $B/bin/gdio $GDIO; do echo "$g: $(cd /tmp && timeout 40 $g bench 2>&1 | grep -E '^(read|write) ' | awk '{print $1, $5, "GB/s", $7, "x limit"}' | tr '\n' ' ')"; done | tee $O/default-bench.txt
el total
