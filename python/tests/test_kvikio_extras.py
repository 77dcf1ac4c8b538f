"""KvikIO's remaining module names in gdio: ``gdio.numpy.fromfile``/``tofile``/``LikeWrapper``
against NumPy's own on random files (dtypes, counts, offsets, trailing bytes, errors),
``gdio.Mmap`` windows against the file's bytes, and ``stream_register``'s checks."""

import os

import numpy as np
import pytest

import gdio
import gdio.numpy as gnp


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64, np.complex64])
def test_fromfile_agrees_with_numpy(tmp_path, rng, dtype):
    path = tmp_path / "f.bin"
    size = rng.randrange(1, 50_000)
    path.write_bytes(rng.randbytes(size))  # trailing bytes short of an item, often
    item = np.dtype(dtype).itemsize
    cases = [(-1, 0), (0, 0), (5, 0), (10**9, 0), (-1, rng.randrange(0, size + 1)),
             (rng.randrange(0, 100), rng.randrange(0, size + 1)), (-1, size), (3, (size // item) * item)]
    for count, offset in cases:
        want = np.fromfile(path, dtype=dtype, count=count, offset=offset)
        got = gnp.fromfile(path, dtype=dtype, count=count, offset=offset)
        assert got.dtype == want.dtype and got.shape == want.shape, (count, offset)
        assert got.tobytes() == want.tobytes(), (count, offset)
        via = np.fromfile(path, dtype=dtype, count=count, offset=offset, like=gnp.LikeWrapper(np.empty(())))
        assert via.tobytes() == want.tobytes(), (count, offset)
    # Past the end: NumPy's answer depends on the item size (an error for bytes, an empty
    # array otherwise); gdio says so for every dtype.
    with pytest.raises(ValueError, match="outside"):
        gnp.fromfile(path, dtype=dtype, offset=size + 1)
    with pytest.raises(NotImplementedError, match="sep"):
        gnp.fromfile(path, sep=",")
    with pytest.raises(ValueError, match="negative"):
        gnp.fromfile(path, dtype=dtype, count=-42)
    # An open file: offset counts from its position, which ends after the items read (NumPy's
    # rule), checked against NumPy on a second handle of the same file.
    start, extra = rng.randrange(0, size // 2), rng.randrange(0, 64)
    with open(path, "rb") as mine, open(path, "rb") as theirs:
        mine.seek(start)
        theirs.seek(start)
        got = gnp.fromfile(mine, dtype=dtype, count=3, offset=extra)
        want = np.fromfile(theirs, dtype=dtype, count=3, offset=extra)
        assert got.tobytes() == want.tobytes()
        assert mine.tell() == theirs.tell()


def test_tofile_writes_numpy_s_bytes_and_replaces_the_file(tmp_path):
    gen = np.random.default_rng(8)
    a = gen.standard_normal((64, 33))[:, ::2]  # not contiguous
    path = tmp_path / "t.bin"
    path.write_bytes(b"x" * 10**6)  # longer than what replaces it
    gnp.tofile(a, path)
    ref = tmp_path / "ref.bin"
    a.tofile(ref)
    assert path.read_bytes() == ref.read_bytes()
    assert np.array_equal(gnp.fromfile(path, dtype=a.dtype).reshape(a.shape), a)
    # An open file object names the file to write, as in KvikIO.
    b = gen.integers(0, 2**31, 1000)[::3]
    with open(tmp_path / "obj.bin", "wb") as fobj:
        gnp.tofile(b, fobj)
    assert (tmp_path / "obj.bin").read_bytes() == np.ascontiguousarray(b).tobytes()


def test_open_flags_are_the_descriptor_s(tmp_path):
    """KvikIO's ``open_flags()`` is the descriptor's ``fcntl(F_GETFL)``; ``mode`` the string."""
    import os

    path = tmp_path / "f.bin"
    for mode, access in [("w", os.O_WRONLY), ("r", os.O_RDONLY), ("r+", os.O_RDWR), ("w+", os.O_RDWR),
                         ("a", os.O_RDWR)]:
        with gdio.CuFile(path, mode) as f:
            assert f.open_flags() & os.O_ACCMODE == access, mode
            assert f.mode == mode
    f = gdio.CuFile(path, "r")
    f.close()
    with pytest.raises(gdio.GdioError, match="closed"):
        f.open_flags()


def test_mmap_reads_its_window_and_refuses_outside_it(tmp_path, rng):
    data = rng.randbytes(300_000)
    path = tmp_path / "m.bin"
    path.write_bytes(data)
    with gdio.Mmap(path, initial_map_offset=1000, initial_map_size=200_000) as m:
        assert (m.initial_map_offset(), m.initial_map_size(), m.file_size()) == (1000, 200_000, len(data))
        for _ in range(20):
            off = rng.randrange(1000, 201_000)
            n = rng.randrange(0, 201_000 - off + 1)
            buf = bytearray(n)
            assert m.read(buf, n, off) == n
            assert bytes(buf) == data[off:off + n]
        buf = bytearray(50_000)  # size from the buffer
        assert m.read(buf, offset=5000) == 50_000 and bytes(buf) == data[5000:55_000]
        tail = bytearray(10_000)  # size cut at the window's end
        assert m.read(tail, offset=195_000) == 6000 and bytes(tail[:6000]) == data[195_000:201_000]
        arr = np.zeros(120_000, dtype=np.uint8)
        assert m.pread(arr, offset=1000, task_size=16_384).get() == 120_000
        assert arr.tobytes() == data[1000:121_000]
        # KvikIO's types: IndexError for reads outside the window or past the end of file.
        for size, off, words in [(10, 999, "Read is out of bound"), (10, 200_995, "Read is out of bound"),
                                 (1, 201_001, "Read is out of bound"),
                                 (1, len(data) + 1, "Offset is past the end of file")]:
            before = bytes(buf)
            with pytest.raises(IndexError, match=words):
                m.read(buf, size, off)
            assert bytes(buf) == before, "a refused read wrote into the buffer"
    assert m.closed() and m.file_size() == 0
    for t in (gdio.GdioError, RuntimeError):
        with pytest.raises(t, match="closed"):
            m.read(bytearray(1), 1, 1000)
    whole = gdio.Mmap(path)
    assert whole.initial_map_size() == len(data)
    whole.close()
    with pytest.raises(ValueError, match="reading only"):
        gdio.Mmap(path, "w")
    for flags in ("", "z", "rb"):
        with pytest.raises(ValueError, match="Unknown file open flag"):
            gdio.Mmap(path, flags)
    with pytest.raises(IndexError, match="past the end of file"):
        gdio.Mmap(path, initial_map_offset=10, initial_map_size=len(data))
    with pytest.raises(IndexError, match="less than the file size"):
        gdio.Mmap(path, initial_map_offset=len(data))
    with pytest.raises(ValueError, match="zero byte"):
        gdio.Mmap(path, initial_map_size=0)
    with pytest.raises(gdio.GdioError, match="no such file"):
        gdio.Mmap(tmp_path / "missing")


def test_stream_register_takes_stream_handles_only():
    class Stream:
        cuda_stream = 0x1234

    gdio.stream_register(0)
    gdio.stream_register(Stream(), 0)
    gdio.stream_deregister(Stream())
    for bad in ["stream", -1, 1.5, None, True]:
        with pytest.raises(TypeError):
            gdio.stream_register(bad)


def test_cufile_driver_properties_answer_for_gdio_s_driver():
    from gdio import cufile_driver as cd

    p = cd.properties
    # On a machine without nvidia-fs (CI, most containers and VMs) GDS is unavailable and the
    # reason names what is missing; where it is loaded, the version is nvidia-fs's.
    reason = cd.gds_unavailable_reason()
    assert p.is_gds_available == (reason is None)
    if not os.path.exists("/proc/driver/nvidia-fs/version"):
        assert not p.is_gds_available and "nvidia-fs" in reason
        assert (p.major_version, p.minor_version) == (0, 0)
    assert p.per_buffer_cache_size == gdio.defaults.get("bounce_buffer_size") // 1024
    with gdio.defaults.set("bounce_buffer_size", 1 << 20):
        assert cd.get("per_buffer_cache_size") == 1024
    with gdio.defaults.set("compat_mode", gdio.CompatMode.OFF):
        assert cd.get("allow_compat_mode") is False
    assert cd.get("allow_compat_mode") is True
    major, minor = cd.libcufile_version()
    assert major >= 0 and minor >= 0


def test_cufile_driver_poll_mode_sets_gdio_s_completion_polling():
    from gdio import cufile_driver as cd

    spin = gdio.defaults.get("completion_spin_us")
    assert spin > 0 and cd.get("poll_mode") is True
    with cd.set("poll_mode", False):
        assert gdio.defaults.get("completion_spin_us") == 0 and cd.properties.poll_mode is False
        with cd.set({"poll_mode": True}):
            assert gdio.defaults.get("completion_spin_us") > 0
        assert gdio.defaults.get("completion_spin_us") == 0
    assert gdio.defaults.get("completion_spin_us") == spin
    cd.properties.poll_mode = True  # already on: unchanged
    assert gdio.defaults.get("completion_spin_us") == spin
    with pytest.raises(TypeError):
        cd.properties.poll_mode = 1


def test_cufile_driver_refuses_what_gdio_does_not_have():
    from gdio import cufile_driver as cd

    spin = gdio.defaults.get("completion_spin_us")
    for name in ("poll_thresh_size", "max_device_cache_size", "max_pinned_memory_size"):
        with pytest.raises(KeyError, match="gdio has no setting"):
            cd.get(name)
        with pytest.raises(KeyError, match="gdio has no setting"):
            getattr(cd.properties, name)
        with pytest.raises(KeyError, match="gdio has no setting"):
            cd.set(name, 4)
    with pytest.raises(KeyError, match="read-only"):
        cd.set("is_gds_available", True)
    with pytest.raises(KeyError, match="no driver property"):
        cd.get("poll_mod")
    # All or none: a bad name after a good one changes nothing.
    with pytest.raises(KeyError):
        cd.set({"poll_mode": False, "max_device_cache_size": 1})
    assert gdio.defaults.get("completion_spin_us") == spin
    with pytest.raises(ValueError):
        cd.set("poll_mode")


def test_cufile_driver_open_and_close_are_counted():
    from gdio import cufile_driver as cd

    cd.driver_open()
    cd.driver_open()
    cd.driver_close()
    cd.driver_close()
    with pytest.raises(RuntimeError, match="not open"):
        cd.driver_close()
    # I/O works with the driver closed, as it does before any open.
    assert gdio.runtime_info()["runtime"] in ("cuda", "host", "sim")
