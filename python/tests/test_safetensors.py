"""gdio.safetensors against the safetensors package: round trips with random data for every
dtype NumPy has, slices, metadata, completion order, sharded checkpoints, errors; torch on the
host when torch is installed; GPU loads where there is a GPU."""

import json
import os
import random
import subprocess

import numpy as np
import pytest
import safetensors.numpy as ref_np
from safetensors import safe_open as ref_open

import gdio
from gdio.safetensors import safe_open
import gdio.safetensors.numpy as gst_np

from conftest import gpu_skip, need_torch

DTYPES = [np.float64, np.float32, np.float16, np.int64, np.uint64, np.int32, np.uint32,
          np.int16, np.uint16, np.int8, np.uint8, np.bool_, np.complex64]


def random_array(gen, dtype, shape):
    raw = gen.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape) if dtype not in (np.bool_,) else (raw % 2).astype(np.bool_).reshape(shape)
    if np.dtype(dtype).kind in "fc":
        a = np.nan_to_num(a)  # NaN payloads compare unequal
    return a


def random_tensors(seed, n=None):
    gen = np.random.default_rng(seed)
    out = {}
    for i, dt in enumerate(DTYPES):
        shape = [int(gen.integers(1, 9)), int(gen.integers(1, 33))]
        out[f"t{i}.{np.dtype(dt).name}"] = random_array(gen, dt, shape)
    out["scalar"] = np.array(gen.standard_normal(), dtype=np.float32)
    out["empty"] = np.zeros((0, 4), dtype=np.float32)
    return out


def assert_same(a, b):
    assert set(a) == set(b)
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        assert a[k].shape == b[k].shape, k
        assert np.array_equal(a[k], b[k]), k


def test_save_file_read_by_safetensors_and_back(tmp_path):
    t = random_tensors(1)
    meta = {"format": "np", "seed": "1"}
    gst_np.save_file(t, tmp_path / "g.safetensors", metadata=meta)
    assert_same(ref_np.load_file(tmp_path / "g.safetensors"), t)
    # The same bytes the safetensors package writes (layout order, header, padding; one
    # metadata key, as the package writes several in a random order).
    gst_np.save_file(t, tmp_path / "one.safetensors", metadata={"format": "np"})
    assert (tmp_path / "one.safetensors").read_bytes() == ref_np.save(t, metadata={"format": "np"})
    with ref_open(str(tmp_path / "g.safetensors"), framework="np") as f:
        assert f.metadata() == meta
    ref_np.save_file(t, str(tmp_path / "r.safetensors"), metadata=meta)
    got = gst_np.load_file(tmp_path / "r.safetensors")
    assert_same(got, t)
    assert all(isinstance(v, np.ndarray) for v in got.values())
    with safe_open(tmp_path / "r.safetensors", framework="numpy") as f:
        assert f.metadata() == meta
        assert f.keys() == sorted(t)


