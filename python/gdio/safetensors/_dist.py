"""Loading with a ``torch.distributed`` process group: every rank reads one share of the
checkpoint's bytes with gdio, the shares travel with ``all_gather_into_tensor`` (NCCL on GPUs,
gloo on the host), and every rank ends with every tensor, so N ranks read the checkpoint once.

Layout: the byte segments the group shares (the files' whole data sections, or with a plan
the runs of replicated tensors only) are laid end to end (each starting on a 64-byte boundary)
in one ``uint8`` buffer of ``world * chunk`` bytes; rank ``r`` reads bytes
``[r*chunk, (r+1)*chunk)`` straight from the files into its share with a few large
``CuFile.pread`` futures (one per segment the share touches; the engine spreads each over its
workers), and the gathered buffer then holds every shared tensor at its own offset: tensors are
views of it (copied only when a tensor's offset is not a multiple of its element size).

Tensor parallelism: a ``plan`` names the tensors each rank keeps only a part of, and along which
dimension (``{name: dim}``, or a function of ``(name, shape)`` giving the dimension or
``None``). Rank ``r`` of ``world`` keeps part ``r`` of ``world`` near-equal parts (the first
``size % world`` parts one longer, as ``torch.tensor_split`` makes them), read by that rank
alone: along dimension 0 only its rows are read, along another dimension the
tensor is read whole by that rank and narrowed. Planned tensors never enter the shared buffer,
so no rank receives bytes it does not keep.

With the ``gdio.safetensors`` logger at DEBUG, each rank logs how long each step took (the GPU
is synchronized between steps only then): where a slow group load spends its time.
"""

from __future__ import annotations

import bisect
import logging
import time
from typing import Any, Optional

_ALIGN = 64
_log = logging.getLogger("gdio.safetensors")


class SharePlan:
    """The byte split of the shared segments between ranks: ``segs`` the segments ``(file,
    offset in its data section, length)``, ``bases`` their offsets in the whole buffer (end to
    end, each on a 64-byte boundary), ``total`` its length, ``chunk`` the bytes per rank, ``lo``
    where this rank's share starts."""

    def __init__(
        self, segs: list[tuple[int, int, int]], bases: list[int], total: int, chunk: int, lo: int
    ) -> None:
        self.segs, self.bases, self.total, self.chunk, self.lo = segs, bases, total, chunk, lo
        # Per file, its segments' starts in order (for a bisection) and their indices.
        self._by_file: dict[int, tuple[list[int], list[int]]] = {}
        for i, (f, off, _n) in sorted(enumerate(segs), key=lambda x: (x[1][0], x[1][1])):
            starts, idx = self._by_file.setdefault(f, ([], []))
            starts.append(off)
            idx.append(i)

    def offset_of(self, file: int, begin: int) -> int:
        """Where byte ``begin`` of file ``file``'s data section lies in the whole buffer (it must
        lie in a shared segment)."""
        starts, idx = self._by_file.get(file, ([], []))
        j = bisect.bisect_right(starts, begin) - 1
        if j >= 0:
            i = idx[j]
            _f, off, n = self.segs[i]
            if begin < off + n:
                return self.bases[i] + begin - off
        raise KeyError(f"byte {begin} of file {file} is in no shared segment")


def _segments(segs: Any) -> list[tuple[int, int, int]]:
    """Segments as given, or whole data sections from a list of their lengths."""
    out = []
    for i, s in enumerate(segs):
        out.append((i, 0, int(s)) if isinstance(s, int) else (int(s[0]), int(s[1]), int(s[2])))
    return out


