"""Build GGUF files for rule examples, tests and benchmarks: a header written byte by byte, tensor data
left as a hole (a sparse file) or as zeros.

The layout follows the GGUF spec (ggml-org/ggml ``docs/gguf.md``): magic, version, counts, key/value
pairs, tensor infos, padding to ``general.alignment``, data. Versions 2 and 3 write 64-bit counts and
lengths, version 1 32-bit ones.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.sources.gguf import ARRAY, DEFAULT_ALIGNMENT, GGML_TYPES, STRING, VALUE_TYPES

#: One key/value pair: ``(key, value type id, value)``; arrays: ``(key, (9, item type id), list)``.
KV = tuple[str, Any, Any]

#: One tensor: ``(name, dims in GGML order, GGML type id)``.
Tensor = tuple[str, Sequence[int], int]

GGML_ID = {name: i for i, (name, _, _) in GGML_TYPES.items()}
VALUE_ID = {name: i for i, (name, _, _) in VALUE_TYPES.items()}


def tensor_bytes(dims: Sequence[int], ggml_type: int) -> int:
    """Data bytes of a tensor (elements / block size * bytes per block)."""
    _, block, size = GGML_TYPES[ggml_type]
    n = 1
    for d in dims:
        n *= d
    return n // block * size


class _Out:
    def __init__(self, version: int, byte_order: str) -> None:
        self.parts: list[bytes] = []
        self.bo = byte_order
        self.size_code = "I" if version == 1 else "Q"

    def pack(self, code: str, value: Any) -> None:
        self.parts.append(struct.pack(self.bo + code, value))

    def string(self, text: str | bytes) -> None:
        raw = text.encode("utf-8") if isinstance(text, str) else text
        self.pack(self.size_code, len(raw))
        self.parts.append(raw)

    def value(self, vtype: Any, value: Any) -> None:
        if isinstance(vtype, tuple):
            item = vtype[1]
            self.pack("I", item)
            self.pack(self.size_code, len(value))
            inner = (ARRAY, vtype[2]) if item == ARRAY and len(vtype) > 2 else item
            for v in value:
                self.value(inner, v)
        elif vtype == STRING:
            self.string(value)
        else:
            self.pack(VALUE_TYPES[vtype][1], value)


def gguf_header(
    kv: Iterable[KV], tensors: Iterable[Tensor], *, version: int = 3, byte_order: str = "<",
    alignment: int | None = None,
) -> tuple[bytes, int]:
    """The header bytes (padded to the alignment) and the data section's size in bytes.

    ``kv`` value types: an id of :data:`~mtp_audit.sources.gguf.VALUE_TYPES` for scalars and strings,
    ``(9, item)`` for arrays, ``(9, 9, item)`` for arrays of arrays. ``general.alignment`` is added
    when ``alignment`` is given. Tensor offsets are laid out in order, each padded to the alignment.
    """
    kv = list(kv)
    if alignment is not None:
        kv.append(("general.alignment", 4, alignment))
    align = alignment or DEFAULT_ALIGNMENT
    tensors = list(tensors)
    out = _Out(version, byte_order)
    out.parts.append(b"GGUF")
    out.pack("I", version)
    out.pack(out.size_code, len(tensors))
    out.pack(out.size_code, len(kv))
    for key, vtype, value in kv:
        out.string(key)
        out.pack("I", vtype[0] if isinstance(vtype, tuple) else vtype)
        out.value(vtype, value)
    offset = 0
    for name, dims, gtype in tensors:
        out.string(name)
        out.pack("I", len(dims))
        for d in dims:
            out.pack(out.size_code, d)
        out.pack("I", gtype)
        out.pack("Q", offset)
        offset += -(-tensor_bytes(dims, gtype) // align) * align
    raw = b"".join(out.parts)
    return raw + b"\0" * (-len(raw) % align), offset


def write_gguf(path: str | os.PathLike[str], kv: Iterable[KV], tensors: Iterable[Tensor], **options: Any) -> int:
    """Write a GGUF file whose tensor data is a hole (sparse where the file system allows);
    returns the file size. Options as :func:`gguf_header`."""
    header, data = gguf_header(kv, tensors, **options)
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(len(header) + data)
    return len(header) + data


def gguf_bytes(kv: Iterable[KV], tensors: Iterable[Tensor], **options: Any) -> bytes:
    """A whole small GGUF file in memory (zeros for tensor data), for rule examples."""
    header, data = gguf_header(kv, tensors, **options)
    return header + b"\0" * data


def model_kv(arch: str, *, blocks: int, nextn: int | None, extra: Iterable[KV] = ()) -> list[KV]:
    """The key/values a converted model carries: architecture, block count, optionally
    ``{arch}.nextn_predict_layers``, a name."""
    kv: list[KV] = [("general.architecture", STRING, arch), ("general.name", STRING, "synthetic"),
                    (f"{arch}.block_count", 4, blocks)]
    if nextn is not None:
        kv.append((f"{arch}.nextn_predict_layers", 4, nextn))
    return kv + list(extra)


def nextn_tensors(block: int, *, hidden: int = 64, ggml_type: int = 8,
                  parts: Sequence[str] = ("eh_proj", "enorm", "hnorm", "shared_head_norm")) -> list[Tensor]:
    """The ``blk.N.nextn.*`` tensors of one MTP block (Qwen layout by default: no embed/head copies).
    Norms are F32 vectors; projections take ``ggml_type``."""
    out: list[Tensor] = []
    for p in parts:
        if p.endswith("norm"):
            out.append((f"blk.{block}.nextn.{p}.weight", (hidden,), 0))
        elif p == "eh_proj":
            out.append((f"blk.{block}.nextn.{p}.weight", (2 * hidden, hidden), ggml_type))
        else:
            out.append((f"blk.{block}.nextn.{p}.weight", (hidden, 256), ggml_type))
    return out


def trunk_tensors(blocks: Iterable[int], *, hidden: int = 64, ggml_type: int = 8, vocab: int = 256) -> list[Tensor]:
    """Embedding, output and a few per-block tensors (attention and FFN projections, norms)."""
    out: list[Tensor] = [("token_embd.weight", (hidden, vocab), ggml_type), ("output_norm.weight", (hidden,), 0),
                         ("output.weight", (hidden, vocab), ggml_type)]
    for b in blocks:
        out += [(f"blk.{b}.attn_norm.weight", (hidden,), 0), (f"blk.{b}.attn_q.weight", (hidden, hidden), ggml_type),
                (f"blk.{b}.ffn_down.weight", (hidden, hidden), ggml_type)]
    return out


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (relative path -> bytes) under ``root``."""
    for rel, raw in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(raw)
