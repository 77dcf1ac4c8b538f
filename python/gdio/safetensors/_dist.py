"""Loading with a ``torch.distributed`` process group: every rank reads one share of the
checkpoint's bytes with gdio, the shares travel with ``all_gather_into_tensor`` (NCCL on GPUs,
gloo on the host), and every rank ends with every tensor, so N ranks read the checkpoint once.

Layout: the files' data sections are laid end to end (each starting on a 64-byte boundary) in
one ``uint8`` buffer of ``world * chunk`` bytes; rank ``r`` reads bytes ``[r*chunk, (r+1)*chunk)``
(as per-tensor byte ranges on element boundaries, so a boundary element may be read by two
ranks) and the gathered buffer then holds every tensor at its own offset: tensors are views of
it (copied only when a tensor's offset is not a multiple of its element size).
"""

from __future__ import annotations

import math
from typing import Any, Optional

from ._format import BITS

_ALIGN = 64


def _granule(dtype: str) -> int:
    """Bytes in the smallest run of whole elements that is also whole bytes."""
    bits = BITS[dtype]
    return math.lcm(bits, 8) // 8


class Keep:
    """Bytes ``src..src+len`` of a loaded piece go to ``dst`` of the rank's share."""

    def __init__(self, src: int, dst: int, n: int) -> None:
        self.src, self.dst, self.len = src, dst, n


class SharePlan:
    """What one rank reads: ``pieces`` ``(name, begin, end)`` in tensor bytes and where each
    lands in its share (``keep``); ``bases`` are the files' offsets in the whole buffer."""

    def __init__(self, bases: list[int], total: int, chunk: int, lo: int) -> None:
        self.bases, self.total, self.chunk, self.lo = bases, total, chunk, lo
        self.pieces: list[tuple[str, int, int]] = []
        self.keep: dict[str, Keep] = {}


def plan_share(tensors: list, file_lens: list[int], rank: int, world: int) -> SharePlan:
    """Rank ``rank`` of ``world``'s share of the checkpoint described by
    ``Checkpoint.layout()``."""
    bases, at = [], 0
    for n in file_lens:
        bases.append(at)
        at = (at + n + _ALIGN - 1) // _ALIGN * _ALIGN
    total = at
    chunk = max(_ALIGN, ((total + world - 1) // world + _ALIGN - 1) // _ALIGN * _ALIGN)
    lo, hi = rank * chunk, min((rank + 1) * chunk, total)
    plan = SharePlan(bases, total, chunk, lo)
    for name, f, b, e, dtype, _shape in tensors:
        g0, g1 = bases[f] + b, bases[f] + e
        a, z = max(g0, lo), min(g1, hi)
        if a >= z:
            continue
        q = _granule(dtype)
        rb = (a - g0) // q * q
        re = min(-(-(z - g0) // q) * q, g1 - g0)
        plan.pieces.append((name, rb, re))
        plan.keep[name] = Keep(a - g0 - rb, a - lo, z - a)
    return plan


def load(ckpt: Any, names: list[str], gpu: Optional[int], group: Any, framework: str) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from . import _frameworks
    from .torch import _TYPES

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    tensors, file_lens = ckpt.layout()
    share_plan = plan_share(tensors, file_lens, rank, world)
    bases, chunk, lo, pieces = share_plan.bases, share_plan.chunk, share_plan.lo, share_plan.pieces
    device = torch.device("cpu") if gpu is None else torch.device(f"cuda:{gpu}")
    share = torch.zeros(chunk, dtype=torch.uint8, device=device)
    if pieces:
        for t in ckpt.load_bytes(pieces, gpu):
            keep = share_plan.keep[t.name]
            raw = torch.from_dlpack(t.raw())
            share[keep.dst : keep.dst + keep.len].copy_(raw[keep.src : keep.src + keep.len])
            del raw
    whole = torch.empty(world * chunk, dtype=torch.uint8, device=device)
    try:
        dist.all_gather_into_tensor(whole, share, group=group)
    except (RuntimeError, NotImplementedError, AttributeError):
        # Backends without the flat collective (older gloo): the list form, into views.
        dist.all_gather(list(whole.split(chunk)), share, group=group)
    del share

    wanted = set(names)
    out = {}
    for name, f, b, e, dtype, shape in tensors:
        if name not in wanted:
            continue
        g0, g1 = bases[f] + b, bases[f] + e
        piece = whole[g0:g1]
        tdtype = _TYPES.get(dtype)
        if tdtype is None:
            out[name] = piece.clone()
            continue
        size = torch.empty((), dtype=tdtype).element_size()
        if g0 % size:
            piece = piece.clone()
        shp = list(shape)
        if dtype == "F4" and shp:
            shp[-1] //= 2
        out[name] = piece.view(tdtype).reshape(shp)
    if framework == "np":
        out = {k: v.numpy() for k, v in out.items()}
    elif framework != "pt":
        out = {k: _frameworks.convert_torch(v, framework) for k, v in out.items()}
    return out
