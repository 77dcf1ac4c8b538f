"""The Python package's GPU paths without a GPU: each test runs a child process with
GDIO_SIMULATE_GPUS=2, where gdio's engine runs on simulated GPUs (host memory whose copies
land late, so a missed wait reads wrong bytes) and device buffers are simulated allocations
handed over through __cuda_array_interface__. Futures (straight to the engine, and through the
pool with GDIO_PY_POOL=1), callbacks, vectored reads, writes, errors and saves of device
tensors, every byte compared with the file."""

import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent(
    """
    import ctypes, os, random, sys, threading, time
    import gdio
    from gdio import _native

    class Dev:
        "Simulated device memory, as a CUDA array of bytes."
        def __init__(self, n, ordinal=0):
            self.n, self.ordinal = n, ordinal
            self.addr = _native._sim_alloc(ordinal, n)
            self.__cuda_array_interface__ = {
                "shape": (n,), "typestr": "|u1", "data": (self.addr, False), "version": 3}
        def bytes(self, at=0, n=None):
            return ctypes.string_at(self.addr + at, self.n - at if n is None else n)
        def fill(self, data, at=0):
            ctypes.memmove(self.addr + at, data, len(data))
        def part(self, at, n):
            "A view of n bytes at `at`, as its own CUDA array."
            v = Dev.__new__(Dev)
            v.n, v.ordinal, v.addr = n, self.ordinal, self.addr + at
            v.__cuda_array_interface__ = {
                "shape": (n,), "typestr": "|u1", "data": (v.addr, False), "version": 3}
            return v

    assert gdio.runtime_info()["runtime"] == "sim", gdio.runtime_info()
    rng = random.Random(int(os.environ["SEED"]))
    path = os.environ["DATA"]
    data = open(path, "rb").read()
    """
)


def run_child(tmp_path, body, seed, extra_env=None):
    data = random_bytes(seed, (5 << 20) + 12_345)
    (tmp_path / "data.bin").write_bytes(data)
    env = dict(os.environ, GDIO_SIMULATE_GPUS="2", SEED=str(seed), DATA=str(tmp_path / "data.bin"),
               OUT=str(tmp_path))
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], env=env,
                       capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0, f"child failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    assert r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-2000:]


def random_bytes(seed, n):
    import random

    return random.Random(seed).randbytes(n)


FUTURES = """
size, count = 16_384, 600
buf = Dev(size * count, ordinal=1)
offs = [rng.randrange(0, len(data) - size) for _ in range(count)]
calls, lock = {}, threading.Lock()

def cb(i):
    def done(fut):
        with lock:
            calls[i] = calls.get(i, 0) + (1 if fut.get() == size else 100)
    return done

with gdio.CuFile(path) as f:
    futs = [f.pread(buf.part(i * size, size), file_offset=o) for i, o in enumerate(offs)]
    for i, fu in enumerate(futs):
        fu.add_done_callback(cb(i))
    assert [fu.get() for fu in futs] == [size] * count
    # One request split into parts (task_size): the tail past the end of the file is short.
    big = Dev(1 << 20)
    n = f.pread(big, file_offset=len(data) - 300_000, task_size=65_536).get()
    assert n == 300_000 and big.bytes(0, n) == data[-300_000:], n
    # Vectored.
    vs = [buf.part(i * size, size) for i in range(8)]
    vo = [rng.randrange(0, len(data) - size) for _ in range(8)]
    assert f.preadv(vs, vo).get() == 8 * size
    for i, o in enumerate(vo):
        assert buf.bytes(i * size, size) == data[o:o + size], i
    # Blocking read into device memory at an odd offset.
    assert f.read(buf.part(5, 70_001), file_offset=333) == 70_001
    assert buf.bytes(5, 70_001) == data[333:333 + 70_001]
    # A read that starts past the end of the file fails through its future.
    try:
        f.pread(buf.part(0, size), file_offset=len(data) + 4096).get()
        raise SystemExit("no error past the end of the file")
    except gdio.GdioError as e:
        assert "offset" in str(e) or e.errno, e
deadline = time.time() + 20
while len(calls) < count and time.time() < deadline:
    time.sleep(0.01)
assert calls == {i: 1 for i in range(count)}, sorted(calls.items())[:5]
# Futures' bytes: those not overwritten by the vectored and blocking reads above.
for i, o in enumerate(offs):
    if i >= 8 and i * size > 5 + 70_001:
        assert buf.bytes(i * size, size) == data[o:o + size], i
# Writes out of device memory, as futures, then read back.
src = Dev(64 * size)
payload = bytes(rng.getrandbits(8) for _ in range(64 * size))
src.fill(payload)
out = os.path.join(os.environ["OUT"], "w.bin")
with gdio.CuFile(out, "w") as g:
    ws = [g.pwrite(src.part(i * size, size), file_offset=i * size) for i in range(64)]
    assert [w.get() for w in ws] == [size] * 64
assert open(out, "rb").read() == payload
print("ok")
"""


