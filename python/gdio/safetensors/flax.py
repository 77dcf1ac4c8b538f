"""``safetensors.flax`` through gdio: same functions, same arguments, same return types."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from . import _format
from . import numpy as _np
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensors`` (JAX arrays)."""
    return _np.save({k: np.asarray(v) for k, v in tensors.items()}, metadata)


def save_file(
    tensors: Dict[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensors`` (JAX arrays) to ``filename`` with gdio."""
    _np.save_file({k: np.asarray(v) for k, v in tensors.items()}, filename, metadata)


def _host_dtype(dtype: str, name: str) -> Any:
    """The NumPy dtype of a safetensors dtype, with ml_dtypes' (shipped with JAX) for BF16 and
    the FP8 types."""
    if dtype in _np._TYPES:
        return np.dtype(_np._TYPES[dtype])
    import ml_dtypes

    for ml_name, st_name in _np.ML_DTYPES.items():
        if st_name == dtype and hasattr(ml_dtypes, ml_name):
            return np.dtype(getattr(ml_dtypes, ml_name))
    raise TypeError(f"JAX has no dtype for {dtype} (tensor {name!r})")


def load(data: bytes) -> Dict[str, Any]:
    """JAX arrays of safetensors bytes ``data`` (BF16 and FP8 included)."""
    import jax.numpy as jnp

    header, _, body = _format.parse(data)
    out = {}
    for name in sorted(header):
        info = header[name]
        b, e = info["data_offsets"]
        host = np.frombuffer(body[b:e], dtype=_host_dtype(info["dtype"], name))
        out[name] = jnp.array(host.reshape(info["shape"]))
    return out


def load_file(filename: Union[str, os.PathLike], *, backend: str = "mmap") -> Dict[str, Any]:
    """Every tensor of ``filename`` as JAX arrays."""
    with safe_open(filename, framework="flax", backend=backend) as f:
        return f.get_tensors()
