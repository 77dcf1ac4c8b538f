#!/usr/bin/env bash
# Session 35 run 5: run 4 found split pieces of 1 MiB (GDIO_SPLIT_MIN_BYTES=1048576) ahead of
# 2 MiB on `gdio bench` 4 MiB x 8 from tmpfs (46.3-48.2 GB/s against 45.0-45.4) and from ext4
# (51.0-51.2 against 49.5-50.8), in every rep, the rest inside each other's spread. This build
# makes 1 MiB the default. 1. the GPU test binaries and the C program on this build; 2. ABBA,
# three reps, the new default against the old (GDIO_SPLIT_MIN_BYTES=2097152): KvikIO compat OFF
# through gdio at 8 and 16 threads beside compat ON; `gdio bench` from tmpfs 4 MiB x 8 and
# x 16, the reads newly split (2 MiB x 8, x 16, 3 MiB x 8) and the default bench's shape (64 MiB
# x 4); 3. the default `gdio bench` of this build.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=200 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:8 4M:16 2M:8 2M:16 3M:8 64M:4" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_SPLIT_MIN_BYTES=2097152" timeout 330 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |workers" $O/default-bench.txt
el total
tar czf $O/logs.tgz -C $O a/logs t/logs 2>/dev/null