@pytest.mark.parametrize("pool", ["0", "1"], ids=["engine", "pool"])
def test_device_futures_callbacks_vectored_writes_and_errors(tmp_path, pool):
    run_child(tmp_path, FUTURES, seed=11, extra_env={"GDIO_PY_POOL": pool})


def test_reads_into_read_only_device_memory_are_refused(tmp_path):
    run_child(tmp_path, """
buf = Dev(4096)
buf.fill(b"\\x5a" * 4096)
buf.__cuda_array_interface__["data"] = (buf.addr, True)
with gdio.CuFile(path) as f:
    for call in (lambda: f.read(buf), lambda: f.pread(buf).get()):
        try:
            call()
            raise SystemExit("read into read-only memory accepted")
        except BufferError:
            pass
assert buf.bytes() == b"\\x5a" * 4096
print("ok")
""", seed=12)


def test_save_of_device_tensors_writes_the_safetensors_packages_bytes(tmp_path):
    pytest.importorskip("safetensors")
    run_child(tmp_path, """
import numpy as np
import safetensors.numpy as ref
from gdio.safetensors import _format

gen = np.random.default_rng(5)
arrays, entries, keep = {}, [], []
for i in range(60):
    n = int(gen.integers(1, 50_000))
    a = gen.integers(0, 256, size=n, dtype=np.uint8)
    d = Dev(n, ordinal=i % 2)
    d.fill(a.tobytes())
    keep.append(d)
    arrays[f"t{i:02}"] = a
    entries.append((f"t{i:02}", "U8", [n], (d.ordinal, d.addr, n)))
out = os.path.join(os.environ["OUT"], "dev.safetensors")
_native.save_file(out, _format.layout_order(entries), {"format": "np"})
assert open(out, "rb").read() == ref.save(arrays, metadata={"format": "np"})
# A tensor whose address is host memory, not device memory: refused, nothing written.
host = np.arange(64, dtype=np.uint8)
bad = os.path.join(os.environ["OUT"], "bad.safetensors")
try:
    _native.save_file(bad, [("x", "U8", [64], (0, host.ctypes.data, 64))], None)
    raise SystemExit("host memory saved as device memory")
except Exception as e:
    assert "device memory" in str(e), e
assert not os.path.exists(bad)
print("ok")
""", seed=13)


def test_stream_ordered_reads_and_writes_on_a_simulated_stream(tmp_path):
    run_child(tmp_path, """
s = _native._sim_stream(1)
buf = Dev(1 << 20, ordinal=1)
with gdio.CuFile(path) as f:
    fut = f.raw_read_async(buf, s, 300_001, 4097, 13)
    _native._sim_stream_synchronize(s)
    assert fut.get() == 300_001
assert buf.bytes(13, 300_001) == data[4097:4097 + 300_001]
payload = bytes(rng.getrandbits(8) for _ in range(200_000))
buf.fill(payload, 500_000)
out = os.path.join(os.environ["OUT"], "s.bin")
with gdio.CuFile(out, "w") as g:
    w = g.raw_write_async(buf, s, 200_000, 8192, 500_000)
    _native._sim_stream_synchronize(s)
    assert w.get() == 200_000
got = open(out, "rb").read()
assert got[8192:] == payload and got[:8192] == bytes(8192)
# A stream of GPU 1 with memory of GPU 0: refused when queued, nothing read.
other = Dev(4096, ordinal=0)
other.fill(b"\\x33" * 4096)
with gdio.CuFile(path) as f:
    try:
        f.raw_read_async(other, s, 4096, 0, 0).get()
        raise SystemExit("memory of another GPU accepted")
    except (gdio.GdioError, ValueError, BufferError) as e:
        pass
assert other.bytes() == b"\\x33" * 4096
print("ok")
""", seed=14)


PRODUCER_STREAM = """
# A producer's stream (a handle other than 1 and 2, which CAI gives meanings of their own):
# its queued work lands late and writes where the futures then read. Each future names the
# stream, so its read must follow that work: the bytes left are the future's.
s = _native._sim_stream(1)
while s <= 2:
    s = _native._sim_stream(1)
size, count = 65_536, 300
buf = Dev(size * count, ordinal=1)

def on_stream(view):
    v = Dev.__new__(Dev)
    v.n, v.ordinal, v.addr = view.n, view.ordinal, view.addr
    v.__cuda_array_interface__ = dict(view.__cuda_array_interface__, stream=s)
    return v

for rnd in range(3):
    stale = [rng.randrange(0, len(data) - size) for _ in range(count)]
    fresh = [rng.randrange(0, len(data) - size) for _ in range(count)]
    with gdio.CuFile(path) as f:
        # Stale bytes queued on the producer's stream first, into every slot.
        queued = [f.raw_read_async(buf, s, size, o, i * size) for i, o in enumerate(stale)]
        futs = [f.pread(on_stream(buf.part(i * size, size)), file_offset=o)
                for i, o in enumerate(fresh)]
        assert sum(fu.get() for fu in futs) == size * count
        _native._sim_stream_synchronize(s)
        assert sum(q.get() for q in queued) == size * count
    for i, o in enumerate(fresh):
        assert buf.bytes(i * size, size) == data[o:o + size], (rnd, i)
print("ok")
"""


