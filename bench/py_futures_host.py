#!/usr/bin/env python3
"""µs per `pread` future: N futures of SIZE bytes at random 4 KiB-aligned offsets of a
page-cached file into one host (NumPy) buffer, all in flight, then `get()` each; best of
--reps. Runs anywhere (no GPU). Writes a JSON line to $OUT/py-futures-host.jsonl.

usage: python3 bench/py_futures_host.py [--futures 100000] [--size 65536] [--file-mib 256]
"""
import argparse
import json
import os
import random
import tempfile
import time

import numpy as np

import gdio

p = argparse.ArgumentParser()
p.add_argument("--futures", type=int, default=100_000)
p.add_argument("--size", type=int, default=64 << 10)
p.add_argument("--file-mib", type=int, default=256)
p.add_argument("--reps", type=int, default=3)
p.add_argument("--out", default=os.environ.get("OUT", "/tmp/gdio-bench"))
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
rng = random.Random(3)
with tempfile.NamedTemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
    data = np.frombuffer(rng.randbytes(a.file_mib << 20), dtype=np.uint8)
    tmp.write(data.tobytes())
    tmp.flush()
    offs = [rng.randrange(0, ((a.file_mib << 20) - a.size) // 4096) * 4096 for _ in range(a.futures)]
    buf = np.zeros(a.size * a.futures, dtype=np.uint8)
    views = [buf[i * a.size : (i + 1) * a.size] for i in range(a.futures)]
    best = None
    with gdio.CuFile(tmp.name) as f:
        for _ in range(a.reps):
            t = time.perf_counter()
            futs = [f.pread(v, a.size, o) for v, o in zip(views, offs)]
            n = sum(x.get() for x in futs)
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
    assert n == a.size * a.futures
    for i in rng.sample(range(a.futures), 64):
        assert np.array_equal(views[i], data[offs[i] : offs[i] + a.size]), i
    us = best / a.futures * 1e6
    print(f"{a.futures} pread futures of {a.size} B: {us:.2f} µs per future, {n / best / 1e9:.2f} GB/s")
    with open(os.path.join(a.out, "py-futures-host.jsonl"), "a") as out:
        out.write(json.dumps({"bench": "py-futures-host", "futures": a.futures, "size": a.size,
                              "us_per_future": us, "seconds": best}) + "\n")
