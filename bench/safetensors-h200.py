#!/usr/bin/env python3
"""Safetensors load and save on the GPU machine: gdio beside the peers in ONE run.

usage (repository root, GPU machine, as root for the cold rows):
  python3 bench/safetensors-h200.py [--gdio .dev/bin/gdio] [--out $OUT] [--size-gib 16]
      [--rows verify,tmpfs,ext4-hot,cold,save,2gpu] [--reps 1]

Writes a checkpoint of --size-gib GiB (4 shards, bf16 and f32 tensors of 4 KiB to 256 MiB,
written by the `safetensors` package, with its index) to ext4 (/tmp/gdio-st) and tmpfs
(/dev/shm/gdio-st), then loads it into GPU 0 with safetensors.torch.load_file, fastsafetensors
(nogds=True), InstantTensor (default and BUFFERED) and `gdio load --json`, from tmpfs, a hot
ext4 page cache and cold (echo 3 > /proc/sys/vm/drop_caches), beside the pinned host->device
copy limit and a plain parallel O_DIRECT read; then saves from GPU memory into the ext4 page
cache with `gdio save` vs safetensors.torch.save_file vs a plain parallel pwrite; and, with two
GPUs, `gdio load --target gpu:0,1`. Every measurement is one JSON line in $OUT/results.jsonl;
a table with the issue's ratios is printed at the end. Peers' wheels: .whl/ (from
../shared/tools/fetch-peer-wheels), installed to /tmp/site.
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "safetensors_peer.py")


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), **kw)


def write_checkpoint(dirpath, size_gib, seed=1):
    """4 shards of bf16/f32 tensors from 4 KiB to 256 MiB, written by safetensors.torch."""
    import torch
    from safetensors.torch import save_file
    idx = os.path.join(dirpath, "model.safetensors.index.json")
    if os.path.exists(idx):
        return idx
    os.makedirs(dirpath, exist_ok=True)
    rng = random.Random(seed)
    total = size_gib << 30
    sizes = []
    while sum(sizes) < total:
        # log-uniform 4 KiB .. 256 MiB
        sizes.append(min(int(2 ** rng.uniform(12, 28)) // 4096 * 4096, total - sum(sizes)) or 4096)
    shards = [[] for _ in range(4)]
    per = total / 4
    acc = 0
    for i, s in enumerate(sizes):
        shards[min(3, int(acc // per))].append((i, s))
        acc += s
    weight_map = {}
    g = torch.Generator(device="cuda:0").manual_seed(seed)
    for si, items in enumerate(shards):
        name = f"model-{si + 1:05d}-of-00004.safetensors"
        sd = {}
        for i, s in items:
            dt = torch.bfloat16 if i % 3 else torch.float32
            n = s // (2 if dt == torch.bfloat16 else 4)
            raw = torch.randint(0, 256, (n * (2 if dt == torch.bfloat16 else 4),), dtype=torch.uint8,
                                device="cuda:0", generator=g)
            t = raw.view(dt)
            if i % 5 == 0 and n % 64 == 0:
                t = t.view(-1, 64)
            sd[f"model.layers.{i}.weight"] = t.cpu()
            weight_map[f"model.layers.{i}.weight"] = name
        save_file(sd, os.path.join(dirpath, name), metadata={"format": "pt"})
        del sd
    torch.cuda.empty_cache()
    with open(idx, "w") as f:
        json.dump({"metadata": {"total_size": sum(sizes)}, "weight_map": weight_map}, f)
    return idx


def shard_files(dirpath):
    return sorted(glob.glob(os.path.join(dirpath, "model-*.safetensors")))


def drop_caches():
    sh("sync")
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as e:
        print(f"cannot drop caches ({e}); cold rows skipped", file=sys.stderr)
        return False


def warm(files):
    for p in files:
        sh(["cat", p], stdout=subprocess.DEVNULL)


class Run:
    def __init__(self, out, gdio):
        self.out, self.gdio = out, gdio
        self.log = open(os.path.join(out, "results.jsonl"), "a")
        self.rows = []

    def record(self, where, tool, d):
        d = dict(d, where=where, tool=tool)
        self.log.write(json.dumps(d) + "\n")
        self.log.flush()
        self.rows.append(d)
        print(f"  {where:10s} {tool:28s} {d.get('gbps', 0):7.2f} GB/s  {d.get('seconds', 0):7.2f} s",
              file=sys.stderr)

    def peer(self, where, kind, files, extra=()):
        r = sh([sys.executable, PEER, kind, *extra, *files], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{kind} failed: {r.stderr[-2000:]}", file=sys.stderr)
            self.record(where, kind, {"error": r.stderr[-500:], "gbps": 0.0})
            return
        line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
        self.record(where, kind, json.loads(line))

    def gdio_load(self, where, target, path, verify=False, binary=None, label="gdio"):
        args = [binary or self.gdio, "load", path, "--target", target, "--json"] + (["--verify"] if verify else [])
        r = sh(args, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"gdio load failed: {r.stderr[-2000:]}", file=sys.stderr)
            self.record(where, f"{label} {target}", {"error": r.stderr[-500:], "gbps": 0.0})
            return
        d = json.loads(r.stdout)
        # GB/s of checkpoint (each byte once, however many GPUs got it).
        d["gbps"] = d["checkpoint_bytes"] / d["seconds"] / 1e9
        self.record(where, f"{label} {target}" + (" verify" if verify else ""), d)

    def gdio_save(self, where, path, outdir, label="gdio save", env=None):
        shutil.rmtree(outdir, ignore_errors=True)
        os.makedirs(outdir)
        r = sh([self.gdio, "save", path, "--via", "gpu:0", "--shard-size", "5G", "--json", "--out",
                os.path.join(outdir, "model.safetensors")], capture_output=True, text=True,
               env=dict(os.environ, **(env or {})))
        if r.returncode != 0:
            print(f"gdio save failed: {r.stderr[-2000:]}", file=sys.stderr)
            self.record(where, label, {"error": r.stderr[-500:], "gbps": 0.0})
            return
        self.record(where, label, json.loads(r.stdout))

    def best(self, where, tools):
        v = [r["gbps"] for r in self.rows if r["where"] == where and r["tool"] in tools and "error" not in r]
        return max(v) if v else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdio", default=".dev/bin/gdio" if os.path.exists(".dev/bin/gdio") else "target/release/gdio")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gdio-st-bench"))
    ap.add_argument("--size-gib", type=int, default=16)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--gdio-before", default=None,
                    help="also load with this gdio binary (the build before a change), same rows")
    ap.add_argument("--peers", default="safetensors,fastsafetensors,instanttensor,instanttensor-buffered",
                    help="comma list of peers to run (empty: none)")
    ap.add_argument("--gdio-torch", action="store_true",
                    help="also load with gdio.safetensors.torch.load_file (issue 11), same rows")
    ap.add_argument("--rows", default="verify,tmpfs,ext4-hot,cold,save,2gpu",
                    help="comma list of row groups to run (split a run to fit a 10-minute limit; "
                         "results.jsonl accumulates)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if os.path.isdir(".whl") and glob.glob(".whl/*.whl"):
        sh("python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl")
        sys.path.insert(0, "/tmp/site")
        os.environ["PYTHONPATH"] = "/tmp/site" + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    ext4, tmpfs = "/tmp/gdio-st", "/dev/shm/gdio-st"
    t0 = time.time()
    idx = write_checkpoint(ext4, a.size_gib)
    if not os.path.exists(os.path.join(tmpfs, "model.safetensors.index.json")):
        shutil.copytree(ext4, tmpfs)
    print(f"checkpoint ready in {time.time() - t0:.0f} s", file=sys.stderr)
    run = Run(a.out, a.gdio)
    peers = [p for p in a.peers.split(",") if p]
    rows = set(a.rows.split(","))
    run.peer("limit", "h2d", [])
    if "verify" in rows:
        # Correctness first (not timed): every tensor compared with a plain read.
        run.gdio_load("verify", "gpu:0", os.path.join(tmpfs, "model.safetensors.index.json"), verify=True)
    for _ in range(a.reps):
        for where, d in (("tmpfs", tmpfs), ("ext4-hot", ext4)):
            if where not in rows:
                continue
            files = shard_files(d)
            for p in peers:
                if where == "ext4-hot":
                    warm(files)
                run.peer(where, p, files)
            if where == "ext4-hot":
                warm(files)
            run.gdio_load(where, "gpu:0", os.path.join(d, "model.safetensors.index.json"))
            if a.gdio_torch:
                if where == "ext4-hot":
                    warm(files)
                run.peer(where, "gdio-torch", files)
            if a.gdio_before:
                run.gdio_load(where, "gpu:0", os.path.join(d, "model.safetensors.index.json"),
                              binary=a.gdio_before, label="gdio-before")
        if "cold" in rows:
            files = shard_files(ext4)
            if drop_caches():
                run.peer("cold", "odirect", files)
                for p in peers:
                    drop_caches()
                    run.peer("cold", p, files)
                drop_caches()
                run.gdio_load("cold", "gpu:0", idx)
        if "save" in rows:
            files = shard_files(ext4)
            warm(files)
            outdir = "/tmp/gdio-st-save"
            for kind in ("pwrite", "save-safetensors", "save-gdio-serial", "save-gdio",
                         "save-gdio-serial", "save-gdio"):
                shutil.rmtree(outdir, ignore_errors=True)
                sh("sync")
                run.peer("save", kind, files, extra=[outdir])
            shutil.rmtree(outdir, ignore_errors=True)
            sh("sync")
            for label, env in (("gdio save shards serial", {"GDIO_SAVE_FILES_IN_FLIGHT": "1"}),
                               ("gdio save", None)) * 2:
                sh("sync")
                run.gdio_save("save", idx, outdir, label=label, env=env)
            shutil.rmtree(outdir, ignore_errors=True)
        import torch
        if "2gpu" in rows and torch.cuda.device_count() >= 2:
            run.gdio_load("tmpfs-2gpu", "gpu:0,1", os.path.join(tmpfs, "model.safetensors.index.json"))

    # Table with the ratios (over every row in results.jsonl, so split runs combine).
    run.rows = [json.loads(l) for l in open(os.path.join(a.out, "results.jsonl")) if l.strip()]
    h2d = run.best("limit", ["h2d"])
    print(f"\n{'where':12s} {'tool':28s} {'GB/s':>7s}")
    for r in run.rows:
        print(f"{r['where']:12s} {r['tool']:28s} {r.get('gbps', 0):7.2f}" + ("  ERROR" if "error" in r else ""))
    print()
    for where in ("tmpfs", "ext4-hot"):
        g = run.best(where, ["gdio gpu:0"])
        p = run.best(where, peers)
        b = run.best(where, ["gdio-before gpu:0"])
        if b:
            print(f"{where}: gdio before this change {b:.2f} GB/s, now {g:.2f} ({g / b:.2f} x)")
        print(f"{where}: gdio {g:.2f} GB/s = {g / p if p else 0:.2f} x best peer ({p:.2f}; target >= 1.15) "
              f"= {g / h2d if h2d else 0:.2f} x pinned H2D ({h2d:.2f}; target >= 0.90)")
        t = run.best(where, ["gdio-torch"])
        if t:
            print(f"{where}: gdio.safetensors.torch.load_file {t:.2f} GB/s = {t / p if p else 0:.2f} x best peer "
                  f"({p:.2f}; target >= 1.15)")
    g, o = run.best("cold", ["gdio gpu:0"]), run.best("cold", ["odirect"])
    if o:
        print(f"cold: gdio {g:.2f} GB/s = {g / o:.2f} x plain parallel O_DIRECT ({o:.2f}; target >= 0.95)")
    g, w, s = run.best("save", ["gdio save"]), run.best("save", ["pwrite"]), run.best("save", ["save-safetensors"])
    if w:
        print(f"save: gdio {g:.2f} GB/s = {g / w:.2f} x plain pwrite ({w:.2f}; target >= 0.90) "
              f"= {g / s if s else 0:.2f} x save_file ({s:.2f}; target >= 3)")
    gs, gp = run.best("save", ["save-gdio-serial"]), run.best("save", ["save-gdio"])
    if gp and w:
        print(f"save_file of separate GPU tensors: gdio {gp:.2f} GB/s (writes one at a time {gs:.2f}; "
              f"{gp / gs if gs else 0:.2f} x) = {gp / w:.2f} x plain pwrite = {gp / s if s else 0:.2f} x "
              f"safetensors save_file; verified {all(r.get('verified') for r in run.rows if r['tool'].startswith('save-gdio'))}")
    gss = run.best("save", ["gdio save shards serial"])
    if gss:
        print(f"gdio save: shards side by side {g:.2f} GB/s, one after another {gss:.2f} ({g / gss:.2f} x)")
    print(f"results: {os.path.join(a.out, 'results.jsonl')}")


if __name__ == "__main__":
    main()
