#!/usr/bin/env bash
# Session 24 run 2: own_stream_max_bytes (small tasks and gathered groups on the worker's own
# stream, large ones on the shared copy stream): the GPU tests; the small rows (engine
# microbenchmark) at 0 (every copy shared, the build before), 256 KiB and 1 MiB, with
# copy_streams 0 for reference; then KvikIO compat OFF through gdio's libcufile at 8 and 16
# threads beside compat ON (issue 9), the tmpfs request shapes and the default bench.
O=$OUT; mkdir -p $O
GDIO_REQUIRE_GPU=1 timeout 120 .dev/tests/gpu_cuda --test-threads 1 >$O/gpu_cuda.log 2>&1
echo "gpu_cuda: exit $? $(grep 'test result' $O/gpu_cuda.log)"; grep -A3 "^----" $O/gpu_cuda.log | head -20
GDIO_REQUIRE_GPU=1 timeout 60 .dev/tests/gdio_lib cuda --test-threads 1 >$O/gdio_lib.log 2>&1
echo "gdio_lib cuda: exit $? $(grep 'test result' $O/gdio_lib.log)"
mb=.dev/bin/engine_microbench
for rep in 1 2; do
  for shape in "4 256 batch-full" "64 64 async" "64 64 batch-full" "256 32 async" "1024 32 async"; do
    set -- $shape
    for v in GDIO_OWN_STREAM_MAX_BYTES=0 GDIO_NONE=1 GDIO_OWN_STREAM_MAX_BYTES=262144 GDIO_COPY_STREAMS=0; do
      echo "rep $rep ${1}K x$2 $3 | $v | $(env $v timeout 20 $mb gpu $1 $2 2 $3 2>&1 | tail -1)"
    done
  done
done 2>&1 | tee $O/small.txt
OUT=$O/k KNOBAB_PARTS=kvikio,bench KNOBAB_THREADS="8 16" KNOBAB_SHAPES="64K:64 256K:32 1M:32 4M:16" \
  KNOBAB_SETTINGS="GDIO_OWN_STREAM_MAX_BYTES=0 GDIO_NONE=1 GDIO_OWN_STREAM_MAX_BYTES=262144" KNOBAB_REPS=2 \
  timeout 400 bash bench/gpu-session.sh knobab > $O/knobab.txt 2>&1
cat $O/k/summary.txt
