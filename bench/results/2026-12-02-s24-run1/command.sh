#!/usr/bin/env bash
# Session 24 run 1: (1) can the GPU's cores pull a pinned bounce buffer faster than its copy
# engines (bench/kernel-copy-probe.cu); (2) the GPU tests and the C program on 31ad8b5's build;
# (3) the small rows against copy_streams, gathering's kernel and session 8's engine (4d4eb04).
O=$OUT; mkdir -p $O
nvcc -O3 -o $O/kernel-copy-probe bench/kernel-copy-probe.cu 2>&1 | tail -5
timeout 150 $O/kernel-copy-probe 1 2>&1 | tee $O/kernel-copy.txt
OUT=$O/t SKIP_FILES=1 timeout 200 bash bench/gpu-session.sh tests capi > $O/tests.txt 2>&1
tail -12 $O/t/summary.txt 2>/dev/null || tail -12 $O/tests.txt
mb=.dev/bin/engine_microbench; s8=.dev/s8/engine_microbench
for rep in 1 2; do
  for shape in "4 256 batch-full" "64 64 async" "64 64 batch-full"; do
    set -- $shape
    for v in GDIO_NONE=1 GDIO_COPY_STREAMS=0 "GDIO_COPY_STREAMS=0 GDIO_GATHER_SCATTER=false"; do
      echo "rep $rep ${1}K x$2 $3 | now $v | $(env $v timeout 20 $mb gpu $1 $2 2 $3 2>&1 | tail -1)"
    done
    echo "rep $rep ${1}K x$2 $3 | session 8 (4d4eb04) | $(timeout 20 $s8 gpu $1 $2 2 $3 2>&1 | tail -1)"
  done
done 2>&1 | tee $O/small.txt
