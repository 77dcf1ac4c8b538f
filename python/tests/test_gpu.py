"""GPU buffers from torch and CuPy (DLPack and the CUDA Array Interface). They skip where
there is no GPU and fail then when GDIO_REQUIRE_GPU=1."""

import time

import pytest

import gdio

from conftest import gpu_skip


def _torch():
    try:
        import torch
    except ImportError:
        gpu_skip("torch is not installed")
    if not torch.cuda.is_available():
        gpu_skip("torch sees no CUDA GPU")
    if gdio.runtime_info()["runtime"] != "cuda":
        gpu_skip(f"gdio has no CUDA: {gdio.runtime_info()['why_no_gpu']}")
    return torch


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - ImportError or CUDA errors
        gpu_skip(f"CuPy unusable: {e}")
    return cupy


def test_torch_read_write_roundtrip(data_file, tmp_path, rng):
    torch = _torch()
    path, data = data_file
    t = torch.full((len(data) + 100,), 7, dtype=torch.uint8, device="cuda")
    with gdio.CuFile(path) as f:
        n = f.read(t)
    assert n == len(data)
    assert bytes(t[:n].cpu().numpy()) == data
    assert (t[n:] == 7).all()
    # Offsets, sizes and a typed tensor
    with gdio.CuFile(path) as f:
        for _ in range(10):
            off = rng.randrange(0, len(data) - 4096)
            x = torch.empty(1024, dtype=torch.float32, device="cuda")
            assert f.read(x, file_offset=off) == 4096
            assert bytes(x.view(torch.uint8).cpu().numpy()) == data[off : off + 4096]
    out = tmp_path / "t.bin"
    with gdio.CuFile(out, "w") as f:
        assert f.write(t[:n]) == n
    assert out.read_bytes() == data


def test_torch_pread_many_futures_one_buffer(data_file, rng):
    torch = _torch()
    path, data = data_file
    size, count = 65536, 48
    buf = torch.empty(size * count, dtype=torch.uint8, device="cuda")
    offs = [rng.randrange(0, len(data) - size) for _ in range(count)]
    with gdio.CuFile(path) as f:
        futs = [f.pread(buf[i * size : (i + 1) * size], file_offset=o) for i, o in enumerate(offs)]
        gdio.wait(futs)
        assert [fu.get() for fu in futs] == [size] * count
    host = bytes(buf.cpu().numpy())
    for i, o in enumerate(offs):
        assert host[i * size : (i + 1) * size] == data[o : o + size]


def test_torch_futures_go_to_the_engine_with_callbacks_errors_and_writes(data_file, rng, tmp_path):
    """GPU futures are submitted to the engine (no pool thread waits on them): 2,000 small
    reads at random offsets with a callback each, a read that fails, and writes back out."""
    import threading

    torch = _torch()
    path, data = data_file
    size, count = 16384, 2000
    buf = torch.empty(size * count, dtype=torch.uint8, device="cuda")
    offs = [rng.randrange(0, len(data) - size) for _ in range(count)]
    calls, lock = {}, threading.Lock()

    def cb(i):
        def done(fut):
            with lock:
                calls[i] = calls.get(i, 0) + 1
            assert fut.done() and fut.get() == size
        return done

    with gdio.CuFile(path) as f:
        futs = [f.pread(buf[i * size : (i + 1) * size], file_offset=o) for i, o in enumerate(offs)]
        for i, fu in enumerate(futs):
            fu.add_done_callback(cb(i))
        assert [fu.get() for fu in futs] == [size] * count
        with pytest.raises(gdio.GdioError):
            f.pread(buf[:size], file_offset=len(data) + 8192).get()
    deadline = time.monotonic() + 10
    while len(calls) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls == {i: 1 for i in range(count)}, "every callback once"
    host = bytes(buf.cpu().numpy())
    for i, o in enumerate(offs):
        assert host[i * size : (i + 1) * size] == data[o : o + size]
    out = tmp_path / "fw.bin"
    with gdio.CuFile(out, "w") as f:
        ws = [f.pwrite(buf[i * size : (i + 1) * size], file_offset=i * size) for i in range(64)]
        assert [w.get() for w in ws] == [size] * 64
    assert out.read_bytes() == host[: 64 * size]


