"""One safetensors load_file into torch CPU tensors, timed, in a fresh process.

usage: python3 bench/host_load_torch.py gdio|package FILE
"""
import sys, time, os
which, p = sys.argv[1], sys.argv[2]
if which == "gdio":
    from gdio.safetensors.torch import load_file
else:
    from safetensors.torch import load_file
t0 = time.perf_counter(); d = load_file(p, device="cpu"); dt = time.perf_counter() - t0
print(f"torch {which:8s} {dt*1e3:7.1f} ms ({len(d)} tensors)")
