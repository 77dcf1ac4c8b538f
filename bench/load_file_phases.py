"""Where `gdio.safetensors.torch.load_file` spends its time, in one process (diagnosis for
issue 11: the Python load read 0.77-0.95 x `gdio load` in session 11).

usage: python3 bench/load_file_phases.py INDEX_OR_FILE [REPS]

Prints one JSON object: seconds of `import gdio.safetensors.torch`, of gdio's first runtime
(`gdio.runtime_info()`), then REPS load_file calls as the peer script times them (the first
one pays whatever gdio does at its first load), then REPS of the native load alone (no
framework conversion) and the conversion of its 700-odd tensors alone. GB/s are checkpoint
data bytes / seconds.
"""
import json
import os
import sys
import time

from safetensors_peer import data_bytes  # bench/, the script's own directory


def main():
    target = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if target.endswith(".index.json"):
        d = os.path.dirname(target)
        with open(target) as f:
            files = sorted({os.path.join(d, v) for v in json.load(f)["weight_map"].values()})
    else:
        files = [target]
    nbytes = data_bytes(files)
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda:0")
    torch.cuda.synchronize()
    out = {"bytes": nbytes}
    t = time.perf_counter()
    import gdio
    import gdio.safetensors.torch as gst
    from gdio.safetensors import _frameworks

    out["import_s"] = time.perf_counter() - t
    t = time.perf_counter()
    gdio.runtime_info()
    out["runtime_s"] = time.perf_counter() - t

    def timed(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        r = fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, r

    out["load_file_s"] = []
    for _ in range(reps):
        s, keep = timed(lambda: gst.load_file(target, device="cuda:0"))
        out["load_file_s"].append(round(s, 4))
        del keep
        torch.cuda.empty_cache()
    out["native_s"], out["convert_s"], out["open_s"] = [], [], []
    for _ in range(reps):
        s, f = timed(lambda: gdio.safetensors.safe_open(target, framework="pt", device="cuda:0"))
        out["open_s"].append(round(s, 4))
        names = f.keys()
        s, raw = timed(lambda: f._ckpt.load(names, f._gpu))
        out["native_s"].append(round(s, 4))
        s, conv = timed(lambda: {t.name: _frameworks.convert(t, "pt") for t in raw})
        out["convert_s"].append(round(s, 4))
        del raw, conv, f
        torch.cuda.empty_cache()
    out["load_file_gbps"] = [round(nbytes / s / 1e9, 2) for s in out["load_file_s"]]
    out["native_gbps"] = [round(nbytes / s / 1e9, 2) for s in out["native_s"]]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
