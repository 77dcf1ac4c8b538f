"""Where 100,000 `pread` futures of 64 KiB into one GPU buffer spend their time (issue 11):
the Python loop that makes them (submission) apart from the loop that collects them (`get`),
per iteration, on gdio's defaults and under `GDIO_*` settings given by the caller's
environment. Every byte of 32 random futures is compared with the file after each iteration.
A slow submission loop means the per-call cost (Python, the buffer's pointer, the hand-off)
bounds the rate; a slow collection loop means the engine does.

usage: python3 bench/futures_split.py FILE [--futures N] [--iterations K] [--threads T]
"""
from __future__ import annotations

import argparse
import os
import random
import time

import torch

import gdio


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--futures", type=int, default=100_000)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="gdio.defaults num_threads (0: default)")
    a = ap.parse_args()
    size = 64 << 10
    rng = random.Random(2)
    fsize = os.path.getsize(a.file)
    offsets = [rng.randrange(0, (fsize - size) // 4096) * 4096 for _ in range(a.futures)]
    buf = torch.empty(size * a.futures, dtype=torch.uint8, device="cuda")
    views = [buf[i * size:(i + 1) * size] for i in range(a.futures)]
    picks = [rng.randrange(a.futures) for _ in range(32)]
    with open(a.file, "rb") as fh:
        want = {}
        for i in picks:
            fh.seek(offsets[i])
            want[i] = fh.read(size)
    if a.threads:
        gdio.defaults.set({"num_threads": a.threads})
    label = f"t{gdio.defaults.num_threads()}" + (f" {os.environ['GDIO_SPLIT_LABEL']}" if os.environ.get("GDIO_SPLIT_LABEL") else "")
    with gdio.CuFile(a.file) as f:
        for it in range(a.iterations):
            buf.zero_()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            futs = [f.pread(v, size, o) for v, o in zip(views, offsets)]
            t1 = time.perf_counter()
            n = sum(fu.get() for fu in futs)
            t2 = time.perf_counter()
            ok = n == size * a.futures and all(bytes(buf[i * size:(i + 1) * size].cpu().numpy()) == want[i] for i in picks)
            print(f"{label} iter {it}: submit {t1 - t0:.3f} s ({(t1 - t0) / a.futures * 1e6:.2f} us/future), "
                  f"get {t2 - t1:.3f} s, {n / (t2 - t0) / 1e9:.2f} GB/s, verified {ok}", flush=True)


if __name__ == "__main__":
    main()
