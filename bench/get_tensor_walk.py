"""``safe_open(...).get_tensor(k)`` for every ``k`` in ``keys()`` (the loop transformers-style
loaders run) with the safetensors package and with gdio (reading ahead, the default, and one
load per tensor, ``safetensors_read_ahead_bytes`` 0), beside gdio's ``load_file`` of the same file,
and both again in a shuffled order (no read-ahead: one load per tensor), and with ``--parts``
where a shuffled ``get_tensor``'s time goes (allocating the array, the native read into it,
the rest): a
file of N random float32 tensors written by the package, into host memory (NumPy) or, with
``--device cuda:N``, GPU memory (torch), REPS reps alternating in one process; every result
compared with the tensors written.

usage: python3 bench/get_tensor_walk.py [--dir /dev/shm] [--tensors 720] [--cols 256] [--reps 3]
       [--device cpu|cuda:N] [--parts]
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
ap.add_argument("--parts", action="store_true", help="also time the parts of a shuffled get_tensor")
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


def parts():
    """Microseconds per tensor, shuffled order: allocating the arrays alone, the native reads
    into arrays allocated beforehand alone, and whole ``get_tensor`` calls (gdio, the package)."""
    with safe_open(path, framework="pt" if gpu else "np", device=a.device if gpu else "cpu") as f:
        where = f._where()
        t0 = time.perf_counter()
        if gpu:
            arrays = {k: torch.empty(where[k][4], dtype=torch.float32, device=a.device) for k in shuffled}
        else:
            arrays = {k: np.empty(where[k][4], dtype=np.float32) for k in shuffled}
        alloc = time.perf_counter() - t0
        raws = {k: (v.reshape(-1).view(torch.uint8) if gpu else v.reshape(-1).view(np.uint8))
                for k, v in arrays.items()}
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for k in shuffled:
            file, begin, end, _, _ = where[k]
            f._ckpt.read_into(file, begin, raws[k], end - begin)
        if gpu:
            torch.cuda.synchronize()
        read = time.perf_counter() - t0
        for k in shuffled:
            got = arrays[k].cpu().numpy() if gpu else arrays[k]
            assert np.array_equal(got, want[k]), k
    whole = walk(safe_open, shuffled) / 1e3
    ref = walk(ref_open, shuffled) / 1e3
    n = len(shuffled)
    print(f"parts, µs per tensor, shuffled: allocate {alloc / n * 1e6:.1f} | native read_into "
          f"{read / n * 1e6:.1f} | whole get_tensor {whole / n * 1e6:.1f} (the rest "
          f"{(whole - alloc - read) / n * 1e6:.1f}) | the package's get_tensor {ref / n * 1e6:.1f}")


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
        if a.parts:
            parts()
finally:
    os.remove(path)
