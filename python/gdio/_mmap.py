"""KvikIO's ``kvikio.Mmap``: reads of a window of a file (``initial_map_offset``,
``initial_map_size``) into host or GPU buffers. KvikIO maps the window and copies out of the
mapping; gdio reads the same bytes with its engine (no mapping, no page faults), so the
answers are the same and a GPU buffer is filled through pinned memory."""

from __future__ import annotations

import os
from typing import Any, Optional

from ._native import CuFile, Future


class Mmap:
    """A read-only window ``[initial_map_offset, initial_map_offset + initial_map_size)`` of
    ``file_path`` (the rest of the file when ``initial_map_size`` is ``None``). ``mode`` and
    ``map_flags`` are accepted for KvikIO's signature (a mapping's permissions and flags; gdio
    maps nothing). Reads outside the window are ``ValueError``s."""

    def __init__(
        self,
        file_path: Any,
        flags: str = "r",
        initial_map_size: Optional[int] = None,
        initial_map_offset: int = 0,
        mode: int = 0o644,
        map_flags: Optional[int] = None,
    ) -> None:
        if flags != "r":
            raise ValueError(f"Mmap opens files for reading only (flags='r'), not {flags!r}")
        path = os.fspath(file_path)
        size = os.path.getsize(path)
        if initial_map_offset < 0 or initial_map_offset > size:
            raise ValueError(f"initial_map_offset {initial_map_offset} is outside {path} ({size} bytes)")
        rest = size - initial_map_offset
        if initial_map_size is None:
            initial_map_size = rest
        if initial_map_size < 0 or initial_map_size > rest:
            raise ValueError(
                f"initial_map_size {initial_map_size} at offset {initial_map_offset} runs past the end "
                f"of {path} ({size} bytes)"
            )
        self._file: Optional[CuFile] = CuFile(path, "r")
        self._size, self._offset, self._file_size = initial_map_size, initial_map_offset, size

    def initial_map_size(self) -> int:
        """Bytes in the window."""
        return self._size

    def initial_map_offset(self) -> int:
        """File offset of the window's first byte."""
        return self._offset

    def file_size(self) -> int:
        """The file's size when it was opened."""
        return self._file_size

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
            raise ValueError("I/O on a closed Mmap")
        end = self._offset + self._size
        if offset < self._offset or offset > end:
            raise ValueError(f"offset {offset} is outside the window [{self._offset}, {end})")
        if size is None:
            size = min(_nbytes(buf), end - offset)
        if size < 0 or offset + size > end:
            raise ValueError(f"{size} bytes at offset {offset} run past the window's end ({end})")
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


def _nbytes(buf: Any) -> int:
    n = getattr(buf, "nbytes", None)
    if n is not None:
        return int(n)
    with memoryview(buf) as m:
        return m.nbytes
