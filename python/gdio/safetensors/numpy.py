"""``safetensors.numpy`` through gdio: same functions, same arguments, same return types."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from .. import _native
from . import _format
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]

_TYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "U64": np.uint64,
    "I32": np.int32, "U32": np.uint32, "I16": np.int16, "U16": np.uint16, "I8": np.int8,
    "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64,
}
_NAMES = {np.dtype(v): k for k, v in _TYPES.items()}
# ml_dtypes' NumPy dtypes (what JAX arrays turn into on the host), by dtype name, as the
# safetensors package names them when it saves.
ML_DTYPES = {
    "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
    "float8_e8m0fnu": "F8_E8M0", "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
}


def _entry(name: str, a: Any) -> tuple[str, str, list[int], Any]:
    if not isinstance(a, np.ndarray):
        raise ValueError(f"Key `{name}` is invalid, expected np.ndarray but received {type(a)}")
    shape = list(a.shape)  # ascontiguousarray would make a 0-d array 1-d
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
        a = a.astype(a.dtype.newbyteorder("<"))
    dtype = _NAMES.get(np.dtype(a.dtype.type)) or ML_DTYPES.get(a.dtype.name)
    if dtype is None:
        raise ValueError(f"tensor {name!r}: safetensors has no dtype for NumPy's {a.dtype}")
    return name, dtype, shape, a.reshape(-1).view(np.uint8)


def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensor_dict``."""
    return _format.serialize([_entry(k, v) for k, v in tensor_dict.items()], metadata)


def save_file(
    tensor_dict: Dict[str, np.ndarray],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensor_dict`` to ``filename`` with gdio (a temporary name, then a rename).
    Ctrl-C stops a save of 256 MiB or more at its next write, removes the temporary file and
    raises ``KeyboardInterrupt``."""
    entries = [_entry(k, v) for k, v in tensor_dict.items()]
    _format.check_metadata(metadata)
    _native.save_file(os.fspath(filename), _format.layout_order(entries), metadata)


def load(data: bytes) -> Dict[str, np.ndarray]:
    """Tensors of safetensors bytes ``data``."""
    header, _, body = _format.parse(data)
    out = {}
    for name in sorted(header):
        info = header[name]
        if info["dtype"] not in _TYPES:
            raise TypeError(f"NumPy has no dtype for {info['dtype']} (tensor {name!r})")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(body[b:e], dtype=_TYPES[info["dtype"]]).reshape(info["shape"])
    return out


def load_file(
    filename: Union[str, os.PathLike], *, backend: str = "mmap"
) -> Dict[str, np.ndarray]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) in host memory."""
    with safe_open(filename, framework="np", backend=backend) as f:
        return f.get_tensors()
