"""``safetensors.paddle`` through gdio: same functions, same arguments, same return types.
``load_file`` reads straight into the device asked for (``"cpu"``, ``"gpu:N"``) and hands the
tensors to Paddle zero-copy through DLPack; ``load`` (bytes) goes through NumPy, as the
package's does."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import numpy as _np
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]


def _to_numpy(tensors: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v.detach().cpu().numpy() for k, v in tensors.items()}


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensors`` (Paddle tensors)."""
    return _np.save(_to_numpy(tensors), metadata)


def save_file(
    tensors: Dict[str, Any],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensors`` (Paddle tensors) to ``filename`` with gdio."""
    _np.save_file(_to_numpy(tensors), filename, metadata)


def load(data: bytes, device: str = "cpu") -> Dict[str, Any]:
    """Paddle tensors of safetensors bytes ``data`` on ``device``."""
    import paddle

    return {k: paddle.to_tensor(v, place=device) for k, v in _np.load(data).items()}


def load_file(
    filename: Union[str, os.PathLike], device: Any = "cpu", *, backend: str = "mmap"
) -> Dict[str, Any]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) on ``device``."""
    with safe_open(filename, framework="paddle", device=device, backend=backend) as f:
        return f.get_tensors()
