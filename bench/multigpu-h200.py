#!/usr/bin/env python3
"""A safetensors checkpoint onto two GPUs at once, in ONE run, beside its limit and the peers.
usage (repository root, a machine with >= 2 GPUs): python3 bench/multigpu-h200.py
    [--gdio .dev/bin/gdio] [--out $OUT] [--size-gib 16]
    [--rows limit,instanttensor,gdio-py,gdio-cli,gdio-cli-t24]
The checkpoint is the one bench/safetensors-h200.py writes (4 shards, written by `safetensors`),
read from tmpfs (/dev/shm/gdio-st). Rows, each one JSON line in $OUT/multigpu.jsonl:
  limit          pinned host->device to GPU 0 alone, to both GPUs at once (aggregate), and the
                 GPU0->GPU1 peer copy; the issue's limit: each GPU reads half over its own link
                 (both at once), then the halves cross NVLink: C / (C/agg + (C/2)/peer).
  instanttensor  InstantTensor 0.2.2, 2 ranks, NCCL group (safe_open(..., process_group=WORLD)).
  gdio-py        gdio.safetensors.safe_open(..., process_group=WORLD), 2 ranks, NCCL (gdio-py-t6:
                 the same with 6 engine workers per rank, GDIO_THREADS=6; gdio-py-1run: the
                 share gathered in one piece after all of it is read, as before session 7).
  gdio-cli       `gdio load --target gpu:0,1 --json`: one process, each byte read once, the
                 shares exchanged GPU to GPU (gdio-cli-t24: the same with GDIO_THREADS=24;
                 gdio-cli-spread: --spread-reads, each GPU reads a share on its own link).
Ranks: torch.multiprocessing, one process per GPU; each times from a barrier after CUDA and NCCL
are up to the last tensor on its GPU (synchronized), and the slowest rank counts. GB/s are of
checkpoint (each byte once, however many GPUs got it).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def shard_files(d):
    return sorted(glob.glob(os.path.join(d, "model-*.safetensors")))


def data_bytes(files):
    import struct
    total = 0
    for p in files:
        with open(p, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        total += os.path.getsize(p) - 8 - n
    return total


def limits(size=4 << 30):
    import threading
    import torch
    out = {}
    host = [torch.empty(size, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
    dev = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}") for i in range(2)]

    def h2d(i, times):
        with torch.cuda.device(i):
            s = torch.cuda.Stream(i)
            with torch.cuda.stream(s):
                dev[i].copy_(host[i], non_blocking=True)
            s.synchronize()

    for i in range(2):  # warm-up
        h2d(i, None)
    t = time.perf_counter()
    h2d(0, None)
    out["h2d_one_gbps"] = size / (time.perf_counter() - t) / 1e9
    th = [threading.Thread(target=h2d, args=(i, None)) for i in range(2)]
    t = time.perf_counter()
    [x.start() for x in th]
    [x.join() for x in th]
    out["h2d_both_gbps"] = 2 * size / (time.perf_counter() - t) / 1e9
    dev[1].copy_(dev[0])
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    t = time.perf_counter()
    for _ in range(3):
        dev[1].copy_(dev[0])
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    out["peer_gbps"] = 3 * size / (time.perf_counter() - t) / 1e9
    c = 1.0
    out["limit_gbps"] = c / (c / out["h2d_both_gbps"] + (c / 2) / out["peer_gbps"])
    return out


def rank_main(rank, world, kind, files, port, q):
    if kind == "gdio-py-t6":  # each rank's engine with 6 workers: 12 in all, as one process has
        os.environ["GDIO_THREADS"] = "6"
    if kind == "gdio-py-t12":  # 12 workers per rank: 24 in all on the 32-core host
        os.environ["GDIO_THREADS"] = "12"
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # MG_SWAP=1: rank r on GPU world-1-r (does a slow rank follow its GPU or its share?).
    dev = world - 1 - rank if os.environ.get("MG_SWAP") == "1" else rank
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device(f"cuda:{dev}"))
    x = torch.ones(1, device=f"cuda:{dev}")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    keep = {}
    dist.barrier()
    t0 = time.perf_counter()
    if kind == "instanttensor":
        from instanttensor import safe_open
        with safe_open(files, framework="pt", device=dev, process_group=dist.GroupMember.WORLD) as f:
            for name, t in f.tensors():
                keep[name] = t
    else:
        import logging
        # Each rank logs its steps' times (python/gdio/safetensors/_dist.py) to stderr.
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        logging.getLogger("gdio.safetensors").setLevel(logging.DEBUG)
        from gdio.safetensors import safe_open
        if kind == "gdio-py-1run":  # the whole share gathered at once, after all of it is read
            import gdio.safetensors._dist as d
            d._PIECE = 1 << 62
        with safe_open(files, framework="pt", device=f"cuda:{dev}",
                       process_group=dist.GroupMember.WORLD) as f:
            for name in f.keys():
                keep[name] = f.get_tensor(name)
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    # Spot check: a few tensors equal on both ranks (byte for byte, through a reduction).
    names = sorted(keep)[:: max(1, len(keep) // 8)]
    ok = True
    for n in names:
        b = keep[n].reshape(-1).view(torch.uint8)
        s = b.to(torch.int64).sum().reshape(1)
        r = s.clone()
        dist.all_reduce(r)
        ok = ok and int(r.item()) == world * int(s.item())
    dist.barrier()
    q.put({"rank": rank, "seconds": secs, "tensors": len(keep), "same_on_ranks": ok,
           "bytes": sum(t.numel() * t.element_size() for t in keep.values())})
    dist.destroy_process_group()


def ranks(kind, files, world=2, port=29511):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=rank_main, args=(r, world, kind, files, port, q)) for r in range(world)]
    [p.start() for p in ps]
    res = []
    for _ in range(world):
        try:
            res.append(q.get(timeout=240))
        except Exception as e:  # noqa: BLE001 - a rank died: report it
            res.append({"error": repr(e)})
    [p.join(30) for p in ps]
    bad = [r for r in res if "error" in r] + [p.exitcode for p in ps if p.exitcode]
    if bad:
        return {"error": f"ranks failed: {bad}", "gbps": 0.0}
    secs = max(r["seconds"] for r in res)
    total = data_bytes(files)
    return {"seconds": secs, "gbps": total / secs / 1e9, "tensors": res[0]["tensors"],
            "per_rank_seconds": [r["seconds"] for r in res],
            "same_on_ranks": all(r["same_on_ranks"] for r in res)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdio", default=".dev/bin/gdio")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gdio-mgpu"))
    ap.add_argument("--size-gib", type=int, default=16)
    ap.add_argument("--rows", default="limit,instanttensor,gdio-py,gdio-cli,gdio-cli-t24")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import importlib.util
    spec = importlib.util.spec_from_file_location("st", os.path.join(HERE, "safetensors-h200.py"))
    st = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(st)
    ext4, tmpfs = "/tmp/gdio-st", "/dev/shm/gdio-st"
    st.write_checkpoint(ext4, a.size_gib)
    if not os.path.exists(os.path.join(tmpfs, "model.safetensors.index.json")):
        import shutil
        shutil.copytree(ext4, tmpfs)
    files = shard_files(tmpfs)
    log = open(os.path.join(a.out, "multigpu.jsonl"), "a")
    rows = a.rows.split(",")
    got = {}

    def record(tool, d):
        d = dict(d, tool=tool, where="tmpfs-2gpu")
        log.write(json.dumps(d) + "\n")
        log.flush()
        got.setdefault(tool, []).append(d)
        print(f"  {tool:16s} {d.get('gbps', 0):7.2f} GB/s {d.get('error', '')}", file=sys.stderr, flush=True)

    if "limit" in rows:
        record("limit", limits())
    for _ in range(a.reps):
        for kind in ("instanttensor", "gdio-py", "gdio-py-1run", "gdio-py-t6", "gdio-py-t12"):
            if kind in rows:
                record(kind, ranks(kind, files))
        # gdio-cli: the defaults; gdio-cli-t24: 24 workers (twice the default, one set per GPU);
        # -r4: four requests in flight; -s128: 128 MiB requests, eight in flight; -b2: 2 MiB
        # bounce buffers; -n4: four per worker; gdio-gpu0*: the same checkpoint onto GPU 0
        # alone, for the one-link figure of the same run.
        for row, extra, flags, target in (
            ("gdio-cli", {}, [], "gpu:0,1"),
            ("gdio-cli-t24", {"GDIO_THREADS": "24"}, [], "gpu:0,1"),
            ("gdio-cli-r4", {}, ["--requests", "4"], "gpu:0,1"),
            ("gdio-cli-s128", {}, ["--request-size", "128M", "--requests", "8"], "gpu:0,1"),
            ("gdio-gpu0", {}, [], "gpu:0"),
            ("gdio-gpu0-r4", {}, ["--requests", "4"], "gpu:0"),
            ("gdio-gpu0-s128", {}, ["--request-size", "128M", "--requests", "8"], "gpu:0"),
            # The bounce working set: two GPUs give each worker two rings (twice the buffers).
            ("gdio-cli-b2", {"GDIO_BOUNCE_BUFFER_SIZE": "2097152", "GDIO_BUFFERED_CHUNK_SIZE": "2097152"}, [],
             "gpu:0,1"),
            ("gdio-gpu0-b2", {"GDIO_BOUNCE_BUFFER_SIZE": "2097152", "GDIO_BUFFERED_CHUNK_SIZE": "2097152"}, [],
             "gpu:0"),
            ("gdio-gpu0-n4", {"GDIO_BOUNCE_BUFFERS_PER_THREAD": "4"}, [], "gpu:0"),
            # Each GPU reads a share on its own link (the default until session 6; now everything
            # is read on GPU 0's link and copied to GPU 1 over NVLink).
            ("gdio-cli-spread", {}, ["--spread-reads"], "gpu:0,1"),
            ("gdio-cli-spread-t24", {"GDIO_THREADS": "24"}, ["--spread-reads"], "gpu:0,1"),
            # Markers polled every 50 us instead of 4 (fewer driver calls from many workers).
            ("gdio-cli-spread-p50", {"GDIO_COMPLETION_POLL_US": "50"}, ["--spread-reads"], "gpu:0,1"),
            ("gdio-cli-p50", {"GDIO_COMPLETION_POLL_US": "50"}, [], "gpu:0,1"),
        ):
            if row not in rows:
                continue
            r = subprocess.run([a.gdio, "load", os.path.join(tmpfs, "model.safetensors.index.json"),
                                "--target", target, "--json", *flags], capture_output=True, text=True,
                               env=dict(os.environ, **extra))
            if r.returncode:
                record(row, {"error": r.stderr[-500:], "gbps": 0.0})
            else:
                d = json.loads(r.stdout)
                d["gbps"] = d["checkpoint_bytes"] / d["seconds"] / 1e9
                record(row, d)
    best = {k: max((x.get("gbps", 0) for x in v if "error" not in x), default=0.0) for k, v in got.items()}
    lim = got.get("limit", [{}])[0].get("limit_gbps", 0)
    it = best.get("instanttensor", 0)
    print()
    for k, v in best.items():
        if k == "limit":
            print(f"limit: {json.dumps(got['limit'][0])}")
            continue
        print(f"{k:16s} {v:7.2f} GB/s = {v / it if it else 0:.2f} x InstantTensor 2-rank ({it:.2f}; target >= 1.15)"
              f" = {v / lim if lim else 0:.2f} x limit ({lim:.2f}; target >= 0.80)")


if __name__ == "__main__":
    main()
