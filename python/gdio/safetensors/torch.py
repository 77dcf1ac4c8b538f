"""``safetensors.torch`` through gdio: same functions, same arguments, same return types.
``load_file(..., device="cuda:0")`` reads straight into GPU memory; ``process_group=`` makes
the ranks of a ``torch.distributed`` group read the checkpoint once between them."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import torch

from .. import _native
from . import _format
from ._open import safe_open

__all__ = ["load", "load_file", "save", "save_file"]

_TYPES: Dict[str, Any] = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool, "C64": torch.complex64,
}
for _st, _name in {
    "U64": "uint64", "U32": "uint32", "U16": "uint16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz", "F4": "float4_e2m1fn_x2",
}.items():
    if hasattr(torch, _name):
        _TYPES[_st] = getattr(torch, _name)
_NAMES = {v: k for k, v in _TYPES.items()}


def _check(tensors: Dict[str, torch.Tensor]) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    spans = []
    for k, v in tensors.items():
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
        if v.layout != torch.strided:
            raise ValueError(f"You are trying to save a sparse tensor: `{k}`")
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. "
                "Call `.contiguous()` on the tensor first."
            )
        n = v.numel() * v.element_size()
        if n:
            spans.append((str(v.device), v.data_ptr(), v.data_ptr() + n, k))
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        if a[0] == b[0] and b[1] < a[2]:
            raise RuntimeError(
                f"Some tensors share memory, this will lead to duplicate memory on disk: "
                f"[{a[3]!r}, {b[3]!r}]"
            )


def _entry(name: str, t: torch.Tensor, device_ok: bool = False) -> tuple[str, str, list[int], Any]:
    """``(name, dtype, shape, data)``: ``data`` is host bytes, or with ``device_ok`` and a CUDA
    tensor ``(ordinal, address, nbytes)`` of its memory (written GPU → pinned ring → file)."""
    dtype = _NAMES.get(t.dtype)
    if dtype is None:
        raise ValueError(f"tensor {name!r}: safetensors has no dtype for {t.dtype}")
    shape = list(t.shape)
    if dtype == "F4" and shape:
        shape[-1] *= 2
    if device_ok and t.is_cuda:
        return name, dtype, shape, (t.device.index, t.data_ptr(), t.numel() * t.element_size())
    data = t.detach().cpu().reshape(-1).view(torch.uint8).numpy()
    return name, dtype, shape, data


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``tensors``."""
    _check(tensors)
    return _format.serialize([_entry(k, v) for k, v in tensors.items()], metadata)


def save_file(
    tensors: Dict[str, torch.Tensor],
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes ``tensors`` to ``filename`` with gdio (a temporary name, then a rename). CUDA
    tensors go GPU → pinned bounce buffers → file with no host copy of the checkpoint
    (``save_writes_in_flight`` tensors at a time); the work queued on their devices' current
    streams is waited for first."""
    _check(tensors)
    entries = [_entry(k, v, device_ok=True) for k, v in tensors.items()]
    _format.check_metadata(metadata)
    for dev in {v.device for v in tensors.values() if v.is_cuda}:
        torch.cuda.current_stream(dev).synchronize()
    _native.save_file(os.fspath(filename), _format.layout_order(entries), metadata)


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """Tensors of safetensors bytes ``data`` (host memory)."""
    header, _, body = _format.parse(data)
    out = {}
    for name in sorted(header):
        info = header[name]
        dtype = _TYPES.get(info["dtype"])
        if dtype is None:
            raise TypeError(f"torch has no dtype for {info['dtype']} (tensor {name!r})")
        b, e = info["data_offsets"]
        shape = list(info["shape"])
        if info["dtype"] == "F4" and shape:
            shape[-1] //= 2
        if e == b:
            out[name] = torch.empty(shape, dtype=dtype)
        else:
            raw = torch.frombuffer(bytearray(body[b:e]), dtype=torch.uint8)
            out[name] = raw.view(dtype).reshape(shape)
    return out


def load_file(
    filename: Union[str, os.PathLike],
    device: Union[str, int] = "cpu",
    *,
    process_group: Any = None,
    plan: Any = None,
    **_backend: Any,
) -> Dict[str, torch.Tensor]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) on ``device``;
    with ``process_group`` read once by the group, with ``plan`` the planned tensors as this
    rank's parts (see :class:`gdio.safetensors.safe_open`)."""
    with safe_open(
        filename, framework="pt", device=device, process_group=process_group, plan=plan
    ) as f:
        return f.get_tensors()
