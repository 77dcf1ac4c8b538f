#!/usr/bin/env bash
# Session 53 run 2 (the same H100 as run 1, warm; the command as run, from the repo root):
# ABBA two reps of the default against 16 workers and read-ahead off, KvikIO compat OFF through
# gdio's libcufile at 8 and 16 threads, `gdio bench` 4 MiB x 16, KvikIO compat ON in each rep.
O=$OUT; export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0; [ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json; OUT=$O/a ABBA_THREADS="8 16" ABBA_SHAPES="4M:16" ABBA_SETTINGS="GDIO_NONE=1 GDIO_THREADS=16 GDIO_READ_AHEAD_BYTES=0" ABBA_REPS=2 ABBA_PASSES=3 ABBA_BUDGET_S=90 SKIP_FILES=1 timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1; grep -E "^(rep|row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt | cut -c1-160; tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
