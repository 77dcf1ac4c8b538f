"""The per-call shortcuts of `pread`/`pwrite` futures (exact host types straight to the buffer
protocol, plain torch tensors without DLPack, one buffer export per I/O): the right bytes, the
same errors, checks before any I/O, and no write into memory that was let go."""

import errno
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import gdio


def _buffers(n, rng):
    """`n` host buffers of every kind the shortcuts and the general route take."""

    class Sub(np.ndarray):  # a subclass: the general route (DLPack, then buffer protocol)
        pass

    out = []
    for i in range(n):
        size = rng.choice([1, 7, 4096, 65536, rng.randrange(1, 200_000)])
        kind = i % 5
        if kind == 0:
            b = np.zeros(size, dtype=np.uint8)
        elif kind == 1:
            b = bytearray(size)
        elif kind == 2:
            b = memoryview(bytearray(size))
        elif kind == 3:
            b = np.zeros(size // 4 * 4 or 4, dtype=np.float32).view(np.float32)
        else:
            b = np.zeros(size, dtype=np.uint8).view(Sub)
        out.append(b)
    return out


def _nbytes(b):
    return b.nbytes if hasattr(b, "nbytes") else len(b)


def _bytes(b):
    return b.tobytes() if hasattr(b, "tobytes") else bytes(b)


def test_futures_land_right_bytes_at_random_offsets(data_file, rng):
    path, data = data_file
    bufs = _buffers(400, rng)
    offs = [rng.randrange(0, len(data) - _nbytes(b)) for b in bufs]
    with gdio.CuFile(path) as f:
        futs = [f.pread(b, file_offset=o) for b, o in zip(bufs, offs)]
        rng.shuffle(futs)
        for fu in futs:
            fu.get()
    for b, o in zip(bufs, offs):
        assert _bytes(b) == data[o : o + _nbytes(b)]


def test_pwrite_futures_then_read_back(tmp_path, rng):
    path = tmp_path / "w.bin"
    size = 1 << 20
    chunks = [rng.randbytes(rng.randrange(1, 50_000)) for _ in range(200)]
    offs = [rng.randrange(0, size) for _ in chunks]
    want = bytearray(size + 50_000)
    with gdio.CuFile(path, "w+") as f:
        for c, o in zip(chunks, offs):  # one at a time: later chunks overwrite earlier ones
            src = [np.frombuffer(c, dtype=np.uint8), c, bytearray(c), memoryview(c)][o % 4]
            assert f.pwrite(src, file_offset=o).get() == len(c)
            want[o : o + len(c)] = c
    got = path.read_bytes()
    assert got == bytes(want[: len(got)])


def test_size_and_offset_checked_before_any_io(data_file, rng):
    path, data = data_file
    with gdio.CuFile(path) as f:
        for b in _buffers(20, rng):
            before = _bytes(b)
            n = _nbytes(b)
            with pytest.raises(gdio.GdioError, match="too short") as ei:
                f.pread(b, size=n + 1, file_offset=123)
            e = ei.value
            assert e.errno == errno.EINVAL and e.filename == str(path)
            assert e.offset == 123 and e.length == n + 1
            with pytest.raises(gdio.GdioError, match="too short"):
                f.raw_read(b, size=n, file_offset=0, dev_offset=1)
            assert _bytes(b) == before


def test_future_errors_carry_file_offset_length(data_file):
    path, data = data_file
    with gdio.CuFile(path) as f:
        for buf in (np.zeros(1000, np.uint8), bytearray(1000), memoryview(bytearray(1000))):
            fut = f.pread(buf, file_offset=len(data) + 4096)
            with pytest.raises(gdio.GdioError) as ei:
                fut.get()
            e = ei.value
            assert e.errno == errno.EINVAL and e.filename == str(path)
            assert e.offset == len(data) + 4096 and e.length == 1000
            assert "beyond the end" in str(e)
            assert fut.done() and isinstance(fut.exception(), gdio.GdioError)
            assert not np.frombuffer(buf, dtype=np.uint8).any()


def test_empty_and_zero_dim_buffers(tmp_path):
    path = tmp_path / "s.bin"
    path.write_bytes(b"abcdefghijklmnop")
    with gdio.CuFile(path) as f:
        a = np.zeros((), np.uint64)  # 0-d: no shape in its buffer export
        assert f.read(a) == 8 and a.tobytes() == b"abcdefgh"
        assert f.pread(a, file_offset=8).get() == 8 and a.tobytes() == b"ijklmnop"
        for b in (np.zeros((0,), np.uint8), np.zeros((2, 0), np.uint8), bytearray(0),
                  memoryview(bytearray(0))):
            assert f.read(b) == 0
            assert f.pread(b).get() == 0


def test_readonly_and_noncontiguous_still_refused(data_file):
    path, _ = data_file
    ro = np.zeros(4096, np.uint8)
    ro.flags.writeable = False
    with gdio.CuFile(path) as f:
        for buf in (ro, b"\0" * 4096, memoryview(bytearray(4096)).toreadonly()):
            with pytest.raises(BufferError, match="read-only"):
                f.pread(buf)
        for buf in (np.zeros((64, 64), np.uint8).T, memoryview(bytearray(8192))[::2]):
            with pytest.raises(BufferError, match="contiguous"):
                f.pread(buf)
    assert not ro.any()


def test_dropped_futures_never_write_into_freed_memory(data_file, rng):
    """Futures and buffers dropped at once, without get(): the I/O holds the buffers until it
    ends, so memory allocated meanwhile (which would reuse freed blocks) is never written."""
    path, data = data_file
    size = 65536
    with gdio.CuFile(path) as f:
        refs = []
        for i in range(300):
            b = np.zeros(size, dtype=np.uint8)
            refs.append(weakref.ref(b))
            f.pread(b, file_offset=rng.randrange(0, len(data) - size))
            f.pread(bytearray(size), file_offset=rng.randrange(0, len(data) - size))
            del b
        gc.collect()
        fresh = [np.full(size, 0xAB, dtype=np.uint8) for _ in range(600)]
        fresh += [bytearray(b"\xab" * size) for _ in range(600)]
        # Every earlier I/O has ended once the buffers they held are gone.
        for _ in range(2000):
            if all(r() is None for r in refs):
                break
            f.pread(bytearray(1)).get()
        assert all(r() is None for r in refs), "the I/O never let go of its buffers"
    for x in fresh:
        assert set(bytes(x)) == {0xAB}


def test_buffer_let_go_before_callbacks_and_await(data_file, rng):
    """A finishing worker lets go of the buffer before it runs the callbacks, so a callback (or
    the coroutine awaiting the future) can resize a bytearray at once."""
    import asyncio
    import threading

    path, data = data_file
    with gdio.CuFile(path) as f:
        results = []
        done = threading.Event()
        n = 50

        def cb(ba):
            def run(_fut):
                try:
                    ba.extend(b"x")
                    results.append(True)
                except BufferError:
                    results.append(False)
                if len(results) == n:
                    done.set()

            return run

        bas = [bytearray(100_000) for _ in range(n)]
        for ba in bas:
            f.pread(ba, file_offset=rng.randrange(0, len(data) - 100_000)).add_done_callback(cb(ba))
        assert done.wait(30)
        assert results == [True] * n

        async def main():
            for _ in range(20):
                ba = bytearray(70_000)
                assert await f.pread(ba, file_offset=3) == 70_000
                ba.extend(b"x")
                assert bytes(ba[:70_000]) == data[3:70_003]

        asyncio.run(main())


def test_dropped_future_lets_go_of_its_buffer(data_file):
    """A future dropped unfinished: the worker cannot release the export without the GIL and
    does not wait for it; a later gdio call releases it (the bytearray resizes again)."""
    path, _ = data_file
    with gdio.CuFile(path) as f:
        bas = [bytearray(1 << 20) for _ in range(32)]
        for ba in bas:
            f.pread(ba)  # the future is dropped at once
        pending = list(bas)
        for _ in range(5000):
            f.pread(bytearray(1)).get()
            still = []
            for ba in pending:
                try:
                    ba.extend(b"x")
                except BufferError:
                    still.append(ba)
            pending = still
            if not pending:
                break
        assert not pending, f"{len(pending)} buffers still held"


def test_buffer_kept_alive_by_the_future(data_file):
    path, data = data_file
    with gdio.CuFile(path) as f:
        futs = [f.pread(np.zeros(1 << 20, np.uint8), file_offset=i) for i in range(16)]
        futs += [f.pread(memoryview(bytearray(1 << 20)), file_offset=i) for i in range(16)]
        gc.collect()
        assert [fu.get() for fu in futs] == [1 << 20] * 32


FAKE_TORCH = textwrap.dedent(
    """
    import sys, types
    import numpy as np

    torch = types.ModuleType("torch")
    torch.strided = object()
    torch.sparse_coo = object()

    class Tensor:
        # What gdio reads of a plain torch tensor, over NumPy memory.
        def __init__(self, arr, *, requires_grad=False, cuda=False, cpu=True, conj=False,
                     neg=False, contiguous=None, null=False, layout=None, nested=False,
                     quantized=False):
            self.arr = arr
            self.layout = torch.strided if layout is None else layout
            self.is_nested = nested
            self.is_quantized = quantized
            self.requires_grad = requires_grad
            self.is_cuda = cuda
            self.is_cpu = cpu
            self._conj, self._neg, self._null = conj, neg, null
            self._contiguous = arr.flags.c_contiguous if contiguous is None else contiguous
            self.calls = 0

        def is_conj(self): return self._conj
        def is_neg(self): return self._neg
        def get_device(self): return 0 if self.is_cuda else -1
        def is_contiguous(self): return self._contiguous
        def data_ptr(self):
            self.calls += 1
            return 0 if self._null else self.arr.ctypes.data
        @property
        def nbytes(self): return self.arr.nbytes
        def untyped_storage(self): return self.arr.base if self.arr.base is not None else self.arr

    torch.Tensor = Tensor
    sys.modules["torch"] = torch
    """
)


def test_torch_shortcut_with_a_stand_in_torch(data_file, tmp_path):
    """A stand-in `torch` module (no DLPack at all, so only the shortcut can read into it):
    plain tensors go the shortcut; anything unusual goes the general route (which has no way
    in for the stand-in and raises TypeError); checks come before any I/O."""
    path, data = data_file
    script = FAKE_TORCH + textwrap.dedent(
        f"""
        import gc, random
        import gdio
        path = {str(path)!r}
        data = open(path, "rb").read()
        rng = random.Random(5)
        base = np.zeros(64 * 65536, np.uint8)
        with gdio.CuFile(path) as f:
            ts, offs = [], []
            for i in range(64):
                t = Tensor(base[i * 65536 : (i + 1) * 65536])
                ts.append(t)
                offs.append(rng.randrange(0, len(data) - 65536))
            futs = [f.pread(t, 65536, o) for t, o in zip(ts, offs)]
            assert [fu.get() for fu in futs] == [65536] * 64
            for i, o in enumerate(offs):
                assert base[i * 65536 : (i + 1) * 65536].tobytes() == data[o : o + 65536], i
            assert all(t.calls == 1 for t in ts)  # the address is asked for on every call
            # The future holds the storage: the tensor may go.
            arr = np.zeros(1 << 20, np.uint8)
            fut = f.pread(Tensor(arr[:]), file_offset=7)
            del arr
            gc.collect()
            assert fut.get() == 1 << 20
            # Typed memory: nbytes, not the element count.
            x = np.zeros(1024, np.float32)
            assert f.pread(Tensor(x), file_offset=4096).get() == 4096
            assert x.tobytes() == data[4096 : 8192]
            # Too small: raises before any I/O.
            y = np.zeros(100, np.uint8)
            try:
                f.pread(Tensor(y), size=101)
            except gdio.GdioError as e:
                assert "too short" in str(e) and e.length == 101
            else:
                raise AssertionError("no error")
            assert not y.any()
            # The general route for anything unusual.
            for kw in (dict(requires_grad=True), dict(conj=True), dict(neg=True),
                       dict(contiguous=False), dict(cuda=True, cpu=False),
                       dict(cpu=False), dict(null=True), dict(layout=torch.sparse_coo),
                       dict(nested=True), dict(quantized=True)):
                z = np.zeros(64, np.uint8)
                try:
                    f.pread(Tensor(z, **kw))
                except TypeError as e:
                    assert "cannot use a Tensor as a buffer" in str(e), (kw, e)
                else:
                    raise AssertionError(f"shortcut taken for {{kw}}")
                assert not z.any()
            class Sub(Tensor):
                pass
            try:
                f.pread(Sub(np.zeros(64, np.uint8)))
            except TypeError:
                pass
            else:
                raise AssertionError("shortcut taken for a subclass")
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