def plan_share(segs: Any, rank: int, world: int) -> SharePlan:
    """Rank ``rank`` of ``world``'s share of the segments ``segs``: ``(file, offset, length)``
    runs of the files' data sections, or plain lengths for whole data sections
    (``Checkpoint.layout()[1]``)."""
    segs = _segments(segs)
    bases, at = [], 0
    for _, _, n in segs:
        bases.append(at)
        at = (at + n + _ALIGN - 1) // _ALIGN * _ALIGN
    total = at
    chunk = max(_ALIGN, ((total + world - 1) // world + _ALIGN - 1) // _ALIGN * _ALIGN)
    return SharePlan(segs, bases, total, chunk, rank * chunk)


def share_reads(plan: SharePlan) -> list[tuple[int, int, int, int]]:
    """What the rank of ``plan`` reads: ``(file, offset in its data section, bytes, offset in
    the share)``, one per segment its share touches (the padding between segments is not
    read)."""
    hi = min(plan.lo + plan.chunk, plan.total)
    out = []
    for (f, off, n), base in zip(plan.segs, plan.bases):
        a, z = max(base, plan.lo), min(base + n, hi)
        if a < z:
            out.append((f, off + a - base, z - a, a - plan.lo))
    return out


def replicated_segments(
    tensors: list[tuple[Any, ...]], kept_apart: set[str], gap: int = _ALIGN
) -> list[tuple[int, int, int]]:
    """The runs of the files' data sections that hold the tensors not in ``kept_apart``
    (``Checkpoint.layout()[0]`` rows), neighbours closer than ``gap`` bytes merged (never across
    a tensor in ``kept_apart``)."""
    apart = sorted((f, b, e) for name, f, b, e, *_ in tensors if name in kept_apart and e > b)
    runs: list[list[int]] = []
    for f, b, e in sorted((t[1], t[2], t[3]) for t in tensors if t[0] not in kept_apart):
        if e <= b:
            continue
        if runs and runs[-1][0] == f and b - runs[-1][2] <= gap:
            end = runs[-1][2]
            between = b > end and any(af == f and ab < b and ae > end for af, ab, ae in apart)
            if not between:
                runs[-1][2] = max(runs[-1][2], e)
                continue
        runs.append([f, b, e])
    return [(f, b, e - b) for f, b, e in runs]


def part_bounds(size: int, rank: int, world: int) -> tuple[int, int]:
    """``[lo, hi)`` of rank ``rank``'s part when ``size`` elements are split into ``world``
    near-equal parts (the first ``size % world`` parts one longer)."""
    per, extra = divmod(size, world)
    lo = rank * per + min(rank, extra)
    return lo, lo + per + (1 if rank < extra else 0)


def split_dims(plan: Any, tensors: list[tuple[Any, ...]]) -> dict[str, int]:
    """The planned tensors and the dimension each is split along (``plan``: a mapping of name to
    dimension, or a function of ``(name, shape)`` giving the dimension or ``None``). A
    dimension outside the tensor's shape is a ``ValueError`` naming the tensor."""
    if plan is None:
        return {}
    out = {}
    for name, _f, _b, _e, dtype, shape in tensors:
        dim = plan.get(name) if hasattr(plan, "get") else plan(name, list(shape))
        if dim is None:
            continue
        nd = len(shape)
        if not isinstance(dim, int) or isinstance(dim, bool) or not -nd <= dim < nd:
            raise ValueError(
                f"plan: tensor {name!r} of shape {list(shape)} cannot be split along {dim!r}"
            )
        if dtype == "F4" and dim % nd == nd - 1:
            raise ValueError(
                f"plan: tensor {name!r} is F4 (two values per byte): split it along another "
                "dimension than the last"
            )
        out[name] = dim % nd
    if hasattr(plan, "keys"):
        unknown = set(plan.keys()) - {t[0] for t in tensors}
        if unknown:
            raise ValueError(f"plan names tensors the checkpoint does not have: {sorted(unknown)}")
    return out


def read_share(ckpt: Any, plan: SharePlan, share: Any) -> None:
    """Fills ``share`` (a flat ``uint8`` buffer of ``plan.chunk`` bytes: a torch tensor, NumPy
    array, anything ``gdio.CuFile.pread`` takes) with this rank's bytes, all files in flight at
    once."""
    from .. import CuFile

    files = ckpt.data_files()
    handles: dict[int, Any] = {}
    futures = []
    try:
        for f, off, n, dst in share_reads(plan):
            path, data_start = files[f]
            if f not in handles:
                handles[f] = CuFile(path, "r")
            futures.append((path, n, handles[f].pread(share[dst : dst + n], n, data_start + off)))
        for path, n, fu in futures:
            got = fu.get()
            if got != n:
                raise OSError(
                    f"{path}: read {got} of {n} bytes of this rank's share (file shrank?)"
                )
    finally:
        for h in handles.values():
            h.close()


def load(
    ckpt: Any,
    names: list[str],
    gpu: Optional[int],
    group: Any,
    framework: str,
    plan: Any = None,
) -> dict[str, Any]:
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
    apart = split_dims(plan, tensors)
    segs = replicated_segments(tensors, set(apart)) if apart else file_lens
    share_plan = plan_share(segs, rank, world)
    chunk = share_plan.chunk
    device = torch.device("cpu") if gpu is None else torch.device(f"cuda:{gpu}")
    mark("layout")
    share = torch.empty(chunk, dtype=torch.uint8, device=device)
    whole = torch.empty(world * chunk, dtype=torch.uint8, device=device)
    mark("allocate")
    # Bytes of the share past the end of the checkpoint are never read: zero them so that
    # every rank gathers the same padding.
    tail = min(max(share_plan.total - share_plan.lo, 0), chunk)
    share[tail:].zero_()
    read_share(ckpt, share_plan, share)
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
        if name not in wanted or name in apart:
            continue
        if e == b:
            g0 = g1 = 0
        else:
            g0 = share_plan.offset_of(f, b)
            g1 = g0 + e - b
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
    del whole
    mark("views")
    for name, dim in apart.items():
        if name in wanted:
            out[name] = _own_part(ckpt, name, dim, rank, world, gpu)
    if apart:
        mark("own parts")
    if framework == "np":
        out = {k: v.numpy() for k, v in out.items()}
    elif framework != "pt":
        out = {k: _frameworks.convert_torch(v, framework) for k, v in out.items()}
    if timed:
        steps = ", ".join(f"{w} {b - a:.3f} s" for (_, a), (w, b) in zip(marks, marks[1:]))
        _log.debug(
            "rank %d of %d: %d bytes, share %d: %s", rank, world, share_plan.total, chunk, steps
        )
    return out


def _own_part(ckpt: Any, name: str, dim: int, rank: int, world: int, gpu: Optional[int]) -> Any:
    """This rank's part of tensor ``name`` split along ``dim`` (a torch tensor), read by this
    rank alone: only its rows along dimension 0, the whole tensor then narrowed otherwise."""
    from . import _frameworks

    dtype, shape = ckpt.info(name)
    lo, hi = part_bounds(shape[dim], rank, world)
    if dim == 0 and hi > lo:
        return _frameworks.convert(ckpt.load_rows(name, lo, hi, gpu), "pt")
    (t,) = ckpt.load([name], gpu)
    return _frameworks.convert(t, "pt").narrow(dim, lo, hi - lo).clone()
