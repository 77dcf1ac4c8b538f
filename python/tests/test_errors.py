"""Errors: gdio.GdioError (an OSError) with errno, file, offset and length, and nothing
written where the call failed."""

import errno
import os

import numpy as np
import pytest

import gdio


def test_missing_file(tmp_path):
    path = tmp_path / "nope.bin"
    with pytest.raises(gdio.GdioError) as ei:
        gdio.CuFile(path)
    e = ei.value
    assert isinstance(e, OSError)
    assert isinstance(e, RuntimeError), "KvikIO code catches RuntimeError"
    assert e.errno == errno.ENOENT
    assert e.filename == str(path)
    assert str(path) in str(e) and "No such file" in str(e)
    assert not path.exists()


def test_read_into_readonly_buffer_writes_nothing(data_file):
    path, data = data_file
    ro = np.zeros(4096, dtype=np.uint8)
    ro.flags.writeable = False
    with gdio.CuFile(path) as f:
        for buf in (ro, bytes(4096)):
            with pytest.raises(BufferError, match="read-only"):
                f.read(buf)
            with pytest.raises(BufferError, match="read-only"):
                f.pread(buf)
    assert not ro.any()


def test_offset_beyond_eof(data_file):
    path, data = data_file
    buf = bytearray(b"\x77" * 1000)
    with gdio.CuFile(path) as f:
        with pytest.raises(gdio.GdioError) as ei:
            f.read(buf, file_offset=len(data) + 10_000)
        e = ei.value
        assert e.errno == errno.EINVAL
        assert e.offset == len(data) + 10_000 and e.length == 1000
        assert "beyond the end of the file" in str(e)
        assert e.filename == str(path)
        fut = f.pread(buf, file_offset=len(data) + 1)
        with pytest.raises(gdio.GdioError, match="beyond the end"):
            fut.get()
    assert buf == bytearray(b"\x77" * 1000)


def test_size_larger_than_buffer(data_file):
    path, _ = data_file
    buf = bytearray(b"\x11" * 100)
    with gdio.CuFile(path) as f:
        with pytest.raises(gdio.GdioError, match="too short") as ei:
            f.read(buf, size=101)
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(gdio.GdioError, match="too short"):
            f.preadv([buf], [0], [200])
    assert buf == bytearray(b"\x11" * 100)


def test_closed_file(data_file):
    path, _ = data_file
    f = gdio.CuFile(path)
    f.close()
    buf = bytearray(b"\x22" * 64)
    for call in (lambda: f.read(buf), lambda: f.pread(buf), lambda: f.fileno(), lambda: f.nbytes()):
        with pytest.raises(gdio.GdioError, match="closed") as ei:
            call()
        assert ei.value.errno == errno.EBADF
    assert buf == bytearray(b"\x22" * 64)


def test_write_to_readonly_file_changes_nothing(data_file):
    path, data = data_file
    with gdio.CuFile(path, "r") as f:
        with pytest.raises(gdio.GdioError) as ei:
            f.write(b"\x00" * 4096, file_offset=0)
        assert ei.value.errno is not None
    assert path.read_bytes() == data


def test_bad_flags_and_buffers(data_file):
    path, _ = data_file
    with pytest.raises(ValueError, match="flag"):
        gdio.CuFile(path, "q")
    with gdio.CuFile(path) as f:
        with pytest.raises(TypeError, match="cannot use a"):
            f.read(12345)
        with pytest.raises(BufferError, match="contiguous"):
            f.read(np.zeros((10, 10), dtype=np.uint8)[:, ::2])
        with pytest.raises(ValueError, match="offsets"):
            f.preadv([bytearray(1)], [0, 1])


def test_device_call_on_host_buffer(data_file):
    path, _ = data_file
    with gdio.CuFile(path) as f:
        with pytest.raises(gdio.GdioError, match="device memory"):
            f.raw_read_async(bytearray(10), 0)


def test_preparing_a_gpu_that_does_not_exist_says_so():
    """``_native.prepare_gpu`` (the group loader's warm-up step): a GPU past the last one is a
    GdioError naming it; one that exists is prepared (the GPU machine)."""
    from gdio import _native

    _name, count, _why, _workers = _native.runtime_info()
    with pytest.raises(gdio.GdioError) as ei:
        _native.prepare_gpu(count)
    assert f"GPU {count} does not exist" in str(ei.value)
    if count:
        assert _native.prepare_gpu(0) is None
