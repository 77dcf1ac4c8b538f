"""The raw API on host buffers (NumPy, bytearray, memoryview) against open().read()."""

import numpy as np
import pytest

import gdio


def expected(data: bytes, offset: int, size: int) -> bytes:
    return data[offset : offset + size]


def test_read_numpy_random_ranges(data_file, rng):
    path, data = data_file
    with gdio.CuFile(path, "r") as f:
        assert f.nbytes() == len(data)
        for _ in range(40):
            offset = rng.randrange(0, len(data))
            size = rng.randrange(1, 1 << 20)
            buf = np.full(size + 64, 0xA5, dtype=np.uint8)  # canary past `size`
            n = f.read(buf, size, offset)
            want = expected(data, offset, size)
            assert n == len(want)
            assert buf[:n].tobytes() == want
            assert (buf[n:] == 0xA5).all(), "bytes past the read were touched"


def test_read_bytearray_and_task_size(data_file, rng):
    path, data = data_file
    with gdio.File(path) as f:
        for task_size in (None, 4096, 65536, 1 << 20):
            offset = rng.randrange(0, 1 << 20)
            size = rng.randrange(1 << 20, 2 << 20)
            buf = bytearray(size)
            assert f.read(buf, file_offset=offset, task_size=task_size) == size
            assert bytes(buf) == expected(data, offset, size)


def test_read_past_eof_is_short(data_file, rng):
    path, data = data_file
    with gdio.CuFile(path) as f:
        for task_size in (None, 8192):
            offset = len(data) - rng.randrange(1, 100_000)
            buf = np.zeros(200_000, dtype=np.uint8)
            n = f.read(buf, file_offset=offset, task_size=task_size)
            assert n == len(data) - offset
            assert buf[:n].tobytes() == data[offset:]
            assert not buf[n:].any()


def test_read_typed_array_whole_buffer(data_file):
    path, data = data_file
    arr = np.empty(1000, dtype=np.float64)  # size defaults to the buffer's bytes
    with gdio.CuFile(path) as f:
        assert f.read(arr, file_offset=12345) == 8000
    assert arr.tobytes() == data[12345 : 12345 + 8000]


def test_read_into_memoryview_slice(data_file, rng):
    path, data = data_file
    backing = bytearray(b"\x5a" * 10_000)
    view = memoryview(backing)[1000:5000]
    with gdio.CuFile(path) as f:
        assert f.read(view, file_offset=777) == 4000
    assert bytes(backing[1000:5000]) == data[777:4777]
    assert backing[:1000] == b"\x5a" * 1000 and backing[5000:] == b"\x5a" * 5000


def test_write_then_read_back(tmp_path, rng):
    path = tmp_path / "out.bin"
    size = 2 * (1 << 20) + 333
    src = np.frombuffer(rng.randbytes(size), dtype=np.uint8)
    with gdio.CuFile(path, "w") as f:
        assert f.write(src) == size
        # Overwrite a random range through a future, with tasks.
        off = rng.randrange(0, size - 70_000)
        patch = bytearray(rng.randbytes(70_000))
        assert f.pwrite(patch, file_offset=off, task_size=16384).get() == 70_000
    want = bytearray(src.tobytes())
    want[off : off + 70_000] = patch
    assert path.read_bytes() == bytes(want)
    with gdio.CuFile(path, "r+") as f:
        out = bytearray(size)
        assert f.read(out) == size
    assert out == want


def test_write_from_readonly_bytes(tmp_path, rng):
    data = rng.randbytes(100_000)
    path = tmp_path / "w.bin"
    with gdio.CuFile(path, "w") as f:
        assert f.write(data) == len(data)  # bytes are read-only: fine for a write
    assert path.read_bytes() == data


def test_append_flag_keeps_contents(data_file, rng):
    path, data = data_file
    extra = rng.randbytes(5000)
    with gdio.CuFile(path, "a") as f:
        assert f.write(extra, file_offset=len(data)) == 5000
    assert path.read_bytes() == data + extra


def test_preadv(data_file, rng):
    path, data = data_file
    bufs, offsets, sizes = [], [], []
    for _ in range(50):
        size = rng.randrange(1, 50_000)
        bufs.append(bytearray(size + 10))
        offsets.append(rng.randrange(0, len(data) - size))
        sizes.append(size)
    with gdio.CuFile(path) as f:
        fut = f.preadv(bufs, offsets, sizes)
        assert fut.get() == sum(sizes)
    for b, o, s in zip(bufs, offsets, sizes):
        assert bytes(b[:s]) == data[o : o + s]
        assert b[s:] == bytearray(10)


def test_pwritev(tmp_path, rng):
    path = tmp_path / "v.bin"
    pieces = [rng.randbytes(rng.randrange(1, 20_000)) for _ in range(20)]
    offsets, at = [], 0
    for p in pieces:
        offsets.append(at)
        at += len(p)
    with gdio.CuFile(path, "w") as f:
        assert f.pwritev(pieces, offsets).get() == at
    assert path.read_bytes() == b"".join(pieces)


