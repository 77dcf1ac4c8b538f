#!/usr/bin/env python3
"""Is gdio slower into one GPU than another? For each GPU, in a fresh process: the first and
the best of three `gdio.CuFile.pread` reads of 4 GiB (the first half of a cached 8 GiB file,
then the second half) into a torch tensor on that GPU (the step a 2-rank group load times as
"read share"), with torch's current device set to that GPU as a rank has it.
usage: python3 bench/gpu-ordinal-probe.py FILE [GPUS]"""
import json
import subprocess
import sys
import time


def one(path, dev):
    import torch
    import gdio
    torch.cuda.set_device(dev)
    n = 4 << 30
    t = torch.empty(n, dtype=torch.uint8, device=f"cuda:{dev}")
    for half in (0, 1):
        times = []
        with gdio.CuFile(path, "r") as f:
            for _ in range(4):
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                got = f.pread(t, n, half * n).get()
                torch.cuda.synchronize(dev)
                times.append(time.perf_counter() - t0)
                assert got == n, got
        print(json.dumps({"gpu": dev, "half": half, "first_gbps": round(n / times[0] / 1e9, 2),
                          "best_gbps": round(n / min(times[1:]) / 1e9, 2)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]))
    else:
        for dev in (sys.argv[2] if len(sys.argv) > 2 else "0,1").split(","):
            subprocess.run([sys.executable, __file__, "--one", sys.argv[1], dev], check=False)
