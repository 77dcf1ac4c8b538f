"""``safetensors.tensorflow`` through gdio: same functions, same arguments, same return types
(TensorFlow tensors on the CPU, made from the NumPy arrays gdio loads)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import _frameworks
from . import numpy as _np
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]


def _to_numpy(tensors: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v.numpy() for k, v in tensors.items()}


def _to_tf(arrays: Dict[str, Any]) -> Dict[str, Any]:
    return {k: _frameworks.from_numpy(v, "tf") for k, v in arrays.items()}


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensors`` (TensorFlow tensors)."""
    return _np.save(_to_numpy(tensors), metadata)


def save_file(
    tensors: Dict[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensors`` (TensorFlow tensors) to ``filename`` with gdio."""
    _np.save_file(_to_numpy(tensors), filename, metadata)


def load(data: bytes) -> Dict[str, Any]:
    """TensorFlow tensors of safetensors bytes ``data``."""
    return _to_tf(_np.load(data))


def load_file(filename: Union[str, os.PathLike], *, backend: str = "mmap") -> Dict[str, Any]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) as TensorFlow
    tensors."""
    with safe_open(filename, framework="tf", backend=backend) as f:
        return f.get_tensors()
