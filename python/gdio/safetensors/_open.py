"""``safe_open``: the safetensors package's reader, loading through gdio."""

from __future__ import annotations

import mmap
import os
from typing import Any, Iterator, Optional, Sequence, Union

from .. import _native
from .._errors import SafetensorError
from . import _frameworks

PathArg = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

# How many windows of 64 KiB of a file must be in the page cache for its CPU tensors to be
# views of a mapping of it: checking every page costs milliseconds per GB (more than the
# package's whole torch load_file), 64 windows about 0.1 ms for any size.
_MAP_CHECK_WINDOWS = 64


def parse_device(device: Any) -> Optional[int]:
    """``"cpu"`` -> ``None`` (host memory); ``"cuda"``, ``"cuda:N"``, ``N``, ``torch.device``
    -> the GPU ordinal."""
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"bad device {device}")
        return device
    text = str(device)
    if text == "cpu":
        return None
    for prefix in ("cuda", "gpu"):
        if text == prefix:
            return 0
        if text.startswith(prefix + ":") and text[len(prefix) + 1 :].isdigit():
            return int(text[len(prefix) + 1 :])
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or an int, not {device!r}")


BACKENDS = ("mmap", "pread")


def check_backend(backend: str) -> None:
    """Accepts the ``backend=`` values of the ``safetensors`` package (``"mmap"``, ``"pread"``:
    how it serves tensor bytes; gdio reads with its own engine either way) and refuses any
    other, as the package does, so a misspelt keyword is not silently taken."""
    if backend not in BACKENDS:
        raise ValueError(f'backend "{backend}" is invalid (expected one of: "mmap", "pread")')


def _paths(filename: PathArg) -> list[str]:
    if isinstance(filename, (str, bytes, os.PathLike)):
        return [os.fsdecode(filename)]
    return [os.fsdecode(p) for p in filename]


