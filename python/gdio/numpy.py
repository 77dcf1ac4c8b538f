"""KvikIO's ``kvikio.numpy``: ``fromfile`` and ``tofile`` through gdio, for host (NumPy) and
GPU (CuPy and any array type NumPy's ``like=`` dispatches to) arrays.

``np.fromfile(path, like=gdio.numpy.LikeWrapper(cupy.empty(())))`` reads straight into a new
CuPy array, as with KvikIO; ``gdio.numpy.fromfile(path, dtype, like=cupy.empty(()))`` is the
same call without NumPy's dispatch."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._native import CuFile

__all__ = ["LikeWrapper", "fromfile", "tofile"]


def fromfile(
    file: Any, dtype: Any = float, count: int = -1, sep: str = "", offset: int = 0, *, like: Any = None
) -> Any:
    """``numpy.fromfile`` for binary files, read with gdio into an array made like ``like``
    (NumPy when ``None``): ``count`` items of ``dtype`` (``-1``: every whole item) from byte
    ``offset``. ``file`` is a path or an open file: then, as NumPy does, ``offset`` counts
    from the file's position, which ends after the items read. As NumPy does, a ``count``
    beyond the file gives the items there are and trailing bytes short of an item are left
    out; an ``offset`` past the end is a ``ValueError``, and so is a ``count`` below -1.
    Text files (``sep != ""``) are NumPy's own business: ``NotImplementedError``."""
    if sep != "":
        raise NotImplementedError(
            "Non-default value of the `sep` argument is not supported: gdio.numpy.fromfile reads binary files"
        )
    if count < -1:
        raise ValueError(f"negative dimensions are not allowed (count={count})")
    dtype = np.dtype(dtype)
    opened = None
    if hasattr(file, "fileno") and not isinstance(file, (str, bytes, os.PathLike)):
        opened = file
        name = getattr(file, "name", None)
        path = os.fspath(name) if isinstance(name, (str, bytes, os.PathLike)) else f"/proc/self/fd/{file.fileno()}"
        offset += file.tell()
    else:
        path = os.fspath(file)
    size = os.path.getsize(path)
    if offset < 0 or offset > size:
        raise ValueError(f"offset {offset} is outside {path} ({size} bytes)")
    whole = (size - offset) // dtype.itemsize if dtype.itemsize else 0
    count = whole if count < 0 else min(count, whole)
    out = np.empty(count, dtype=dtype) if like is None else np.empty(count, dtype=dtype, like=like)
    nbytes = count * dtype.itemsize
    if nbytes:
        with CuFile(path, "r") as f:
            got = f.read(out, nbytes, file_offset=offset)
        if got != nbytes:
            raise OSError(f"{path}: read {got} of {nbytes} bytes at offset {offset} (the file shrank?)")
    if opened is not None:
        opened.seek(offset + nbytes)
    return out


def tofile(ary: Any, file: Any) -> None:
    """``ary.tofile(file)`` with gdio: the array's bytes in C order, replacing the file.
    ``file`` is a path or an open file object (its ``name`` is written). An array that is not
    C-contiguous is copied to one first, on its own device (NumPy and CuPy through
    ``numpy.ascontiguousarray(ary, like=ary)``, torch through ``.contiguous()``), as
    KvikIO's ``tofile`` does."""
    if hasattr(ary, "__array_function__"):
        ary = np.ascontiguousarray(ary, like=ary)
    elif callable(getattr(ary, "contiguous", None)):
        ary = ary.contiguous()
    name = getattr(file, "name", None) if hasattr(file, "fileno") else None
    path = os.fspath(name) if isinstance(name, (str, bytes, os.PathLike)) else os.fspath(file)
    with CuFile(path, "w") as f:
        f.write(ary)


class LikeWrapper:
    """Makes ``numpy.fromfile(..., like=LikeWrapper(arr))`` read with gdio into an array of
    ``arr``'s type (KvikIO's ``LikeWrapper``). Other NumPy functions given this ``like`` are
    not supported."""

    def __init__(self, like: Any) -> None:
        self._like = like

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is not np.fromfile:
            return NotImplemented
        kwargs = dict(kwargs)
        kwargs["like"] = self._like
        return fromfile(*args, **kwargs)
