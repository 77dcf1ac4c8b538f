#!/usr/bin/env bash
# Session 47 run 3 (the build of runs 1-2): how many readers this host can use. Run 2's H100
# host copied 6-7 GB/s out of the page cache from one CPU and kept 1.0 x the sum from any two
# (bench/vcpu-pairs.c), yet gdio's workers there ran 3 GB/s each at four in flight, and at eight
# threads KvikIO's compat mode (eight readers) beat gdio (twelve workers) in every rep. So:
# (1) bench/reader-scaling.c: 1-16 readers at once, total GB/s and the hypervisor's steal, twice;
# (2) ABBA of the engine's workers, 12 (the default) against 8 (GDIO_THREADS=8), KvikIO compat OFF
#     at 4, 8, 16 threads and `gdio bench` 4 MiB x 4/8/16 from the ext4 file, two reps;
# (3) the default `gdio bench` (its host-read limit: twelve readers).
#   OUT=$OUT bash bench/results/2026-12-05-s47-run3/command.sh
O=$OUT; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
cat $f > /dev/null
cc -O2 -pthread bench/reader-scaling.c -o /tmp/reader-scaling && for i in 1 2; do
  echo "== reader scaling $i ($((SECONDS - t0)) s)"; timeout 30 /tmp/reader-scaling $f 300 | tee -a $O/reader-scaling.txt; done
OUT=$O/a SKIP_FILES=1 ABBA_THREADS="4 8 16" ABBA_SHAPES="4M:4 4M:8 4M:16" ABBA_FILE=$f ABBA_BENCH_FILE=$f \
  ABBA_SETTINGS="GDIO_THREADS=12 GDIO_THREADS=8" ABBA_REPS=2 ABBA_PASSES=3 \
  ABBA_BUDGET_S=150 timeout 280 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; cat $O/a/logs/abba/abba.txt 2>/dev/null || tail -20 $O/a/logs/abba.txt
echo "== default gdio bench ($((SECONDS - t0)) s)"
timeout 90 $GDIO bench 2>&1 | grep -E "^(read|write) |host side|workers:|host_read|pinned_h2d"
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
