"""gdio's configuration from Python, with KvikIO's ``kvikio.defaults`` API.

``gdio.defaults.set({"num_threads": 16, "task_size": 4 << 20})`` sets values for the process;
used as ``with gdio.defaults.set(...):`` it restores the old values when the block ends.
``gdio.defaults.get(name)`` reads one. Names are gdio's configuration keys (``gdio check``
lists them; environment variables ``GDIO_<KEY>`` and the ``GDIO_CONFIG`` file set them too) and
KvikIO's where they mean the same:

=====================  ====================================================
KvikIO name            gdio key
=====================  ====================================================
``num_threads``        ``threads`` (also ``thread_pool_nthreads``)
``task_size``          ``task_size``
``bounce_buffer_size`` ``bounce_buffer_size``
``gds_threshold``      ``inline_max_bytes``: a request into or out of GPU
                       memory of one task up to this size runs on the
                       calling thread, skipping the workers (KvikIO: a
                       request below it runs on the calling thread,
                       skipping its thread pool)
``compat_mode``        ``allow_compat_mode`` + ``force_compat_mode``:
                       ``ON`` forces compat, ``OFF`` forbids it, ``AUTO`` allows it
=====================  ====================================================

Sizes take any positive number of bytes, as KvikIO's do (the engine's tasks are at least
4 KiB and rounded up to the file's ``O_DIRECT`` alignment, bounce buffers whole 4 KiB pages). A refused value raises what
KvikIO raises: :class:`gdio.ConfigTypeError` (a ``TypeError``) for a value of the wrong type,
:class:`gdio.ConfigOverflowError` (an ``OverflowError``) for a negative number, else
:class:`gdio.ConfigValueError` (a ``ValueError``); all three are ``GdioError`` s carrying
gdio's message, and nothing changes.

A change applies to I/O started after it; I/O in flight finishes with the old values.
"""

from __future__ import annotations

import builtins
import enum
from typing import Any

from . import _native
from ._errors import ConfigOverflowError, ConfigTypeError, ConfigValueError, GdioError, UnknownKeyError

__all__ = [
    "CompatMode",
    "all",
    "bounce_buffer_size",
    "compat_mode",
    "get",
    "is_compat_mode_preferred",
    "num_threads",
    "set",
    "task_size",
]


class CompatMode(enum.IntEnum):
    """KvikIO's compat modes."""

    OFF = 0
    ON = 1
    AUTO = 2


_ALIASES = {
    "num_threads": "threads",
    "thread_pool_nthreads": "threads",
    "gds_threshold": "inline_max_bytes",
}

# KvikIO names gdio has no setting for, with what to do instead.
_UNSUPPORTED = {
    "auto_direct_io_read": "use direct_io (\"auto\", \"on\" or \"off\")",
    "auto_direct_io_write": "use direct_io (\"auto\", \"on\" or \"off\")",
}


def _compat_pairs(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, str):
        try:
            value = CompatMode[value.upper()]
        except KeyError:
            raise ValueError(f"compat_mode must be ON, OFF or AUTO, not {value!r}") from None
    elif isinstance(value, bool):
        value = CompatMode.ON if value else CompatMode.OFF
    mode = CompatMode(value)
    if mode == CompatMode.ON:
        return [("allow_compat_mode", True), ("force_compat_mode", True)]
    if mode == CompatMode.OFF:
        return [("allow_compat_mode", False), ("force_compat_mode", False)]
    return [("allow_compat_mode", True), ("force_compat_mode", False)]


_KEYS: frozenset[str] = frozenset()


def _known_keys() -> frozenset[str]:
    """gdio's configuration keys (fixed for the process)."""
    global _KEYS
    if not _KEYS:
        _KEYS = frozenset(k for k, _ in _native.config_all())
    return _KEYS