def test_torch_stream_order_is_honoured(data_file):
    """A kernel queued before the read writes the buffer; the read must land after it."""
    torch = _torch()
    path, data = data_file
    n = len(data) // 4096 * 4096
    t = torch.empty(n, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        t.fill_(3)
        with gdio.CuFile(path) as f:
            f.read(t)
    torch.cuda.synchronize()
    assert bytes(t.cpu().numpy()) == data[:n]


def test_torch_raw_read_async(data_file):
    torch = _torch()
    path, data = data_file
    t = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")
    s = torch.cuda.current_stream()
    with gdio.CuFile(path) as f:
        fut = f.raw_read_async(t, s.cuda_stream, 65536, 4096, 8192)
        assert fut.check_bytes_done() == 65536
    host = bytes(t.cpu().numpy())
    assert host[8192 : 8192 + 65536] == data[4096 : 4096 + 65536]
    assert host[:8192] == bytes(8192)


def test_torch_raw_read_async_is_queued_on_the_stream(data_file):
    """The read is queued behind earlier work on the stream (a long sleep, then a fill of the
    buffer) and returns before that work is done; later work on the stream (a copy) sees the
    file's bytes, never the fill."""
    torch = _torch()
    path, data = data_file
    n = min(len(data) // 4096 * 4096, 1 << 20)
    t = torch.zeros(n, dtype=torch.uint8, device="cuda")
    later = torch.zeros(n, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    with gdio.CuFile(path) as f:
        with torch.cuda.stream(s):
            torch.cuda._sleep(400_000_000)  # some 200 ms of GPU time
            t.fill_(9)
            fut = f.raw_read_async(t, s.cuda_stream, n - 4096, 4096, 0)
            queued_done = fut.done()
            later.copy_(t)
        assert not queued_done, "raw_read_async waited for the stream instead of queueing"
        assert fut.check_bytes_done() == n - 4096
    torch.cuda.synchronize()
    want = data[4096 : 4096 + n - 4096]
    assert bytes(t[: n - 4096].cpu().numpy()) == want, "the read ran before the earlier fill"
    assert bytes(later[: n - 4096].cpu().numpy()) == want, "later stream work ran before the read"
    assert bytes(t[n - 4096 :].cpu().numpy()) == bytes([9]) * 4096


def test_torch_raw_read_async_on_the_default_stream_does_not_block(data_file):
    """On torch's default (legacy) stream, which DLPack and torch buffers name as theirs, the
    call still only queues: it does not wait for the kernels before it."""
    torch = _torch()
    path, data = data_file
    n = 1 << 20
    t = torch.zeros(n, dtype=torch.uint8, device="cuda")
    with gdio.CuFile(path) as f:
        torch.cuda._sleep(400_000_000)
        t.fill_(5)
        fut = f.raw_read_async(t, torch.cuda.current_stream().cuda_stream, n, 0, 0)
        assert not fut.done(), "raw_read_async waited for the default stream"
        assert fut.get() == n
    torch.cuda.synchronize()
    assert bytes(t.cpu().numpy()) == data[:n]


def test_a_pageable_copy_queued_behind_raw_read_async_in_a_fresh_process_does_not_hang(data_file):
    """`tensor.cpu()` right after `raw_read_async` on the same stream, in a process whose
    workers have no GPU buffers yet: the copy into pageable memory waits for the read, and
    while it waits the CUDA driver blocks every resource creation; the read must need none."""
    _torch()
    import subprocess
    import sys

    path, _ = data_file
    n = (3 << 20) - 4096
    script = f"""
import torch, gdio
s = torch.cuda.Stream()
t = torch.zeros({n}, dtype=torch.uint8, device="cuda")
with gdio.CuFile({str(path)!r}) as f, torch.cuda.stream(s):
    torch.cuda._sleep(100_000_000)
    fut = f.raw_read_async(t, s.cuda_stream, {n}, 7, 0)
    host = t.cpu()                      # pageable copy queued behind the read
    wrong = host.numpy().tobytes() != open({str(path)!r}, "rb").read()[7:7 + {n}]
    assert fut.get() == {n}
print("mismatch" if wrong else "ok")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr[-2000:]


def test_torch_raw_write_async_writes_what_earlier_stream_work_made(tmp_path):
    torch = _torch()
    n = 3 << 20
    t = torch.zeros(n, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    path = tmp_path / "w.bin"
    with gdio.CuFile(path, "w") as f:
        with torch.cuda.stream(s):
            torch.cuda._sleep(200_000_000)
            t.copy_(torch.arange(n, device="cuda", dtype=torch.int64).mul_(2654435761).remainder_(251).to(torch.uint8))
            fut = f.raw_write_async(t, s.cuda_stream, n - 100, 0, 100)
        assert fut.get() == n - 100
    want = bytes(t[100:].cpu().numpy())
    assert path.read_bytes() == want
    assert len(set(want[:1000])) > 200, "random-looking data, not zeros"


def test_torch_readonly_device_error_is_clear(data_file):
    torch = _torch()
    path, _ = data_file
    with gdio.CuFile(path) as f:
        with pytest.raises(BufferError, match="contiguous"):
            f.read(torch.empty((64, 64), dtype=torch.uint8, device="cuda").t())


def test_cupy_dlpack_and_cai(data_file, rng):
    cupy = _cupy()
    if gdio.runtime_info()["runtime"] != "cuda":
        gpu_skip("gdio has no CUDA")
    path, data = data_file
    a = cupy.zeros(1 << 20, dtype=cupy.uint8)
    off = rng.randrange(0, len(data) - (1 << 20))
    with gdio.CuFile(path) as f:
        assert f.read(a, file_offset=off) == 1 << 20
    assert a.get().tobytes() == data[off : off + (1 << 20)]

    class CaiOnly:  # CUDA Array Interface with a stream, no DLPack
        def __init__(self, arr, stream):
            self.arr = arr
            self.__cuda_array_interface__ = dict(arr.__cuda_array_interface__, stream=stream)

    s = cupy.cuda.Stream(non_blocking=True)
    b = cupy.zeros(1 << 20, dtype=cupy.uint8)
    with s:
        b.fill(9)
    with gdio.CuFile(path) as f:
        assert f.pread(CaiOnly(b, s.ptr), file_offset=off).get() == 1 << 20
    assert b.get().tobytes() == data[off : off + (1 << 20)]
