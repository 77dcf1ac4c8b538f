#!/usr/bin/env bash
# Where the ceiling of 4 KiB reads into GPU memory lies (issue 7: 1,000,000 I/Os per second
# wanted, 240-300k measured): the CUDA driver alone (bench/small-copy-probe.cu: per-piece
# copies, one batched copy, or one staged copy plus a scatter kernel per group), and gdio's engine
# on host memory (no CUDA at all) beside GPU memory.
# usage (through bench/gpu-session.sh smallcopy): bench/gpu-phase-smallcopy.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/smallcopy}; mkdir -p "$out"
nvcc -O2 -o "$out/small-copy-probe" bench/small-copy-probe.cu 2>&1 | tail -5
"$out/small-copy-probe" "${PROBE_SECS:-0.5}" 4096
for mem in host gpu; do
  for shape in "4 256 batch" "4 256 async" "4 64 batch"; do
    set -- $shape
    echo "engine $mem $*: $(.dev/bin/engine_microbench $mem $1 $2 2 $3 2>&1 | tail -1)"
  done
done
echo "engine gpu 4 256 batch, 16 workers: $(GDIO_THREADS=16 .dev/bin/engine_microbench gpu 4 256 2 batch 2>&1 | tail -1)"
echo "engine gpu 4 256 batch, 4 workers: $(GDIO_THREADS=4 .dev/bin/engine_microbench gpu 4 256 2 batch 2>&1 | tail -1)"