class safe_open:
    """Opens a safetensors checkpoint like ``safetensors.safe_open``: one file, a list of
    shards, a directory or a ``*.safetensors.index.json``.

    ``framework``: ``"pt"`` (torch), ``"np"``/``"numpy"``, ``"jax"``/``"flax"``, ``"paddle"``,
    or ``"tf"``/``"tensorflow"`` and ``"mlx"`` (host memory, through NumPy, as the package).
    ``device``: ``"cpu"``, ``"cuda:N"`` or ``N``. Tensors are views of gdio's allocations (zero-copy through DLPack) that stay valid while any of them lives.
    ``process_group``: a ``torch.distributed`` group; every rank reads a share of the bytes
    and the shares are exchanged, so the group reads the checkpoint once (see
    :mod:`gdio.safetensors._dist`). With a group, the first ``get_tensor``, ``get_tensors``
    or ``tensors`` call loads every tensor for the whole group (a collective: every rank makes
    it) and later calls are answered from that load, so the usual
    ``for k in f.keys(): f.get_tensor(k)`` reads the checkpoint once, not once per tensor.
    ``plan`` (with a group, for tensor parallelism): ``{name: dim}`` or a function of
    ``(name, shape)`` giving ``dim`` or ``None``; a planned tensor comes back as this rank's
    part of it along ``dim`` (rank ``r`` of ``world`` near-equal parts), read by this rank
    alone, and never travels between ranks.
    ``backend``: the package's ``"mmap"`` or ``"pread"``, accepted for compatibility;
    anything else is a ``ValueError``. gdio decides by itself: on the CPU (NumPy or torch),
    the tensors of a file in the page cache are views of a private copy-on-write
    mapping of it (no copy; writes to them never reach the file; the file must not be cut
    short while they live, as with the package), and other files are read by gdio's
    engine (``safetensors_map_host`` false: always read).
    """

    def __init__(
        self,
        filename: PathArg,
        framework: str = "pt",
        device: Any = "cpu",
        process_group: Any = None,
        plan: Any = None,
        backend: str = "mmap",
    ) -> None:
        check_backend(backend)
        self._framework = _frameworks.normalize(framework)
        self._gpu = parse_device(device)
        self._ckpt = _native.Checkpoint(_paths(filename))
        self._group = process_group
        if plan is not None and process_group is None:
            raise ValueError("plan= splits tensors between the ranks of a process_group: give both")
        self._plan = plan
        self._gathered: Optional[dict[str, Any]] = None
        # Read-ahead of get_tensor walking keys() in order: the tensors loaded ahead (each
        # handed out once), the position in keys() the next call would have if the walk goes
        # on, and keys() with each tensor's bytes (made at the first call).
        self._ahead: dict[str, Any] = {}
        self._next_pos: Optional[int] = None
        self._run = 0
        self._order: Optional[tuple[list[str], dict[str, int], list[int]]] = None
        self._closed = False
        self._locations: Optional[dict[str, tuple[int, int, int, str, list[int]]]] = None
        self._kit: Optional[tuple[Any, ...]] = None
        # CPU tensors as views of the page cache: each file's copy-on-write mapping (None:
        # read instead), and where each file's data section starts.
        self._maps: dict[int, Optional[mmap.mmap]] = {}
        self._data_starts: Optional[list[int]] = None

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._ahead.clear()
        self._closed = True

    def _check_open(self) -> None:
        """After the ``with`` block, as in the package: a :class:`SafetensorError`."""
        if self._closed:
            raise SafetensorError("File is closed: this safe_open's with block has ended")

    def keys(self) -> list[str]:
        """Tensor names, sorted (as the safetensors package returns them)."""
        self._check_open()
        return sorted(self._ckpt.keys())

    def offset_keys(self) -> list[str]:
        """Tensor names in file order."""
        self._check_open()
        return list(self._ckpt.keys())

    def metadata(self) -> Optional[dict[str, str]]:
        """The ``__metadata__`` (of every shard, merged), or ``None`` when there is none."""
        self._check_open()
        return self._ckpt.metadata() or None

    def _convert(self, t: Any) -> Any:
        return _frameworks.convert(t, self._framework)

    def _group_load(self) -> dict[str, Any]:
        """Every tensor, loaded once for the process group (each rank reads its share)."""
        if self._gathered is None:
            from . import _dist

            self._gathered = _dist.load(
                self._ckpt, self.keys(), self._gpu, self._group, self._framework, self._plan
            )
        return self._gathered

    def get_tensor(self, name: str) -> Any:
        """Tensor ``name`` in the framework and on the device asked for.

        Calls that walk ``keys()`` in order (``for k in f.keys(): f.get_tensor(k)``, what
        loaders do) are read ahead: from the third call in a row, the next tensors up to
        ``safetensors_read_ahead_bytes`` (gdio's configuration, 64 MiB) are loaded together (one allocation, merged reads) and handed out
        one by one as they are asked for, instead of one load per tensor. Any other order
        loads the tensor alone. Each call returns a tensor of its own; tensors loaded together
        share their allocation, which lives while any of them does."""
        self._check_open()
        if self._group is not None:
            return self._group_load()[name]
        t = self._mapped_view(name)
        if t is not None:
            return t
        ahead = self._ahead.pop(name, None)
        keys, pos_of, sizes = self._key_order()
        pos = pos_of.get(name)
        # A walk: this call and the two before it asked for consecutive keys() (two in a row
        # happen by chance in any order; reading ahead on them would read up to the budget's
        # bytes that may never be asked for).
        self._run = self._run + 1 if pos is not None and pos == self._next_pos else 1
        walking = self._run >= 3
        self._next_pos = None if pos is None else pos + 1
        if ahead is not None:
            return ahead
        if not walking:
            t = self._read_alone(name)
            if t is not None:
                return t
            (t,) = self._ckpt.load([name], self._gpu)
            return self._convert(t)
        budget = _native.config_get("safetensors_read_ahead_bytes")
        end, total = pos + 1, sizes[pos]
        while end < len(keys) and total + sizes[end] <= budget:
            total += sizes[end]
            end += 1
        batch = keys[pos:end]
        if len(batch) == 1:  # nothing to read ahead (a tensor over the budget, or a budget of 0)
            t = self._read_alone(name)
            if t is not None:
                return t
        loaded = {t.name: self._convert(t) for t in self._ckpt.load(batch, self._gpu)}
        self._ahead = {k: loaded[k] for k in batch[1:]}
        return loaded[name]

    def _read_alone(self, name: str, rows: Optional[tuple[int, int]] = None) -> Any:
        """Tensor ``name`` (or its rows ``[start, stop)``) read into an array the framework
        allocates: torch on this GPU or the host (``framework="pt"``), NumPy on the host
        (``framework="np"``); ``None`` elsewhere (other frameworks, a dtype the framework lacks, rows that
        are not whole bytes), where gdio makes an allocation of its own.

        A load of one tensor otherwise sets up a gdio allocation (on a GPU a ``cuMemAlloc``,
        and a device-wide synchronization at ``cuMemFree`` when the tensor goes); torch's
        caching allocator hands out GPU memory and takes it back in stream order at no such
        cost, which is what the package's ``get_tensor`` and ``get_slice`` (a CPU tensor moved
        with ``.to``) get. The bytes come through the checkpoint's own file handles; a read into
        a torch tensor waits for the work torch queued before, as every read into one does.
        On the CPU, a file in the page cache is not read at all: the tensor is a view
        of its copy-on-write mapping (:meth:`_mapping`), as the package's torch tensors are."""
        kit = self._alone_kit()
        if kit is None:
            return None
        lib, types, direct, device = kit
        where = self._where().get(name)
        if where is None:  # the load says what is wrong
            return None
        file, begin, end, dtype, shape = where
        dt = types.get(dtype)
        if dt is None:
            return None
        shape = list(shape)
        if rows is not None:
            start, stop = rows
            per_row = (end - begin) // shape[0] if shape and shape[0] else 0
            if not shape or per_row * shape[0] != end - begin:
                return None
            begin, end = begin + start * per_row, begin + stop * per_row
            shape[0] = stop - start
        if device is not None and dtype == "F4" and shape:
            shape[-1] //= 2  # two values per torch element
        if device in (None, "cpu") and end > begin:
            view = self._view_of_mapping(lib, file, begin, end, dt, shape)
            if view is not None:
                return view
        if device is None:
            t = lib.empty(shape, dtype=dt)
        else:
            try:
                t = lib.empty(shape, dtype=dt, device=device)
            except (TypeError, RuntimeError):
                return None
        # The array itself where gdio takes its dtype by every route (two views fewer per
        # tensor); its bytes as uint8 where a route may refuse the dtype (DLPack and FP8, the
        # buffer protocol and ml_dtypes' bfloat16).
        raw = t if dtype in direct else t.reshape(-1).view(lib.uint8)
        n = end - begin
        if n:
            got = self._ckpt.read_into(file, begin, raw, n)
            if got != n:
                raise SafetensorError(
                    f"tensor {name!r}: the file ended after {got} of its {n} bytes (cut short since it was opened?)"
                )
        return t

    def _mapping(self, file: int) -> Optional[mmap.mmap]:
        """File ``file`` mapped copy-on-write, when CPU tensors may be views of it: the
        configuration allows it (``safetensors_map_host``) and the file is in the page cache,
        every page of 64 windows of 64 KiB spread over it (a check that costs the same for any
        size of file; a cold file is read by the workers in parallel instead of faulted in a
        page at a time); ``None`` otherwise. Decided once per file and ``safe_open``."""
        if file in self._maps:
            return self._maps[file]
        m = None
        if _native.config_get("safetensors_map_host"):
            fd = self._ckpt.dup_fd(file)
            try:
                cached, total = _native.page_cache_info(fd, 0, 0, _MAP_CHECK_WINDOWS)
                if total and cached >= total:
                    m = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
            except (OSError, ValueError):
                m = None
            finally:
                os.close(fd)
        self._maps[file] = m
        return m

    def _mapped_view(self, name: str) -> Optional[Any]:
        """Tensor ``name`` as a view of its file's mapping (:meth:`_read_alone`) when it is a
        CPU tensor of NumPy or torch in a mapped file; ``None`` otherwise (it is read)."""
        if self._gpu is not None or self._alone_kit() is None:
            return None
        where = self._where().get(name)
        if where is None or self._mapping(where[0]) is None:
            return None
        return self._read_alone(name)

    def _views(self, names: list[str]) -> tuple[dict[str, Any], list[str]]:
        """The tensors of ``names`` that are views of their file's mapping
        (:meth:`_mapped_view`), in the order asked, and the names left to read."""
        views: dict[str, Any] = {}
        rest = []
        for n in names:
            t = self._mapped_view(n)
            if t is None:
                rest.append(n)
            else:
                views[n] = t
        return views, rest

    def _view_of_mapping(
        self, lib: Any, file: int, begin: int, end: int, dt: Any, shape: list[int]
    ) -> Optional[Any]:
        """Bytes ``[begin, end)`` of file ``file``'s data section as a tensor of ``dt`` and
        ``shape`` over its copy-on-write mapping (the tensor keeps the mapping alive), or
        ``None`` (no mapping, or the framework refuses the view: torch views need the offset
        aligned to the element size)."""
        m = self._mapping(file)
        if m is None:
            return None
        if self._data_starts is None:
            self._data_starts = [start for _, start in self._ckpt.data_files()]
        at, n = self._data_starts[file] + begin, end - begin
        if at + n > len(m):  # cut short since it was opened: the read says so
            return None
        try:  # numpy.frombuffer and torch.frombuffer take the same arguments
            return lib.frombuffer(m, dtype=lib.uint8, count=n, offset=at).view(dt).reshape(shape)
        except (RuntimeError, TypeError, ValueError):
            return None

    def _alone_kit(self) -> Optional[tuple[Any, dict[str, Any], frozenset[str], Optional[str]]]:
        """What :meth:`_read_alone` allocates with, made once: the framework's module, its
        dtypes by safetensors name, the names whose arrays gdio takes as they are, and the
        torch device (``None``: a NumPy array); ``None`` where it does not apply."""
        if self._kit is None:
            self._kit = (None,)
            if self._framework == "pt":
                from .torch import _TYPES
                import torch as lib

                # dtypes every route takes (torch's DLPack export included; torch 1.x's refuses
                # bool, which is read through a uint8 view)
                plain = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "C64"}
                device = "cpu" if self._gpu is None else f"cuda:{self._gpu}"
                self._kit = (lib, _TYPES, frozenset(plain & _TYPES.keys()), device)
            elif self._framework == "np" and self._gpu is None:
                from .numpy import _TYPES
                import numpy as lib

                plain = frozenset(k for k, v in _TYPES.items() if lib.dtype(v).isbuiltin)
                self._kit = (lib, _TYPES, plain, None)
        return None if self._kit == (None,) else self._kit

    def _where(self) -> dict[str, tuple[int, int, int, str, list[int]]]:
        """Each tensor's ``(file, data_begin, data_end, dtype, shape)``."""
        if self._locations is None:
            layout, _ = self._ckpt.layout()
            self._locations = {t[0]: (t[1], t[2], t[3], t[4], list(t[5])) for t in layout}
        return self._locations

    def _key_order(self) -> tuple[list[str], dict[str, int], list[int]]:
        """``keys()``, each name's position in it, and each tensor's bytes."""
        if self._order is None:
            nbytes = {k: w[2] - w[1] for k, w in self._where().items()}
            keys = self.keys()
            self._order = (keys, {k: i for i, k in enumerate(keys)}, [nbytes[k] for k in keys])
        return self._order

    def get_tensors(self, names: Optional[Sequence[str]] = None) -> dict[str, Any]:
        """Tensors ``names`` (all when ``None``), loaded together, in ``keys()`` order."""
        self._check_open()
        wanted = self.keys() if names is None else list(names)
        if self._group is not None:
            got = self._group_load()
        else:
            got, rest = self._views(wanted)
            if rest:
                got.update({t.name: self._convert(t) for t in self._ckpt.load(rest, self._gpu)})
        return {n: got[n] for n in wanted}

    def tensors(self, names: Optional[Sequence[str]] = None) -> Iterator[tuple[str, Any]]:
        """``(name, tensor)`` pairs in the order the tensors land (completion order; with a
        process group, after the group's one load, in ``keys()`` order). On the CPU, the
        tensors that are views of their file's mapping (as :meth:`get_tensors` gives them) come
        first, in the order asked; the others are read."""
        self._check_open()
        wanted = None if names is None else list(names)
        if self._group is not None:
            got = self._group_load()
            for n in self.keys() if wanted is None else wanted:
                yield n, got[n]
            return
        views, rest = self._views(self.keys() if wanted is None else wanted)
        yield from views.items()
        if views:
            if not rest:
                return
            wanted = rest
        for t in self._ckpt.stream(wanted, self._gpu):
            yield t.name, self._convert(t)

    def get_slice(self, name: str) -> "Slice":
        """A lazy slice of tensor ``name``: index it (``[a:b]``, ``[i]``, ``[a:b, ...]``) to
        read only the rows along dimension 0 that the index selects."""
        self._check_open()
        dtype, shape = self._ckpt.info(name)
        return Slice(self, name, dtype, shape)