@pytest.mark.parametrize("pool", ["0", "1"])
def test_futures_naming_a_stream_read_after_its_queued_work(tmp_path, pool):
    run_child(tmp_path, PRODUCER_STREAM, seed=15, extra_env={"GDIO_PY_POOL": pool})


STATS = """
# Small futures into (simulated) GPU memory go through the engine: its counters move by the
# bytes read, the gathered small reads show, and the serving backend's ops and bytes match.
size, count = 16_384, 200
buf = Dev(size * count)
offs = [rng.randrange(0, len(data) - size) for _ in range(count)]
with gdio.CuFile(path) as f:
    f.pread(buf.part(0, size), file_offset=0).get()
    before = gdio.stats()
    futs = [f.pread(buf.part(i * size, size), file_offset=o) for i, o in enumerate(offs)]
    assert sum(x.get() for x in futs) == size * count
    after = gdio.stats()
for i, o in enumerate(offs):
    assert buf.bytes(i * size, size) == data[o:o + size], i
e0, e1 = before["engine"], after["engine"]
assert e1["buffered_read_bytes"] + e1["direct_read_bytes"] - e0["buffered_read_bytes"] - e0["direct_read_bytes"] == size * count, (e0, e1)
assert e1["gathered_reads"] > e0["gathered_reads"], (e0, e1)
# A simulated GPU has no scatter kernel: its gathered groups go as copies.
assert e1["scattered_reads"] == e0["scattered_reads"] == 0, (e0, e1)
moved = {n: (b["ops"] - before["backends"].get(n, {"ops": 0})["ops"], b["bytes"] - before["backends"].get(n, {"bytes": 0})["bytes"])
         for n, b in after["backends"].items()}
moved = {n: v for n, v in moved.items() if v != (0, 0)}
assert list(moved.values()) == [(count, size * count)], moved
assert list(moved) == [gdio.explain(path, "read", 0)["backend"]], moved
print("ok")
"""


def test_stats_show_gpu_futures_going_through_the_engine(tmp_path):
    run_child(tmp_path, STATS, seed=16)


BOUNCE_FREE = """
# The bounce buffers come with the first GPU read and go with bounce_buffer_free(); reads
# after it build them again and land right.
buf = Dev(1 << 20)
def read_and_check(off):
    with gdio.CuFile(path) as f:
        assert f.read(buf, 1 << 20, file_offset=off) == 1 << 20
    assert buf.bytes(0, 1 << 20) == data[off:off + (1 << 20)]
assert gdio.bounce_buffer_free() == 0  # none yet: no GPU I/O so far
read_and_check(rng.randrange(0, len(data) - (1 << 20)))
freed = gdio.bounce_buffer_free()
# Two buffers of at least the read's 1 MiB (a small task: its worker's lane on a stream of
# its own, own_stream_max_bytes, holds them).
assert freed >= 2 * (1 << 20), freed
assert gdio.bounce_buffer_free() == 0
read_and_check(rng.randrange(0, len(data) - (1 << 20)))
assert gdio.bounce_buffer_free() == freed, "a new driver's buffers differ"
print("ok")
"""


def test_bounce_buffer_free_gives_the_pinned_buffers_back_and_reads_go_on(tmp_path):
    run_child(tmp_path, BOUNCE_FREE, seed=17)


ONE_BY_ONE = """
# get_tensor in an order other than keys() loads one tensor at a time (the native load
# below); each small read runs on the calling thread through one lane (stream and pinned
# buffers) that it keeps, instead of making one per tensor (session 14: 2.4 ms per tensor on
# the H200 before). Each tensor's bytes are read out of the (simulated, host-visible) GPU
# memory its DLPack capsule points to and compared.
import numpy as np
from safetensors.numpy import save_file
want = {f"w{i}": np.frombuffer(rng.randbytes(4 * 257 * (1 + i % 5)), dtype=np.float32).reshape(-1, 257)
        for i in range(40)}
st = os.path.join(os.environ["OUT"], "m.safetensors")
save_file(want, st)
get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

def device_bytes(t):
    cap = t.__dlpack__()
    dl = get_ptr(cap, b"dltensor")  # DLManagedTensor: DLTensor first
    data = ctypes.c_void_p.from_address(dl).value
    byte_offset = ctypes.c_uint64.from_address(dl + 40).value  # after data, device, ndim, dtype, shape, strides
    return ctypes.string_at(data + byte_offset, t.nbytes)

ck = _native.Checkpoint([st])
before = gdio.stats()["engine"]
for n in sorted(want, reverse=True):
    (t,) = ck.load([n], 0)
    assert t.__dlpack_device__()[0] == 2, t.__dlpack_device__()  # kDLCUDA
    assert device_bytes(t) == want[n].tobytes(), n
after = gdio.stats()["engine"]
assert after["inline_requests"] - before["inline_requests"] == len(want), (before, after)
assert after["caller_lanes_made"] - before["caller_lanes_made"] <= 1, (before, after)
print("ok")
"""


def test_one_tensor_loads_keep_the_calling_thread_s_lane(tmp_path):
    run_child(tmp_path, ONE_BY_ONE, seed=18)
