"""Loading with a ``torch.distributed`` process group: every rank reads one share of the
checkpoint's bytes with gdio, the shares travel with ``all_gather_into_tensor`` (NCCL on GPUs,
gloo on the host), and every rank ends with every tensor, so N ranks read the checkpoint once.

Layout: the byte segments the group shares (the files' whole data sections, or with a plan
the runs of replicated tensors only) are laid end to end (each starting on a 64-byte boundary)
in one ``uint8`` buffer of ``world * chunk`` bytes, cut into runs of ``world`` pieces (about
512 MiB per rank each); rank ``r`` reads piece ``r`` of every run straight from the files into
its share with large ``CuFile.pread`` futures (one per segment a piece touches, all in flight
at once; the engine spreads each over its workers), and each run is gathered
(``all_gather_into_tensor``, asynchronously; on older gloo ``all_gather`` into views of the
buffer) as soon as its piece is in, while the later runs are still being read. The gathered
buffer then holds every shared tensor at its own offset: tensors are views of it (copied only
when a tensor's offset is not a multiple of its element size).

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
from typing import Any, Callable, Optional

_ALIGN = 64
_log = logging.getLogger("gdio.safetensors")


class SharePlan:
    """The byte split of the shared segments between ranks: ``segs`` the segments ``(file,
    offset in its data section, length)``, ``bases`` their offsets in the whole buffer (end to
    end, each on a 64-byte boundary), ``total`` their length, ``world`` and ``rank`` the group
    and this rank, ``parts`` and ``piece``: the whole buffer is ``parts`` runs of ``world``
    pieces of ``piece`` bytes, rank ``r``'s piece of run ``j`` at ``(j*world + r) * piece``;
    ``chunk`` (``parts * piece``) the bytes of one rank's share, its pieces end to end. Each run
    can be gathered (one contiguous ``all_gather_into_tensor``) as soon as its pieces are read,
    while the next run is being read."""

    def __init__(
        self,
        segs: list[tuple[int, int, int]],
        bases: list[int],
        total: int,
        world: int,
        rank: int,
        parts: int,
        piece: int,
    ) -> None:
        self.segs, self.bases, self.total = segs, bases, total
        self.world, self.rank, self.parts, self.piece = world, rank, parts, piece
        self.chunk = parts * piece
        # Per file, its segments' starts in order (for a bisection) and their indices.
        self._by_file: dict[int, tuple[list[int], list[int]]] = {}
        for i, (f, off, _n) in sorted(enumerate(segs), key=lambda x: (x[1][0], x[1][1])):
            starts, idx = self._by_file.setdefault(f, ([], []))
            starts.append(off)
            idx.append(i)

    def placements(self) -> list[tuple[int, int, int]]:
        """This rank's pieces: ``(offset in the share, offset in the whole buffer, bytes)``,
        run by run."""
        p, w, r = self.piece, self.world, self.rank
        return [(j * p, (j * w + r) * p, p) for j in range(self.parts)]

    def run(self, j: int) -> tuple[int, int]:
        """Bytes ``[start, end)`` of the whole buffer that run ``j`` fills (every rank's piece
        ``j``)."""
        return j * self.world * self.piece, (j + 1) * self.world * self.piece

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


# Bytes per rank per run when the caller does not say: runs this large keep each gather
# efficient, and several of them let the first gathers travel while later runs are read.
_PIECE = 512 << 20
_MAX_PARTS = 16


def plan_share(segs: Any, rank: int, world: int, parts: Optional[int] = None) -> SharePlan:
    """Rank ``rank`` of ``world``'s share of the segments ``segs``: ``(file, offset, length)``
    runs of the files' data sections, or plain lengths for whole data sections
    (``Checkpoint.layout()[1]``). ``parts``: runs the whole buffer is cut into (default: pieces
    of about 512 MiB per rank, at most 16 runs)."""
    segs = _segments(segs)
    bases, at = [], 0
    for _, _, n in segs:
        bases.append(at)
        at = (at + n + _ALIGN - 1) // _ALIGN * _ALIGN
    total = at
    per_rank = max(_ALIGN, ((total + world - 1) // world + _ALIGN - 1) // _ALIGN * _ALIGN)
    if parts is None:
        parts = min(_MAX_PARTS, (per_rank + _PIECE - 1) // _PIECE)
    parts = max(1, min(int(parts), per_rank // _ALIGN))
    piece = ((per_rank + parts - 1) // parts + _ALIGN - 1) // _ALIGN * _ALIGN
    return SharePlan(segs, bases, total, world, rank, parts, piece)


def share_reads(plan: SharePlan) -> list[tuple[int, int, int, int]]:
    """What the rank of ``plan`` reads: ``(file, offset in its data section, bytes, offset in
    the share)``, one per segment each of its pieces touches, run by run (the padding between
    segments and past the end is not read)."""
    out = []
    for local, glo, n in plan.placements():
        ghi = min(glo + n, plan.total)
        for (f, off, sn), base in zip(plan.segs, plan.bases):
            a, z = max(base, glo), min(base + sn, ghi)
            if a < z:
                out.append((f, off + a - base, z - a, local + a - glo))
    return out


def unread_tail(plan: SharePlan) -> list[tuple[int, int]]:
    """Ranges ``[start, end)`` of the share past the end of the shared bytes: nobody reads
    them, so each rank zeroes its own and every rank gathers the same padding."""
    out = []
    for local, glo, n in plan.placements():
        filled = min(max(plan.total - glo, 0), n)
        if filled < n:
            out.append((local + filled, local + n))
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


def read_share(
    ckpt: Any, plan: SharePlan, share: Any, on_run: Optional[Callable[[int], None]] = None
) -> None:
    """Fills ``share`` (a flat ``uint8`` buffer of ``plan.chunk`` bytes: a torch tensor, NumPy
    array, anything ``gdio.CuFile.pread`` takes) with this rank's bytes, all of them in flight
    at once; ``on_run(j)`` is called as soon as run ``j``'s piece is in (runs in order)."""
    from .. import CuFile

    files = ckpt.data_files()
    handles: dict[int, Any] = {}
    futures: list[list[tuple[str, int, Any]]] = [[] for _ in range(plan.parts)]
    try:
        for f, off, n, dst in share_reads(plan):
            path, data_start = files[f]
            if f not in handles:
                handles[f] = CuFile(path, "r")
            fu = handles[f].pread(share[dst : dst + n], n, data_start + off)
            futures[dst // plan.piece].append((path, n, fu))
        for j, run in enumerate(futures):
            for path, n, fu in run:
                got = fu.get()
                if got != n:
                    raise OSError(
                        f"{path}: read {got} of {n} bytes of this rank's share (file shrank?)"
                    )
            if on_run is not None:
                on_run(j)
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

    if gpu is not None:
        from .. import _native

        # The engine's workers, streams and pinned buffers for this GPU (the first read would
        # make them anyway): a step of its own in the log.
        _native.prepare_gpu(gpu)
        mark("warm")
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
    for a, z in unread_tail(share_plan):
        share[a:z].zero_()
    gathers = []
    piece = share_plan.piece

    def gather(j: int) -> None:
        # Run j travels while the next runs are still being read.
        mine = share[j * piece : (j + 1) * piece]
        lo, hi = share_plan.run(j)
        gathers.append(_all_gather_async(whole[lo:hi], mine, group, world))

    read_share(ckpt, share_plan, share, gather)
    mark("read share")
    for w in gathers:
        w.wait()
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


def _all_gather_async(out: Any, mine: Any, group: Any, world: int) -> Any:
    """``all_gather_into_tensor(out, mine)``, asynchronously (its ``Work``). The gloo of older
    torch (Debian's 1.13, which CI tests with) has no flat all-gather: it raises "no support for
    _allgather_base in Gloo process group" at once, on every rank alike, and there the list
    form gathers into ``world`` views of ``out`` instead, the same bytes in the same places.
    Only that error of gloo falls back: any other (NCCL's above all) is raised as it is."""
    import torch.distributed as dist

    try:
        return dist.all_gather_into_tensor(out, mine, group=group, async_op=True)
    except RuntimeError as e:
        if dist.get_backend(group) != "gloo" or "_allgather_base" not in str(e):
            raise
    return dist.all_gather(list(out.chunk(world)), mine, group=group, async_op=True)


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