def _key(name: str) -> str:
    """gdio's key for ``name`` (a gdio key or KvikIO's name); ``KeyError`` when there is none."""
    if name in _UNSUPPORTED:
        raise KeyError(f"gdio has no setting {name!r}: {_UNSUPPORTED[name]}")
    key = _ALIASES.get(name, name)
    if not isinstance(key, str) or (not key.startswith("fs.") and key not in _known_keys()):
        raise UnknownKeyError(None, f"unknown configuration key {name!r} (gdio check lists the keys)", kind="Config")
    return key


def _pairs(name: str, value: Any) -> list[tuple[str, Any]]:
    if name == "compat_mode":
        return _compat_pairs(value)
    return [(_key(name), value)]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same_type(current: Any, value: Any) -> bool:
    """Whether ``value`` has the type of the key whose value is ``current``."""
    if isinstance(current, bool):
        return isinstance(value, bool)
    if isinstance(current, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(current, float):
        return _is_number(value)
    if isinstance(current, str):
        return isinstance(value, str)
    if isinstance(current, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            return False
        return not current or builtins.all(_same_type(current[0], v) for v in value)
    return True


def _refusal(pairs: list[tuple[str, Any]]) -> type[ConfigValueError]:
    """The exception class KvikIO would raise for the first pair that cannot be right."""
    for key, value in pairs:
        try:
            current = _native.config_get(key)
        except GdioError:
            continue
        if not _same_type(current, value):
            return ConfigTypeError
        if _is_number(value) and value < 0:
            return ConfigOverflowError
    return ConfigValueError


def _native_set(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Sets ``pairs`` all or none; a value gdio refuses is a :class:`ConfigValueError` (or its
    subclass for a wrong type or a negative number)."""
    try:
        return _native.config_set(pairs)
    except GdioError as e:
        if e.kind != "Config":
            raise
        raise _refusal(pairs)(e.errno, e.message, kind=e.kind) from e


class ConfigContextManager:
    """Returned by :func:`set`: the values are already set; a ``with`` block restores the old
    ones when it ends."""

    def __init__(self, old: list[tuple[str, Any]]) -> None:
        self._old = old

    def __enter__(self) -> "ConfigContextManager":
        return self

    def __exit__(self, *exc: object) -> None:
        _native.config_set(self._old)


def set(config: dict[str, Any] | str, value: Any = None, /) -> ConfigContextManager:  # noqa: A001
    """Sets ``{name: value, ...}`` (or one ``name, value``), all or none: an unknown name
    raises :class:`gdio.UnknownKeyError` (a ``KeyError``), a bad value
    :class:`gdio.ConfigValueError` (a ``ValueError``), both ``GdioError`` s, and nothing
    changes."""
    if isinstance(config, str):
        config = {config: value}
    elif value is not None:
        raise TypeError("set(dict) takes no second argument")
    pairs: list[tuple[str, Any]] = []
    for name, v in config.items():
        pairs += _pairs(name, v)
    return ConfigContextManager(_native_set(pairs))


def get(name: str) -> Any:
    """The value of ``name`` (gdio key or KvikIO name)."""
    if name == "compat_mode":
        return compat_mode()
    return _native.config_get(_key(name))


def all() -> dict[str, Any]:  # noqa: A001
    """Every gdio key and its value."""
    return builtins.dict(_native.config_all())


def num_threads() -> int:
    """Worker threads (gdio ``threads``): engine workers and future workers."""
    return get("threads")


def task_size() -> int:
    """Bytes per task a request is split into."""
    return get("task_size")


def bounce_buffer_size() -> int:
    """Bytes per pinned bounce buffer."""
    return get("bounce_buffer_size")


def compat_mode() -> CompatMode:
    """``ON`` when compat is forced, ``OFF`` when it is not allowed, else ``AUTO``."""
    if _native.config_get("force_compat_mode"):
        return CompatMode.ON
    if not _native.config_get("allow_compat_mode"):
        return CompatMode.OFF
    return CompatMode.AUTO


def is_compat_mode_preferred() -> bool:
    """Whether every I/O goes through compat (KvikIO's name)."""
    return compat_mode() == CompatMode.ON
