#!/usr/bin/env bash
# Session 33 run 5 (the last 260 s of device time): run 4 found cuMemHostAlloc bounce buffers
# no faster in the engine, so its 16-thread ceiling (49.3-50.3 GB/s) is not the buffers'
# link (53 with cuMemHostAlloc in the probe). Two suspects, A/B in balanced order at 16 threads
# only: the completion watcher's progress word (a cuStreamWriteValue32 on the shared copy
# stream after every watched copy) and the workers' polling (completion_spin_us 0: block at
# once). KvikIO compat OFF through gdio, three timed passes, beside compat ON, two reps.
O=$OUT; mkdir -p $O
export GDIO=$PWD/.dev/bin/gdio
[ -f /tmp/gdio-bench-8g.bin ] || $GDIO make-file /tmp/gdio-bench-8g.bin --size 8G >/dev/null
[ -f /dev/shm/gdio-bench-8g.bin ] || cp /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=90 ABBA_SHAPES=" " ABBA_THREADS=16 ABBA_PASSES=3 \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_COMPLETION_WATCHER=false GDIO_COMPLETION_SPIN_US=0" \
  timeout 200 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
