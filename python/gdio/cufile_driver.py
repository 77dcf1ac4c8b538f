"""KvikIO's ``kvikio.cufile_driver``: the I/O driver's properties, read from gdio's own.

KvikIO's module talks to NVIDIA's cuFile driver. gdio's Python package does not go through
cuFile: its driver is gdio's engine (with a ``gds`` backend that uses NVIDIA's libcufile where
GPUDirect Storage works). The properties answer for that driver:

==========================  =========================================================
property                    gdio
==========================  =========================================================
``is_gds_available``        gdio's ``gds`` backend can serve I/O here (nvidia-fs or
                            PCI P2PDMA, NVIDIA's libcufile, its driver opened);
                            :func:`gds_unavailable_reason` says why not
``major_version``,          the nvidia-fs kernel module's version; 0 and 0 where it is
``minor_version``           not loaded (as gdio's ``libcufile.so.0`` reports)
``allow_compat_mode``       gdio's ``allow_compat_mode``
``per_buffer_cache_size``   gdio's ``bounce_buffer_size``, in KiB (read-only)
``poll_mode``               ``completion_spin_us > 0``: gdio's workers poll a copy's
                            completion before they sleep; ``False`` sets it to 0
==========================  =========================================================

``poll_thresh_size``, ``max_device_cache_size`` and ``max_pinned_memory_size`` size cuFile's
own GPU bounce buffers and registrations, which gdio does not have: reading or setting them is
a ``KeyError`` that says so, as :mod:`gdio.defaults` does for KvikIO names without a gdio
setting.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any, Optional, Tuple

from . import _native

__all__ = [
    "ConfigContextManager",
    "DriverProperties",
    "driver_close",
    "driver_open",
    "gds_unavailable_reason",
    "get",
    "initialize",
    "libcufile_version",
    "properties",
    "set",
]

# completion_spin_us that poll_mode=True restores when polling was off (gdio's default).
_POLL_SPIN_US = 1000

_NO_SETTING = {
    "poll_thresh_size": "gdio polls every copy's completion for completion_spin_us, whatever its size",
    "max_device_cache_size": "gdio keeps no GPU bounce buffers (its bounce buffers are pinned host memory: "
    "bounce_buffer_size x bounce_buffers_per_thread per worker)",
    "max_pinned_memory_size": "gdio registers no GPU memory with a driver (cuFileBufRegister is a C call of "
    "gdio's libcufile.so.0)",
}


def _nvfs_version() -> Tuple[int, int]:
    _, _, version = _native.gds_status()
    if not version:
        return (0, 0)
    parts = (version.split(".") + ["0", "0"])[:2]
    try:
        return (int(parts[0]), int(parts[1]))
    except ValueError:
        return (0, 0)


class DriverProperties:
    """The properties of :data:`properties` (see the module's table)."""

    @property
    def is_gds_available(self) -> bool:
        """Whether gdio's ``gds`` backend (GPUDirect Storage) can serve I/O here."""
        return bool(_native.gds_status()[0])

    @property
    def major_version(self) -> int:
        """The nvidia-fs module's major version (0: not loaded)."""
        return _nvfs_version()[0]

    @property
    def minor_version(self) -> int:
        """The nvidia-fs module's minor version (0: not loaded)."""
        return _nvfs_version()[1]

    @property
    def allow_compat_mode(self) -> bool:
        """gdio's ``allow_compat_mode``: I/O may go through host memory."""
        return bool(_native.config_get("allow_compat_mode"))

    @property
    def per_buffer_cache_size(self) -> int:
        """gdio's ``bounce_buffer_size`` in KiB."""
        return int(_native.config_get("bounce_buffer_size")) // 1024

    @property
    def poll_mode(self) -> bool:
        """Whether gdio's workers poll copy completions (``completion_spin_us > 0``)."""
        return int(_native.config_get("completion_spin_us")) > 0

    @poll_mode.setter
    def poll_mode(self, on: bool) -> None:
        if not isinstance(on, bool):
            raise TypeError(f"poll_mode is True or False, not {on!r}")
        spin = int(_native.config_get("completion_spin_us"))
        if not on:
            _native.config_set([("completion_spin_us", 0)])
        elif spin == 0:
            _native.config_set([("completion_spin_us", _POLL_SPIN_US)])


for _name, _why in _NO_SETTING.items():

    def _refuse(self: DriverProperties, *value: Any, _n: str = _name, _w: str = _why) -> Any:
        raise KeyError(f"gdio has no setting {_n!r}: {_w}")

    setattr(DriverProperties, _name, property(_refuse, _refuse))
del _name, _why, _refuse

properties = DriverProperties()
"""gdio's driver properties (KvikIO's ``kvikio.cufile_driver.properties``)."""

_READ_ONLY = ("is_gds_available", "major_version", "minor_version", "allow_compat_mode", "per_buffer_cache_size")
_SETTABLE = ("poll_mode",)


def _check(name: str) -> None:
    if name in _NO_SETTING:
        raise KeyError(f"gdio has no setting {name!r}: {_NO_SETTING[name]}")
    if name not in _READ_ONLY and name not in _SETTABLE:
        raise KeyError(f"no driver property {name!r}: the properties are {', '.join(_READ_ONLY + _SETTABLE)}")


class ConfigContextManager:
    """Returned by :func:`set`: the values are already set; a ``with`` block restores the old
    ones when it ends."""

    def __init__(self, config: dict[str, Any]) -> None:
        for name in config:
            _check(name)
            if name in _READ_ONLY:
                raise KeyError(f"{name!r} is read-only")
        self._old = {name: getattr(properties, name) for name in config}
        try:
            for name, value in config.items():
                setattr(properties, name, value)
        except BaseException:
            for name, value in self._old.items():
                setattr(properties, name, value)
            raise

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        for name, value in self._old.items():
            setattr(properties, name, value)


def set(*config: Any) -> ConfigContextManager:  # noqa: A001
    """Sets properties, ``set({"poll_mode": False})`` or ``set("poll_mode", False)``, all or
    none; in a ``with`` block the old values come back when it ends."""
    usage = "use gdio.cufile_driver.set(config: dict) or gdio.cufile_driver.set(key: str, value)"
    if len(config) == 1 and isinstance(config[0], dict):
        return ConfigContextManager(config[0])
    if len(config) == 2 and isinstance(config[0], str):
        return ConfigContextManager({config[0]: config[1]})
    raise ValueError(usage)


def get(config_name: str) -> Any:
    """The value of property ``config_name``."""
    _check(config_name)
    return getattr(properties, config_name)


def gds_unavailable_reason() -> Optional[str]:
    """Why GPUDirect Storage cannot serve I/O here (``None`` when it can): gdio's own words,
    naming what is missing (nvidia-fs, the library, the driver)."""
    return _native.gds_status()[1]


def libcufile_version() -> Tuple[int, int]:
    """``(major, minor)`` of the libcufile the dynamic loader finds (NVIDIA's, which gdio's
    ``gds`` backend uses, or gdio's own ``libcufile.so.0`` where it comes first); ``(0, 0)``
    when there is none."""
    v = _native.libcufile_version()
    if not v:
        return (0, 0)
    major, _, minor = v.partition(".")
    return (int(major), int(minor or 0))


_opened = 0
_lock = threading.Lock()


def driver_open() -> None:
    """Builds gdio's driver now (otherwise the first I/O does) and counts the open; every open
    needs a :func:`driver_close`, as with cuFile."""
    global _opened
    _native.runtime_info()
    with _lock:
        _opened += 1


def driver_close() -> None:
    """Counts a close of :func:`driver_open`. gdio's driver stays for the process's I/O
    (:func:`gdio.bounce_buffer_free` gives its pinned memory back); a close without an open is
    a ``RuntimeError``, as cuFile's ``cuFileDriverClose`` refuses it."""
    global _opened
    with _lock:
        if _opened == 0:
            raise RuntimeError("gdio.cufile_driver.driver_close: the driver is not open (close without open)")
        _opened -= 1


def initialize() -> None:
    """:func:`driver_open` now and :func:`driver_close` at exit."""
    driver_open()
    atexit.register(driver_close)
