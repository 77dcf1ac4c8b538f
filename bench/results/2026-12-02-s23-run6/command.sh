#!/usr/bin/env bash
# Session 23 run 6: the GPU tests with the scattered_reads counter, and `gdio bench`'s path line
# for gathered reads (64 KiB x 64 from the workers, inline_max_bytes 0), scatter on and off.
O=$OUT
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 >$O/gpu_cuda.log 2>&1
echo "gpu_cuda: exit $? $(grep 'test result' $O/gpu_cuda.log)"; grep -A3 "^----" $O/gpu_cuda.log | head -20
for sc in true false; do
  GDIO_GATHER_SCATTER=$sc GDIO_INLINE_MAX_BYTES=0 timeout 60 .dev/bin/gdio bench --mode read --size 1G --io-size 64K --queue-depth 64 --iterations 2 2>&1 | grep -E "read|path|requests" | head -4
done
