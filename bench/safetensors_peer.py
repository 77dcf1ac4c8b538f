#!/usr/bin/env python3
"""One safetensors loader or saver, timed in its own process; prints one JSON line.

usage: safetensors_peer.py KIND FILE [FILE...]
  KIND: safetensors | fastsafetensors | instanttensor | instanttensor-buffered
        | gdio-torch (gdio.safetensors.torch.load_file: gdio's drop-in, not a peer)
        | h2d (pinned host->device copy limit) | odirect (plain parallel O_DIRECT read)
        | save-safetensors OUTDIR (save_file of the checkpoint loaded to GPU first)
        | save-gdio OUTDIR / save-gdio-serial OUTDIR (gdio.safetensors.torch.save_file of the
          same, verified against the source shards; serial: save_writes_in_flight=1)
        | pwrite OUTDIR (plain parallel pwrite of the checkpoint's bytes from host memory)
Timing: from just before the loader opens the files to torch.cuda.synchronize() after the
last tensor is on the GPU (CUDA initialised beforehand, as gdio's is). GB/s = checkpoint data
bytes / seconds, decimal.
"""
import json
import os
import struct
import sys
import threading
import time


def data_bytes(files):
    total = 0
    for p in files:
        with open(p, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        total += os.path.getsize(p) - 8 - n
    return total


def out(kind, files, nbytes, secs, **extra):
    d = {"tool": kind, "bytes": nbytes, "seconds": secs, "gbps": nbytes / secs / 1e9 if secs else 0.0,
         "files": len(files)}
    d.update(extra)
    print(json.dumps(d), flush=True)


def cuda_ready():
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda:0")
    torch.cuda.synchronize()
    return torch


def load_safetensors(files):
    torch = cuda_ready()
    from safetensors.torch import load_file
    t0 = time.perf_counter()
    keep = {}
    for p in files:
        keep.update(load_file(p, device="cuda:0"))
    torch.cuda.synchronize()
    return time.perf_counter() - t0, len(keep)


def load_gdio_torch(files):
    """gdio's drop-in: gdio.safetensors.torch.load_file of the whole checkpoint (its index
    when the shards have one, as a user would pass it; else each file), timed like the peers."""
    torch = cuda_ready()
    import gdio.safetensors.torch as gst
    index = os.path.join(os.path.dirname(files[0]), "model.safetensors.index.json")
    t0 = time.perf_counter()
    if os.path.exists(index):
        keep = gst.load_file(index, device="cuda:0")
    else:
        keep = {}
        for p in files:
            keep.update(gst.load_file(p, device="cuda:0"))
    torch.cuda.synchronize()
    return time.perf_counter() - t0, len(keep)


def tensor_names(files):
    names = []
    for p in files:
        with open(p, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            names += [k for k in json.loads(f.read(n)) if k != "__metadata__"]
    return names


def load_fastsafetensors(files):
    """fastsafetensors' documented entry point (examples/run_single.py), without GDS."""
    torch = cuda_ready()
    names = tensor_names(files)
    from fastsafetensors import SafeTensorsFileLoader, SingleGroup
    t0 = time.perf_counter()
    loader = SafeTensorsFileLoader(SingleGroup(), torch.device("cuda:0"), nogds=True)
    loader.add_filenames({0: files})
    fb = loader.copy_files_to_device()
    keep = {k: fb.get_tensor(tensor_name=k) for k in names}
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    n = len(keep)
    del keep
    fb.close()
    loader.close()
    return secs, n


def load_instanttensor(files):
    torch = cuda_ready()
    from instanttensor import safe_open
    last = None
    for device in ("cuda:0", torch.device("cuda:0"), 0):
        try:
            t0 = time.perf_counter()
            keep = {}
            with safe_open(files, framework="pt", device=device) as f:
                for name, t in f.tensors():
                    keep[name] = t
            torch.cuda.synchronize()
            return time.perf_counter() - t0, len(keep)
        except (TypeError, ValueError) as e:  # a device spelling it does not take
            last = e
    raise last


def h2d(_files):
    torch = cuda_ready()
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    reps = 8
    t0 = time.perf_counter()
    for _ in range(reps):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    return time.perf_counter() - t0, n * reps


def odirect(files, threads=16, chunk=16 << 20):
    import mmap
    jobs = []
    for p in files:
        size = os.path.getsize(p)
        for off in range(0, size, chunk):
            jobs.append((p, off, min(chunk, size - off)))
    lock = threading.Lock()
    done = [0]

    def worker():
        buf = mmap.mmap(-1, chunk)
        fds = {}
        while True:
            with lock:
                if not jobs:
                    break
                p, off, n = jobs.pop()
            fd = fds.get(p)
            if fd is None:
                fd = fds[p] = os.open(p, os.O_RDONLY | os.O_DIRECT)
            want = (n + 4095) // 4096 * 4096
            got = os.preadv(fd, [memoryview(buf)[:want]], off)
            with lock:
                done[0] += min(got, n)
        for fd in fds.values():
            os.close(fd)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, done[0]


def save_safetensors(files, outdir):
    torch = cuda_ready()
    from safetensors.torch import load_file, save_file
    shards = [load_file(p, device="cuda:0") for p in files]
    torch.cuda.synchronize()
    os.makedirs(outdir, exist_ok=True)
    t0 = time.perf_counter()
    for i, sd in enumerate(shards):
        save_file(sd, os.path.join(outdir, f"st-save-{i}.safetensors"))
    return time.perf_counter() - t0


def save_gdio(files, outdir):
    """gdio.safetensors.torch.save_file of the same state dicts (one CUDA allocation per
    tensor, as a user's model has); every file compared byte for byte with its source shard
    afterwards (same tensors, same metadata, so the same bytes)."""
    torch = cuda_ready()
    from safetensors.torch import load_file
    import gdio.safetensors.torch as gst

    shards = [load_file(p, device="cuda:0") for p in files]
    torch.cuda.synchronize()
    os.makedirs(outdir, exist_ok=True)
    outs = [os.path.join(outdir, f"gdio-save-{i}.safetensors") for i in range(len(shards))]
    t0 = time.perf_counter()
    for sd, o in zip(shards, outs):
        gst.save_file(sd, o, metadata={"format": "pt"})
    secs = time.perf_counter() - t0
    same = all(_same_file(a, b) for a, b in zip(files, outs))
    return secs, same


def _same_file(a, b, chunk=256 << 20):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(chunk), fb.read(chunk)
            if x != y:
                return False
            if not x:
                return True


def pwrite(files, outdir, threads=16, chunk=64 << 20):
    """Writes the checkpoint's bytes (read into host memory first) with parallel pwrite."""
    os.makedirs(outdir, exist_ok=True)
    bufs = []
    for p in files:
        with open(p, "rb") as f:
            bufs.append(f.read())
    jobs = []
    fds = []
    for i, b in enumerate(bufs):
        fd = os.open(os.path.join(outdir, f"pwrite-{i}.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fds.append(fd)
        for off in range(0, len(b), chunk):
            jobs.append((fd, i, off, min(chunk, len(b) - off)))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not jobs:
                    return
                fd, i, off, n = jobs.pop(0)
            mv = memoryview(bufs[i])[off:off + n]
            while mv:
                w = os.pwrite(fd, mv, off)
                mv = mv[w:]
                off += w

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.perf_counter() - t0
    for fd in fds:
        os.close(fd)
    return secs, sum(len(b) for b in bufs)


def main():
    kind = sys.argv[1]
    args = sys.argv[2:]
    if kind in ("save-safetensors", "pwrite", "save-gdio", "save-gdio-serial"):
        outdir, files = args[0], args[1:]
    else:
        outdir, files = None, args
    nbytes = data_bytes(files) if files else 0
    if kind == "safetensors":
        secs, n = load_safetensors(files)
        out(kind, files, nbytes, secs, tensors=n)
    elif kind == "gdio-torch":
        secs, n = load_gdio_torch(files)
        out(kind, files, nbytes, secs, tensors=n)
    elif kind == "fastsafetensors":
        secs, n = load_fastsafetensors(files)
        out(kind, files, nbytes, secs, tensors=n)
    elif kind in ("instanttensor", "instanttensor-buffered"):
        if kind.endswith("buffered"):
            os.environ["INSTANTTENSOR_BACKEND"] = "BUFFERED"
        secs, n = load_instanttensor(files)
        out(kind, files, nbytes, secs, tensors=n)
    elif kind == "h2d":
        secs, n = h2d(files)
        out(kind, files, n, secs)
    elif kind == "odirect":
        secs, n = odirect(files)
        out(kind, files, n, secs)
    elif kind == "save-safetensors":
        secs = save_safetensors(files, outdir)
        out(kind, files, nbytes, secs)
    elif kind in ("save-gdio", "save-gdio-serial"):
        if kind.endswith("serial"):  # the writes of separate tensors one after another
            os.environ["GDIO_SAVE_WRITES_IN_FLIGHT"] = "1"
        secs, same = save_gdio(files, outdir)
        out(kind, files, nbytes, secs, verified=same)
    elif kind == "pwrite":
        secs, n = pwrite(files, outdir)
        out(kind, files, n, secs)
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
