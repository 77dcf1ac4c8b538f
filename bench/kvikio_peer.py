#!/usr/bin/env python3
"""KvikIO (compat mode ON) reading a file into GPU memory and writing it back, for comparison
with gdio in the same run. Prints one JSON object per measurement on stdout.

usage: kvikio_peer.py read|write PATH THREADS[,THREADS...] ITERATIONS
       kvikio_peer.py sweep PATH THREADS[,THREADS...] ITERATIONS [FS [read|write|both]]
sweep: the request shapes of `gdio bench --sweep` (the same rows, the same scaling to the file
size), each request a KvikIO `pread` (or `pwrite`) future, the same number in flight as gdio;
one JSON line per row and thread count ("op": "sweep" for reads, "sweep-write" for writes).
Writes go from the file's bytes in GPU memory to PATH.kvikio-out (emptied before each pass,
untimed, as gdio's; removed at the end). Rows of requests under 1 MiB move a random sample of
SWEEP_SMALL_BYTES (default 1 GiB) of the file (Python's cost per future would otherwise take
minutes).
"""
import collections
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


# The rows of `gdio bench --sweep` (crates/gdio-cli/src/bench/sweep.rs ROWS): keep in step.
ROWS = [
    (4 << 10, 64, "random"),
    (64 << 10, 64, "seq"),
    (1 << 20, 32, "seq"),
    (4 << 20, 16, "seq"),
    (16 << 20, 8, "seq"),
    (64 << 20, 4, "seq"),
    (1 << 30, 2, "seq"),
]


def fmt_size(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, i = float(b), 0
    while v >= 1024 and i < len(units) - 1:
        v, i = v / 1024, i + 1
    return f"{b} B" if i == 0 else f"{v:.1f} {units[i]}".replace(".0 ", " ")


def row_label(io, depth, pattern):
    return f"{fmt_size(io)} random x {depth}" if pattern == "random" else f"{fmt_size(io)} x {depth}"


def scaled_io_size(io, depth, size):
    share = (size // depth) // 4096 * 4096
    return min(io, max(share, 4096))


def sweep(path, threads, iters, fs, mode):
    size = os.path.getsize(path)
    small_budget = int(os.environ.get("SWEEP_SMALL_BYTES", 1 << 30))
    buf = cupy.empty(size, dtype=cupy.uint8)
    if mode in ("read", "both"):
        sweep_op(path, path, "read", buf, size, small_budget, threads, iters, fs)
    if mode in ("write", "both"):
        with kvikio.CuFile(path, "r") as f:
            assert f.read(buf) == size
        out = path + ".kvikio-out"
        try:
            sweep_op(path, out, "write", buf, size, small_budget, threads, iters, fs)
        finally:
            if os.path.exists(out):
                os.unlink(out)


def sweep_op(path, target, op, buf, size, small_budget, threads, iters, fs):
    """One direction of the sweep: `read` path into buf, or `write` buf into target."""
    import numpy
    write = op == "write"
    if write:
        open(target, "wb").close()
    with kvikio.CuFile(target, "r+" if write else "r") as f, open(path, "rb") as plain:
        for io, depth, pattern in ROWS:
            ios = scaled_io_size(io, depth, size)
            count = -(-size // ios)
            if pattern == "random":
                order = numpy.random.default_rng(7).permutation(count)
            else:
                order = numpy.arange(count)
            if ios < (1 << 20):
                order = order[: max(1, min(count, small_budget // ios))]
            blocks = [int(b) for b in order]
            moved = sum(min(ios, size - b * ios) for b in blocks)
            for n in threads:
                set_threads(n)
                times = []
                for i in range(iters + 1):  # the first pass warms up, as in gdio bench
                    if write:
                        os.truncate(target, 0)  # each pass into an empty file, untimed
                    elif i == iters:
                        buf.fill(0xA5)  # only the last pass can make the sample right
                        cupy.cuda.runtime.deviceSynchronize()
                    pending = collections.deque()
                    got = 0
                    t = time.perf_counter()
                    for b in blocks:
                        off = b * ios
                        ln = min(ios, size - off)
                        if len(pending) >= depth:
                            got += pending.popleft().get()
                        io_fn = f.pwrite if write else f.pread
                        pending.append(io_fn(buf[off:off + ln], ln, off))
                    while pending:
                        got += pending.popleft().get()
                    cupy.cuda.runtime.deviceSynchronize()
                    if i > 0:
                        times.append(time.perf_counter() - t)
                    assert got == moved, f"short {op}: {got} of {moved}"
                ok = True
                with open(target, "rb") as written:
                    for b in blocks[:: max(1, len(blocks) // 16)][:16]:
                        off = b * ios
                        ln = min(ios, size - off, 1 << 20)
                        plain.seek(off)
                        want = plain.read(ln)
                        if write:
                            written.seek(off)
                            ok = ok and written.read(ln) == want
                        else:
                            ok = ok and buf[off:off + ln].get().tobytes() == want
                times.sort()
                med = times[len(times) // 2]
                print(json.dumps({
                    "peer": "kvikio", "op": "sweep-write" if write else "sweep",
                    "version": kvikio.__version__,
                    "compat_mode": compat_mode(), "fs": fs, "path": path, "label": row_label(io, depth, pattern),
                    "pattern": pattern, "io_size": ios, "queue_depth": depth, "threads": n,
                    "bytes": moved, "seconds": med, "gbps": moved / med / 1e9,
                    "iops": len(blocks) / med, "verified_sample": ok,
                }), flush=True)


def main():
    if sys.argv[1] == "sweep":
        sweep(sys.argv[2], [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4]),
              sys.argv[5] if len(sys.argv) > 5 else "", sys.argv[6] if len(sys.argv) > 6 else "read")
        return
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
