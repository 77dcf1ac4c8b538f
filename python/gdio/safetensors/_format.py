"""The safetensors byte format in memory, for ``save()`` -> ``bytes`` and ``load(bytes)``
(files go through gdio's engine instead)."""

from __future__ import annotations

import json
import struct
from typing import Any, Iterable, Optional

# Bits per element of every dtype of the format (sub-byte types are packed).
BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8,
    "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16,
    "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64,
    "U64": 64,
}


# The format's dtypes in the safetensors crate's `Dtype` order: files list tensors by this rank,
# highest first, then by name.
_RANK = {d: i for i, d in enumerate([
    "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64",
    "I64", "U64",
])}


def layout_order(entries: Iterable[tuple[str, str, list[int], Any]]) -> list:
    """``entries`` of ``(name, dtype, shape, data)`` in the order the safetensors package lays
    them out (dtype rank descending, then name), so that gdio writes the same bytes."""
    return sorted(entries, key=lambda e: (-_RANK[e[1]], e[0]))


def check_metadata(metadata: Optional[dict[str, str]]) -> None:
    """Raises ``ValueError`` unless ``metadata`` is ``None`` or maps ``str`` to ``str``."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict of str to str, not {type(metadata)}")
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"metadata must map str to str, got {k!r}: {v!r}")


def layout(
    entries: Iterable[tuple[str, str, list[int], Any]], metadata: Optional[dict[str, str]]
) -> tuple[bytes, list[memoryview]]:
    """``entries`` of ``(name, dtype, shape, bytes-like)`` -> the file's first bytes (header
    length and header) and the tensors' bytes in the order they follow it, laid out as the
    safetensors package lays them out (``layout_order``)."""
    items = layout_order(entries)
    header: dict[str, Any] = {}
    check_metadata(metadata)
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    offset = 0
    views = []
    for name, dtype, shape, data in items:
        view = memoryview(data).cast("B")
        header[name] = {
            "dtype": dtype,
            "shape": [int(d) for d in shape],
            "data_offsets": [offset, offset + view.nbytes],
        }
        offset += view.nbytes
        views.append(view)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, views


def serialize(
    entries: Iterable[tuple[str, str, list[int], Any]], metadata: Optional[dict[str, str]]
) -> bytes:
    """``entries`` of ``(name, dtype, shape, bytes-like)`` -> a safetensors file's bytes."""
    head, views = layout(entries, metadata)
    return b"".join([head, *views])


def parse(data: bytes) -> tuple[dict[str, Any], Optional[dict[str, str]], memoryview]:
    """A file's bytes -> ``(tensors, metadata, data section)``; checks the header."""
    view = memoryview(data)
    if len(view) < 8:
        raise ValueError("not a safetensors buffer: shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", view[:8])
    if n > len(view) - 8:
        raise ValueError(f"safetensors header of {n} bytes is longer than the buffer")
    header = json.loads(bytes(view[8 : 8 + n]))
    if not isinstance(header, dict):
        raise ValueError("safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None)
    body = view[8 + n :]
    check_tensors(header, len(body))
    return header, meta, body


def check_tensors(header: dict[str, Any], data_len: int) -> None:
    """Raises ``ValueError`` unless every tensor of ``header`` (metadata removed) has a known
    dtype and offsets inside ``data_len`` bytes that hold exactly its shape."""
    for name, info in header.items():
        b, e = info["data_offsets"]
        count = 1
        for d in info["shape"]:
            count *= d
        if info["dtype"] not in BITS:
            raise ValueError(f"tensor {name!r} has unknown dtype {info['dtype']!r}")
        if not 0 <= b <= e <= data_len or (count * BITS[info["dtype"]] + 7) // 8 != e - b:
            raise ValueError(f"tensor {name!r}: offsets {b}..{e} do not fit its shape and buffer")
