"""Fixture-building tool: write REAL safetensors shard files and an index from a compact spec.

This module is not used by the audit itself. Tests, rule examples and benchmarks use it to put
real ``.safetensors`` files on disk, so the header-reading path (``LocalSource.read_header`` and
``safetensors.safe_open``) runs on genuine files, including the real shapes of 600-GB checkpoints:
shards are written *sparse* (the 8-byte length, the JSON header, then ``truncate()`` to the full
size), so a 4-GB shard costs a few KB of disk.

Spec format (JSON, see ``fixtures/checkpoint/*/spec.json``)::

    {
      "tensors": [                                  # expanded in order
        {"name": "model.embed_tokens.weight", "dtype": "BF16", "shape": [129280, 7168]},
        {"for": {"L": [3, 60]}, "each": [           # inclusive ranges, nested blocks allowed
          {"name": "model.layers.{L}.mlp.experts.{E}.up_proj.weight", "for": {"E": [0, 255]},
           "dtype": "F8_E4M3", "shape": [2048, 7168]}
        ]}
      ],
      "shards": {"count": 163, "pattern": "model-{i:05d}-of-{n:06d}.safetensors"},
      "index_metadata": {"total_size": 1369062772000}     # optional; default: the real byte sum
    }

Shard assignment is contiguous in spec order and balanced by bytes over ``shards.count`` files; a
top-level entry with a ``"shard": "file.safetensors"`` key puts all its tensors in that file instead.
Either way the mapping is synthetic (real file names and shard count at best, not the real
tensor-to-shard mapping).

Usage::

    from mtp_audit.synth.shards import write_checkpoint
    write_checkpoint(tmp_path, json.load(open("fixtures/checkpoint/deepseek-ai--DeepSeek-V3/spec.json")))
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.sources.local import tensor_nbytes

Tensor = tuple[str, str, tuple[int, ...]]


def expand(entries: Iterable[Mapping[str, Any]], env: Mapping[str, int] | None = None) -> Iterator[Tensor]:
    """Expand spec entries into ``(name, dtype, shape)`` in order (see the module docstring)."""
    env = dict(env or {})
    for e in entries:
        yield from _expand_loops(e, list((e.get("for") or {}).items()), 0, env)


def _expand_loops(e: Mapping[str, Any], loops: list[tuple[str, Any]], k: int, scope: dict[str, int]) -> Iterator[Tensor]:
    """The tensors of entry ``e`` with its ``for`` loops ``loops[k:]`` (``(var, (lo, hi))``, bounds inclusive)
    still to expand, the outer variables bound in ``scope``."""
    if k == len(loops):
        if "each" in e:
            yield from expand(e["each"], scope)
        else:
            yield e["name"].format(**scope), e["dtype"], tuple(int(x) for x in e["shape"])
        return
    var, (lo, hi) = loops[k]
    for v in range(int(lo), int(hi) + 1):
        yield from _expand_loops(e, loops, k + 1, {**scope, var: v})


def header_bytes(tensors: Sequence[Tensor], metadata: Mapping[str, str] | None = None) -> tuple[bytes, int]:
    """The 8-byte little-endian length plus the JSON header (padded with spaces to a multiple of 8,
    as safetensors writes it) for ``tensors`` laid out back to back; returns ``(prefix, data_bytes)``."""
    hdr: dict[str, Any] = {}
    if metadata:
        hdr["__metadata__"] = dict(metadata)
    off = 0
    for name, dtype, shape in tensors:
        n = tensor_nbytes(dtype, shape)
        hdr[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(hdr, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, off


def shard_bytes(tensors: Sequence[Tensor], metadata: Mapping[str, str] | None = None) -> bytes:
    """A complete, valid safetensors file (zero-filled data) for tiny tensors; for rule examples."""
    prefix, n = header_bytes(tensors, metadata)
    return prefix + b"\x00" * n


def tiny(spec: Mapping[str, tuple[str, Sequence[int]]]) -> bytes:
    """``tiny({"mtp.fc.weight": ("BF16", [4, 8])})`` -> bytes of a valid small shard."""
    return shard_bytes([(k, d, tuple(s)) for k, (d, s) in spec.items()], {"format": "pt"})


def write_shard(path: Path, tensors: Sequence[Tensor], *, sparse: bool = True) -> int:
    """Write one shard; with ``sparse`` the data region is a hole (``truncate``), so real shapes cost
    no disk. Returns the data bytes."""
    prefix, n = header_bytes(tensors, {"format": "pt"})
    with open(path, "wb") as fh:
        fh.write(prefix)
        if sparse:
            fh.truncate(len(prefix) + n)
        else:
            fh.write(b"\x00" * n)
    return n


def split(tensors: Sequence[Tensor], count: int) -> list[list[Tensor]]:
    """Contiguous split into ``count`` shards balanced by bytes (a shard may be empty only when one
    tensor is larger than a whole share)."""
    sizes = [tensor_nbytes(d, s) for _, d, s in tensors]
    total = sum(sizes) or 1
    out: list[list[Tensor]] = [[] for _ in range(count)]
    acc = 0
    for t, n in zip(tensors, sizes):
        i = min(count - 1, math.floor(acc * count / total))
        out[i].append(t)
        acc += n
    return out


def write_checkpoint(
    root: Path,
    spec: Mapping[str, Any],
    *,
    shards: bool = True,
    sparse: bool = True,
    index: bool = True,
) -> dict[str, Any]:
    """Write the shards (unless ``shards=False``: metadata-only) and ``model.safetensors.index.json``.

    Returns ``{"tensors": n, "bytes": data_bytes, "shards": [file names], "weight_map": {...}}``.
    """
    root.mkdir(parents=True, exist_ok=True)
    pinned: dict[str, list[Tensor]] = {}
    free: list[Tensor] = []
    order: list[Tensor] = []
    for entry in spec["tensors"]:
        ts = list(expand([entry]))
        order += ts
        if "shard" in entry:
            pinned.setdefault(entry["shard"], []).extend(ts)
        else:
            free += ts
    tensors = order
    sh = spec.get("shards") or {"count": 1 if free else 0, "pattern": "model-{i:05d}-of-{n:05d}.safetensors"}
    count = int(sh["count"])
    groups = split(free, count) if count else []
    names = [sh["pattern"].format(i=i + 1, n=count) for i in range(count)]
    for fname, ts in sorted(pinned.items()):
        names.append(fname)
        groups.append(ts)
    weight_map: dict[str, str] = {}
    total = 0
    for fname, group in zip(names, groups):
        for t in group:
            weight_map[t[0]] = fname
        if shards and group:
            total += write_shard(root / fname, group, sparse=sparse)
        else:
            total += sum(tensor_nbytes(d, s) for _, d, s in group)
    if index:
        meta = dict(spec.get("index_metadata") or {"total_size": total})
        (root / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": meta, "weight_map": weight_map}, indent=2), encoding="utf-8"
        )
    return {"tensors": len(tensors), "bytes": total, "shards": [n for n, g in zip(names, groups) if g], "weight_map": weight_map}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mtp_audit.synth.shards SPEC.json OUT_DIR [--metadata-only] [--copy FILE...]``:
    materialise a fixture spec (for benchmarks and manual runs)."""
    import argparse
    import shutil

    ap = argparse.ArgumentParser(prog="python -m mtp_audit.synth.shards", description=main.__doc__)
    ap.add_argument("spec", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--metadata-only", action="store_true", help="write the index only, no shards")
    ap.add_argument("--copy", nargs="*", type=Path, default=[], help="extra files to copy (config.json...)")
    a = ap.parse_args(argv)
    res = write_checkpoint(a.out, json.loads(a.spec.read_text(encoding="utf-8")), shards=not a.metadata_only)
    for f in a.copy:
        shutil.copy(f, a.out / f.name)
    print(f"{res['tensors']} tensors, {res['bytes']} bytes, {len(res['shards'])} shards -> {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["expand", "header_bytes", "shard_bytes", "tiny", "write_shard", "split", "write_checkpoint"]
