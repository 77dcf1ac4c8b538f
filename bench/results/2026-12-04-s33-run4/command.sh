#!/usr/bin/env bash
# Session 33 run 4: run 3's probe found the ring's link set by the buffers' kind, not the copy
# size: 12 threads' copies out of registered huge pages 50.8-51.8 GB/s at 4, 8 and 16 MiB,
# out of cuMemHostAlloc 53.0-54.8 (bouncehp, with the pread, 4 MiB: 52.5-52.6 against
# 50.6-50.7). Session 22 run 5 found no gain in the engine (fixed order, three reps). Again in
# balanced order: the defaults against pinned_huge_pages=false (cuMemHostAlloc bounce
# buffers), KvikIO compat OFF through gdio at 8 and 16 threads beside compat ON, `gdio bench`
# 4 MiB x 16 and 64 MiB x 4 (the default bench's shape) from tmpfs.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
export GDIO=$PWD/.dev/bin/gdio
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do [ -f $f ] || $GDIO make-file $f --size 8G >/dev/null; done
el files
OUT=$O/a SKIP_FILES=1 ABBA_REPS=4 ABBA_BUDGET_S=270 ABBA_SHAPES="4M:16 64M:4" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" \
  timeout 420 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el total
