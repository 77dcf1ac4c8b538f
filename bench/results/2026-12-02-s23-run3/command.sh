#!/usr/bin/env bash
# Session 23 run 3: the GPU tests again (the scatter kernel looked up per live context), then
# gathered reads through the engine's batch and async APIs (engine_microbench, 64 MiB tmpfs
# file, random offsets), gather_scatter off and on, alternating.
set -uo pipefail
O=$OUT
GDIO_REQUIRE_GPU=1 timeout 300 .dev/tests/gpu_cuda --test-threads 1 >$O/gpu_cuda.log 2>&1
echo "gpu_cuda: exit $? $(grep 'test result' $O/gpu_cuda.log)"; grep -A3 "^----" $O/gpu_cuda.log | head -20
for rep in 1 2; do
  for shape in "4 256 3 batch-full" "64 64 3 batch-full" "64 64 3 async" "256 32 3 async" "4 64 3 async"; do
    for sc in false true; do
      r=$(GDIO_GATHER_SCATTER=$sc timeout 60 .dev/bin/engine_microbench gpu $shape 2>>$O/micro-stderr.txt | tail -1)
      echo "rep $rep scatter $sc [$shape]: $r"
    done
  done
done
# Every GPU test binary (gpu_cuda, the library's CUDA unit tests, safetensors) and the C ABI program.
OUT=$O/t SKIP_FILES=1 bash bench/gpu-session.sh tests capi >/dev/null 2>&1; cat $O/t/summary.txt
grep -h "FAILED" $O/t/logs/tests.txt | head; rm -rf $O/t/logs
