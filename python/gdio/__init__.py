"""gdio: files ↔ GPU (or host) memory at the hardware limit on any Linux machine.

The raw API copies KvikIO's names, so switching is a one-line change::

    import gdio
    with gdio.CuFile("weights.bin", "r") as f:
        n = f.read(tensor)                 # torch, CuPy, JAX, NumPy, bytearray...
        fut = f.pread(tensor, file_offset=4096)
        fut.get()

Buffers: anything with ``__dlpack__``, ``__cuda_array_interface__`` (its ``stream`` is waited
for), or the buffer protocol (host memory). Errors raise :class:`GdioError` (an ``OSError``).
CUDA is loaded at run time: the package imports and works on host memory without a GPU.
"""

from __future__ import annotations

import os
from typing import Any

from . import defaults
from ._errors import GdioError
from ._native import CuFile, Future
from ._wait import ALL_COMPLETED, FIRST_COMPLETED, FIRST_EXCEPTION, DoneAndNotDoneFutures, wait
from . import _native

__all__ = [
    "ALL_COMPLETED",
    "CuFile",
    "DoneAndNotDoneFutures",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "File",
    "Future",
    "GdioError",
    "IOFuture",
    "__version__",
    "defaults",
    "get_page_cache_info",
    "runtime_info",
    "wait",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("gdio")
except Exception:  # noqa: BLE001 - running from a source tree without metadata
    __version__ = "0+unknown"

File = CuFile
"""``gdio.File`` is ``gdio.CuFile``."""

IOFuture = Future
"""KvikIO's name for the future type."""


def get_page_cache_info(file: Any, offset: int = 0, length: int = 0) -> tuple[int, int]:
    """``(pages_cached, pages_total)`` of ``length`` bytes at ``offset`` (0: to the end) of
    ``file``: a path, a :class:`CuFile`, an object with ``fileno()`` or a descriptor. Uses
    ``cachestat(2)`` (``mincore`` on older kernels)."""
    if not isinstance(file, (CuFile, int)):
        if hasattr(file, "fileno") and not isinstance(file, (str, bytes, os.PathLike)):
            file = file.fileno()
        else:
            file = os.fspath(file)
    return _native.page_cache_info(file, offset, length)


def runtime_info() -> dict[str, Any]:
    """What gdio runs on: ``runtime`` (``cuda`` or ``host``), ``gpus``, ``why_no_gpu`` and
    ``future_workers``."""
    name, gpus, why, workers = _native.runtime_info()
    return {"runtime": name, "gpus": gpus, "why_no_gpu": why, "future_workers": workers}
