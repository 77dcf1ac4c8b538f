"""gdio.defaults: KvikIO's names on gdio's configuration, as a context manager."""

import pytest

import gdio
from gdio import defaults


def test_context_manager_restores():
    before = defaults.all()
    threads = defaults.num_threads()
    with defaults.set({"num_threads": threads + 3, "task_size": 1 << 20, "direct_io": "off"}):
        assert defaults.get("num_threads") == threads + 3
        assert defaults.get("threads") == threads + 3
        assert defaults.task_size() == 1 << 20
        assert defaults.get("direct_io") == "off"
        assert gdio.runtime_info()["future_workers"] == threads + 3
    assert defaults.all() == before
    assert gdio.runtime_info()["future_workers"] == threads


def test_compat_mode_mapping():
    before = defaults.all()
    with defaults.set("compat_mode", defaults.CompatMode.ON):
        assert defaults.get("force_compat_mode") is True
        assert defaults.compat_mode() == defaults.CompatMode.ON
        assert defaults.is_compat_mode_preferred()
    with defaults.set({"compat_mode": "off"}):
        assert defaults.get("allow_compat_mode") is False
        assert defaults.compat_mode() == defaults.CompatMode.OFF
    with defaults.set({"compat_mode": defaults.CompatMode.AUTO}):
        assert defaults.compat_mode() == defaults.CompatMode.AUTO
    assert defaults.all() == before


def test_plain_set_persists_until_changed():
    old = defaults.bounce_buffer_size()
    defaults.set("bounce_buffer_size", old * 2)
    try:
        assert defaults.bounce_buffer_size() == old * 2
    finally:
        defaults.set("bounce_buffer_size", old)
    assert defaults.bounce_buffer_size() == old


def test_bad_values_change_nothing():
    before = defaults.all()
    # KvikIO's types too: KeyError for a key gdio lacks, ValueError for a value it refuses.
    for t in (gdio.GdioError, KeyError, gdio.UnknownKeyError):
        with pytest.raises(t, match="unknown configuration key"):
            defaults.set({"task_size": 1 << 22, "no_such_key": 1})
    with pytest.raises(KeyError, match="unknown configuration key"):
        defaults.get("set_task_size")
    for t in (gdio.GdioError, ValueError, gdio.ConfigValueError):
        with pytest.raises(t, match="threads"):
            defaults.set({"num_threads": 0})
    with pytest.raises(ValueError, match="bounce_buffer_size: must be a positive integer"):
        defaults.set("bounce_buffer_size", 0)
    # A negative number: OverflowError, as KvikIO raises, naming the key and the value.
    for t in (gdio.GdioError, ValueError, OverflowError, gdio.ConfigOverflowError):
        with pytest.raises(t, match=r"task_size: .*not -1 \(a negative value\)"):
            defaults.set({"num_threads": 3, "task_size": -1})
    # A value of the wrong type: TypeError.
    for name, bad in [("http_status_codes", 0), ("http_status_codes", ["a"]), ("num_threads", "8"),
                      ("direct_io", 1), ("allow_compat_mode", 1), ("task_size", 1.5)]:
        for t in (gdio.GdioError, TypeError, gdio.ConfigTypeError):
            with pytest.raises(t, match=name if name != "num_threads" else "threads"):
                defaults.set(name, bad)
    with pytest.raises(ValueError, match="compat_mode"):
        defaults.set("compat_mode", "sometimes")
    assert defaults.all() == before


def test_io_under_changed_defaults(data_file, rng):
    path, data = data_file
    with defaults.set({"num_threads": 2, "task_size": 8192}):
        with gdio.CuFile(path) as f:
            buf = bytearray(300_000)
            off = rng.randrange(0, len(data) - 300_000)
            assert f.pread(buf, file_offset=off).get() == 300_000
    assert bytes(buf) == data[off : off + 300_000]


def test_kvikio_module_level_names(data_file):
    """``import gdio as kvikio`` keeps working for code that names ``kvikio.CompatMode`` or
    registers its buffers."""
    assert gdio.CompatMode is gdio.defaults.CompatMode
    assert int(gdio.CompatMode.ON) == 1 and int(gdio.CompatMode.AUTO) == 2
    path, data = data_file
    buf = bytearray(4096)
    gdio.memory_register(buf)
    with gdio.CuFile(path) as f:
        assert f.read(buf) == 4096
    gdio.memory_deregister(buf)
    assert bytes(buf) == data[:4096]
    with pytest.raises(TypeError, match="cannot use a int"):
        gdio.memory_register(5)


def test_gds_threshold_is_inline_max_bytes():
    """KvikIO's gds_threshold (requests below it skip the thread pool) is gdio's
    inline_max_bytes (requests up to it run on the calling thread)."""
    before = defaults.get("inline_max_bytes")
    assert defaults.get("gds_threshold") == before
    with defaults.set("gds_threshold", 12345):
        assert defaults.get("inline_max_bytes") == 12345
        assert defaults.get("gds_threshold") == 12345
    assert defaults.get("gds_threshold") == before


@pytest.mark.parametrize("task_size,bounce_buffer_size", [(3, 1000), (1024, 4097), (12345, 1)])
def test_any_positive_task_and_bounce_buffer_size(tmp_path, rng, task_size, bounce_buffer_size):
    """KvikIO's tests use tasks of 3 bytes and 1 KiB bounce buffers: gdio takes them and moves
    the same bytes (bounce buffers are rounded up to whole pages)."""
    data = rng.randbytes(200_003)
    path = tmp_path / "small-knobs"
    with defaults.set({"task_size": task_size, "bounce_buffer_size": bounce_buffer_size}):
        assert defaults.task_size() == task_size
        assert defaults.bounce_buffer_size() == bounce_buffer_size
        with gdio.CuFile(path, "w") as f:
            assert f.write(bytearray(data)) == len(data)
        with gdio.CuFile(path) as f:
            for _ in range(4):
                off = rng.randrange(0, len(data) - 1)
                n = rng.randrange(1, len(data) - off + 1)
                buf = bytearray(rng.randbytes(n + 7))
                tail = bytes(buf[n:])
                assert f.pread(buf, size=n, file_offset=off).get() == n
                assert bytes(buf[:n]) == data[off : off + n]
                assert bytes(buf[n:]) == tail
    assert path.read_bytes() == data