class _SliceError(SafetensorError, IndexError):
    """A slice index out of range: what the package raises (``SafetensorError``) and what
    Python code expects of indexing (``IndexError``)."""

    __module__ = "gdio.safetensors"


class Slice:
    """``safe_open.get_slice``: ``get_shape()``, ``get_dtype()``, and indexing that reads only
    the selected rows (dimension 0)."""

    def __init__(self, owner: safe_open, name: str, dtype: str, shape: list[int]) -> None:
        self._owner = owner
        self._name = name
        self._dtype = dtype
        self._shape = list(shape)

    def get_shape(self) -> list[int]:
        """The tensor's full shape."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The safetensors dtype name (``"F32"``)."""
        return self._dtype

    def _rows(self, start: int, stop: int) -> Any:
        o = self._owner
        t = o._read_alone(self._name, (start, stop))
        if t is not None:
            return t
        return o._convert(o._ckpt.load_rows(self._name, start, stop, o._gpu))

    def _full(self) -> Any:
        o = self._owner
        if o._group is None:  # the owner's read-ahead serves a walk of slices taken whole
            return o.get_tensor(self._name)
        (t,) = o._ckpt.load([self._name], o._gpu)
        return o._convert(t)

    def __getitem__(self, index: Any) -> Any:
        """The selected part; an index out of range is an ``IndexError`` that is also the
        package's :class:`SafetensorError`."""
        self._owner._check_open()
        try:
            return self._select(index)
        except IndexError as e:
            if isinstance(e, SafetensorError):
                raise
            raise _SliceError(f"Error during slicing {index!r} with shape {self._shape}: {e}") from None

    def _select(self, index: Any) -> Any:
        idx = index if isinstance(index, tuple) else (index,)
        if not self._shape or not idx or idx[0] is Ellipsis:
            return self._full()[index]
        first, rest = idx[0], idx[1:]
        n = self._shape[0]
        if isinstance(first, int) and not isinstance(first, bool):
            i = first + n if first < 0 else first
            if not 0 <= i < n:
                raise IndexError(f"index {first} is out of range for {n} rows of {self._name!r}")
            x = self._rows(i, i + 1)
            return x[(0, *rest)]
        if isinstance(first, slice):
            start, stop, step = first.indices(n)
            picked = range(start, stop, step)
            if len(picked) == 0:
                return self._full()[index]
            lo, hi = min(picked), max(picked) + 1
            x = self._rows(lo, hi)
            local = slice(picked[0] - lo, None if step < 0 and picked[-1] == lo else picked[-1] - lo + (1 if step > 0 else -1), step)
            return x[(local, *rest)]
        return self._full()[index]