@pytest.fixture
def ctrl_c():
    """SIGINT raising ``KeyboardInterrupt``, as at a terminal: a test run in the background
    inherits SIGINT ignored, and Python then leaves it so (``_thread.interrupt_main`` too)."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_mid_save_stops_it_and_leaves_no_file(tmp_path, ctrl_c):
    """Ctrl-C (``_thread.interrupt_main``, as SIGINT does) once the save's temporary file is
    there: ``save_file`` raises ``KeyboardInterrupt`` soon after, with no temporary file and
    nothing under the final name. A signal that comes after the last write lets the save
    complete (the file whole) and still raises; tried until one lands mid-save."""
    import _thread
    import threading
    import time

    gen = np.random.default_rng(44)
    # 768 MiB: long enough (tens of ms from the page cache) for the 10 ms check to see it.
    tensors = {f"w{i}": np.frombuffer(gen.bytes(8 << 20), dtype=np.uint8) for i in range(96)}
    out = tmp_path / "out"
    out.mkdir()
    for _ in range(8):
        for name in os.listdir(out):
            os.remove(out / name)
        stop = threading.Event()
        fired = []

        def watch():
            while not stop.is_set():
                if any(".gdio-tmp-" in n for n in os.listdir(out)):
                    fired.append(time.monotonic())
                    _thread.interrupt_main()
                    return
                time.sleep(0.0002)

        watcher = threading.Thread(target=watch)
        watcher.start()
        interrupted = None
        try:
            gst_np.save_file(tensors, out / "m.safetensors")
        except KeyboardInterrupt:
            interrupted = time.monotonic()
        stop.set()
        watcher.join()
        if fired and interrupted is None:
            # The interrupt landed after the call returned: Python raises it now.
            try:
                time.sleep(0.5)
            except KeyboardInterrupt:
                pass
        left = os.listdir(out)
        assert not any(".gdio-tmp-" in n for n in left), left
        if fired and interrupted is not None and not left:
            # Seen within the check interval (10 ms) and one 8 MiB write, not at the save's end.
            assert interrupted - fired[0] < 1.0, interrupted - fired[0]
            return
        if left:
            assert left == ["m.safetensors"]
            assert_same(ref_np.load_file(out / "m.safetensors"), tensors)
    pytest.fail("no interrupt landed mid-save in 8 tries")


def test_ctrl_c_mid_load_raises_keyboard_interrupt(tmp_path, ctrl_c):
    """Ctrl-C during a large ``load_file`` (reads, not views of the page cache) stops it at
    its next read request and raises ``KeyboardInterrupt`` long before such a load ends; the
    same load without a signal reads every byte."""
    import _thread
    import threading
    import time

    gen = np.random.default_rng(45)
    tensors = {f"w{i}": np.frombuffer(gen.bytes(8 << 20), dtype=np.uint8) for i in range(96)}
    path = tmp_path / "m.safetensors"
    gst_np.save_file(tensors, path)
    # Requests of 4 MiB, one at a time: a load of 768 MiB takes 192 of them.
    shape = {"safetensors_map_host": False, "safetensors_request_bytes": 4 << 20,
             "safetensors_requests_in_flight": 1}
    with gdio.defaults.set(shape):
        start = time.monotonic()
        assert_same(gst_np.load_file(path), tensors)
        whole = time.monotonic() - start
        for _ in range(8):
            timer = threading.Timer(min(0.002, whole / 8), _thread.interrupt_main)
            start = time.monotonic()
            timer.start()
            try:
                gst_np.load_file(path)
            except KeyboardInterrupt:
                stopped = time.monotonic() - start
                timer.join()
                assert stopped < 0.5 + whole, (stopped, whole)
                return
            timer.join()
            try:
                time.sleep(0.5)  # the interrupt came after the load: it lands here
            except KeyboardInterrupt:
                pass
    pytest.fail(f"no interrupt landed mid-load in 8 tries (a load takes {whole:.3f} s)")


def test_bytes_round_trip_against_safetensors():
    t = random_tensors(2)
    assert_same(ref_np.load(gst_np.save(t, metadata={"a": "b"})), t)
    assert_same(gst_np.load(ref_np.save(t)), t)


def test_no_metadata_is_none(tmp_path):
    ref_np.save_file({"x": np.arange(10, dtype=np.int32)}, str(tmp_path / "m.safetensors"))
    with safe_open(tmp_path / "m.safetensors", framework="np") as f:
        assert f.metadata() is None
        assert f.get_slice("x").get_dtype() == "I32"


def test_get_tensor_and_slices(tmp_path):
    gen = np.random.default_rng(3)
    w = random_array(gen, np.float32, [37, 5, 3])
    ref_np.save_file({"w": w, "b": random_array(gen, np.int16, [11])}, str(tmp_path / "s.safetensors"))
    with safe_open(str(tmp_path / "s.safetensors"), framework="np") as f:
        assert np.array_equal(f.get_tensor("w"), w)
        s = f.get_slice("w")
        assert s.get_shape() == [37, 5, 3]
        assert s.get_dtype() == "F32"
        for idx in [slice(3, 17), slice(None, 5), slice(30, None), slice(-7, -2), slice(1, 30, 4),
                    5, -1, (slice(2, 9), slice(1, 3)), (slice(0, 37), 2, slice(None, 2)),
                    slice(10, 10), Ellipsis]:
            assert np.array_equal(s[idx], w[idx]), idx
        with pytest.raises(IndexError):
            s[37]
        with pytest.raises(KeyError):
            f.get_slice("missing")
        with pytest.raises(gdio.GdioError):
            f.get_tensor("missing")


def test_tensors_in_completion_order_and_alive_after_close(tmp_path):
    t = random_tensors(4)
    ref_np.save_file(t, str(tmp_path / "c.safetensors"))
    with safe_open(tmp_path / "c.safetensors", framework="np") as f:
        pairs = list(f.tensors())
    assert sorted(n for n, _ in pairs) == sorted(t)
    got = dict(pairs)
    del pairs
    import gc

    gc.collect()
    assert_same(got, t)  # the memory stays alive while the arrays use it


def test_a_file_loads_into_one_allocation_laid_out_as_the_file(tmp_path):
    """Zero-copy views: every tensor of a file sits at the allocation's base plus its offset in
    the file's data section (one allocation per file, no per-tensor copies)."""
    t = random_tensors(9)
    path = tmp_path / "z.safetensors"
    ref_np.save_file(t, str(path))
    blob = path.read_bytes()
    header = json.loads(blob[8:8 + int.from_bytes(blob[:8], "little")])
    offsets = {k: v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"}
    got = gst_np.load_file(path)
    nonempty = [k for k in got if got[k].nbytes]
    addr = {k: got[k].__array_interface__["data"][0] for k in nonempty}
    k0 = nonempty[0]
    for k in nonempty:
        assert addr[k] - addr[k0] == offsets[k] - offsets[k0], k
    assert_same(got, t)


def test_sharded_index(tmp_path):
    t = random_tensors(5)
    names = sorted(t)
    shards = [names[: len(names) // 2], names[len(names) // 2 :]]
    weight_map = {}
    for i, part in enumerate(shards):
        fname = f"model-0000{i + 1}-of-00002.safetensors"
        ref_np.save_file({n: t[n] for n in part}, str(tmp_path / fname), metadata={"shard": str(i)})
        weight_map.update({n: fname for n in part})
    idx = tmp_path / "model.safetensors.index.json"
    idx.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert_same(gst_np.load_file(idx), t)
    files = [tmp_path / f"model-0000{i + 1}-of-00002.safetensors" for i in range(2)]
    with safe_open(files, framework="np") as f:
        assert f.keys() == names
        assert_same(dict(f.tensors()), t)


def test_errors_leave_no_file(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(gdio.GdioError):
        gst_np.load_file(bad)
    with pytest.raises(ValueError):
        gst_np.save_file({"x": np.zeros(3, dtype=np.float32)}, tmp_path / "m.safetensors", metadata={"a": 1})
    assert not (tmp_path / "m.safetensors").exists()
    with pytest.raises(ValueError):
        safe_open(bad, framework="tensorflowx")
    with pytest.raises(ValueError):
        safe_open(bad, framework="np", device="tpu")
    with pytest.raises(ValueError):
        gst_np.load(b"\xff" * 8 + b"{}")


def test_numpy_has_no_bf16(tmp_path):
    from gdio.safetensors import _format

    raw = _format.serialize([("x", "BF16", [4], bytes(range(8)))], None)
    (tmp_path / "b.safetensors").write_bytes(raw)
    with safe_open(tmp_path / "b.safetensors", framework="np") as f:
        assert f.get_slice("x").get_dtype() == "BF16"
    with pytest.raises(TypeError):
        gst_np.load_file(tmp_path / "b.safetensors")


def _torch():
    return need_torch()


def _torch_gpu():
    """torch, where both it and gdio see a CUDA GPU (else a skip, or a failure on the GPU
    machine)."""
    torch = _torch()
    if not torch.cuda.is_available():
        gpu_skip("torch sees no CUDA GPU")
    if gdio.runtime_info()["gpus"] == 0:
        gpu_skip(f"gdio has no CUDA: {gdio.runtime_info()['why_no_gpu']}")
    return torch


def _torch_tensors(torch, seed):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for dt in [torch.float32, torch.float16, torch.bfloat16, torch.float64]:
        out[f"x.{dt}"] = torch.randn(7, 13, generator=g).to(dt)
    out["x.torch.complex64"] = torch.randn(7, 13, dtype=torch.complex64, generator=g)
    for dt in [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]:
        out[f"x.{dt}"] = torch.randint(-100 if dt != torch.uint8 else 0, 100, (7, 13), generator=g).to(dt)
    out["x.torch.bool"] = torch.randint(0, 2, (7, 13), generator=g).bool()
    if hasattr(torch, "float8_e4m3fn"):
        out["f8"] = torch.randint(0, 120, (5, 6), dtype=torch.uint8, generator=g).view(torch.float8_e4m3fn)
        out["f8b"] = torch.randint(0, 120, (5, 6), dtype=torch.uint8, generator=g).view(torch.float8_e5m2)
    return out


def _assert_torch_same(torch, a, b):
    assert set(a) == set(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert torch.equal(a[k].cpu().view(torch.uint8) if a[k].element_size() == 1 else a[k].cpu(),
                           b[k].cpu().view(torch.uint8) if b[k].element_size() == 1 else b[k].cpu()), k


def _mapped_from(path, addr):
    """Whether address ``addr`` of this process lies in a mapping of file ``path``."""
    want = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= addr < hi:
                return len(fields) == 6 and fields[5].strip() == want
    return False


def _cpu_views_of_the_page_cache(lib, path, names, read_back, addr):
    """What ``test_*_cpu_tensors_of_a_cached_file_are_copy_on_write_views`` check, for NumPy
    (``lib`` numpy) and torch: tensors that live in a mapping of the file (not copies), each
    with the file's bytes, rows of ``get_slice`` too; a write into one changes neither the file
    nor another ``safe_open``'s tensors; with ``safetensors_map_host`` off, copies."""
    framework = "np" if lib.__name__ == "numpy" else "pt"
    want = read_back()
    cached, total = gdio.get_page_cache_info(path)
    assert total and cached == total, "a file just written is in the page cache"
    raw = lambda x: bytes(memoryview(_raw_bytes(lib, x)))  # noqa: E731
    with safe_open(path, framework=framework) as f:
        got = {k: f.get_tensor(k) for k in names}
        rows = f.get_slice(names[0])[1:3]
        streamed = list(f.tensors(names[::-1]))
    assert [k for k, _ in streamed] == names[::-1], "views come in the order asked"
    for k, x in streamed:
        assert _mapped_from(path, addr(x)) and raw(x) == raw(want[k]), f"{k}: tensors() a view"
    for k in names:
        assert _mapped_from(path, addr(got[k])), f"{k}: a view of the file's mapping"
        assert raw(got[k]) == raw(want[k]), k
    assert _mapped_from(path, addr(rows)) and raw(rows) == raw(want[names[0]][1:3])
    on_disk = open(path, "rb").read()
    got[names[0]].reshape(-1)[:] = 0  # copy-on-write: the file and other openers keep theirs
    assert open(path, "rb").read() == on_disk
    with safe_open(path, framework=framework) as f:
        assert raw(f.get_tensor(names[0])) == raw(want[names[0]])
    with gdio.defaults.set({"safetensors_map_host": False}), safe_open(path, framework=framework) as f:
        copies = f.get_tensors(names)
        alone = f.get_tensor(names[1])
        streamed = dict(f.tensors())
    assert sorted(streamed) == names
    for k in names:
        assert not _mapped_from(path, addr(copies[k])), f"{k}: map_host off reads a copy"
        assert not _mapped_from(path, addr(streamed[k])), f"{k}: tensors() reads a copy"
        assert raw(copies[k]) == raw(want[k]) and raw(streamed[k]) == raw(want[k]), k
    assert not _mapped_from(path, addr(alone)) and raw(alone) == raw(want[names[1]])


def _raw_bytes(lib, t):
    """A tensor's bytes as a contiguous uint8 NumPy array (from NumPy or torch)."""
    if lib.__name__ == "numpy":
        return np.ascontiguousarray(t).reshape(-1).view(np.uint8)
    return t.contiguous().reshape(-1).view(lib.uint8).numpy()


def test_numpy_cpu_tensors_of_a_cached_file_are_copy_on_write_views(tmp_path):
    gen = np.random.default_rng(31)
    kinds = [np.float32, np.float16, np.int64, np.uint8]
    t = {f"t.{i:02d}": (gen.standard_normal((int(gen.integers(3, 40)), 19)) * 50).astype(kinds[i % 4])
         for i in range(24)}
    path = tmp_path / "m.safetensors"
    ref_np.save_file(t, str(path))
    names = sorted(t)
    _cpu_views_of_the_page_cache(np, path, names, lambda: ref_np.load_file(str(path)),
                                 lambda a: a.__array_interface__["data"][0])
    # load_file takes the same route: views with the file's bytes.
    loaded = gst_np.load_file(path)
    assert_same(loaded, t)
    assert all(_mapped_from(path, loaded[k].__array_interface__["data"][0]) for k in names)


def test_numpy_cpu_tensors_of_a_file_partly_out_of_the_page_cache_are_read(tmp_path):
    # Whether a file is in the page cache is judged by 64 windows spread over it: a megabyte
    # evicted from the middle of an 8 MiB file takes some of them, so its tensors are read
    # (copies with the file's bytes); read back in, the file is mapped again.
    gen = np.random.default_rng(37)
    t = {f"t.{i:02d}": gen.integers(-2**31, 2**31, size=(256, 256), dtype=np.int32)
         for i in range(32)}
    path = tmp_path / "m.safetensors"
    ref_np.save_file(t, str(path))
    names = sorted(t)
    if subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True,
                      text=True).stdout.strip() in ("tmpfs", "ramfs"):
        pytest.skip("tmpfs keeps files in memory: nothing to evict")
    addr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    gdio.drop_file_page_cache(path, 3 << 20, 1 << 20)
    cached, total = gdio.get_page_cache_info(path)
    assert cached < total, "the evicted megabyte is out of the page cache"
    loaded = gst_np.load_file(path)
    assert_same(loaded, t)
    assert not any(_mapped_from(path, addr(loaded[k])) for k in names), "read, not mapped"
    gdio.drop_file_page_cache(path, 3 << 20, 1 << 20)  # the read brought it back in
    with safe_open(path, framework="np") as f:
        streamed = dict(f.tensors())
    assert_same(streamed, t)
    assert not any(_mapped_from(path, addr(streamed[k])) for k in names)
    path.read_bytes()
    loaded = gst_np.load_file(path)
    assert_same(loaded, t)
    assert all(_mapped_from(path, addr(loaded[k])) for k in names), "cached again: mapped"


def test_torch_cpu_tensors_of_a_cached_file_are_copy_on_write_views(tmp_path):
    torch = _torch()
    import safetensors.torch as ref_t

    t = _torch_tensors(torch, 9)
    path = tmp_path / "m.safetensors"
    ref_t.save_file(t, str(path))
    names = sorted(t)
    _cpu_views_of_the_page_cache(torch, path, names, lambda: ref_t.load_file(str(path)),
                                 lambda x: x.data_ptr())


def test_torch_round_trip_host(tmp_path):
    torch = _torch()
    import safetensors.torch as ref_t
    import gdio.safetensors.torch as gst_t

    t = _torch_tensors(torch, 6)
    gst_t.save_file(t, tmp_path / "t.safetensors", metadata={"k": "v"})
    _assert_torch_same(torch, ref_t.load_file(str(tmp_path / "t.safetensors")), t)
    ref_t.save_file(t, str(tmp_path / "r.safetensors"))
    _assert_torch_same(torch, gst_t.load_file(tmp_path / "r.safetensors"), t)
    _assert_torch_same(torch, gst_t.load(ref_t.save(t)), t)
    _assert_torch_same(torch, ref_t.load(gst_t.save(t)), t)
    with pytest.raises(RuntimeError):
        base = torch.arange(10.0)
        gst_t.save_file({"a": base[:6], "b": base[4:]}, tmp_path / "shared.safetensors")
    with pytest.raises(ValueError):
        gst_t.save_file({"a": torch.zeros(4, 4).t()}, tmp_path / "nc.safetensors")


def test_torch_gpu_load(tmp_path):
    torch = _torch_gpu()
    import safetensors.torch as ref_t
    import gdio.safetensors.torch as gst_t

    t = _torch_tensors(torch, 7)
    ref_t.save_file(t, str(tmp_path / "g.safetensors"))
    got = gst_t.load_file(tmp_path / "g.safetensors", device="cuda:0")
    assert all(v.device == torch.device("cuda:0") for v in got.values())
    _assert_torch_same(torch, got, t)
    with safe_open(tmp_path / "g.safetensors", framework="pt", device=0) as f:
        s = f.get_slice("x.torch.float32")
        assert torch.equal(s[2:5].cpu(), t["x.torch.float32"][2:5])
        streamed = dict(f.tensors())
    _assert_torch_same(torch, streamed, t)


def test_torch_gpu_tensors_one_by_one_come_from_torch_s_allocator(tmp_path):
    """``get_tensor`` out of ``keys()`` order and ``get_slice`` rows into a GPU read into memory
    torch allocates (its caching allocator: no ``cuMemAlloc`` per tensor, no device-wide
    synchronization when it goes), through the checkpoint's own file handles; the bytes match
    the package's and a file replaced after opening does not leak into them."""
    torch = _torch_gpu()
    import safetensors.torch as ref_t

    t = _torch_tensors(torch, 8)
    path = tmp_path / "one.safetensors"
    ref_t.save_file(t, str(path))
    rng = np.random.default_rng(8)
    with safe_open(path, framework="pt", device="cuda:0") as f:
        f.get_tensor(sorted(t)[0])  # the file's handle opened
        path.unlink()  # replaced by a file of zeros: the old bytes stay the checkpoint's
        ref_t.save_file({k: torch.zeros_like(v) for k, v in t.items()}, str(path))
        names = list(t)
        rng.shuffle(names)
        before = torch.cuda.memory_allocated(0)
        got = {k: f.get_tensor(k) for k in names}
        assert torch.cuda.memory_allocated(0) > before, "the tensors are not torch's memory"
        _assert_torch_same(torch, got, t)
        for k in names:
            rows = t[k].shape[0]
            a = int(rng.integers(0, rows))
            b = int(rng.integers(a, rows + 1))
            part = f.get_slice(k)[a:b]
            assert part.device == torch.device("cuda:0")
            _assert_torch_same(torch, {k: part}, {k: t[k][a:b]})


def test_native_save_refuses_host_memory_named_as_device_memory(tmp_path):
    # The device form of a tensor to save, (ordinal, address, nbytes), on memory that is not
    # GPU memory: refused before anything is written, and nothing appears.
    from gdio import _native

    a = np.arange(64, dtype=np.uint8)
    with pytest.raises(Exception, match="device memory"):
        _native.save_file(str(tmp_path / "x.safetensors"),
                          [("x", "U8", [64], (0, a.ctypes.data, 64))], None)
    with pytest.raises(ValueError, match="null device address"):
        _native.save_file(str(tmp_path / "x.safetensors"), [("x", "U8", [64], (0, 0, 64))], None)
    assert list(tmp_path.iterdir()) == []


def test_torch_gpu_save_file_writes_device_tensors_without_a_host_copy(tmp_path):
    torch = _torch_gpu()
    import safetensors.torch as ref_t
    import gdio.safetensors.torch as gst_t

    host = _torch_tensors(torch, 8)
    g = torch.Generator().manual_seed(9)
    for i in range(40):  # many separate allocations, odd sizes
        host[f"extra.{i}"] = torch.randint(0, 256, (int(torch.randint(1, 70_000, (1,), generator=g)),),
                                           dtype=torch.uint8, generator=g)
    dev = {k: v.to("cuda:0") for k, v in host.items()}
    # The last tensor is still being written on the current stream when save_file is called:
    # a save that does not wait for the stream stores the old bytes.
    late_src = torch.randint(0, 256, (8 << 20,), dtype=torch.uint8, generator=g)
    late = torch.zeros(8 << 20, dtype=torch.uint8, device="cuda:0")
    late_src_dev = late_src.to("cuda:0")
    torch.cuda._sleep(200_000_000)
    late.copy_(late_src_dev)
    dev["late"] = late
    host["late"] = late_src
    meta = {"format": "pt"}
    gst_t.save_file(dev, tmp_path / "g.safetensors", metadata=meta)
    # Byte for byte what the safetensors package writes for the same tensors.
    assert (tmp_path / "g.safetensors").read_bytes() == ref_t.save(host, metadata=meta)
    _assert_torch_same(torch, gst_t.load_file(tmp_path / "g.safetensors"), host)
    # A non-contiguous CUDA tensor is refused before anything is written.
    with pytest.raises(ValueError):
        gst_t.save_file({"a": torch.ones(4, 4, device="cuda:0").t()}, tmp_path / "nc.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.safetensors"]


@pytest.mark.parametrize("world,parts", [(1, None), (2, None), (3, None), (5, None), (2, 3), (3, 7)])
def test_rank_shares_cover_every_byte_once(tmp_path, world, parts):
    """The byte math and the reads of process_group= without torch: each simulated rank reads
    its share with gdio (``read_share``: CuFile.pread futures into a NumPy share, run by run);
    the pieces placed where the gathers put them hold every tensor at its offset, and the
    padding past the end is the zeros each rank wrote."""
    from gdio import _native
    from gdio.safetensors._dist import plan_share, read_share, share_reads, unread_tail

    gen = np.random.default_rng(world)
    files = []
    for s in range(3):
        t = {f"s{s}.{i}": random_array(gen, DTYPES[int(gen.integers(len(DTYPES)))],
                                        [int(gen.integers(1, 300))]) for i in range(9)}
        ref_np.save_file(t, str(tmp_path / f"m{s}.safetensors"))
        files.append((str(tmp_path / f"m{s}.safetensors"), t))
    ckpt = _native.Checkpoint([f for f, _ in files])
    tensors, file_lens = ckpt.layout()
    whole = None
    read_bytes = 0
    for rank in range(world):
        plan = plan_share(file_lens, rank, world, parts)
        if parts is not None:
            assert plan.parts == parts
        if whole is None:
            whole = np.full(world * plan.chunk, 0x5A, dtype=np.uint8)
            assert world * plan.chunk >= plan.total
        share = np.full(plan.chunk, 0xA5, dtype=np.uint8)
        for a, z in unread_tail(plan):
            share[a:z] = 0
        runs = []
        read_share(ckpt, plan, share, runs.append)
        assert runs == list(range(plan.parts))
        reads = share_reads(plan)
        read_bytes += sum(n for _, _, n, _ in reads)
        for _, _, n, dst in reads:
            assert dst + n <= plan.chunk
            # A read never crosses from one piece into the next.
            assert dst // plan.piece == (dst + n - 1) // plan.piece
        for local, glob, n in plan.placements():
            lo, hi = plan.run(local // plan.piece)
            assert lo <= glob and glob + n <= hi
            whole[glob : glob + n] = share[local : local + n]
    # Every data byte read exactly once by the group; every byte of the whole buffer placed.
    assert read_bytes == sum(file_lens)
    assert not np.any(whole[plan.total :])
    everything = {k: v for _, t in files for k, v in t.items()}
    for name, f, b, e, dtype, shape in tensors:
        base = plan.bases[f]
        want = np.ascontiguousarray(everything[name]).reshape(-1).view(np.uint8)
        assert np.array_equal(whole[base + b : base + e], want), name


@pytest.mark.parametrize("world", [1, 2, 3])
def test_planned_tensors_never_enter_the_shared_bytes(tmp_path, world):
    """process_group= with a plan, without torch: the shared segments hold every replicated
    tensor (read once by the group, each at its offset in the gathered buffer) and no byte of
    a planned tensor, which each rank reads its part of by itself."""
    from gdio import _native
    from gdio.safetensors._dist import plan_share, read_share, replicated_segments, share_reads

    gen = np.random.default_rng(40 + world)
    files = []
    for s in range(2):
        t = {f"s{s}.{i:02d}": random_array(gen, DTYPES[int(gen.integers(len(DTYPES)))],
                                            [int(gen.integers(1, 200)), 3]) for i in range(12)}
        ref_np.save_file(t, str(tmp_path / f"m{s}.safetensors"))
        files.append(t)
    ckpt = _native.Checkpoint([str(tmp_path / f"m{s}.safetensors") for s in range(2)])
    tensors, _ = ckpt.layout()
    apart = {t[0] for t in tensors if int(t[0][-2:]) % 3 == 1}  # every third tensor is planned
    segs = replicated_segments(tensors, apart)
    whole, read_ranges = None, []
    for rank in range(world):
        plan = plan_share(segs, rank, world, parts=2)
        whole = np.zeros(world * plan.chunk, dtype=np.uint8) if whole is None else whole
        share = np.full(plan.chunk, 0xA5, dtype=np.uint8)
        read_share(ckpt, plan, share)
        read_ranges += [(f, off, off + n) for f, off, n, _ in share_reads(plan)]
        for local, glob, n in plan.placements():
            whole[glob : glob + n] = share[local : local + n]
    everything = {k: v for t in files for k, v in t.items()}
    for name, f, b, e, _dtype, _shape in tensors:
        hit = [r for r in read_ranges if r[0] == f and r[1] < e and b < r[2]]
        if name in apart:
            assert not hit, f"planned tensor {name} was read into the shared bytes: {hit}"
            continue
        at = plan.offset_of(f, b)
        want = np.ascontiguousarray(everything[name]).reshape(-1).view(np.uint8)
        assert np.array_equal(whole[at : at + e - b], want), name
    shared = sum(e - b for name, _f, b, e, *_ in tensors if name not in apart)
    assert sum(z - a for _, a, z in read_ranges) == shared


def test_part_bounds_cover_every_element_once():
    from gdio.safetensors._dist import part_bounds

    for size in (0, 1, 5, 7, 64, 1001):
        for world in (1, 2, 3, 8):
            parts = [part_bounds(size, r, world) for r in range(world)]
            assert parts[0][0] == 0 and parts[-1][1] == size
            assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
            lens = [hi - lo for lo, hi in parts]
            assert max(lens) - min(lens) <= 1 and lens == sorted(lens, reverse=True)


def test_bad_plans_are_errors_naming_the_tensor(tmp_path):
    from gdio import _native
    from gdio.safetensors._dist import split_dims

    ref_np.save_file({"w": np.arange(12, dtype=np.float32).reshape(3, 4),
                      "b": np.arange(3, dtype=np.int64)}, str(tmp_path / "m.safetensors"))
    tensors, _ = _native.Checkpoint([str(tmp_path / "m.safetensors")]).layout()
    assert split_dims({"w": 1, "b": -1}, tensors) == {"w": 1, "b": 0}
    assert split_dims(lambda name, shape: 0 if len(shape) == 2 else None, tensors) == {"w": 0}
    with pytest.raises(ValueError, match="'w'.*along 2"):
        split_dims({"w": 2}, tensors)
    with pytest.raises(ValueError, match="'b'"):
        split_dims({"b": True}, tensors)
    with pytest.raises(ValueError, match="does not have.*nope"):
        split_dims({"nope": 0}, tensors)
    with pytest.raises(ValueError, match="process_group"):
        safe_open(str(tmp_path / "m.safetensors"), framework="np", plan={"w": 0})


# The safetensors dtypes that only newer torch has (2.3+: unsigned; 2.5+: FNUZ, E8M0, F4),
# torch's name, and whether the safetensors package (0.8) can load them into torch.
NEWER_TORCH_DTYPES = [
    ("U16", "uint16", True), ("U32", "uint32", True), ("U64", "uint64", True),
    ("F8_E4M3FNUZ", "float8_e4m3fnuz", True), ("F8_E5M2FNUZ", "float8_e5m2fnuz", True),
    ("F8_E8M0", "float8_e8m0fnu", False), ("F4", "float4_e2m1fn_x2", False),
]


def test_torch_newer_dtypes_round_trip_with_the_format_s_names_and_shapes(tmp_path):
    """Every safetensors dtype this torch has beyond torch 1.13's: saved under the format's
    name (F4 with its last dimension counted in 4-bit values, twice torch's), bytes as given,
    loaded back with torch's dtype and shape on the host (and the GPU where there is one),
    and against the package where it loads them. Nothing to check on a torch without them."""
    torch = _torch()
    import gdio.safetensors.torch as gst_t

    gen = torch.Generator().manual_seed(21)
    have = [(st, getattr(torch, name), ok) for st, name, ok in NEWER_TORCH_DTYPES if hasattr(torch, name)]
    if not have:
        pytest.skip(f"torch {torch.__version__} has none of the newer dtypes")
    tensors, raw = {}, {}
    for st, dt, _ in have:
        size = {"U16": 2, "U32": 4, "U64": 8}.get(st, 1)
        b = torch.randint(0, 256, (5, 6 * size), dtype=torch.uint8, generator=gen)
        tensors[st] = b.view(dt)
        raw[st] = b.numpy().tobytes()
    path = tmp_path / "newer.safetensors"
    gst_t.save_file(tensors, path)
    blob = path.read_bytes()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    body = blob[8 + n:]
    for st, dt, _ in have:
        h = header[st]
        assert h["dtype"] == st
        assert h["shape"] == ([5, 12] if st == "F4" else [5, 6]), (st, h["shape"])
        a, b = h["data_offsets"]
        assert body[a:b] == raw[st], st
    devices = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() and gdio.runtime_info()["gpus"] else [])
    for device in devices:
        got = gst_t.load_file(path, device=device)
        for st, dt, _ in have:
            assert got[st].dtype == dt and got[st].shape == (5, 6), (device, st, got[st].shape)
            assert got[st].cpu().view(torch.uint8).numpy().tobytes() == raw[st], (device, st)
    import safetensors.torch as ref_t
    for st, dt, ok in have:
        if not ok:
            continue
        theirs, ours = tmp_path / f"ref-{st}.safetensors", tmp_path / f"gdio-{st}.safetensors"
        ref_t.save_file({st: tensors[st]}, str(theirs))
        gst_t.save_file({st: tensors[st]}, ours)
        assert gst_t.load_file(theirs)[st].view(torch.uint8).numpy().tobytes() == raw[st], st
        back = ref_t.load_file(str(ours))[st]
        assert back.dtype == dt and back.view(torch.uint8).numpy().tobytes() == raw[st], st


def _backend_ops():
    return sum(b["ops"] for b in gdio.stats()["backends"].values())


def _backend_bytes():
    return sum(b["bytes"] for b in gdio.stats()["backends"].values())


def test_two_keys_in_a_row_by_chance_read_nothing_ahead(tmp_path):
    """Pairs of neighbouring keys, as any order has by chance, read just those tensors; the
    third call in a row starts reading ahead (the walk loaders make)."""
    gen = np.random.default_rng(13)
    t = {f"w.{i:03d}": gen.standard_normal((int(gen.integers(1, 30)), 33)).astype(np.float32)
         for i in range(60)}
    path = tmp_path / "pairs.safetensors"
    ref_np.save_file(t, str(path))
    no_map = gdio.defaults.set({"safetensors_map_host": False})  # reads, not views of the cache
    with no_map, safe_open(path, framework="np") as f:
        keys = f.keys()
        pairs = [keys[i] for j in (4, 20, 41) for i in (j, j + 1)]
        before = _backend_bytes()
        got = {k: f.get_tensor(k) for k in pairs}
        assert _backend_bytes() - before == sum(t[k].nbytes for k in pairs)
        assert_same(got, {k: t[k] for k in pairs})
        before = _backend_bytes()
        third = f.get_tensor(keys[43])  # keys 41 and 42 (the last pair), 43: a walk
        ahead = sum(t[k].nbytes for k in keys[43:])  # read ahead, in 4 KiB-aligned reads
        assert ahead <= _backend_bytes() - before < ahead + 8192
    with gdio.defaults.set({"safetensors_map_host": False}), safe_open(path, framework="np") as f:
        for k in keys[:3]:
            f.get_tensor(k)
        before = _backend_bytes()
        assert np.array_equal(f.get_tensor(keys[3]), t[keys[3]])  # read ahead with the third
        assert _backend_bytes() == before
    assert np.array_equal(third, t[keys[43]])


@pytest.mark.parametrize("budget", [None, 3000])
def test_get_tensor_walking_keys_reads_ahead_and_every_order_gives_the_file_s_bytes(tmp_path, budget):
    """``for k in f.keys(): f.get_tensor(k)`` loads the following tensors together (far fewer
    reads than tensors), any other order one by one, and every call, in any order, repeated
    or not, gives the tensor's bytes; with a small budget, tensors larger than it come alone."""
    import contextlib

    # Reads, not views of the page cache (`safetensors_map_host`), are what this counts.
    ctx = gdio.defaults.set({"safetensors_map_host": False} if budget is None else
                            {"safetensors_map_host": False, "safetensors_read_ahead_bytes": budget})
    gen = np.random.default_rng(12)
    t = {f"layer.{i:03d}.w": gen.standard_normal((int(gen.integers(1, 20)), 37)).astype(np.float32)
         for i in range(120)}
    t["scalar"] = np.array(3.5, dtype=np.float32)
    t["empty"] = np.zeros((0, 5), dtype=np.float16)
    path = tmp_path / "walk.safetensors"
    ref_np.save_file(t, str(path))
    with ctx, safe_open(path, framework="np") as f:
        keys = f.keys()
        ops = _backend_ops()
        walked = {k: f.get_tensor(k) for k in keys}
        walk_ops = _backend_ops() - ops
        assert_same(walked, t)
        order = list(keys)
        random.Random(4).shuffle(order)
        ops = _backend_ops()
        shuffled = {k: f.get_tensor(k) for k in order}
        shuffled_ops = _backend_ops() - ops
        assert_same(shuffled, t)
        # A walk broken off and taken up elsewhere, and the same tensor twice.
        for k in keys[10:20] + keys[5:8] + [keys[6], keys[6]] + keys[100:]:
            assert np.array_equal(f.get_tensor(k), t[k]), k
        # Slices taken whole, down the keys: read ahead too.
        ops = _backend_ops()
        for k in keys:
            assert np.array_equal(f.get_slice(k)[...], t[k]), k
        sliced_ops = _backend_ops() - ops
    if budget is None:
        assert walk_ops * 10 <= shuffled_ops, (walk_ops, shuffled_ops)
        assert sliced_ops * 10 <= shuffled_ops, (sliced_ops, shuffled_ops)
    else:
        assert walk_ops < shuffled_ops, (walk_ops, shuffled_ops)


def test_get_tensor_out_of_order_gives_every_numpy_dtype_s_bytes(tmp_path):
    """One tensor at a time (shuffled ``get_tensor``, ``get_slice`` rows), each read straight
    into the array NumPy allocates: every dtype the NumPy module has, random bytes, equal to
    what the package reads."""
    from gdio.safetensors.numpy import _TYPES

    gen = np.random.default_rng(21)
    t = {}
    for i, (name, dt) in enumerate(sorted(_TYPES.items())):
        shape = (int(gen.integers(1, 9)), int(gen.integers(1, 33)))
        raw = gen.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dt).itemsize, dtype=np.uint8)
        a = raw.view(dt).reshape(shape)
        if dt is np.bool_:
            a = raw[: a.size].astype(bool).reshape(shape)
        t[f"{i:02d}.{name}"] = a
    path = tmp_path / "dtypes.safetensors"
    ref_np.save_file(t, str(path))
    names = list(t)
    random.Random(5).shuffle(names)
    with safe_open(path, framework="np") as f, ref_open(str(path), framework="np") as r:
        for k in names:
            got, want = f.get_tensor(k), r.get_tensor(k)
            assert got.dtype == want.dtype and got.shape == want.shape, k
            assert got.tobytes() == want.tobytes(), k
            a = int(gen.integers(0, want.shape[0]))
            b = int(gen.integers(a, want.shape[0] + 1))
            assert f.get_slice(k)[a:b].tobytes() == want[a:b].tobytes(), k
