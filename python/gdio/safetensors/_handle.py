"""``_safe_open_handle``: the safetensors package's reader over an open file object. A file
object with a descriptor and a path ``name`` (a local file, in text or binary mode; an
``fsspec`` local file) is opened by its name with :class:`safe_open`, as the package does; any
other (a remote ``fsspec`` file) is read through the object: the header once, each tensor with
one ``seek`` and ``read`` when it is asked for."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Optional

from .._errors import SafetensorError
from . import _format, _frameworks
from ._open import parse_device, safe_open

# Bytes of a header the package accepts at most (100 MB), so a garbage length is refused
# before it is read.
_MAX_HEADER = 100_000_000


def _module(framework: str) -> Any:
    name = {"pt": "torch", "np": "numpy", "jax": "flax"}.get(framework, framework)
    return __import__(f"gdio.safetensors.{name}", fromlist=["load"])


def _safe_open_handle(f: Any, framework: str, device: Any = "cpu") -> Any:  # noqa: N802
    """A reader of the safetensors file open as ``f``: :class:`safe_open` of ``f.name`` where
    ``f`` has a descriptor and a path name, else a :class:`_StreamReader` over ``f``."""
    name = getattr(f, "name", None)
    if hasattr(f, "fileno") and isinstance(name, (str, bytes, os.PathLike)):
        return safe_open(name, framework=framework, device=device)
    return _StreamReader(f, framework, device)


class _StreamReader:
    """``keys()``, ``offset_keys()``, ``metadata()``, ``get_tensor(name)`` over binary file
    object ``f`` (``read``, ``seek``); a malformed file is a :class:`SafetensorError`."""

    def __init__(self, f: Any, framework: str, device: Any = "cpu") -> None:
        self._f = f
        self._framework = _frameworks.normalize(framework)
        self._device = device
        self._gpu = parse_device(device)
        f.seek(0)
        head = f.read(8)
        if len(head) != 8:
            raise SafetensorError("Error while deserializing header: the file is shorter than 8 bytes")
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER:
            raise SafetensorError(f"Error while deserializing header: header of {n} bytes is too large")
        text = f.read(n)
        size = f.seek(0, 2)
        try:
            header = json.loads(text)
            if not isinstance(header, dict):
                raise ValueError("the header is not a JSON object")
            self._meta: Optional[dict[str, str]] = header.pop("__metadata__", None)
            _format.check_tensors(header, size - 8 - n)
        except (ValueError, KeyError, TypeError) as e:
            raise SafetensorError(f"Error while deserializing header: {e}") from None
        self._header = header
        self._start = 8 + n
        self._closed = False

    def __enter__(self) -> "_StreamReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closed = True

    def _check(self) -> None:
        if self._closed:
            raise SafetensorError("File is closed")

    def keys(self) -> list[str]:
        """Tensor names, sorted."""
        self._check()
        return sorted(self._header)

    def offset_keys(self) -> list[str]:
        """Tensor names in file order."""
        self._check()
        return sorted(self._header, key=lambda k: self._header[k]["data_offsets"][0])

    def metadata(self) -> Optional[dict[str, str]]:
        """The ``__metadata__``, or ``None``."""
        self._check()
        return self._meta

    def get_tensor(self, name: str) -> Any:
        """Tensor ``name``, read from the file object, in the framework and on the device."""
        self._check()
        info = self._header.get(name)
        if info is None:
            raise SafetensorError(f"File does not contain tensor {name}")
        b, e = info["data_offsets"]
        self._f.seek(self._start + b)
        data = self._f.read(e - b)
        if len(data) != e - b:
            raise SafetensorError(f"tensor {name!r}: the file object gave {len(data)} of {e - b} bytes")
        one = _format.serialize([(name, info["dtype"], info["shape"], data)], None)
        t = _module(self._framework).load(one)[name]
        if self._gpu is not None and self._framework == "pt":
            t = t.to(f"cuda:{self._gpu}")
        return t
