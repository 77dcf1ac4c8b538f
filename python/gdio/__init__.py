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

from . import cufile_driver, defaults
from ._errors import ConfigOverflowError, ConfigTypeError, ConfigValueError, GdioError, UnknownKeyError
from ._native import CuFile, Future
from ._mmap import Mmap
from ._remote import RemoteEndpointType, RemoteFile, infer_remote_endpoint_type, is_remote_file_available
from ._wait import ALL_COMPLETED, FIRST_COMPLETED, FIRST_EXCEPTION, DoneAndNotDoneFutures, wait
from . import _native

__all__ = [
    "ALL_COMPLETED",
    "bounce_buffer_free",
    "CompatMode",
    "ConfigOverflowError",
    "ConfigTypeError",
    "ConfigValueError",
    "CuFile",
    "DoneAndNotDoneFutures",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "File",
    "Future",
    "GdioError",
    "IOFuture",
    "Mmap",
    "UnknownKeyError",
    "RemoteEndpointType",
    "RemoteFile",
    "__git_commit__",
    "__version__",
    "clear_page_cache",
    "cufile_driver",
    "defaults",
    "drop_file_page_cache",
    "drop_system_page_cache",
    "explain",
    "get_page_cache_info",
    "infer_remote_endpoint_type",
    "is_remote_file_available",
    "memory_deregister",
    "memory_register",
    "runtime_info",
    "stats",
    "stream_deregister",
    "stream_register",
    "wait",
]

__version__: str = _native.__version__
"""The package's version (its native module's, which the wheel is built from)."""

__git_commit__: str = _native.__git_commit__
"""The git commit the package was built from (KvikIO's name); empty when it was built from
source that is not a git checkout."""

File = CuFile
"""``gdio.File`` is ``gdio.CuFile``."""

IOFuture = Future
"""KvikIO's name for the future type."""

CompatMode = defaults.CompatMode
"""KvikIO's ``kvikio.CompatMode`` (``OFF``, ``ON``, ``AUTO``), also ``gdio.defaults.CompatMode``."""


def _check_buffer(buf: Any) -> None:
    if hasattr(buf, "__dlpack__") or hasattr(buf, "__cuda_array_interface__"):
        return
    try:
        memoryview(buf).release()
    except TypeError:
        raise TypeError(
            f"gdio cannot use a {type(buf).__name__} as a buffer: pass an object with __dlpack__, "
            "__cuda_array_interface__, or the buffer protocol"
        ) from None


def memory_register(buf: Any) -> None:
    """KvikIO's ``memory_register``: KvikIO registers the buffer's allocation with cuFile so
    that GPUDirect Storage can DMA into it. gdio's engine needs no registration (it moves the
    bytes through its own pinned buffers, and gdio's ``libcufile.so.0`` keeps registrations for
    C callers): this checks that gdio can use ``buf`` (``TypeError`` if not) and returns."""
    _check_buffer(buf)


def memory_deregister(buf: Any) -> None:
    """KvikIO's ``memory_deregister``: the counterpart of :func:`memory_register` (checks
    ``buf`` and returns)."""
    _check_buffer(buf)


def bounce_buffer_free() -> int:
    """KvikIO's ``bounce_buffer_free``: gives back the pinned host memory of gdio's bounce
    buffers (made for each GPU at its first I/O, and for small reads on the calling thread) by
    retiring the current driver; the next I/O builds a new one, same configuration. Returns
    the bytes given back now: futures still in flight keep their driver's buffers until they
    finish, and another thread's buffers for its small reads go at its next I/O."""
    return _native.bounce_buffer_free()


def _stream_handle(stream: Any) -> int:
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, cuda.core
        if hasattr(stream, attr) and not isinstance(stream, int):
            stream = getattr(stream, attr)
            break
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise TypeError(f"a CUDA stream is a handle (int) or an object with cuda_stream or ptr, not {stream!r}")
    return stream


def stream_register(stream: Any, flags: int = 0) -> None:
    """KvikIO's ``stream_register``: KvikIO registers a CUDA stream with cuFile for its
    stream-ordered calls. gdio's ``raw_read_async``/``raw_write_async`` work on any stream
    without it: this checks that ``stream`` is a stream handle (an int, or a torch/CuPy stream;
    ``TypeError`` if not) and returns."""
    _stream_handle(stream)


def stream_deregister(stream: Any) -> None:
    """KvikIO's ``stream_deregister``: the counterpart of :func:`stream_register`."""
    _stream_handle(stream)


def get_page_cache_info(file: Any, offset: int = 0, length: int = 0) -> tuple[int, int]:
    """``(pages_cached, pages_total)`` of ``length`` bytes at ``offset`` (0: to the end) of
    ``file``: a path, a :class:`CuFile`, an object with ``fileno()`` or a descriptor. Uses
    ``cachestat(2)`` (``mincore`` on older kernels). Anything else for ``file`` is a
    ``ValueError`` (as in KvikIO)."""
    if not isinstance(file, (CuFile, int)) or isinstance(file, bool):
        if hasattr(file, "fileno") and not isinstance(file, (str, bytes, os.PathLike)):
            file = file.fileno()
        elif isinstance(file, (str, bytes, os.PathLike)):
            file = os.fspath(file)
        else:
            raise ValueError(
                "get_page_cache_info takes a path, a CuFile, a file object or a descriptor, "
                f"not {type(file).__name__}"
            )
    return _native.page_cache_info(file, offset, length)


