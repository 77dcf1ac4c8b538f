#!/usr/bin/env python3
"""KvikIO reading a file into GPU memory with compat mode ON or OFF (OFF: every read goes
through libcufile's cuFileRead, which is gdio's under LD_PRELOAD). One JSON line per thread
count on stdout.

usage: cufile_kvikio_read.py on|off PATH THREADS[,THREADS...] ITERATIONS
GAP_MS sleeps that long after each pass (compute between epochs). "pass_gbps" lists every pass in order, the untimed first one included. "verified" compares the first and last MiB with the file; VERIFY_ALL=1 compares every byte of
the last pass (1 GiB at a time, after the timing). "cpu_steal" is the share of the machine's CPU
time the hypervisor gave to others over the timed passes (/proc/stat), null when unknown or
when the span was under 100 ticks.
"""
import json
import os
import sys
import time

os.environ["KVIKIO_COMPAT_MODE"] = sys.argv[1].upper()

import cupy  # noqa: E402
import kvikio  # noqa: E402
import kvikio.defaults  # noqa: E402

from cpu_steal import cpu_ticks, steal_share  # noqa: E402  (bench/, beside this script)


def main():
    mode, path, threads, iters = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4])
    size = os.path.getsize(path)
    buf = cupy.empty(size, dtype=cupy.uint8)
    with open(path, "rb") as f:
        head = f.read(1 << 20)
        f.seek(size - (1 << 20))
        tail = f.read(1 << 20)
    for n in threads:
        kvikio.defaults.set({"num_threads": n})
        times = []
        passes = []
        ticks = None
        # The first pass warms up and is not timed; ITERATIONS 0 times one pass (cold reads).
        for i in range(iters + 1):
            buf[:] = 0
            cupy.cuda.runtime.deviceSynchronize()
            if i == 1 or iters == 0:
                ticks = cpu_ticks()
            t = time.perf_counter()
            with kvikio.CuFile(path, "r") as f:
                got = f.pread(buf).get()
            cupy.cuda.runtime.deviceSynchronize()
            took = time.perf_counter() - t
            passes.append(round(size / took / 1e9, 2))
            # The gap after a pass is not part of its time.
            time.sleep(float(os.environ.get("GAP_MS", "0")) / 1e3)
            if i > 0 or iters == 0:
                times.append(took)
            assert got == size, f"short read: {got} of {size}"
        steal = steal_share(ticks, cpu_ticks())
        ok = buf[: 1 << 20].get().tobytes() == head and buf[size - (1 << 20):].get().tobytes() == tail
        if os.environ.get("VERIFY_ALL") == "1":
            with open(path, "rb") as f:
                for at in range(0, size, 1 << 30):
                    want = f.read(1 << 30)
                    if buf[at:at + len(want)].get().tobytes() != want:
                        ok = False
                        print(f"bytes differ in the GiB at {at}", file=sys.stderr)
                        break
        times.sort()
        med = times[len(times) // 2]
        print(json.dumps({
            "peer": "kvikio", "compat_mode": mode, "libcufile": os.environ.get("LD_PRELOAD", "") or "none",
            "version": kvikio.__version__, "op": "read", "path": path, "threads": n, "bytes": size,
            "seconds": med, "gbps": size / med / 1e9, "best_gbps": size / times[0] / 1e9, "verified": ok,
            "pass_gbps": passes, "cpu_steal": steal,
        }), flush=True)


if __name__ == "__main__":
    main()
