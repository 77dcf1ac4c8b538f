#!/usr/bin/env bash
# Session 32 run 1: `split_into_one_buffer` (new, on by default: the pieces of a split read go
# into one bounce buffer of the worker that claimed the task and one copy moves the whole task)
# against off (each piece in its reader's buffer with a copy of its own, the engine until now),
# alternating in one run: the GPU test binaries and the C program, one KvikIO compat-OFF read of
# the 8 GiB file through gdio's libcufile compared byte for byte, then KvikIO compat OFF through
# gdio at 8 and 16 threads beside compat ON, `gdio bench` 4 MiB x 8 (split), 8 MiB x 8 (split,
# but a task larger than a buffer: the old path either way) and 4 MiB x 16 (mostly whole), the
# default bench, two reps, and the library's summary per setting (`why`).
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 150 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; grep -c ": ok" $O/t/logs/tests.txt; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
VERIFY_ALL=1 LD_PRELOAD=$PWD/.dev/lib/libcufile.so.0 PYTHONPATH=/tmp/site timeout 90 \
  python3 bench/cufile_kvikio_read.py off /tmp/gdio-bench-8g.bin 8 1 2>$O/verify-stderr.txt | tee $O/verify-all.txt
el verify
left=$(( 550 - ($(date +%s) - T0) ))
OUT=$O/ab SKIP_FILES=1 KNOBAB_PARTS=kvikio,bench,why KNOBAB_THREADS="8 16" KNOBAB_SHAPES="4M:8 8M:8 4M:16" \
  KNOBAB_REPS=2 KNOBAB_SETTINGS="GDIO_NONE=1 GDIO_SPLIT_INTO_ONE_BUFFER=false" \
  timeout $left bash bench/gpu-session.sh knobab > $O/ab-session.txt 2>&1
cat $O/ab/logs/knobab.txt
el total
tar czf $O/logs.tgz -C $O t/logs ab/logs 2>/dev/null
