"""Futures: many in flight, callbacks, await, wait()."""

import asyncio
import threading

import numpy as np
import pytest

import gdio


def test_many_preads_in_flight(data_file, rng):
    path, data = data_file
    n, size = 5000, 4096
    buf = np.zeros(n * size, dtype=np.uint8)
    offsets = [rng.randrange(0, len(data) - size) for _ in range(n)]
    with gdio.CuFile(path) as f:
        futs = [f.pread(buf[i * size : (i + 1) * size], file_offset=o) for i, o in enumerate(offsets)]
        assert sum(fu.get() for fu in futs) == n * size
    for i, o in enumerate(offsets):
        assert buf[i * size : (i + 1) * size].tobytes() == data[o : o + size], i
    assert threading.active_count() < 200, "a thread per future"


def test_future_keeps_buffer_alive(data_file):
    path, data = data_file
    with gdio.CuFile(path) as f:
        fut = f.pread(bytearray(1 << 20), file_offset=5)
        # No reference to the buffer is left here; the future holds it.
        assert fut.get() == 1 << 20


def test_callbacks_run_on_completion(data_file, rng):
    path, data = data_file
    seen = []
    lock = threading.Lock()
    done = threading.Event()
    n = 200
    with gdio.CuFile(path) as f:
        bufs = [bytearray(10_000) for _ in range(n)]
        offs = [rng.randrange(0, len(data) - 10_000) for _ in range(n)]

        def cb(fut):
            with lock:
                seen.append(fut.get())
                if len(seen) == n:
                    done.set()

        futs = [f.pread(b, file_offset=o) for b, o in zip(bufs, offs)]
        for fu in futs:
            fu.add_done_callback(cb)
        assert done.wait(30)
    assert seen == [10_000] * n
    for b, o in zip(bufs, offs):
        assert bytes(b) == data[o : o + 10_000]
    # Added after completion: runs at once, on this thread.
    here = []
    futs[0].add_done_callback(lambda fu: here.append(threading.get_ident()))
    assert here == [threading.get_ident()]


def test_callback_exception_is_reported_not_raised(data_file):
    path, _ = data_file
    hooked = []
    import sys

    old = sys.unraisablehook
    sys.unraisablehook = lambda u: hooked.append(u.exc_value)
    try:
        with gdio.CuFile(path) as f:
            fut = f.pread(bytearray(10), file_offset=0)
            fut.get()
            fut.add_done_callback(lambda _f: 1 / 0)
    finally:
        sys.unraisablehook = old
    assert len(hooked) == 1 and isinstance(hooked[0], ZeroDivisionError)


def test_await_under_asyncio(data_file, rng):
    path, data = data_file

    async def main():
        with gdio.CuFile(path) as f:
            bufs = [bytearray(64_000) for _ in range(32)]
            offs = [rng.randrange(0, len(data) - 64_000) for _ in range(32)]
            got = await asyncio.gather(*(f.pread(b, file_offset=o) for b, o in zip(bufs, offs)))
            assert got == [64_000] * 32
            for b, o in zip(bufs, offs):
                assert bytes(b) == data[o : o + 64_000]
            with pytest.raises(gdio.GdioError, match="beyond the end"):
                await f.pread(bytearray(10), file_offset=len(data) + 4096)

    asyncio.run(main())


def test_wait_all_and_first(data_file, rng):
    path, data = data_file
    with gdio.CuFile(path) as f:
        bufs = [bytearray(100_000) for _ in range(20)]
        futs = [f.pread(b, file_offset=rng.randrange(0, len(data) - 100_000)) for b in bufs]
        done, not_done = gdio.wait(futs)
        assert done == set(futs) and not not_done
        futs2 = [f.pread(bytearray(1 << 20), file_offset=0) for _ in range(8)]
        done, not_done = gdio.wait(futs2, return_when=gdio.FIRST_COMPLETED)
        assert done and done | not_done == set(futs2)
        bad = f.pread(bytearray(10), file_offset=len(data) + 1)
        done, _ = gdio.wait([bad] + futs2, return_when=gdio.FIRST_EXCEPTION)
        assert bad in done
        gdio.wait(futs2)


def test_get_timeout_and_done(data_file):
    path, _ = data_file
    with gdio.CuFile(path) as f:
        fut = f.pread(bytearray(4096))
        assert fut.get(timeout=30) == 4096
        assert fut.done()
        assert fut.exception() is None
        assert fut.result() == 4096


def test_bytearray_resizable_right_after_get(data_file, rng):
    """The future lets go of the buffer by the time get() returns (a held export would make
    bytearray refuse to resize)."""
    path, data = data_file
    with gdio.CuFile(path) as f:
        for _ in range(200):
            ba = bytearray(rng.randrange(1, 300_000))
            off = rng.randrange(0, len(data) - len(ba))
            assert f.pread(ba, file_offset=off, task_size=65536).get() == len(ba)
            assert bytes(ba) == data[off : off + len(ba)]
            ba.extend(b"x")  # raises BufferError if an export is still held
            fut = f.pread(bytearray(1000), file_offset=off)
            gdio.wait([fut])
            assert fut.done()
