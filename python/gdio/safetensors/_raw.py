"""The ``safetensors`` package's low-level API (0.8): ``TensorSpec``, ``serialize``,
``serialize_file`` and ``deserialize``, on raw host memory, with the same file layout as the
package (``_format``) and files written through gdio's engine."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from .._errors import SafetensorError
from . import _format

# The constructor-style names TensorSpec takes, and the format code of each.
_NAMES = {
    "bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16",
    "int32": "I32", "uint32": "U32", "int64": "I64", "uint64": "U64", "float16": "F16",
    "float32": "F32", "float64": "F64", "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3",
    "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2", "float8_e5m2fnuz": "F8_E5M2FNUZ",
    "float8_e8m0fnu": "F8_E8M0", "float4_e2m1fn_x2": "F4", "complex64": "C64",
}


class TensorSpec:
    """One tensor for :func:`serialize` / :func:`serialize_file`: ``dtype`` (a constructor-style
    name such as ``"float32"``, ``"bfloat16"``, ``"float4_e2m1fn_x2"``, or a format code such as
    ``"F32"``), ``shape``, and the host address ``data_ptr`` of ``data_len`` contiguous bytes,
    which the caller keeps alive while a serialization uses it. An unknown dtype is a
    :class:`SafetensorError` at once. For the packed ``float4_e2m1fn_x2`` (two values per byte)
    the storage shape a framework reports is taken and its last dimension doubled, so
    ``shape`` is always the element count the header records."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype: str, shape: Sequence[int], data_ptr: int, data_len: int) -> None:
        code = _NAMES.get(dtype, dtype if dtype in _format.BITS else None)
        if code is None:
            raise SafetensorError(
                f"unknown dtype {dtype!r}: use one of {', '.join(sorted(_NAMES))} (or a format code "
                "such as 'F32')"
            )
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise SafetensorError(f"shape {dims} has a negative dimension")
        if dtype == "float4_e2m1fn_x2" and dims:
            dims[-1] *= 2
        if int(data_len) < 0 or int(data_ptr) < 0:
            raise SafetensorError(f"data_ptr {data_ptr} and data_len {data_len} must be at least 0")
        self._dtype, self._shape = code, dims
        self._data_ptr, self._data_len = int(data_ptr), int(data_len)

    @property
    def dtype(self) -> str:
        """The format code written into the header (``"F32"``)."""
        return self._dtype

    @property
    def shape(self) -> List[int]:
        """The element-count shape the header records."""
        return list(self._shape)

    @property
    def data_ptr(self) -> int:
        """The host address of the tensor's bytes."""
        return self._data_ptr

    @property
    def data_len(self) -> int:
        """The tensor's bytes."""
        return self._data_len

    def __repr__(self) -> str:
        return (f"TensorSpec(dtype={self._dtype!r}, shape={self._shape}, data_ptr={self._data_ptr:#x}, "
                f"data_len={self._data_len})")


def _entries(tensor_dict: Dict[str, TensorSpec]) -> list[tuple[str, str, list[int], Any]]:
    if not isinstance(tensor_dict, dict):
        raise TypeError(f"tensor_dict must be a dict of name to TensorSpec, not {type(tensor_dict).__name__}")
    entries = []
    for name, spec in tensor_dict.items():
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"tensor {name!r} must be a TensorSpec, not {type(spec).__name__}")
        count = 1
        for d in spec.shape:
            count *= d
        want = (count * _format.BITS[spec.dtype] + 7) // 8
        if want != spec.data_len:
            raise SafetensorError(
                f"Error while serializing: tensor {name!r} of {spec.dtype} {spec.shape} holds {want} "
                f"bytes, not data_len {spec.data_len}"
            )
        if spec.data_len and not spec.data_ptr:
            raise SafetensorError(f"Error while serializing: tensor {name!r} has a null data_ptr")
        data = (ctypes.c_char * spec.data_len).from_address(spec.data_ptr) if spec.data_len else b""
        entries.append((name, spec.dtype, spec.shape, data))
    return entries


def serialize(tensor_dict: Dict[str, TensorSpec], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file of ``tensor_dict`` (``{name: TensorSpec}``), laid out as
    the package lays it out; ``metadata`` maps ``str`` to ``str``."""
    return _format.serialize(_entries(tensor_dict), metadata)


def serialize_file(
    tensor_dict: Dict[str, TensorSpec],
    filename: Union[str, "os.PathLike[str]"],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """:func:`serialize` into ``filename``, written with gdio's engine straight from the
    tensors' memory (no copy of the file in memory; the GIL released during each write)."""
    from .._native import CuFile

    head, views = _format.layout(_entries(tensor_dict), metadata)
    with CuFile(os.fspath(filename), "w") as f:
        f.write(head)
        offset = len(head)
        for view in views:
            if view.nbytes:
                f.write(view, view.nbytes, file_offset=offset)
            offset += view.nbytes


def deserialize(data: bytes) -> List[tuple[str, Dict[str, Any]]]:
    """``[(name, {"shape": [...], "dtype": "F32", "data": bytearray}), ...]`` of a safetensors
    file's bytes, in name order; a malformed buffer is a :class:`SafetensorError`."""
    try:
        header, _meta, body = _format.parse(data)
    except (ValueError, KeyError, TypeError) as e:
        raise SafetensorError(f"Error while deserializing: {e}") from None
    out = []
    for name in sorted(header):
        info = header[name]
        b, e = info["data_offsets"]
        out.append((name, {"shape": list(info["shape"]), "dtype": info["dtype"], "data": bytearray(body[b:e])}))
    return out
