#!/usr/bin/env bash
# Session 34 run 1: session 33's final build (fa7ab49: the split-wait share) on the GPU.
# 1. the GPU test binaries and the C program;
# 2. the 16-thread theory of session 33: KvikIO compat OFF through gdio at 16 and 32 threads
#    and `gdio bench` 4 MiB x 16 / x 32 from tmpfs, registered huge-page buffers against
#    cuMemHostAlloc ones (ABBA, two reps): does 32 in flight out of cuMemHostAlloc pass 52?
# 3. where the workers' time goes (`why`) at 4 MiB x 8 / x 16 / x 32 and 64 MiB x 4 from tmpfs
#    with both buffer kinds, and 4 MiB x 8 from ext4's page cache (split_wait beside tmpfs's);
# 4. the probe's pread + copy ring at 12 threads, both buffer kinds, same call;
# 5. the default `gdio bench` (read and write rows kept whole); 6. `kvrow`, one rep, with the
#    library's summary per thread count.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "GB/s|verified|limit" $O/default-bench.txt | head -12
el default-bench
OUT=$O/a SKIP_FILES=1 ABBA_REPS=2 ABBA_BUDGET_S=150 ABBA_THREADS="16 32" ABBA_PASSES=3 ABBA_SHAPES="4M:16 4M:32" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" \
  timeout 240 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
el abba
OUT=$O/w SKIP_FILES=1 WHY_REPS=1 WHY_DEFAULT_BENCH=0 WHY_SHAPES="4M:8 4M:16 4M:32 64M:4" \
  WHY_SETTINGS="GDIO_NONE=1 GDIO_PINNED_HUGE_PAGES=false" timeout 120 bash bench/gpu-session.sh why > $O/why-session.txt 2>&1
grep "^rep" $O/w/logs/why.txt
OUT=$O/w2 SKIP_FILES=1 WHY_FILE=/tmp/gdio-bench-8g.bin WHY_REPS=1 WHY_DEFAULT_BENCH=0 WHY_SHAPES="4M:8" \
  WHY_SETTINGS="GDIO_NONE=1" timeout 40 bash bench/gpu-session.sh why > $O/why2-session.txt 2>&1
grep "^rep" $O/w2/logs/why.txt | sed 's/^/ext4 /'
el why
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
for a in hp host; do
  echo "probe bouncehp 4 MiB x 12, one stream, $a: $(PINALLOC=$a NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 4 12 bouncehp 2>&1 | tail -1)"
done
el probe
left=$(( 570 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && OUT=$O/k SKIP_FILES=1 KVROW_REPS=1 KVROW_BUDGET_S=10 timeout $left bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cat $O/k/logs/kvrow.txt 2>/dev/null
el total
tar czf $O/logs.tgz --exclude=pcprobe --exclude="*.so*" --exclude=kt --exclude=examples --exclude=lib -C $O t/logs a/logs w/logs w2/logs k/logs 2>/dev/null
