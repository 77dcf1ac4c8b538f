"""``safetensors.mlx`` through gdio: same functions, same arguments, same return types (MLX
arrays, made from the NumPy arrays gdio loads)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from . import _frameworks
from . import numpy as _np
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]


def _to_mx(arrays: Dict[str, Any]) -> Dict[str, Any]:
    return {k: _frameworks.from_numpy(v, "mlx") for k, v in arrays.items()}


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensors`` (MLX arrays)."""
    return _np.save({k: np.asarray(v) for k, v in tensors.items()}, metadata)


def save_file(
    tensors: Dict[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensors`` (MLX arrays) to ``filename`` with gdio."""
    _np.save_file({k: np.asarray(v) for k, v in tensors.items()}, filename, metadata)


def load(data: bytes) -> Dict[str, Any]:
    """MLX arrays of safetensors bytes ``data``."""
    return _to_mx(_np.load(data))


def load_file(filename: Union[str, os.PathLike], *, backend: str = "mmap") -> Dict[str, Any]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) as MLX arrays."""
    with safe_open(filename, framework="mlx", backend=backend) as f:
        return f.get_tensors()