def test_page_cache_info(data_file):
    path, data = data_file
    pages = (len(data) + 4095) // 4096
    cached, total = gdio.get_page_cache_info(path)
    assert total == pages
    assert 0 <= cached <= total
    with gdio.CuFile(path) as f:
        assert gdio.get_page_cache_info(f, 4096, 8192)[1] == 2
    with open(path, "rb") as pf:
        assert gdio.get_page_cache_info(pf)[1] == pages
    for bad in (123.456, [str(path)], None):
        with pytest.raises(ValueError, match="takes a path"):
            gdio.get_page_cache_info(bad)


def _fs_keeps_files_in_memory(path) -> bool:
    import subprocess

    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() in ("tmpfs", "ramfs")


def test_drop_file_page_cache_evicts_the_range_and_keeps_the_bytes(data_file, rng):
    path, data = data_file
    pages = (len(data) + 4095) // 4096
    path.read_bytes()  # into the page cache
    if _fs_keeps_files_in_memory(path):
        pytest.skip("tmpfs keeps files in memory: nothing to evict")
    # A range by path: advice the kernel follows only for what lies wholly inside it (large
    # folios reaching past it stay), and nothing outside it is dropped.
    head = gdio.get_page_cache_info(path, 0, 1 << 20)[0]
    gdio.drop_file_page_cache(path, 1 << 20, 1 << 20)
    assert gdio.get_page_cache_info(path, 0, 1 << 20)[0] == head
    # The whole file, through a CuFile and through a file object.
    with gdio.CuFile(path) as f:
        gdio.drop_file_page_cache(f)
    assert gdio.get_page_cache_info(path)[0] == 0
    path.read_bytes()
    with open(path, "rb") as pf:
        gdio.drop_file_page_cache(pf, sync_first=False)
    assert gdio.get_page_cache_info(path) == (0, pages)
    # Nothing was changed: the bytes read back equal, through gdio too.
    assert path.read_bytes() == data
    buf = np.zeros(len(data), dtype=np.uint8)
    with gdio.CuFile(path) as f:
        assert f.read(buf) == len(data)
    assert buf.tobytes() == data
    with pytest.raises(ValueError):
        gdio.drop_file_page_cache(path, -1)
    with pytest.raises(FileNotFoundError):
        gdio.drop_file_page_cache(path.parent / "missing")


def test_drop_system_page_cache_tries_proc_then_sudo(monkeypatch):
    # Without dropping this machine's cache: /proc refused, then sudo's answer decides.
    import builtins
    import subprocess

    real_open, calls = builtins.open, []

    def no_proc(path, *a, **k):
        if str(path) == "/proc/sys/vm/drop_caches":
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **k)

    def fake_run(cmd, **_k):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, returncode=0 if ok else 1)

    monkeypatch.setattr(builtins, "open", no_proc)
    monkeypatch.setattr(subprocess, "run", fake_run)
    ok = True
    assert gdio.drop_system_page_cache(sync_first=False) is True
    ok = False
    assert gdio.clear_page_cache(False, False) is False
    assert calls == [["sudo", "-n", "sysctl", "vm.drop_caches=3"],
                     ["sudo", "-n", "sysctl", "vm.drop_caches=1"]]


def test_fileno_closed_and_repr(data_file):
    path, _ = data_file
    f = gdio.CuFile(path)
    assert f.fileno() >= 0 and not f.closed
    assert "open" in repr(f)
    f.close()
    assert f.closed
    f.close()  # twice is fine


def test_runtime_without_gpu_imports():
    info = gdio.runtime_info()
    assert info["runtime"] in ("cuda", "host")
    assert info["future_workers"] == gdio.defaults.num_threads()


def test_version_matches_cli():
    import subprocess, sys

    out = subprocess.run([sys.executable, "-m", "gdio", "--version"], capture_output=True, text=True).stdout
    assert out.split() == ["gdio", gdio.__version__]


def test_git_commit_is_the_checkout_s():
    """``gdio.__git_commit__`` (KvikIO's name): the commit the wheel was built from, which the
    checkout it was built in knows (``./test.sh`` builds the wheel from this checkout)."""
    import pathlib
    import re
    import shutil
    import subprocess

    commit = gdio.__git_commit__
    repo = pathlib.Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (repo / ".git").exists():
        pytest.skip("not run from a git checkout")
    assert re.fullmatch(r"[0-9a-f]{40}", commit), f"not a commit: {commit!r}"
    kind = subprocess.run(["git", "-C", str(repo), "cat-file", "-t", commit], capture_output=True, text=True)
    if kind.returncode != 0:
        pytest.skip(f"the wheel was built from {commit}, which this checkout does not have")
    assert kind.stdout.strip() == "commit"
