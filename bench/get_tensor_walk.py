"""``safe_open(...).get_tensor(k)`` for every ``k`` in ``keys()`` (the loop transformers-style
loaders run) with the safetensors package and with gdio (reading ahead, the default, and one
load per tensor, ``safetensors_read_ahead_bytes`` 0), beside gdio's ``load_file`` of the same file,
and both again in a shuffled order (no read-ahead: one load per tensor): a
file of N random float32 tensors written by the package, into host memory (NumPy) or, with
``--device cuda:N``, GPU memory (torch), REPS reps alternating in one process; every result
compared with the tensors written.

usage: python3 bench/get_tensor_walk.py [--dir /dev/shm] [--tensors 720] [--cols 256] [--reps 3]
       [--device cpu|cuda:N]
"""
import argparse
import os
import time

import numpy as np
from safetensors import safe_open as ref_open
from safetensors.numpy import save_file

import gdio
import gdio.safetensors.numpy as gdio_np
from gdio.safetensors import safe_open

ap = argparse.ArgumentParser()
ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
ap.add_argument("--tensors", type=int, default=720)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--cols", type=int, default=256, help="columns of each tensor (rows: 1 to 63)")
ap.add_argument("--device", default="cpu")
a = ap.parse_args()
gen = np.random.default_rng(0)
want = {f"layer.{i}.w": gen.standard_normal((int(gen.integers(1, 64)), a.cols)).astype(np.float32)
        for i in range(a.tensors)}
path = os.path.join(a.dir, "gdio-get-tensor-walk.safetensors")
save_file(want, path)


gpu = a.device != "cpu"
if gpu:
    import torch

    import gdio.safetensors.torch as gdio_pt


shuffled = list(want)
np.random.default_rng(1).shuffle(shuffled)


def walk(opener, order=None):
    """ms to get every tensor, down ``keys()`` or in ``order``."""
    t0 = time.perf_counter()
    if gpu:
        with opener(path, framework="pt", device=a.device) as f:
            got = {k: f.get_tensor(k) for k in (order or f.keys())}
        torch.cuda.synchronize()
    else:
        with opener(path, framework="np") as f:
            got = {k: f.get_tensor(k) for k in (order or f.keys())}
    ms = (time.perf_counter() - t0) * 1e3
    host = {k: v.cpu().numpy() for k, v in got.items()} if gpu else got
    assert all(np.array_equal(host[k], want[k]) for k in want)
    return ms


def load_whole():
    t0 = time.perf_counter()
    if gpu:
        gdio_pt.load_file(path, device=a.device)
        torch.cuda.synchronize()
    else:
        gdio_np.load_file(path)
    return (time.perf_counter() - t0) * 1e3


try:
    mib = sum(v.nbytes for v in want.values()) / 2**20
    print(f"{a.tensors} tensors, {mib:.0f} MiB, {path}, into {a.device}")
    for rep in range(a.reps):
        ref = walk(ref_open)
        ahead = walk(safe_open)
        with gdio.defaults.set({"safetensors_read_ahead_bytes": 0}):
            one = walk(safe_open)
        whole = load_whole()
        ref_shuf = walk(ref_open, shuffled)
        shuf = walk(safe_open, shuffled)
        print(f"rep {rep}: safetensors {ref:.1f} ms | gdio reading ahead {ahead:.1f} ms | "
              f"gdio one load per tensor {one:.1f} ms | gdio load_file {whole:.1f} ms | "
              f"shuffled order: safetensors {ref_shuf:.1f} ms, gdio {shuf:.1f} ms")
finally:
    os.remove(path)
