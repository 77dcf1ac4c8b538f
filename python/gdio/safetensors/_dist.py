"""Loading with a ``torch.distributed`` process group: every rank reads one share of the
checkpoint's bytes with gdio, the shares travel with ``all_gather_into_tensor`` (NCCL on GPUs,
gloo on the host), and every rank ends with every tensor, so N ranks read the checkpoint once.

Layout: the files' data sections are laid end to end (each starting on a 64-byte boundary) in
one ``uint8`` buffer of ``world * chunk`` bytes; rank ``r`` reads bytes ``[r*chunk, (r+1)*chunk)``
straight from the files into its share with a few large ``CuFile.pread`` futures (one per file
the share touches; the engine spreads each over its workers), and the gathered buffer then
holds every tensor at its own offset: tensors are views of it (copied only when a tensor's
offset is not a multiple of its element size).

With the ``gdio.safetensors`` logger at DEBUG, each rank logs how long each step took (the GPU
is synchronized between steps only then): where a slow group load spends its time.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

_ALIGN = 64
_log = logging.getLogger("gdio.safetensors")


class SharePlan:
    """The byte split of a checkpoint between ranks: ``bases`` are the files' offsets in the
    whole buffer (data sections end to end, each on a 64-byte boundary), ``total`` its length,
    ``chunk`` the bytes per rank, ``lo`` where this rank's share starts."""

    def __init__(self, bases: list[int], total: int, chunk: int, lo: int) -> None:
        self.bases, self.total, self.chunk, self.lo = bases, total, chunk, lo


def plan_share(file_lens: list[int], rank: int, world: int) -> SharePlan:
    """Rank ``rank`` of ``world``'s share of a checkpoint whose data sections have the lengths
    ``file_lens`` (``Checkpoint.layout()[1]``)."""
    bases, at = [], 0
    for n in file_lens:
        bases.append(at)
        at = (at + n + _ALIGN - 1) // _ALIGN * _ALIGN
    total = at
    chunk = max(_ALIGN, ((total + world - 1) // world + _ALIGN - 1) // _ALIGN * _ALIGN)
    return SharePlan(bases, total, chunk, rank * chunk)


def share_reads(plan: SharePlan, file_lens: list[int]) -> list[tuple[int, int, int, int]]:
    """What the rank of ``plan`` reads: ``(file, offset in its data section, bytes, offset in
    the share)``, one per file its share touches (the padding between files is not read)."""
    hi = min(plan.lo + plan.chunk, plan.total)
    out = []
    for f, (base, n) in enumerate(zip(plan.bases, file_lens)):
        a, z = max(base, plan.lo), min(base + n, hi)
        if a < z:
            out.append((f, a - base, z - a, a - plan.lo))
    return out


def read_share(ckpt: Any, plan: SharePlan, file_lens: list[int], share: Any) -> None:
    """Fills ``share`` (a flat ``uint8`` buffer of ``plan.chunk`` bytes: a torch tensor, NumPy
    array, anything ``gdio.CuFile.pread`` takes) with this rank's bytes, all files in flight at
    once."""
    from .. import CuFile

    files = ckpt.data_files()
    handles, futures = [], []
    try:
        for f, off, n, dst in share_reads(plan, file_lens):
            path, data_start = files[f]
            h = CuFile(path, "r")
            handles.append(h)
            futures.append((path, n, h.pread(share[dst : dst + n], n, data_start + off)))
        for path, n, fu in futures:
            got = fu.get()
            if got != n:
                raise OSError(f"{path}: read {got} of {n} bytes of this rank's share (file shrank?)")
    finally:
        for h in handles:
            h.close()


def load(ckpt: Any, names: list[str], gpu: Optional[int], group: Any, framework: str) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from . import _frameworks
    from .torch import _TYPES

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    timed = _log.isEnabledFor(logging.DEBUG)
    marks = [("start", time.perf_counter())]

    def mark(what: str) -> None:
        if timed:
            if gpu is not None:
                torch.cuda.synchronize(gpu)
            marks.append((what, time.perf_counter()))

    tensors, file_lens = ckpt.layout()
    share_plan = plan_share(file_lens, rank, world)
    bases, chunk = share_plan.bases, share_plan.chunk
    device = torch.device("cpu") if gpu is None else torch.device(f"cuda:{gpu}")
    mark("layout")
    share = torch.empty(chunk, dtype=torch.uint8, device=device)
    whole = torch.empty(world * chunk, dtype=torch.uint8, device=device)
    mark("allocate")
    # Bytes of the share past the end of the checkpoint are never read: zero them so that
    # every rank gathers the same padding.
    tail = min(max(share_plan.total - share_plan.lo, 0), chunk)
    share[tail:].zero_()
    read_share(ckpt, share_plan, file_lens, share)
    mark("read share")
    try:
        dist.all_gather_into_tensor(whole, share, group=group)
    except (RuntimeError, NotImplementedError, AttributeError):
        # Backends without the flat collective (older gloo): the list form, into views.
        dist.all_gather(list(whole.split(chunk)), share, group=group)
    mark("all_gather")
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
    mark("views")
    if timed:
        steps = ", ".join(f"{w} {b - a:.3f} s" for (_, a), (w, b) in zip(marks, marks[1:]))
        _log.debug("rank %d of %d: %d bytes, share %d: %s", rank, world, share_plan.total, chunk, steps)
    return out
