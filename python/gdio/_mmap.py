"""KvikIO's ``kvikio.Mmap``: reads of a window of a file (``initial_map_offset``,
``initial_map_size``) into host or GPU buffers. KvikIO maps the window and copies out of the
mapping; gdio reads the same bytes with its engine (no mapping, no page faults), so the
answers are the same and a GPU buffer is filled through pinned memory."""

from __future__ import annotations

import errno
from typing import Any, Optional

from ._errors import GdioError
from ._native import CuFile, Future


class Mmap:
    """A read-only window ``[initial_map_offset, initial_map_offset + initial_map_size)`` of
    ``file_path`` (the rest of the file when ``initial_map_size`` is ``None``). ``mode`` and
    ``map_flags`` are accepted for KvikIO's signature (a mapping's permissions and flags; gdio
    maps nothing).

    Refusals raise what KvikIO's ``Mmap`` raises, with its words and gdio's numbers: a file
    that cannot be opened, :class:`gdio.GdioError` (a ``RuntimeError``); a flag other than
    ``r``, ``ValueError``; a window starting at or past the end of the file, or running past
    it, ``IndexError``; an empty window, ``ValueError``; a read starting past the end of the
    file or leaving the window, ``IndexError`` (nothing is written then); a read after
    :meth:`close`, ``GdioError``."""

    def __init__(
        self,
        file_path: Any,
        flags: str = "r",
        initial_map_size: Optional[int] = None,
        initial_map_offset: int = 0,
        mode: int = 0o644,
        map_flags: Optional[int] = None,
    ) -> None:
        unknown = [c for c in flags if c not in "rwa+"]
        if unknown or not flags:
            raise ValueError(f"Unknown file open flag {flags!r}: Mmap opens files for reading (flags='r')")
        if flags != "r":
            raise ValueError(f"Mmap opens files for reading only (flags='r'), not {flags!r}")
        f = CuFile(file_path, "r")
        try:
            size = f.nbytes()
            self._size = _window(f.path, size, initial_map_offset, initial_map_size)
        except BaseException:
            f.close()
            raise
        self._file: Optional[CuFile] = f
        self._offset, self._file_size = initial_map_offset, size

    def initial_map_size(self) -> int:
        """Bytes in the window."""
        return self._size

    def initial_map_offset(self) -> int:
        """File offset of the window's first byte."""
        return self._offset

    def file_size(self) -> int:
        """The file's size when it was opened; 0 after :meth:`close` (as KvikIO's)."""
        return 0 if self._file is None else self._file_size

    def close(self) -> None:
        """Closes the file (reads then raise)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._file is None

    def __enter__(self) -> "Mmap":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _span(self, buf: Any, size: Optional[int], offset: int) -> tuple[CuFile, int]:
        if self._file is None:
            raise GdioError(errno.EBADF, "Cannot read from a closed MmapHandle (gdio.Mmap.close() was called)")
        end = self._offset + self._size
        if offset > self._file_size:
            raise IndexError(f"Offset is past the end of file. offset: {offset}, file size: {self._file_size}")
        if size is None:
            size = min(_nbytes(buf), max(0, end - offset))
        if offset < self._offset or size < 0 or offset + size > end:
            raise IndexError(
                f"Read is out of bound. offset: {offset}, size: {size}, mapped region: "
                f"[{self._offset}, {end})"
            )
        return self._file, size

    def read(self, buf: Any, size: Optional[int] = None, offset: int = 0) -> int:
        """Reads ``size`` bytes (default: as many as ``buf`` holds, up to the window's end) at
        file ``offset`` into ``buf``; returns the bytes read."""
        f, size = self._span(buf, size, offset)
        return f.read(buf, size, file_offset=offset) if size else 0

    def pread(self, buf: Any, size: Optional[int] = None, offset: int = 0, task_size: Optional[int] = None) -> Future:
        """:meth:`read` as a future (split into ``task_size`` parts read in parallel)."""
        f, size = self._span(buf, size, offset)
        return f.pread(buf, size, file_offset=offset, task_size=task_size)


def _window(path: Any, size: int, offset: int, length: Optional[int]) -> int:
    """The window's length (``length``, or the rest of the file when ``None``), refused as
    KvikIO refuses it: a start at or past the end, or a window running past it, is an
    ``IndexError``; an empty window a ``ValueError``."""
    if offset < 0 or offset >= size:
        raise IndexError(
            f"Offset must be less than the file size. initial_map_offset: {offset}, file size: {size} ({path})"
        )
    rest = size - offset
    length = rest if length is None else length
    if length == 0:
        raise ValueError(f"Mapped region should not be zero byte ({path}, offset {offset})")
    if length < 0 or length > rest:
        raise IndexError(
            f"Mapped region is past the end of file. initial map offset: {offset}, "
            f"initial map size: {length}, file size: {size} ({path})"
        )
    return length


def _nbytes(buf: Any) -> int:
    n = getattr(buf, "nbytes", None)
    if n is not None:
        return int(n)
    with memoryview(buf) as m:
        return m.nbytes