def _descriptor(file: Any) -> tuple[int, bool]:
    """A descriptor for ``file`` (a path, a :class:`CuFile`, an object with ``fileno()`` or a
    descriptor) and whether this call opened it (then the caller closes it)."""
    if isinstance(file, int) and not isinstance(file, bool):
        return file, False
    if hasattr(file, "fileno") and not isinstance(file, (str, bytes, os.PathLike)):
        return file.fileno(), False
    return os.open(os.fspath(file), os.O_RDONLY | os.O_CLOEXEC), True


def drop_file_page_cache(
    file: Any, offset: int = 0, length: int = 0, sync_first: bool = True
) -> None:
    """Asks the kernel to evict ``length`` bytes at ``offset`` (0: to the end) of ``file`` from
    the page cache (``posix_fadvise(POSIX_FADV_DONTNEED)``; no privileges needed, no other file
    touched), after ``fdatasync`` when ``sync_first`` so that dirty pages can go too. Only whole
    pages inside the range are dropped; filesystems that keep files in memory (tmpfs) keep
    them. KvikIO's ``drop_file_page_cache``."""
    if offset < 0 or length < 0:
        raise ValueError(f"offset and length must be >= 0, not {offset} and {length}")
    fd, opened = _descriptor(file)
    try:
        if sync_first:
            os.fdatasync(fd)
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
    finally:
        if opened:
            os.close(fd)


def drop_system_page_cache(
    reclaim_dentries_and_inodes: bool = True, sync_first: bool = True
) -> bool:
    """Drops the whole system's page cache (``vm.drop_caches`` 3, or 1 without dentries and
    inodes), after ``sync`` when ``sync_first``: by writing ``/proc/sys/vm/drop_caches`` (root),
    else through ``sudo -n sysctl``. Returns whether it was dropped. KvikIO's
    ``drop_system_page_cache``; :func:`drop_file_page_cache` needs no privileges."""
    import subprocess

    level = "3" if reclaim_dentries_and_inodes else "1"
    if sync_first:
        os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write(level)
        return True
    except OSError:
        pass
    try:
        r = subprocess.run(
            ["sudo", "-n", "sysctl", f"vm.drop_caches={level}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def clear_page_cache(
    reclaim_dentries_and_inodes: bool = True, clear_dirty_pages: bool = True
) -> bool:
    """KvikIO's older name of :func:`drop_system_page_cache`."""
    return drop_system_page_cache(reclaim_dentries_and_inodes, clear_dirty_pages)


def runtime_info() -> dict[str, Any]:
    """What gdio runs on: ``runtime`` (``cuda`` or ``host``; ``sim`` in a process started with
    ``GDIO_SIMULATE_GPUS=N``, the tests' simulated GPUs), ``gpus``, ``why_no_gpu`` and
    ``future_workers``."""
    name, gpus, why, workers = _native.runtime_info()
    return {"runtime": name, "gpus": gpus, "why_no_gpu": why, "future_workers": workers}


def stats() -> dict[str, Any]:
    """Which paths gdio's I/O took in this process, since its driver was built (a change of
    :mod:`gdio.defaults` builds a new one): ``backends``, per backend name, the ``ops``,
    ``bytes`` and ``errors`` it served, its ``retries`` (a fastpath's failures retried on a
    fallback, by cause) and ``fallbacks`` (I/Os a fallback served for a fastpath, by the
    fastpath's reason); ``engine``, how the engine moved the bytes (``buffered_read_bytes``,
    ``direct_read_bytes``, ``page_cache_dma_bytes``, the writes likewise, ``gathered_reads``
    and of them ``scattered_reads`` (sent by the scatter kernel), ``split_reads`` and
    ``split_pieces_helped`` (pieces of split reads read into another worker's bounce buffer),
    ``inline_requests``, ``inline_busy`` (small requests sent to the workers for a crowd of
    more than ``inline_max_callers`` callers), ``caller_lanes_made``...) and where its workers' time went
    (``worker_time``: ``file_io_ns``, ``buffer_wait_ns``, ``split_wait_ns`` (split reads' workers
    waiting on each other), ``copy_queue_ns``, ``draining_ns``, ``inline_ns``, ``landing_ns``
    over ``copies_landed``). Take two and subtract to see one
    step's share, as ``gdio bench`` does."""
    import json

    return json.loads(_native.stats_json())


def explain(file: Any, op: str = "read", device: Any = "cuda:0", aligned: bool = True) -> dict[str, Any]:
    """Which backend would serve an ``op`` (``"read"``/``"write"``) of ``file`` (a path or a
    :class:`CuFile`) into or out of ``device`` memory (``"cpu"``, ``"cuda:N"`` or ``N``), and
    why: ``backend`` (``None`` when every backend refuses), its ``reason``, and every backend's
    ``score`` (100 fastpath, 1 fallback, -1 refused) and reason, with the file facts the rules
    used. ``aligned=False`` asks about a request that misses the file's ``O_DIRECT`` alignment.
    ``gdio check PATH`` prints the same for every case."""
    import json

    from .safetensors._open import parse_device

    path = file.path if isinstance(file, CuFile) else file
    return json.loads(_native.explain_json(os.fspath(path), op, parse_device(device), aligned))
