#!/usr/bin/env python3
"""µs per `pread` future: N futures of SIZE bytes at random 4 KiB-aligned offsets of a
page-cached file into one host (NumPy) buffer, all in flight, then `get()` each; every rep,
their median and best. Also the main thread's share: wall time of the submit loop and of the
get loop, and the main thread's CPU time (`time.thread_time`), per future. Runs anywhere (no
GPU). Writes a JSON line to $OUT/py-futures-host.jsonl.

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
    data = np.random.default_rng(3).integers(0, 256, a.file_mib << 20, dtype=np.uint8)
    tmp.write(data.tobytes())
    tmp.flush()
    offs = [rng.randrange(0, ((a.file_mib << 20) - a.size) // 4096) * 4096 for _ in range(a.futures)]
    buf = np.zeros(a.size * a.futures, dtype=np.uint8)
    views = [buf[i * a.size : (i + 1) * a.size] for i in range(a.futures)]
    reps = []  # (total, submit, get, main-thread CPU) seconds
    with gdio.CuFile(tmp.name) as f:
        for _ in range(a.reps):
            c = time.thread_time()
            t = time.perf_counter()
            futs = [f.pread(v, a.size, o) for v, o in zip(views, offs)]
            t1 = time.perf_counter()
            n = sum(x.get() for x in futs)
            t2 = time.perf_counter()
            reps.append((t2 - t, t1 - t, t2 - t1, time.thread_time() - c))
            del futs
    assert n == a.size * a.futures
    best = min(r[0] for r in reps)
    med = sorted(reps)[len(reps) // 2]
    for i in rng.sample(range(a.futures), 64):
        assert np.array_equal(views[i], data[offs[i] : offs[i] + a.size]), i
    per = lambda s: s / a.futures * 1e6  # noqa: E731
    for i, (tot, sub, get, cpu) in enumerate(reps):
        print(f"  rep {i}: {per(tot):.2f} µs per future (submit {per(sub):.2f}, get {per(get):.2f}, "
              f"main-thread CPU {per(cpu):.2f})")
    us = per(best)
    print(f"{a.futures} pread futures of {a.size} B: median {per(med[0]):.2f} µs per future "
          f"(submit {per(med[1]):.2f}, get {per(med[2]):.2f}, main-thread CPU {per(med[3]):.2f}), "
          f"best {us:.2f}, {n / best / 1e9:.2f} GB/s")
    with open(os.path.join(a.out, "py-futures-host.jsonl"), "a") as out:
        out.write(json.dumps({"bench": "py-futures-host", "futures": a.futures, "size": a.size,
                              "us_per_future": us, "seconds": best,
                              "median_us_per_future": per(med[0]),
                              "median_submit_us": per(med[1]), "median_get_us": per(med[2]),
                              "median_main_cpu_us": per(med[3]),
                              "reps_seconds": [r[0] for r in reps]}) + "\n")
