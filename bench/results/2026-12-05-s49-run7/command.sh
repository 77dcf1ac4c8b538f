#!/usr/bin/env bash
# Session 49 run 7 (`OUT=$OUT timeout 420 bash bench/results/2026-12-05-s49-run7/command.sh`), the
# machine of runs 3-6, session 48's build (f521a20, carried in .dev/). Run 6: beside the GPU's
# DMA the CPUs copy out of the page cache at 3.3-4.7 GB/s each (5.4-5.8 without it), so at four
# reads in flight what is left is the workers' idle 30 %: a read opened beside others takes at
# most len / split_min_bytes workers (4 at the default 1 MiB), so workers freed by reads waiting
# for their copies stay idle until the next read comes. ABBA, three reps, split_min_bytes 1 MiB
# (default) against 512 KiB (up to 8 workers a 4 MiB read) at 2, 4, 8 KvikIO threads and
# `gdio bench` 4 MiB x 2/4/8 on the same ext4 file. Logs tarred under $OUT.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="2 4 8" ABBA_SHAPES="4M:2 4M:4 4M:8" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_SPLIT_MIN_BYTES=1048576 GDIO_SPLIT_MIN_BYTES=524288" \
  ABBA_REPS=3 ABBA_PASSES=3 ABBA_BUDGET_S=$(( 300 - (SECONDS - t0) )) \
  timeout $(( 400 - (SECONDS - t0) )) bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cut -c1-190 $O/a/logs/abba.txt 2>/dev/null || tail -20 $O/abba-session.txt
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
