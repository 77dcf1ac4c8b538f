"""``safetensors.flax`` through gdio: same functions, same arguments, same return types."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

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


def load(data: bytes) -> Dict[str, Any]:
    """JAX arrays of safetensors bytes ``data``."""
    import jax.numpy as jnp

    return {k: jnp.array(v) for k, v in _np.load(data).items()}


def load_file(filename: Union[str, os.PathLike], **_backend: Any) -> Dict[str, Any]:
    """Every tensor of ``filename`` as JAX arrays."""
    with safe_open(filename, framework="flax") as f:
        return f.get_tensors()
