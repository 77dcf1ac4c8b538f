#!/usr/bin/env python3
"""One process: a 1 GiB checkpoint (64 x 16 MiB) in /dev/shm; load_file with reads (not
page-cache views) and save_file, REPS each; prints the median GB/s of each."""
import os, sys, time, statistics
import numpy as np
import gdio
import gdio.safetensors.numpy as st
reps = int(sys.argv[1])
path = "/dev/shm/cancel-bench.safetensors"
out = "/dev/shm/cancel-bench-out.safetensors"
gen = np.random.default_rng(7)
t = {f"w{i}": np.frombuffer(gen.bytes(16 << 20), dtype=np.uint8) for i in range(64)}
if not os.path.exists(path):
    st.save_file(t, path)
n = 64 * (16 << 20)
loads, saves = [], []
with gdio.defaults.set({"safetensors_map_host": False}):
    st.load_file(path)
    for _ in range(reps):
        s = time.perf_counter(); got = st.load_file(path); loads.append(n / (time.perf_counter() - s) / 1e9)
        s = time.perf_counter(); st.save_file(t, out); saves.append(n / (time.perf_counter() - s) / 1e9)
assert all(np.array_equal(got[k], t[k]) for k in t)
print(f"load {statistics.median(loads):.2f} GB/s (min {min(loads):.2f}) save {statistics.median(saves):.2f} GB/s (min {min(saves):.2f})")
os.remove(out)
