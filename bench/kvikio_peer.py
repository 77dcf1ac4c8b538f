#!/usr/bin/env python3
"""KvikIO (compat mode ON) reading a file into GPU memory and writing it back, for comparison
with gdio in the same run. Prints one JSON object per measurement on stdout.

usage: kvikio_peer.py read|write PATH THREADS[,THREADS...] ITERATIONS
"""
import json
import os
import sys
import time

os.environ["KVIKIO_COMPAT_MODE"] = "ON"

import cupy  # noqa: E402
import kvikio  # noqa: E402
import kvikio.defaults  # noqa: E402


def set_threads(n):
    try:
        kvikio.defaults.set({"num_threads": n})
    except Exception:  # older API
        kvikio.defaults.num_threads_reset(n)


def compat_mode():
    try:
        return str(kvikio.defaults.get("compat_mode"))
    except Exception:
        return str(kvikio.defaults.compat_mode())


def check_sample(path, buf, size):
    """Compares 16 random 1 MiB slices of the GPU buffer with the file."""
    rng = cupy.random.default_rng(7)
    with open(path, "rb") as f:
        for off in [int(x) for x in rng.integers(0, max(1, size - (1 << 20)), 16).get()]:
            f.seek(off)
            want = f.read(1 << 20)
            got = buf[off:off + len(want)].get().tobytes()
            if got != want:
                return False
    return True


def main():
    op, path, threads, iters = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4])
    size = os.path.getsize(path)
    buf = cupy.empty(size, dtype=cupy.uint8)
    if op == "write":
        with kvikio.CuFile(path, "r") as f:
            f.read(buf)
    for n in threads:
        set_threads(n)
        times = []
        fsync = None
        target = path if op == "read" else path + ".kvikio-out"
        for i in range(iters + 1):  # the first pass warms up and is not timed, as in gdio bench
            if op == "write":
                open(target, "wb").close()  # start from an empty file, untimed, as gdio does
            t = time.perf_counter()
            if op == "read":
                with kvikio.CuFile(target, "r") as f:
                    got = f.pread(buf).get()
            else:
                with kvikio.CuFile(target, "w") as f:
                    got = f.pwrite(buf).get()
            cupy.cuda.runtime.deviceSynchronize()
            if i > 0:
                times.append(time.perf_counter() - t)
            assert got == size, f"short {op}: {got} of {size}"
        if op == "write":
            t = time.perf_counter()
            fd = os.open(target, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            fsync = time.perf_counter() - t
            ok = check_sample(target, buf, size)
            os.unlink(target)
        else:
            ok = check_sample(path, buf, size)
        times.sort()
        med = times[len(times) // 2]
        print(json.dumps({
            "peer": "kvikio", "variant": os.environ.get("PEER_VARIANT", ""), "version": kvikio.__version__,
            "auto_direct_io_write": os.environ.get("KVIKIO_AUTO_DIRECT_IO_WRITE", "default (1)"), "compat_mode": compat_mode(), "op": op,
            "path": path, "threads": n, "bytes": size, "seconds": med, "gbps": size / med / 1e9,
            "best_gbps": size / times[0] / 1e9, "verified_sample": ok, "fsync_seconds": fsync,
        }), flush=True)


if __name__ == "__main__":
    main()
