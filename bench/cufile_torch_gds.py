#!/usr/bin/env python3
"""torch.cuda.gds.GdsFile on gdio's libcufile: save and load storages at offsets (equal byte for
byte, with and without registered buffers), then an 8 GiB storage load timed against the pinned
host->device copy of the same bytes. JSON lines on stdout; exits 1 on any mismatch.

usage: cufile_torch_gds.py DIR [BIG_FILE]
"""
import json
import os
import sys
import time

import torch
from torch.cuda.gds import GdsFile, gds_deregister_buffer, gds_register_buffer


def roundtrip(d):
    path = os.path.join(d, "gds-roundtrip.bin")
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn((1 << 20) + 3, device="cuda", generator=g)
    b = torch.randint(0, 255, (123457,), dtype=torch.uint8, device="cuda", generator=g)
    c = torch.randn(4096, 17, device="cuda", dtype=torch.float16, generator=g)
    f = GdsFile(path, os.O_CREAT | os.O_RDWR)
    offs = [0, a.nbytes + 4096, a.nbytes + 4096 + b.nbytes + 1]  # the last one unaligned
    for t, off in zip((a, b, c), offs):
        f.save_storage(t.untyped_storage(), offset=off)
    results = []
    for registered in (False, True):
        outs = [torch.empty_like(t) for t in (a, b, c)]
        if registered:
            for o in outs:
                gds_register_buffer(o.untyped_storage())
        for o, off in zip(outs, offs):
            f.load_storage(o.untyped_storage(), offset=off)
        torch.cuda.synchronize()
        ok = all(torch.equal(o, t) for o, t in zip(outs, (a, b, c)))
        if registered:
            for o in outs:
                gds_deregister_buffer(o.untyped_storage())
        results.append({"test": "torch_gds_roundtrip", "registered": registered, "equal": ok})
    # The file holds the bytes too (read back through the page cache, not through cuFile).
    with open(path, "rb") as fh:
        fh.seek(offs[1])
        ok = fh.read(b.nbytes) == b.cpu().numpy().tobytes()
    results.append({"test": "torch_gds_file_bytes", "equal": ok})
    del f
    os.unlink(path)
    return results


def big(path):
    size = os.path.getsize(path)
    out = torch.empty(size, dtype=torch.uint8, device="cuda")
    f = GdsFile(path, os.O_RDONLY)
    f.load_storage(out.untyped_storage(), offset=0)  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        f.load_storage(out.untyped_storage(), offset=0)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    with open(path, "rb") as fh:
        fh.readinto(memoryview(host.numpy()))
    ok = torch.equal(out[: 1 << 20].cpu(), host[: 1 << 20]) and torch.equal(out[-(1 << 20):].cpu(), host[-(1 << 20):])
    h2d = []
    for _ in range(3):
        t = time.perf_counter()
        out.copy_(host, non_blocking=True)
        torch.cuda.synchronize()
        h2d.append(time.perf_counter() - t)
    med, hmed = sorted(times)[1], sorted(h2d)[1]
    return {"test": "torch_gds_load_8g", "bytes": size, "gds_gbps": size / med / 1e9,
            "pinned_h2d_gbps": size / hmed / 1e9, "ratio": hmed / med, "verified": ok}


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    res = roundtrip(d)
    if len(sys.argv) > 2:
        res.append(big(sys.argv[2]))
    for r in res:
        print(json.dumps(r), flush=True)
    bad = [r for r in res if r.get("equal") is False or r.get("verified") is False]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
