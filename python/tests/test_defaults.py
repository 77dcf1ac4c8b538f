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
    with pytest.raises(ValueError, match="bounce_buffer_size"):
        defaults.set("bounce_buffer_size", 1000)
    with pytest.raises(KeyError, match="gds_threshold"):
        defaults.set("gds_threshold", 1)
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
