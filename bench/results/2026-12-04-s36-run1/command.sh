#!/usr/bin/env bash
# Session 36 run 1: page-cache pins (engine/page_cache_pins.rs: a 64 MiB chunk read twice over
# is registered with the GPU in the background, later reads are one DMA out of the page cache
# on the caller's stream). 1. the GPU test binaries and the C program on this build (also the
# session 35 lane refactor); 2. KvikIO compat OFF through gdio, 4 passes of the 8 GiB ext4 file
# and of the tmpfs file in one process, every pass's rate, the last pass (out of the pins)
# compared byte for byte; 3. ABBA, three reps, pins on (default) against off
# (GDIO_PAGE_CACHE_PINS_MAX_BYTES=0): KvikIO OFF on gdio at 8 and 16 threads beside KvikIO's
# compat ON, `gdio bench` 4M x 8, 64M x 4, 1G x 2, 1M x 32 from tmpfs; the pinned 1 GiB copy
# (the link) before and after; 4. the default `gdio bench`.
O=$OUT; mkdir -p $O
T0=$(date +%s)
el() { echo "== $1 after $(( $(date +%s) - T0 )) s"; }
OUT=$O/t timeout 170 bash bench/gpu-session.sh setup tests > $O/tests-session.txt 2>&1
cat $O/t/summary.txt; echo "tests ok: $(grep -c ': ok$' $O/t/logs/tests.txt)"; grep -E "FAILED|C api|panicked" $O/t/logs/tests.txt | head
el tests
export GDIO=$PWD/.dev/bin/gdio LIB=$PWD/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
lim() { echo "pinned 1 GiB copies (link): $(NSTREAMS=1 timeout 30 /tmp/pcprobe /tmp/gdio-bench-8g.bin 1024 1 pinned 2>&1 | tail -1 | grep -oE '[0-9.]+ GB/s' | head -1)"; }
lim
for f in /tmp/gdio-bench-8g.bin /dev/shm/gdio-bench-8g.bin; do
  for t in 16 8; do
    echo "verify $f t$t: $(VERIFY_ALL=1 LD_PRELOAD=$LIB PYTHONPATH=/tmp/site timeout 90 python3 bench/cufile_kvikio_read.py off $f $t 3 2>>$O/verify-stderr.txt | tail -1)"
  done
done | tee $O/verify.txt
el verify
OUT=$O/a SKIP_FILES=1 ABBA_REPS=3 ABBA_BUDGET_S=150 ABBA_THREADS="8 16" ABBA_PASSES=3 ABBA_SHAPES="4M:8 64M:4 1G:2 1M:32" \
  ABBA_SETTINGS="GDIO_NONE=1 GDIO_PAGE_CACHE_PINS_MAX_BYTES=0" timeout 250 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
cat $O/a/logs/abba/abba.txt
lim
el abba
(cd /tmp && timeout 60 $GDIO bench 2>&1 | tail -30) > $O/default-bench.txt; grep -E "^(read|write) |path|workers" $O/default-bench.txt
el total
tar czf $O/logs.tgz -C $O a/logs t/logs 2>/dev/null
