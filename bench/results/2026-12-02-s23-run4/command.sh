#!/usr/bin/env bash
# Session 23 run 4: the scatter kernel reading the pinned bounce buffer in place (no staged
# copy; buffers now registered with DEVICEMAP). GPU tests; gathered reads through the batch
# and async APIs, gather_scatter off and on; then the pinned buffers' new flag against the build
# before it (.dev/before) on the default bench and 4 MiB x 16 reads, alternating.
set -uo pipefail
O=$OUT
GDIO_REQUIRE_GPU=1 timeout 300 .dev/tests/gpu_cuda --test-threads 1 >$O/gpu_cuda.log 2>&1
echo "gpu_cuda: exit $? $(grep 'test result' $O/gpu_cuda.log)"; grep -A3 "^----" $O/gpu_cuda.log | head -20
for rep in 1 2; do
  for shape in "64 64 3 batch-full" "64 64 3 async" "4 256 3 batch-full" "256 32 3 async"; do
    for sc in false true; do
      r=$(GDIO_GATHER_SCATTER=$sc timeout 60 .dev/bin/engine_microbench gpu $shape 2>>$O/micro-stderr.txt | tail -1)
      echo "rep $rep scatter $sc [$shape]: $r"
    done
  done
done
show() { python3 -c "
import json,sys
d=json.load(sys.stdin)
print(' '.join(f\"{r['op']} {r['gbps']:.2f} GB/s ({r.get('ratio_to_limit') or 0:.2f}x, ver {r['verified']})\" for r in d['results']))"; }
for rep in 1 2; do
  for b in .dev/before/gdio .dev/bin/gdio; do
    echo "rep $rep $b default bench: $(timeout 120 $b bench --json 2>>$O/bench-stderr.txt | show)"
    echo "rep $rep $b 4M x 16 read 4G: $(timeout 120 $b bench --json --mode read --io-size 4M --queue-depth 16 --size 4G 2>>$O/bench-stderr.txt | show)"
  done
done
