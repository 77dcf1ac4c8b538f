#!/usr/bin/env python3
"""What page-cache pins registered in a program's idle time cost its own GPU work.

A training-like loop: each epoch reads the whole file into GPU memory with KvikIO (compat mode
OFF, so every read is a cuFileRead: gdio's libcufile under LD_PRELOAD), then computes for
COMPUTE_S seconds in steps: a 4096 x 4096 float32 matmul and 200 small kernel launches, each
step synchronized and timed. With GDIO_PAGE_CACHE_PINS_MAX_BYTES set, gdio registers page-cache
chunks while the engine is idle, that is during the compute steps: this measures what those
registrations (cuMemHostRegister, which holds the driver's locks) cost the steps, and what the
pins give the next epoch's read. One JSON line per epoch on stdout.

usage: pins_compute_cost.py PATH THREADS EPOCHS   (COMPUTE_S, default 1.5)
"""
import json
import os
import sys
import time

os.environ["KVIKIO_COMPAT_MODE"] = "OFF"

import cupy  # noqa: E402
import kvikio  # noqa: E402
import kvikio.defaults  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    path, threads, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    compute_s = float(os.environ.get("COMPUTE_S", "1.5"))
    size = os.path.getsize(path)
    kvikio.defaults.set({"num_threads": threads})
    buf = cupy.empty(size, dtype=cupy.uint8)
    a = cupy.random.rand(4096, 4096, dtype=cupy.float32)
    small = cupy.zeros(1 << 18, dtype=cupy.float32)
    with open(path, "rb") as f:
        tail = (f.seek(size - (1 << 20)), f.read(1 << 20))[1]
    for e in range(epochs):
        cupy.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        with kvikio.CuFile(path, "r") as f:
            got = f.pread(buf).get()
        cupy.cuda.runtime.deviceSynchronize()
        read_s = time.perf_counter() - t
        assert got == size, f"short read: {got} of {size}"
        ok = buf[size - (1 << 20):].get().tobytes() == tail
        steps = []
        end = time.perf_counter() + compute_s
        while time.perf_counter() < end:
            s = time.perf_counter()
            c = a @ a
            for _ in range(200):
                small += 1.0
            cupy.cuda.runtime.deviceSynchronize()
            steps.append((time.perf_counter() - s) * 1e3)
        del c
        print(json.dumps({
            "epoch": e, "read_gbps": round(size / read_s / 1e9, 2), "verified_tail": ok,
            "steps": len(steps), "step_ms_p50": round(pct(steps, 0.5), 3),
            "step_ms_p99": round(pct(steps, 0.99), 3), "step_ms_max": round(max(steps), 3),
            "pins_max_bytes": os.environ.get("GDIO_PAGE_CACHE_PINS_MAX_BYTES", "default"),
        }), flush=True)


if __name__ == "__main__":
    main()
