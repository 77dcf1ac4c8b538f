#!/usr/bin/env bash
# Session 53 run 1 (`OUT=$OUT timeout 400 bash bench/results/2026-12-06-s53-run1/command.sh`):
# issue 9's row beside the ceiling of any bounce design, in one run. Every gpu_cuda test of the
# build; then bench/pagecache-dma-probe.c (no gdio) before and after: `bouncehp` (pread into
# two pinned 4 MiB buffers per thread + copy, the engine's buffers: cuMemHostAlloc, flags 3)
# at 8, 12 and 16 threads, `pinnedq` (copies only, no file: the link) and `preadonly` (pread
# only, no GPU: the host side); between them ABBA-style reps of KvikIO compat OFF through gdio's
# libcufile, `gdio bench` 4 MiB x 8 and KvikIO compat ON at 8 and 16 threads; the default
# `gdio bench` last.
O=${OUT:?}; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
GDIO_REQUIRE_GPU=1 timeout 90 .dev/tests/gpu_cuda --test-threads 1 > "$O/gpu-tests.txt" 2>&1
echo "== gpu_cuda rc=$? ($((SECONDS - t0)) s): $(grep -E 'test result|FAILED|panicked' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
f=/tmp/gdio-bench-8g.bin
for x in $f /dev/shm/gdio-bench-8g.bin; do [ -f $x ] || $GDIO make-file $x --size 8G >/dev/null; done
cat $f >/dev/null
cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl || echo "probe build failed"
probe() { # label
  local t m
  for m in "bouncehp 8" "bouncehp 12" "bouncehp 16" "pinnedq 12" "preadonly 12"; do
    set -- $m
    echo "probe $1 $2 t$2: $(PINALLOC=host PINFLAGS=3 NBUF=2 MARKER=event timeout 30 /tmp/pcprobe $f 4 $2 $1 2>&1 | tail -1 | grep -oE '\( *[0-9.]+ without' | tr -d '( ' | sed 's/without//') GB/s"
  done
}
probe before | tee $O/probe-before.txt
echo "== probe ($((SECONDS - t0)) s)"
OUT=$O/a ABBA_THREADS="8 16" ABBA_SHAPES="4M:8" ABBA_SETTINGS="GDIO_NONE=1" ABBA_REPS=3 ABBA_PASSES=3 \
  ABBA_BUDGET_S=70 SKIP_FILES=1 timeout 170 bash bench/gpu-session.sh abba > $O/abba-session.txt 2>&1
echo "== abba ($((SECONDS - t0)) s)"; grep -E "^(rep|row|KvikIO|gdio bench|issue)" $O/a/logs/abba.txt 2>/dev/null | cut -c1-200 || tail -20 $O/abba-session.txt
probe after | tee $O/probe-after.txt
timeout 40 $GDIO bench > $O/bench-default.txt 2>&1
echo "== default bench: $(grep -E '^read|^write' $O/bench-default.txt | head -2 | tr '\n' '|' | cut -c1-300)"
grep -E "pinned_h2d|host_read_gbps" $O/bench-default.txt
echo "== done in $((SECONDS - t0)) s"
[ -d $O/a/logs ] && tar czf $O/a-logs.tgz -C $O/a logs && rm -rf $O/a
