#!/usr/bin/env bash
# Why is the first transfer into a GPU in a fresh process slow, and slower into GPU 1?
# (BENCHMARKS.md session 5: `gdio load --target gpu:1` 29 GB/s against 47 for gpu:0, and
# the rank on GPU 1 of a 2-rank load always the slow one.) For each GPU, fresh processes:
#   torch   the first and second 4 GiB pinned host->device copy (no gdio at all)
#   load    `gdio load` of the tmpfs checkpoint, with the GPU's power state before it
#   busy    the same load while another process keeps that GPU busy with small kernels
# usage (through bench/gpu-session.sh firstuse): bench/gpu-phase-firstuse.sh OUTDIR
set -uo pipefail
out=${1:-/tmp/firstuse}; mkdir -p "$out"
ck=/dev/shm/gdio-st/model.safetensors.index.json
state() { nvidia-smi --query-gpu=index,pstate,clocks.sm,clocks.mem,pcie.link.gen.current --format=csv,noheader | tr '\n' ';'; }
load() { "$GDIO" load "$ck" --target gpu:$1 --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(f\"{d['gbps']:.2f} GB/s transfer {d['transfer_seconds']:.3f} s warm {d['warm_seconds']:.3f} s\")"; }
for g in 0 1; do
  echo "torch gpu:$g $(python3 - "$g" <<'PY'
import sys, time, torch
g = int(sys.argv[1])
n = 4 << 30
h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
d = torch.empty(n, dtype=torch.uint8, device=f"cuda:{g}")
r = []
for _ in range(2):
    torch.cuda.synchronize(g)
    t = time.perf_counter()
    d.copy_(h, non_blocking=True)
    torch.cuda.synchronize(g)
    r.append(n / (time.perf_counter() - t) / 1e9)
print(f"first {r[0]:.2f} GB/s, second {r[1]:.2f}")
PY
)"
done
[ -f "$ck" ] || { echo "no checkpoint at $ck"; exit 0; }
for g in 1 0 1 1 0 0; do
  echo "state $(state)"
  echo "load gpu:$g $(load $g)"
done
for g in 1 0; do
  python3 -c "
import torch, time
x = torch.ones(1 << 20, device='cuda:$g'); t = time.time()
while time.time() - t < 8: x.mul_(1.0000001); torch.cuda.synchronize()
" & busy=$!
  sleep 2
  echo "state $(state)"
  echo "busy load gpu:$g $(load $g)"
  echo "busy load gpu:$g $(load $g)"
  wait $busy
done
