#!/usr/bin/env bash
# Session 51 run 2 (`OUT=$OUT timeout 590 bash bench/results/2026-12-05-s51-run2/command.sh`),
# this session's build (commit 3344952: read-ahead through the O_DIRECT twin, stragglers kept;
# `bash bench/build-dev.sh --no-wheel`, carried with .whl), the machine of run 1 when warm:
# read-ahead's GPU tests (and the pins' and random ranges'), then issue 9's row with
# read-ahead at 256 MiB (GDIO_READ_AHEAD_BYTES, the default-to-be): `kvrow` at 1, 2, 4, 8, 16,
# 32 threads, two reps, each OFF row paired with `gdio bench` of the same shape (which reads
# with the same setting), then the library's summary for one more OFF pass per thread count.
O=$OUT; mkdir -p $O; R=$(pwd); export GDIO=$R/.dev/bin/gdio LIB=$R/.dev/lib/libcufile.so.0
[ -f /etc/cufile.json ] && export CUFILE_ENV_PATH_JSON=/etc/cufile.json
f=/tmp/gdio-bench-8g.bin
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 gpu_read_ahead gpu_page_cache_pins \
  gpu_reads_random > "$O/gpu-tests.txt" 2>&1
echo "== gpu tests rc=$? ($((SECONDS - t0)) s): $(grep -E '^test |test result' "$O/gpu-tests.txt" | tr '\n' ' ' | cut -c1-400)"
[ -f $f ] || $GDIO make-file $f --size 8G > /dev/null 2> $O/make-file.txt
export GDIO_READ_AHEAD_BYTES=${RA:-268435456}
OUT=$O/k SKIP_FILES=1 KVROW_THREADS="1 2 4 8 16 32" KVROW_REPS=2 KVROW_BENCH=1 KVROW_WHY=1 \
  KVROW_BUDGET_S=$(( 330 - (SECONDS - t0) )) \
  timeout $(( 560 - (SECONDS - t0) )) bash bench/gpu-session.sh kvrow > $O/kvrow-session.txt 2>&1
cut -c1-400 $O/k/logs/kvrow.txt
for w in $O/k/logs/kvrow/why-t*.log; do echo "$(basename $w .log): $(grep -h "at exit" $w | grep -oE "a call [0-9.]+ ms|read ahead [^;,]*|CPUs [0-9.]+ % of their time" | tr '\n' ' ')"; done
echo "== done in $((SECONDS - t0)) s"
[ -d $O/k/logs ] && tar czf $O/k-logs.tgz -C $O/k logs && rm -rf $O/k
