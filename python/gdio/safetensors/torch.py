"""``safetensors.torch`` through gdio: same functions, same arguments, same return types.
``load_file(..., device="cuda:0")`` reads straight into GPU memory; ``process_group=`` makes
the ranks of a ``torch.distributed`` group read the checkpoint once between them."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import torch

from .. import _native
from . import _format
from ._open import safe_open

__all__ = [
    "load", "load_file", "load_model", "save", "save_file", "save_model", "storage_ptr",
    "storage_size",
]

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
    sparse = [k for k, v in tensors.items() if v.layout != torch.strided]
    if sparse:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not support. "
            "You can make it a dense tensor before saving with `.to_dense()` but be aware this might make "
            "a much larger file than needed."
        )
    for k, v in tensors.items():
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
    streams is waited for first. Ctrl-C stops a save of 256 MiB or more at its next write,
    removes the temporary file and raises ``KeyboardInterrupt``."""
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
    backend: str = "mmap",
    process_group: Any = None,
    plan: Any = None,
) -> Dict[str, torch.Tensor]:
    """Every tensor of ``filename`` (a file, shard list, directory or index) on ``device``;
    with ``process_group`` read once by the group, with ``plan`` the planned tensors as this
    rank's parts (see :class:`gdio.safetensors.safe_open`). ``backend`` as the package's
    (``"mmap"`` or ``"pread"``; gdio reads with its engine either way)."""
    with safe_open(
        filename, framework="pt", device=device, process_group=process_group, plan=plan,
        backend=backend,
    ) as f:
        return f.get_tensors()


def storage_ptr(tensor: torch.Tensor) -> int:
    """Address of the first byte of the storage ``tensor`` views (0 for storage without memory,
    such as the meta device's)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (AttributeError, NotImplementedError, RuntimeError):
        pass
    try:
        return tensor.storage().data_ptr()  # torch without untyped_storage
    except (NotImplementedError, RuntimeError):
        return 0


def storage_size(tensor: torch.Tensor) -> int:
    """Bytes of the storage ``tensor`` views (the tensor's own bytes where the storage has no
    memory)."""
    try:
        return tensor.untyped_storage().nbytes()
    except (AttributeError, NotImplementedError, RuntimeError):
        pass
    try:
        return tensor.storage().size() * tensor.element_size()
    except (NotImplementedError, RuntimeError):
        return tensor.nelement() * tensor.element_size()


def _byte_span(t: torch.Tensor) -> Tuple[int, int]:
    """``[first, end)`` byte addresses of ``t``'s elements (empty at its address when it has
    none)."""
    start = t.data_ptr()
    if t.nelement() == 0:
        return start, start
    last = sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n > 0)
    return start, start + (last + 1) * t.element_size()


def _end_ptr(tensor: torch.Tensor) -> int:
    """The address one past ``tensor``'s last element (its address when it has none), strides
    followed (the package's helper of this name)."""
    return _byte_span(tensor)[1]


def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Names grouped by the memory they touch, as the package's helper of this name: tensors of
    one storage (same device, address and size) whose bytes overlap form one group, a tensor
    alone its own group; tensors on the ``meta`` device or of an empty storage are left out.
    Storages in the order the state dict first names them, groups of one storage by address."""
    by_storage: Dict[Tuple[Any, int, int], List[str]] = {}
    for name, t in state_dict.items():
        if t.device.type == "meta":
            continue
        ptr, size = storage_ptr(t), storage_size(t)
        if ptr and size:
            by_storage.setdefault((t.device, ptr, size), []).append(name)
    groups: List[Set[str]] = []
    for names in by_storage.values():
        current: Set[str] = set()
        end = None
        for (lo, hi), n in sorted((_byte_span(state_dict[n]), n) for n in names):
            if end is not None and lo < end:
                current.add(n)
                end = max(end, hi)
            else:
                if current:
                    groups.append(current)
                current, end = {n}, hi
        if current:
            groups.append(current)
    return groups


def _is_complete(tensor: torch.Tensor) -> bool:
    """``tensor`` spans its whole storage from its first byte (it can stand for every alias;
    the package's helper of this name)."""
    return tensor.data_ptr() == storage_ptr(tensor) and (
        tensor.nelement() * tensor.element_size() == storage_size(tensor)
    )


def _remove_duplicate_names(
    state_dict: Dict[str, torch.Tensor],
    *,
    preferred_names: Optional[Any] = None,
    discard_names: Optional[Any] = None,
) -> Dict[str, List[str]]:
    """For each group of tensors sharing memory (tied weights), the name kept and the names
    dropped with it, chosen as the package's helper of this name chooses them (so files and
    metadata match): among the names whose tensor spans the whole storage, the first in
    ``preferred_names``, else the first not in ``discard_names``, else the first in sorted
    order. A group where no tensor spans the whole storage (a lone tensor too) is a
    ``RuntimeError``, as in the package."""
    preferred = set(preferred_names or ())
    discard = set(discard_names or ())
    out: Dict[str, List[str]] = {}
    for group in _find_shared_tensors(state_dict):
        whole = sorted(n for n in group if _is_complete(state_dict[n]))
        if not whole:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no "
                f"suitable name to keep for saving amongst: {sorted(group)}. None of them "
                "covers the full storage. Refusing to save/load the model since you could be "
                "storing much more memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more "
                "information. Or open an issue."
            )
        kept = [n for n in whole if n not in discard]
        liked = [n for n in whole if n in preferred]
        keep = (liked or kept or whole)[0]
        out[keep] = sorted(n for n in group if n != keep)
    return out


def save_model(
    model: torch.nn.Module,
    filename: Union[str, os.PathLike],
    metadata: Optional[Dict[str, str]] = None,
    force_contiguous: bool = True,
) -> None:
    """``model``'s state dict to ``filename`` as :func:`save_file` writes it, tied weights
    once: of each group of tensors sharing memory one name is kept and the others are
    dropped, each recorded in ``metadata`` as ``{dropped: kept}`` (unless the caller's
    metadata has that key), as ``safetensors.torch.save_model`` does. ``force_contiguous``
    saves non-contiguous tensors as contiguous copies."""
    state = model.state_dict()
    for keep, dropped in _remove_duplicate_names(state).items():
        for name in dropped:
            metadata = dict(metadata or {})
            metadata.setdefault(name, keep)
            del state[name]
    if force_contiguous:
        state = {k: v.contiguous() for k, v in state.items()}
    try:
        save_file(state, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(
            f"{e} Or use save_model(..., force_contiguous=True), read the docs for potential "
            "caveats."
        ) from e


def load_model(
    model: torch.nn.Module,
    filename: Union[str, os.PathLike],
    strict: bool = True,
    device: Union[str, int] = "cpu",
    *,
    backend: str = "mmap",
) -> Tuple[Set[str], List[str]]:
    """Loads ``filename`` (saved by :func:`save_model`, or any checkpoint of ``model``'s names)
    into ``model`` with gdio, as ``safetensors.torch.load_model``: names tied to a loaded
    tensor are not missing; returns ``(missing, unexpected)`` (a set and a list), and with
    ``strict`` raises ``RuntimeError`` naming them when either is not empty."""
    state = load_file(filename, device=device, backend=backend)
    tied = _remove_duplicate_names(model.state_dict(), preferred_names=state.keys())
    missing_keys, unexpected = model.load_state_dict(state, strict=False)
    missing = set(missing_keys)
    unexpected = list(unexpected)
    for dropped in tied.values():
        for name in dropped:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(unexpected)
            )
        raise RuntimeError(error)
    return missing, unexpected
