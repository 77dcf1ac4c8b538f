#!/usr/bin/env python3
"""gdio's Python package against `gdio bench` and KvikIO in ONE run (issue 11 targets):

  A. `gdio.CuFile(f).read(torch_tensor)` of an 8 GiB page-cached file, vs `gdio bench` with the
     same shape (one 8 GiB request, queue depth 1), vs `kvikio.CuFile(f).read(tensor)` with
     compat mode ON and 8/16/32 threads.
     Targets: ≥ 0.97 × gdio bench, ≥ 1.15 × the best KvikIO.
  B. 100,000 `pread` futures of 64 KiB into one GPU buffer, all in flight, then `get()` each;
     gdio vs KvikIO (best of 8/16/32 threads). Target: ≥ 1.5 × KvikIO. Also gdio's `preadv`
     (one call for all 100,000).

  C. `gdio.safetensors.torch.load_file(index, device="cuda:0")` beside
     `safetensors.torch.load_file(shard, device="cuda:0")` for every shard, on the checkpoint
     bench/safetensors-h200.py writes (tmpfs /dev/shm/gdio-st and hot ext4 /tmp/gdio-st; rows
     skipped where it is missing). Verified: every tensor equal between the two.

Every read is verified against the file (sampled). Prints a table and writes JSON lines to
$OUT/python-h200.jsonl (default /tmp/gdio-bench).

usage: python3 bench/python-h200.py [--file /dev/shm/gdio-bench-8g.bin] [--size 8G]
           [--gdio BIN] [--iterations 3] [--futures 100000] [--no-kvikio]
needs: torch with CUDA, the gdio wheel installed (bench/build-python-wheel.sh), the gdio
binary (or `python -m gdio` is used), KvikIO on PYTHONPATH for the comparison.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

os.environ.setdefault("KVIKIO_COMPAT_MODE", "ON")

import torch  # noqa: E402

import gdio  # noqa: E402

GIB = 1 << 30


def parse_size(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    return int(float(s[:-1]) * units[s[-1]]) if s and s[-1] in units else int(s)


def log(out, rec):
    rec["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    with open(os.path.join(out, "python-h200.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


def verify(path, tensor, offsets_sizes, base=0):
    """Compares (tensor offset, file offset, size) samples with the file."""
    with open(path, "rb") as f:
        for t_off, f_off, size in offsets_sizes:
            f.seek(f_off)
            want = f.read(size)
            got = bytes(tensor[base + t_off : base + t_off + len(want)].cpu().numpy())
            if got != want:
                return False
    return True


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def timed(fn, iterations):
    fn()  # warm-up, untimed (driver state, page tables, bounce buffers)
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        n = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return n, times


def kvikio_module():
    try:
        import kvikio
        import kvikio.defaults
        return kvikio
    except ImportError as e:
        print(f"KvikIO not importable ({e}): its rows are skipped", file=sys.stderr)
        return None


def kvikio_threads(kvikio, n):
    try:
        kvikio.defaults.set({"num_threads": n})
    except Exception:  # older API
        kvikio.defaults.num_threads_reset(n)


def part_a(args, kvikio, rows):
    path, size = args.file, os.path.getsize(args.file)
    rng = random.Random(1)
    samples = [(o, o, 1 << 20) for o in (rng.randrange(0, size - (1 << 20)) for _ in range(16))]
    t = torch.empty(size, dtype=torch.uint8, device="cuda")
    warm(path)

    with gdio.CuFile(path) as f:
        n, times = timed(lambda: f.read(t), args.iterations)
    ok = n == size and verify(path, t, samples)
    rows.append(("A", "gdio.CuFile.read(torch)", size, times, ok, {}))

    cmd = [args.gdio, "bench"] if args.gdio else [sys.executable, "-m", "gdio", "bench"]
    cmd += ["--json", "--file", path, "--mode", "read", "--io-size", str(size), "--queue-depth", "1",
            "--iterations", str(args.iterations)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 0:
        rep = json.loads(r.stdout)
        res = next(x for x in rep["results"] if x["op"] == "read")
        rows.append(("A", "gdio bench (same shape)", size, [size / (res["gbps"] * 1e9)] * res["iterations"],
                     res["verified"], {"best_gbps": res["best_gbps"], "backend": res["backend"]}))
    else:
        print(f"gdio bench failed: {r.stderr}", file=sys.stderr)

    if kvikio:
        for n_threads in (8, 16, 32):
            kvikio_threads(kvikio, n_threads)
            t.zero_()
            with kvikio.CuFile(path, "r") as f:
                n, times = timed(lambda: f.read(t), args.iterations)
            ok = n == size and verify(path, t, samples)
            rows.append(("A", f"kvikio.CuFile.read compat t{n_threads}", size, times, ok, {"threads": n_threads}))
    del t
    torch.cuda.empty_cache()


def part_b(args, kvikio, rows):
    path = args.file
    size, count = 64 << 10, args.futures
    fsize = os.path.getsize(path)
    rng = random.Random(2)
    offsets = [rng.randrange(0, (fsize - size) // 4096) * 4096 for _ in range(count)]
    buf = torch.empty(size * count, dtype=torch.uint8, device="cuda")
    views = [buf[i * size : (i + 1) * size] for i in range(count)]
    picks = [rng.randrange(count) for _ in range(32)]
    samples = [(i * size, offsets[i], size) for i in picks]
    warm(path)

    def run_preads(mod_file):
        def go():
            futs = [mod_file.pread(v, size, o) for v, o in zip(views, offsets)]
            return sum(fu.get() for fu in futs)
        return go

    def check(n):
        return n == size * count and verify(path, buf, samples)

    for n_threads in (None, 16, 32):
        ctx = gdio.defaults.set({"num_threads": n_threads}) if n_threads else None
        try:
            with gdio.CuFile(path) as f:
                buf.zero_()
                n, times = timed(run_preads(f), args.iterations)
                label = f"gdio pread ×{count} 64K" + (f" t{n_threads}" if n_threads else f" t{gdio.defaults.num_threads()}")
                rows.append(("B", label, size * count, times, check(n), {"threads": gdio.defaults.num_threads()}))
                if n_threads is None:
                    buf.zero_()
                    n, times = timed(lambda: f.preadv(views, offsets).get(), args.iterations)
                    rows.append(("B", f"gdio preadv ×{count} 64K", size * count, times, check(n), {}))
        finally:
            if ctx:
                ctx.__exit__(None, None, None)

    if kvikio:
        for n_threads in (8, 16, 32):
            kvikio_threads(kvikio, n_threads)
            buf.zero_()
            with kvikio.CuFile(path, "r") as f:
                n, times = timed(run_preads(f), args.iterations)
            rows.append(("B", f"kvikio pread ×{count} 64K t{n_threads}", size * count, times, check(n),
                         {"threads": n_threads}))


def part_c(args, rows):
    import glob

    try:
        import safetensors.torch as ref
    except ImportError as e:
        print(f"safetensors not importable ({e}): part C skipped", file=sys.stderr)
        return
    import gdio.safetensors.torch as gst

    for where in [d for d in args.st_dirs.split(",") if d]:
        index = os.path.join(where, "model.safetensors.index.json")
        shards = sorted(glob.glob(os.path.join(where, "model-*.safetensors")))
        if not os.path.exists(index) or not shards:
            print(f"no checkpoint in {where} (run bench/safetensors-h200.py first): part C skipped there",
                  file=sys.stderr)
            continue
        nbytes = sum(os.path.getsize(s) for s in shards)
        for s in shards:
            warm(s)
        kind = "tmpfs" if where.startswith("/dev/shm") else "ext4 hot"

        def ours():
            return gst.load_file(index, device="cuda:0")

        def theirs():
            out = {}
            for s in shards:
                out.update(ref.load_file(s, device="cuda:0"))
            return out

        results = {}
        for label, fn in (("gdio.safetensors.torch.load_file", ours), ("safetensors.torch.load_file", theirs)):
            times = []
            for _ in range(args.iterations):
                torch.cuda.synchronize()
                t = time.perf_counter()
                got = fn()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                del got
                torch.cuda.empty_cache()
            results[label] = times
        a, b = ours(), theirs()
        ok = a.keys() == b.keys() and all(
            a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
            # Bytes, not values: the checkpoint holds random bits, so NaNs (never equal).
            and torch.equal(a[k].reshape(-1).view(torch.uint8), b[k].reshape(-1).view(torch.uint8))
            for k in a)
        del a, b
        torch.cuda.empty_cache()
        for label, times in results.items():
            rows.append(("C", f"{label} {kind}", nbytes, times, ok, {"dir": where}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", default="/dev/shm/gdio-bench-8g.bin")
    p.add_argument("--size", default="8G", help="size of the file to create when it is missing")
    p.add_argument("--gdio", default=None, help="gdio binary for `gdio bench` (default: python -m gdio)")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--futures", type=int, default=100_000)
    p.add_argument("--no-kvikio", action="store_true")
    p.add_argument("--st-dirs", default="/dev/shm/gdio-st,/tmp/gdio-st",
                   help="checkpoints of bench/safetensors-h200.py for part C ('' to skip)")
    p.add_argument("--parts", default="A,B,C")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/gdio-bench"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA GPU")
    if not os.path.exists(args.file):
        cmd = [args.gdio] if args.gdio else [sys.executable, "-m", "gdio"]
        subprocess.run(cmd + ["make-file", args.file, "--size", args.size], check=True)
    kvikio = None if args.no_kvikio else kvikio_module()
    info = gdio.runtime_info()
    print(f"gdio runtime {info}; torch {torch.__version__}; file {args.file} ({os.path.getsize(args.file) / GIB:.1f} GiB)")

    rows = []
    parts = set(args.parts.split(","))
    if "A" in parts:
        part_a(args, kvikio, rows)
    if "B" in parts:
        part_b(args, kvikio, rows)
    if "C" in parts:
        part_c(args, rows)

    print(f"\n{'part':<4} {'what':<40} {'GB/s mean':>9} {'GB/s best':>9} {'verified':>8}")
    best = {}
    for part, what, nbytes, times, ok, extra in rows:
        mean = nbytes / (sum(times) / len(times)) / 1e9
        top = extra.get("best_gbps") or nbytes / min(times) / 1e9
        print(f"{part:<4} {what:<40} {mean:>9.2f} {top:>9.2f} {str(ok):>8}")
        log(args.out, {"bench": "python-h200", "part": part, "what": what, "bytes": nbytes, "seconds": times,
                       "gbps": mean, "best_gbps": top, "verified": ok, **extra})
        key = (part, what.split()[0] if not what.startswith("gdio bench") else "bench")
        if "preadv" in what:
            key = (part, "preadv")
        if part == "C":
            key = (part, what)
        best[key] = max(best.get(key, 0.0), mean)
    print()
    a_py, a_bench, a_kv = best.get(("A", "gdio.CuFile.read(torch)")), best.get(("A", "bench")), best.get(("A", "kvikio.CuFile.read"))
    if a_py and a_bench:
        print(f"A: gdio.CuFile.read / gdio bench = {a_py / a_bench:.3f} (target ≥ 0.97)")
    if a_py and a_kv:
        print(f"A: gdio.CuFile.read / best KvikIO = {a_py / a_kv:.3f} (target ≥ 1.15)")
    b_gd, b_kv = best.get(("B", "gdio")), best.get(("B", "kvikio"))
    if b_gd and b_kv:
        print(f"B: gdio pread futures / best KvikIO = {b_gd / b_kv:.3f} (target ≥ 1.5)")
    for kind in ("tmpfs", "ext4 hot"):
        c_gd = best.get(("C", f"gdio.safetensors.torch.load_file {kind}"))
        c_st = best.get(("C", f"safetensors.torch.load_file {kind}"))
        if c_gd and c_st:
            print(f"C: gdio.safetensors.torch.load_file / safetensors ({kind}) = {c_gd / c_st:.3f}")
    if not all(r[4] for r in rows):
        print("VERIFICATION FAILED for some rows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
