"""Where a checkpoint's metadata comes from: a local folder (this module) or the hub (``hub.py``).

Both implement :class:`CheckpointSource`, so the analyzer never knows which one it reads. A source
only lists files, reads small JSON files and reads safetensors *headers*; tensor data is never read.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import (
    MAX_JSON_BYTES,
    NotRegularFile,
    contained_relpath,
    open_regular,
    read_json_bounded,
)

#: Bits per element for every safetensors dtype, copied from safetensors' Rust
#: ``safetensors/src/tensor.rs`` ``Dtype::bitsize()`` (see ../shared/research/aesthetics.md §5).
#: Header shapes are logical element counts, so bytes = ceil(prod(shape) * bits / 8).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}

#: safetensors refuses headers above 100,000,000 bytes (``MAX_HEADER_SIZE`` in safetensors'
#: ``src/tensor.rs``); we refuse them before allocating anything.
MAX_HEADER_BYTES = 100_000_000

#: At most this many files are listed in one checkpoint folder (a 163-shard DeepSeek-V3 has ~170).
MAX_FILES = 20_000


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as described by a safetensors header.

    Attributes:
        name: tensor name (``"mtp.fc.weight"``).
        dtype: safetensors dtype string (``"BF16"``, ``"F8_E4M3"``, ``"U8"`` for packed NVFP4, ``"F4"``).
        shape: logical shape.
        nbytes: storage size in bytes, ``ceil(prod(shape) * DTYPE_BITS[dtype] / 8)``; for an unknown
            dtype, the header's ``data_offsets`` span.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class ShardHeader:
    """The header of one ``.safetensors`` file.

    Attributes:
        file: POSIX path relative to the checkpoint root.
        tensors: tensor name -> :class:`TensorInfo`.
        metadata: the ``__metadata__`` string map (may be empty).
        header_bytes: size of the JSON header in bytes (the 8-byte length prefix excluded).
    """

    file: str
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, str] = field(default_factory=dict)
    header_bytes: int = 0

    @property
    def data_bytes(self) -> int:
        """Sum of tensor sizes in bytes."""
        return sum(t.nbytes for t in self.tensors.values())


class ReadProblem(Exception):
    """A file of the checkpoint could not be read or is malformed (a defect of the artifact or of
    the transport, not of the user's command). The analyzer turns it into a Gap or a finding.

    Attributes:
        file: POSIX path relative to the checkpoint root.
        problem: one line, no trailing period.
        kind: ``"missing"``, ``"unreadable"``, ``"malformed"``, ``"escapes"`` (path leaves the root),
            ``"network"``.
    """

    def __init__(self, file: str, problem: str, kind: str = "malformed") -> None:
        super().__init__(f"{file}: {problem}")
        self.file = file
        self.problem = problem
        self.kind = kind


def tensor_nbytes(dtype: str, shape: Iterable[int], span: int | None = None) -> int:
    """Bytes of a tensor of ``dtype`` and ``shape``; falls back to ``span`` (the header's
    data_offsets difference) for dtypes missing from :data:`DTYPE_BITS`."""
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return int(span or 0)
    return math.ceil(math.prod(shape) * bits / 8)


def parse_header_json(file: str, raw: bytes) -> tuple[dict[str, Any], list[str]]:
    """Strictly decode a safetensors JSON header.

    Args:
        file: name for messages.
        raw: the header bytes (after the 8-byte length).

    Returns:
        ``(header_dict, duplicate_names)``: duplicates are tensor names that occur more than once
        (JSON allows it, safetensors keeps only one, so the header lies about its content).

    Raises:
        ReadProblem: not UTF-8, not JSON, or not a JSON object.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReadProblem(file, f"safetensors header is not UTF-8 (byte {exc.start + 8})") from None
    dups: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                dups.append(k)
            seen[k] = v
        return seen

    try:
        obj = json.loads(text, object_pairs_hook=hook)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ReadProblem(file, f"safetensors header is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ReadProblem(file, "safetensors header is not a JSON object")
    return obj, sorted(set(dups))


def header_from_dict(file: str, obj: Mapping[str, Any], header_bytes: int) -> ShardHeader:
    """Build a :class:`ShardHeader` from a decoded header dict (shared by the local and hub readers).

    Raises:
        ReadProblem: an entry lacks ``dtype``/``shape``/``data_offsets`` or has the wrong types.
    """
    tensors: dict[str, TensorInfo] = {}
    meta_raw = obj.get("__metadata__") or {}
    metadata = {str(k): str(v) for k, v in meta_raw.items()} if isinstance(meta_raw, dict) else {}
    for name, entry in obj.items():
        if name == "__metadata__":
            continue
        try:
            dtype = str(entry["dtype"])
            shape = tuple(int(x) for x in entry["shape"])
            start, end = (int(x) for x in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ReadProblem(file, f"tensor {name!r} has a malformed header entry") from None
        if any(d < 0 for d in shape) or end < start:
            raise ReadProblem(file, f"tensor {name!r} has a negative dimension or offset span")
        tensors[name] = TensorInfo(name, dtype, shape, tensor_nbytes(dtype, shape, end - start))
    return ShardHeader(file=file, tensors=tensors, metadata=metadata, header_bytes=header_bytes)


class CheckpointSource(ABC):
    """Read-only access to a checkpoint's metadata.

    Attributes:
        display: how the checkpoint is named in reports (``"fixtures/.../DeepSeek-V3"``,
            ``"deepseek-ai/DeepSeek-V3@<sha>"``).
        shards_readable: whether shard headers can be read at all (False for a metadata-only folder
            is decided per file by :meth:`has_file`).
    """

    display: str = ""

    @abstractmethod
    def list_files(self) -> tuple[str, ...]:
        """All files of the checkpoint as sorted POSIX paths relative to its root.

        Raises:
            InputError: the root cannot be listed.
        """

    @abstractmethod
    def read_json(self, rel: str) -> Any:
        """Parse a small JSON file of the checkpoint (``config.json``, the index, quant configs).

        Raises:
            ReadProblem: missing, unreadable, too large or invalid JSON.
        """

    @abstractmethod
    def read_header(self, rel: str) -> ShardHeader:
        """Read one ``.safetensors`` header, never its tensor data.

        Raises:
            ReadProblem: missing, unreadable, truncated, oversized or malformed header.
        """

    def read_headers(self, rels: Iterable[str]) -> dict[str, ShardHeader | ReadProblem]:
        """Read many headers; a failure of one file is returned in place of its header.
        Sources that can overlap I/O (the hub) override this."""
        out: dict[str, ShardHeader | ReadProblem] = {}
        for rel in rels:
            try:
                out[rel] = self.read_header(rel)
            except ReadProblem as exc:
                out[rel] = exc
        return out

    def stats(self) -> dict[str, int]:
        """I/O counters for the report (``{"requests": n, "bytes_read": n}`` for the hub); empty locally."""
        return {}

    def describe(self) -> dict[str, Any]:
        """JSON-ready facts about where the metadata came from (``facts["checkpoint"]["source"]``);
        the hub adds repo, revision and the resolved commit sha."""
        return {"kind": "local"}

    def gaps(self) -> tuple[tuple[str | None, str], ...]:
        """What this source could not see beyond per-file problems, as ``(path or None, message)``
        pairs; the analyzer records each as a blocking gap (e.g. an offline hub audit without a
        cached file listing). None for a local folder."""
        return ()


_HF_CACHE_REPO = re.compile(r"^(models|datasets|spaces)--")


def _containment_root(root: Path) -> Path:
    """The folder that symlinks may point into: ``root`` itself, or, for a Hugging Face cache
    snapshot (``.../models--org--name/snapshots/<sha>``), the repo folder whose ``blobs/`` the
    snapshot's symlinks point at (huggingface_hub cache layout)."""
    parts = root.resolve().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and _HF_CACHE_REPO.match(parts[-3]):
        return root.resolve().parents[1]
    return root


class LocalSource(CheckpointSource):
    """A checkpoint on local disk.

    Args:
        root: the checkpoint folder.
        only: restrict the listing to these files (used when the user names a single
            ``.safetensors`` file or an index file).
        display: name used in reports (defaults to ``str(root)``).

    Raises:
        InputError: ``root`` is not a folder.
    """

    def __init__(self, root: Path, *, only: Iterable[str] | None = None, display: str | None = None) -> None:
        if not root.is_dir():
            raise InputError(str(root), "not a folder")
        self.root = root
        self.display = display or str(root)
        self._only = tuple(sorted(only)) if only is not None else None
        self._fence = _containment_root(root).resolve()

    def _path(self, rel: str) -> Path:
        """Resolve ``rel`` under the root; refuse anything that lands outside the containment folder."""
        if contained_relpath(rel) is None:
            raise ReadProblem(rel, "is not a relative path inside the checkpoint folder; not opened", "escapes")
        try:
            target = (self.root / rel).resolve()
        except (OSError, RuntimeError):
            raise ReadProblem(rel, "symlink loop; not opened", "unreadable") from None
        if self._fence not in target.parents:
            raise ReadProblem(rel, "resolves outside the checkpoint folder (symlink); not opened", "escapes")
        return target

    def list_files(self) -> tuple[str, ...]:
        """See :meth:`CheckpointSource.list_files`; hidden folders (``.git``, ``.cache``) are skipped and
        symlinked folders are not descended into."""
        if self._only is not None:
            return self._only
        out: list[str] = []
        try:
            def _raise(exc: OSError) -> None:
                raise exc

            for dirpath, dirnames, filenames in os.walk(self.root, onerror=_raise, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                base = Path(dirpath).relative_to(self.root)
                for f in filenames:
                    if f.startswith("."):
                        continue
                    out.append((base / f).as_posix())
                    if len(out) > MAX_FILES:
                        raise InputError(self.display, f"more than {MAX_FILES} files; not a checkpoint folder?")
        except OSError as exc:
            raise InputError(self.display, f"cannot list: {exc.strerror or exc}") from None
        return tuple(sorted(out))

    def read_json(self, rel: str) -> Any:
        """See :meth:`CheckpointSource.read_json` (limit :data:`mtp_audit.sources.bounded.MAX_JSON_BYTES`)."""
        path = self._path(rel)
        try:
            return read_json_bounded(path, limit=MAX_JSON_BYTES, display=rel)
        except InputError as exc:
            kind = "missing" if exc.problem == "no such file" else "malformed"
            raise ReadProblem(rel, exc.problem, kind) from None

    def read_header(self, rel: str) -> ShardHeader:
        """Read a local shard header: our strict pass (UTF-8, duplicate names, size caps) on the
        header bytes, then ``safetensors.safe_open`` as the authoritative validator (offsets, file
        length). Tensor data is memory-mapped by safetensors but never touched.

        Raises:
            ReadProblem: see :meth:`CheckpointSource.read_header`.
        """
        path = self._path(rel)
        try:
            with os.fdopen(open_regular(path), "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                prefix = fh.read(8)
                if len(prefix) < 8:
                    raise ReadProblem(rel, f"file is {size} bytes, too short for a safetensors header")
                (n,) = struct.unpack("<Q", prefix)
                if n > MAX_HEADER_BYTES:
                    raise ReadProblem(rel, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
                if 8 + n > size:
                    raise ReadProblem(rel, f"header length {n} exceeds the file size {size}")
                raw = fh.read(n)
        except NotRegularFile as exc:
            raise ReadProblem(rel, str(exc), "unreadable") from None
        except FileNotFoundError:
            raise ReadProblem(rel, "no such file", "missing") from None
        except IsADirectoryError:
            raise ReadProblem(rel, "is a directory", "unreadable") from None
        except PermissionError:
            raise ReadProblem(rel, "permission denied", "unreadable") from None
        except OSError as exc:
            raise ReadProblem(rel, f"cannot read: {exc.strerror or exc}", "unreadable") from None
        obj, dups = parse_header_json(rel, raw)
        if dups:
            shown = ", ".join(dups[:3])
            raise ReadProblem(rel, f"header names {len(dups)} tensor(s) more than once: {shown}")
        _validate_with_safetensors(path, rel)
        return header_from_dict(rel, obj, n)


def _validate_with_safetensors(path: Path, rel: str) -> None:
    """Open ``path`` with ``safetensors.safe_open`` (header parse, offset and length checks) and
    close it; tensor data is never read.

    Raises:
        ReadProblem: safetensors rejects the file.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy"):
            pass
    except (SafetensorError, OSError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ReadProblem(rel, f"safetensors rejects the file: {msg}") from None
