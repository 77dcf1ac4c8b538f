#!/usr/bin/env bash
# Session 23 run 2: scattered copies of gathered groups (gather_scatter). The GPU tests of the
# gather and scatter paths, then the small rows under each setting, ext4-cached 8 GiB file.
set -uo pipefail
O=$OUT
for n in gpu_gathered_small_reads_land_exactly_batched_one_by_one_and_scattered \
         gpu_scattered_copies_put_every_piece_in_place_and_nothing_else; do
  timeout 120 .dev/tests/gpu_cuda --exact $n --test-threads 1 >$O/test-$n.log 2>&1; echo "test $n: exit $?"
done
GDIO_REQUIRE_GPU=1 timeout 300 .dev/tests/gpu_cuda --test-threads 1 >$O/gpu_cuda.log 2>&1; echo "gpu_cuda all: exit $? $(grep 'test result' $O/gpu_cuda.log)"
S="GDIO_NONE=1 GDIO_GATHER_SCATTER=true GDIO_GATHER_SCATTER=true,GDIO_INLINE_MAX_BYTES=0 \
GDIO_GATHER_SCATTER=true,GDIO_INLINE_MAX_BYTES=0,GDIO_GATHER_PIECE_SIZE=262144,GDIO_GATHER_MAX_BYTES=4194304 \
GDIO_GATHER_SCATTER=true,GDIO_INLINE_MAX_BYTES=0,GDIO_GATHER_PIECE_SIZE=1048576,GDIO_GATHER_MAX_BYTES=4194304"
OUT=$O/w WHY_FILE=/tmp/gdio-bench-8g.bin WHY_SHAPES="4K:64:random 64K:64 64K:16 256K:32 1M:32 1M:16" \
  WHY_SETTINGS="$S" WHY_REPS=1 WHY_DEFAULT_BENCH=0 bash bench/gpu-session.sh why
grep -h "^rep" $O/w/logs/why.txt
cp $O/w/logs/why.txt $O/why.txt; rm -rf $O/w/logs
