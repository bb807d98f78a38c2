"""Where a checkpoint's metadata comes from: a local folder (this module) or the hub (``hub.py``).

Both implement :class:`CheckpointSource`, so the analyzer never knows which one it reads. A source
only lists files, reads small JSON files and reads safetensors *headers*; tensor data is never read.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import accumulate, chain, repeat
from operator import countOf, itemgetter, mul, rshift, sub
from pathlib import Path
from typing import Any, NamedTuple

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import (
    MAX_JSON_BYTES,
    BudgetSpent,
    HeaderCounts,
    NotRegularFile,
    charge_header_json,
    charge_read,
    contained_relpath,
    header_counts,
    open_regular,
    read_json_bounded,
)
from mtp_audit.valueclass import Value

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


class TensorInfo(NamedTuple):
    """One tensor as described by a safetensors header.

    A named tuple, not a dataclass: a 1M-tensor checkpoint builds a million of them, and
    ``tuple.__new__(TensorInfo, ...)`` lets :func:`fast_header` build them all from C with
    ``map`` (no Python frame per tensor). Immutable, compared and hashed as a tuple.

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


_NBYTES = itemgetter(3)  # TensorInfo.nbytes, as a C callable for map()
_SHAPE_OF = itemgetter(2)  # TensorInfo.shape


class TensorColumns(Mapping[str, TensorInfo]):
    """One header's tensors as per-shard columns: tensor name -> :class:`TensorInfo`, built on demand.

    :func:`fast_header` certifies a header from four parallel lists it computes anyway (names, dtypes, shapes as the
    decoded lists, byte sizes) and keeps the dtypes and shapes as they are, the names as one text and the sizes not at
    all (both rebuilt on first use, see the attributes): no tuple per tensor, no shape tuple, no name -> info dict
    (at 92k tensors those cost ~25 ms to build, ~10 ms to merge into the audit's map and ~0.1 s of page faults and
    freeing). A lookup builds the one :class:`TensorInfo` asked for; the name -> position map is built on the first
    lookup by name (iterating, ``len`` and :meth:`infos` need none). Equal to a ``dict`` of the same infos (``Mapping``
    equality). The columns are never changed after construction.

    Attributes:
        names: tensor names, in header order (split from :attr:`text` on first use when only that was kept).
        text: the names joined by newlines, when :func:`fast_header` kept them so (a certified header's names hold no
            newline: JSON strings without escapes hold no control character), else None. One string per header instead
            of one per tensor: at 92k tensors ~9 MB of small strings not kept alive; an audit splits it again only for
            the headers it looks into.
        dtypes: safetensors dtype per tensor.
        shapes: logical shape per tensor (the decoded JSON lists; read-only).
        nbytes: storage bytes per tensor (see :attr:`TensorInfo.nbytes`): the list given, or, when none was (
            :func:`fast_header`, which checked them and let them go), computed from the dtypes and shapes on first use
            (most headers of an audit are never asked: at 92k tensors ~3 MB of ints not kept alive).
    """

    __slots__ = ("_names", "text", "dtypes", "shapes", "_nbytes", "_at")

    def __init__(self, names: list[str] | None, dtypes: list[str], shapes: list[list[int]], nbytes: list[int] | None,
                 text: str | None = None) -> None:
        self._names, self.text, self.dtypes, self.shapes, self._nbytes = names, text, dtypes, shapes, nbytes
        self._at: dict[str, int] | None = None

    @property
    def names(self) -> list[str]:
        got = self._names
        if got is None:
            # text is set when names is not; n names hold n - 1 newlines (a lone empty name is the empty text)
            got = self._names = self.text.split("\n") if self.dtypes else []  # type: ignore[union-attr]
        return got

    @property
    def nbytes(self) -> list[int]:
        got = self._nbytes
        if got is None:  # the sizes fast_header certified: the same products, computed again
            got = self._nbytes = _byte_sizes(self.dtypes, list(map(math.prod, self.shapes)))  # type: ignore[assignment]
        return got  # type: ignore[return-value]

    def _positions(self) -> dict[str, int]:
        at = self._at
        if at is None:
            at = self._at = dict(zip(self.names, range(len(self.names))))
        return at

    def __getitem__(self, name: str) -> TensorInfo:
        i = (self._at or self._positions())[name]
        return _new_info((self.names[i], self.dtypes[i], tuple(self.shapes[i]), self.nbytes[i]))

    def __contains__(self, name: object) -> bool:
        return name in (self._at or self._positions())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.dtypes)

    def infos(self) -> dict[str, TensorInfo]:
        """Every tensor as a plain ``{name: TensorInfo}`` dict, built at C speed (for a caller that looks up most of
        them: one ``map`` over ``tuple.__new__``, no Python frame per tensor)."""
        return dict(zip(self.names, map(_new_info, zip(self.names, self.dtypes, map(tuple, self.shapes), self.nbytes))))


def tensor_infos(tensors: Mapping[str, TensorInfo]) -> dict[str, TensorInfo]:
    """``tensors`` as a plain dict: :meth:`TensorColumns.infos` for columns (C speed), a dict as it is, else a copy."""
    if isinstance(tensors, TensorColumns):
        return tensors.infos()
    return tensors if isinstance(tensors, dict) else dict(tensors)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class ShardHeader(Value):
    """The header of one ``.safetensors`` file.

    Attributes:
        file: POSIX path relative to the checkpoint root.
        tensors: tensor name -> :class:`TensorInfo` (:class:`TensorColumns` from :func:`fast_header`, a dict from the
            strict reader).
        metadata: the ``__metadata__`` string map (may be empty).
        header_bytes: size of the JSON header in bytes (the 8-byte length prefix excluded).
    """

    file: str
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, str] = field(default_factory=dict)
    header_bytes: int = 0

    @cached_property
    def data_bytes(self) -> int:
        """Sum of tensor sizes in bytes (computed once; :func:`fast_header` knows it already: the end of the data)."""
        return sum(map(_NBYTES, self.tensors.values()))

    @cached_property
    def elements(self) -> int:
        """Sum of the tensors' element counts (the product of each shape; computed once, or by :func:`fast_header`)."""
        return sum(map(math.prod, map(_SHAPE_OF, self.tensors.values())))


class ReadProblem(Exception):
    """A file of the checkpoint could not be read or is malformed (a defect of the artifact or of
    the transport, not of the user's command). The analyzer turns it into a Gap or a finding.

    Attributes:
        file: POSIX path relative to the checkpoint root.
        problem: one line, no trailing period.
        kind: ``"missing"``, ``"unreadable"``, ``"malformed"``, ``"escapes"`` (path leaves the root),
            ``"network"``, ``"directory"`` (a folder where a file is expected: every loader's open fails),
            ``"not-a-file"`` (a FIFO, socket or device: never read).
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
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, or an integer past int_max_str_digits
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


_USIZE_END = 1 << 64  # safetensors counts in Rust ``usize`` (64-bit): values must stay below this
#: Longest shape :func:`fast_header` multiplies out: more dimensions above 1 would overflow 2**64 elements, and
#: ``math.prod`` of k large dimensions costs time quadratic in k (40,000 took ~3.4 s); a longer shape (legal only
#: padded with 1s or after a 0) goes to the strict reader, where safetensors' ``checked_mul`` judges it first.
_MAX_RANK = 64
_DTYPE, _SHAPE, _OFFSETS = itemgetter("dtype"), itemgetter("shape"), itemgetter("data_offsets")
_DTYPE_BYTES = {d: b >> 3 for d, b in DTYPE_BITS.items() if b % 8 == 0}
_ABSENT: Any = object()
_new_info = partial(tuple.__new__, TensorInfo)  # TensorInfo._make is a Python function: one frame per tensor


def fast_header(file: str, raw: bytes, file_size: int | None, counts: HeaderCounts | None = None) -> ShardHeader | None:
    """Decode and validate one safetensors header in a single pass, at C speed per tensor.

    The hot path of every checkpoint audit: per tensor, no Python frame runs (``map`` over C
    callables: ``itemgetter``, ``DTYPE_BITS.__getitem__``, ``math.prod``, ``operator.mul``,
    ``tuple.__new__``). It returns a header only when it can *certify* that the strict reader
    (:func:`parse_header_json` + duplicate check + ``safetensors.safe_open`` + :func:`header_from_dict`)
    would accept the same bytes and build the same header; otherwise it returns ``None`` and the caller
    runs that strict reader, which then gives the verdict and the message. So validation is exactly
    as strict as before (our pass plus safetensors'), with the same messages, but the common (valid)
    header is parsed once instead of twice and ``numpy`` (which ``safe_open(framework="numpy")``
    imports) is never loaded for it.

    What is left to ``safetensors.safe_open`` (the installed version, on the real file): the verdict
    and message for every header not certified here, in particular its serde_json grammar (escapes,
    lone surrogates, NaN/Infinity, ``-0``, nesting depth, number forms), entries with extra fields
    (which it accepts), dtypes it may or may not know, and its own wording of offset, size and
    file-length errors.

    Certified, mirroring safetensors 0.8 ``src/tensor.rs`` (``read_metadata``, ``Metadata::validate``)
    and its serde_json grammar:

    - UTF-8; no backslash anywhere (so no escapes: serde_json refuses lone surrogates that Python
      accepts, and unescaped strings let duplicates be counted, below); no ``-0`` (serde_json reads
      it as a float, Python as the integer 0); no float, NaN or Infinity.
    - a JSON object whose values are objects of exactly ``dtype``, ``shape``, ``data_offsets``, plus an
      optional ``__metadata__`` that is ``null`` or maps strings to strings (so nesting is at most 3
      deep: serde_json's recursion limit and NaN/Infinity in ignored fields cannot matter).
    - ``dtype`` a key of :data:`DTYPE_BITS` (safetensors 0.8's ``Dtype`` variants, same spelling);
      ``shape`` a list of non-negative ``int`` below 2**64 (never ``bool``: checked element by element only when
      :func:`_bools_possible`); ``data_offsets`` a list of exactly 2 such ints.
    - element count and bit count below 2**64 (``checked_mul``; a shape with a 0 dimension is
      checked up to that dimension), a whole number of bytes, equal to the span ``end - start``.
    - spans sorted by ``(start, end)`` tile ``[0, data_end)`` with no gap or overlap and, when
      ``file_size`` is given, ``8 + len(raw) + data_end == file_size``.
    - no duplicate key in any object, detected once per header by comparing counts: with no
      backslash every ``:`` outside the decoded strings is a key separator, so the raw ``:`` count
      minus the ``:`` inside the decoded names and metadata must equal the number of keys decoded.

    Args:
        file: POSIX path for the header.
        raw: the JSON header bytes (after the 8-byte length).
        file_size: the file's size in bytes, or None to skip the file-length check.
        counts: ``raw``'s ``[``, ``:``, ``"`` and ``e`` counts when the caller has them already
            (:func:`mtp_audit.sources.bounded.charge_header_json` took them), else None.

    Returns:
        The :class:`ShardHeader`, or ``None`` when the header is not certified (malformed or unusual).
    """
    if b"\\" in raw:
        return None
    signed = b"-" in raw  # without a '-' no number is negative (nor "-0"): the sign checks are skipped
    if signed and b"-0" in raw:
        return None
    decoded = _decode_entries(raw)
    if decoded is None:
        return None
    obj, metadata, keys, colons = decoded
    names = list(obj)
    if not names:
        if (file_size is not None and 8 + len(raw) != file_size) or raw.count(b":") - colons != keys:
            return None
        return ShardHeader(file=file, tensors={}, metadata=metadata, header_bytes=len(raw))
    entries = list(obj.values())
    brackets, raw_colons, quotes, es = header_counts(raw) if counts is None else counts
    in_names = _name_counts(text := "\n".join(names))  # kept, not the names (TensorColumns.text): no name holds a \n
    if not _counts_agree(raw_colons, in_names, len(names), keys, colons) or not _numbers_only_in_arrays(
            brackets, quotes, in_names, keys, metadata, len(names)):
        return None
    columns = _tensor_columns(entries, _bools_possible(es, in_names, len(names), keys, metadata), signed)
    if columns is None:
        return None
    dtypes, shapes, nbytes, data_end, elements = columns
    if data_end >= _USIZE_END or (file_size is not None and 8 + len(raw) + data_end != file_size):
        return None
    header = ShardHeader(file=file, tensors=TensorColumns(None, dtypes, shapes, None, text), metadata=metadata,
                         header_bytes=len(raw))
    header.__dict__["data_bytes"] = data_end  # the spans tile [0, data_end) and each is its tensor's size
    header.__dict__["elements"] = elements
    return header


def _decode_entries(raw: bytes) -> tuple[dict[str, Any], dict[str, str], int, int] | None:
    """``(tensor entries, metadata, keys decoded so far, ':' inside the metadata strings)`` of a header that decodes as
    plain JSON (UTF-8, no float, NaN or Infinity) to an object with a string-to-string ``__metadata__`` or none;
    ``None`` when it does not (the strict reader then judges)."""
    try:
        obj = _STRICT_JSON.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if type(obj) is not dict:
        return None
    meta = obj.pop("__metadata__", _ABSENT)
    keys = len(obj)
    colons = 0
    if meta is not _ABSENT:
        keys += 1
        if meta is not None:
            if type(meta) is not dict or not set(map(type, meta.values())) <= {str}:
                return None
            keys += len(meta)
            colons += sum(k.count(":") + v.count(":") for k, v in meta.items())
    return obj, (meta if type(meta) is dict else {}), keys, colons


#: Every byte but ``:``, ``[`` and ``e`` (:func:`_name_counts`).
_NOT_IN_NAME_COUNTS = bytes(sorted(set(range(256)) - set(b":[e")))


def _name_counts(names: list[str] | str) -> tuple[int, int, int]:
    """The ``:``, ``[`` and ``e`` counts of the tensor names (a list, or their text joined by newlines, a character that
    is none of the three), from one ``bytes.translate`` of their UTF-8 text (an ASCII character is one byte there and
    no other character holds that byte), then two ``bytes.count``: about half the cost of three ``str.count`` over the
    joined names."""
    text = names if isinstance(names, str) else "".join(names)
    kept = text.encode("utf-8", "surrogatepass").translate(None, _NOT_IN_NAME_COUNTS)
    colons, brackets = kept.count(b":"), kept.count(b"[")
    return colons, brackets, len(kept) - colons - brackets


def _counts_agree(raw_colons: int, in_names: tuple[int, int, int], n: int, keys: int, colons: int) -> bool:
    """Whether the raw ``:`` count (``raw_colons``) shows no duplicate key anywhere and no entry with a key beyond its
    three: with no backslash, every ``:`` outside the decoded strings separates a key, so it must equal ``keys``
    decoded plus 3 per entry (``n`` entries) once the ``:`` inside the decoded names (``in_names``, their
    :func:`_name_counts`) and the metadata (``colons``) are taken off. Each entry decodes to at least its three keys
    when :func:`_tensor_columns` finds them, and every object member adds one ``:``, so equal counts mean exactly
    three, and no duplicate collapsed anywhere. Otherwise the strict reader says what is wrong."""
    return raw_colons - colons - in_names[0] == keys + 3 * n


def _numbers_only_in_arrays(brackets: int, quotes: int, in_names: tuple[int, int, int], keys: int,
                            metadata: Mapping[str, str], n: int) -> bool:
    """Whether no string and no list sits inside a ``shape`` or ``data_offsets`` array, by counting (C speed): with no
    backslash every string adds exactly two ``"`` and every list one ``[`` (beside those inside the strings), so a
    header of ``n`` entries (3 keys and a dtype string each) and ``keys`` decoded keys holds ``2 * (keys + 4n +
    len(metadata))`` quotes and ``2n`` lists. A string or a list inside a shape would make ``math.prod`` repeat it
    (``["x", 3000000000]`` is a 3 GB string), so such a header goes to the strict reader, which refuses it.
    ``brackets`` and ``quotes``: the raw header's ``[`` and ``"`` counts; ``in_names``: :func:`_name_counts`."""
    strings = keys + 4 * n + len(metadata)
    inner = in_names[1] + sum(k.count("[") + v.count("[") for k, v in metadata.items())
    return quotes == 2 * strings and brackets == 2 * n + inner


def _bools_possible(es: int, in_names: tuple[int, int, int], n: int, keys: int, metadata: Mapping[str, str]) -> bool:
    """Whether a ``true`` or ``false`` may sit outside the strings of a header whose strings are counted
    (:func:`_counts_agree`, :func:`_numbers_only_in_arrays` hold), from the raw ``e`` count ``es``: with no backslash
    every ``e`` is inside a string or is part of a literal outside them (``true``, ``false``; floats are refused), and
    the strings hold the names' ``e`` (``in_names``, :func:`_name_counts`), one in each of ``"dtype"``, ``"shape"``
    and ``"data_offsets"`` per entry, one in ``"__metadata__"`` when that key is there (``keys`` counts it beside the
    ``n`` names and the metadata's keys), the metadata's, and the dtypes' (none in a known dtype: an unknown one is
    refused anyway). Equal counts mean no literal ``true``/``false`` anywhere, so no per-element type pass is needed
    (``True`` would pass for ``1``)."""
    strings = in_names[2] + 3 * n + (keys - n - len(metadata)) + sum(k.count("e") + v.count("e") for k, v in metadata.items())
    return es != strings


def _tensor_columns(entries: list[dict[str, Any]], bools: bool, signed: bool
                    ) -> tuple[list[str], list[list[int]], list[int], int, int] | None:
    """``(dtypes, shapes, byte sizes, end of the data, total elements)`` of the entries, at C speed per tensor, or
    ``None`` when an entry is not certified (not an object, unknown dtype, a missing key, a non-int or negative number,
    an overflow past 2**64, a partial byte, a size that is not its span, spans that do not tile the data). ``bools``:
    a ``true`` or ``false`` may be in the text (:func:`_bools_possible`), so every number's type is checked. A
    non-object entry makes the ``itemgetter`` maps raise ``TypeError``; an extra key is caught by
    :func:`_counts_agree`."""
    try:
        dtypes = list(map(_DTYPE, entries))
        shapes = list(map(_SHAPE, entries))
        offsets = list(map(_OFFSETS, entries))
    except (KeyError, TypeError):  # not an object, or a key missing
        return None
    n = len(entries)  # countOf compares by identity first: types and small ints, no set built
    if countOf(map(type, shapes), list) != n or countOf(map(type, offsets), list) != n or countOf(map(len, offsets), 2) != n:
        return None
    if countOf(map(type, dtypes), str) != n:  # a dtype that is no string frees two '"' for a string in a shape
        return None
    if max(map(len, shapes)) > _MAX_RANK:  # math.prod of k large dims costs time quadratic in k
        return None
    if bools and (
        set(map(type, chain.from_iterable(shapes))) != {int} or set(map(type, chain.from_iterable(offsets))) != {int}
    ):
        return None
    # No string or list sits in an array (_numbers_only_in_arrays); without true/false outside the strings, a number is an
    # int (floats and NaN are refused by the hooks); any other value (an object or null) makes math.prod, operator.mul
    # or sub raise TypeError below, so no per-element type pass is needed.
    try:
        starts, ends = zip(*offsets)  # each offsets list holds two
        numels = list(map(math.prod, shapes))
        if signed and (min(starts) < 0 or min(chain.from_iterable(shapes), default=0) < 0):
            return None
        if 0 in numels:
            for shape, numel in zip(shapes, numels):
                if numel == 0 and (max(shape) >= _USIZE_END or math.prod(shape[: shape.index(0)]) >= _USIZE_END):
                    return None  # Rust's checked_mul overflows before it reaches the 0
        nbytes = _byte_sizes(dtypes, numels)
        data_end = None if nbytes is None else _tiled_end(starts, ends, nbytes)
        # bits < 2**64 <=> bytes < 2**61 (whole bytes); each size is its span, inside [0, data_end)
        if nbytes is None or data_end is None or (data_end >= _USIZE_END >> 3 and max(nbytes) >= _USIZE_END >> 3):
            return None
    except (TypeError, KeyError):  # KeyError: a dtype safetensors does not know
        return None
    return dtypes, shapes, nbytes, data_end, sum(numels)


def _byte_sizes(dtypes: list[str], numels: list[int]) -> list[int] | None:
    """Bytes of each tensor (``numel * bits / 8``), or ``None`` when a sub-byte tensor's bit count reaches 2**64 (Rust
    ``checked_mul``) or is not a whole number of bytes. A whole-byte tensor's bit count is below 2**64 when its size
    is below 2**61, which the caller checks once on the end of the tiled data (:func:`_tensor_columns`).

    Raises:
        KeyError: a dtype outside :data:`DTYPE_BITS`.
        TypeError: an element count that is not an int.
    """
    try:  # whole-byte dtypes only (the common case): bytes directly
        return list(map(mul, numels, map(_DTYPE_BYTES.__getitem__, dtypes)))
    except KeyError:  # a sub-byte dtype (F4, F6_*) or an unknown one
        pass
    nbits = list(map(mul, numels, map(DTYPE_BITS.__getitem__, dtypes)))
    if max(nbits) >= _USIZE_END or any(map((7).__and__, nbits)):
        return None
    return list(map(rshift, nbits, repeat(3)))


def _tiled_end(starts: tuple[int, ...], ends: tuple[int, ...], nbytes: list[int]) -> int | None:
    """The end of the data when each span ``ends[i] - starts[i]`` is its tensor's size ``nbytes[i]`` and the spans tile
    ``[0, end)`` with no gap or overlap, else ``None``. Laid out in file order (the common case) the ends are the
    running sums of the sizes (``ends`` and ``nbytes`` have one item per tensor) and each start is the end before it:
    no span list and no sort. The sums are one tuple compared whole (~15 % less than an ``operator.eq`` call per
    tensor).

    Raises:
        TypeError: an offset that is not a number.
    """
    if starts and starts[0] == 0 and ends == (sums := tuple(accumulate(nbytes))) and starts[1:] == sums[:-1]:
        return ends[-1]
    if list(map(sub, ends, starts)) != nbytes:
        return None  # also catches end < start: nbytes is never negative
    s_sorted, e_sorted = zip(*sorted(zip(starts, ends)))
    if s_sorted[0] != 0 or s_sorted[1:] != e_sorted[:-1]:
        return None
    return e_sorted[-1]


def _refuse(token: str) -> Any:
    """``json.loads`` hook for floats and NaN/Infinity: never part of a certifiable header."""
    raise ValueError(token)


#: ``json.loads(text, parse_float=_refuse, parse_constant=_refuse)`` made once (``json.loads`` with hooks builds a
#: decoder and its scanner on every call).
_STRICT_JSON = json.JSONDecoder(parse_float=_refuse, parse_constant=_refuse)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while bulk-decoding JSON (a 1M-tensor checkpoint
    allocates millions of dicts, lists and tuples, none of them in a cycle: each generational
    collection would walk them all again, which makes the parse superlinear). Reference counting
    still frees everything. On exit the collector is re-enabled (if it was) with every object that is
    still alive moved to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``, which moves
    them without walking them), so re-enabling does not start one huge young-generation collection
    over the whole parse; cycles among them are still found by the next full collection. A host process
    that froze objects itself (``gc.freeze()`` before forking workers) keeps them frozen: the
    freeze/unfreeze step is skipped then, and the collector is left as the caller had it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


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
        with paused_gc():
            for rel in rels:
                try:
                    out[rel] = self.read_header(rel)
                except ReadProblem as exc:
                    out[rel] = exc
        return out

    def linked_out(self, rel: str) -> str | None:
        """The symlinked folder of ``rel`` (``"sub"`` for ``sub/model.safetensors``) when the path leaves the checkpoint
        through it, else None. Such a file is not listed (:meth:`list_files` does not descend into symlinked folders)
        and never opened. None for sources without symlinks (the hub)."""
        return None

    def not_a_file(self, rel: str) -> ReadProblem | None:
        """A problem of kind ``"directory"`` / ``"not-a-file"`` when ``rel`` is in the checkpoint but is not a regular
        file (a folder named like a shard, which :meth:`list_files` walks into and so never lists), else None
        (a regular file, nothing there, or a path out of the folder). None for sources without such entries (the hub)."""
        return None

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
        real = root.resolve()
        self._flat_root = real if real == self._fence or self._fence in real.parents else None
        self._flat_text = os.fspath(real)

    def _path(self, rel: str) -> Path:
        """Resolve ``rel`` under the root; refuse anything that lands outside the containment folder. A file at the
        root that is not a symlink (every shard of a plain folder) is the resolved root joined with its name: one
        ``lstat`` instead of one per component of the path (``Path.resolve``), with the same answer
        (:meth:`_root_entry_mode`, whose name test is :func:`~mtp_audit.sources.bounded.contained_relpath`'s for a name
        without ``/``)."""
        flat = self._flat_root
        if flat is not None and self._root_entry_mode(rel):  # something there, no symlink
            return flat / rel
        if contained_relpath(rel) is None:
            raise ReadProblem(rel, "is not a relative path inside the checkpoint folder; not opened", "escapes")
        try:  # missing or unreadable, a symlink, a path with folders: Path.resolve, as before
            target = (self.root / rel).resolve()
        except (OSError, RuntimeError):
            raise ReadProblem(rel, "symlink loop; not opened", "unreadable") from None
        except UnicodeEncodeError:  # a lone surrogate (an index may name one): no file name of this system spells it
            raise ReadProblem(rel, "no such file", "missing") from None
        if self._fence not in target.parents:
            raise ReadProblem(rel, f"resolves outside the checkpoint folder ({self._link_words(rel)}); not opened", "escapes")
        return target

    def _link_words(self, rel: str) -> str:
        """``symlink to <its text>`` for a path that is itself a symlink (its text read, the target never looked at:
        whether a file is there is not checked), else ``symlink``."""
        try:
            text = os.readlink(self.root / rel)
        except (OSError, ValueError):
            return "symlink"
        shown = text if len(text) <= 120 and text.isprintable() else ascii(text[:120])
        return f"symlink to {shown}; whether a file is there was not checked"

    def not_a_file(self, rel: str) -> ReadProblem | None:
        """See :meth:`CheckpointSource.not_a_file` (one ``stat`` of a path inside the folder; nothing is opened). A plain
        name at the root is answered by one ``lstat`` (:meth:`_root_entry_mode`); anything else resolves (:meth:`_path`)."""
        mode = self._root_entry_mode(rel)
        if mode is None:
            try:
                mode = os.stat(self._path(rel)).st_mode
            except (ReadProblem, OSError):
                return None
        if mode == 0:  # nothing there
            return None
        if stat.S_ISREG(mode):
            return None
        if stat.S_ISDIR(mode):
            return ReadProblem(rel, "is a directory, expected a regular file; not read", "directory")
        what = "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        return ReadProblem(rel, f"is {what}, expected a regular file; not read", "not-a-file")

    def _root_entry_mode(self, rel: str) -> int | None:
        """The ``st_mode`` of ``rel`` when it is a plain name at the root of a folder that is not reached through a
        symlink into another tree (``_flat_root``) and is no symlink itself, from one ``lstat`` of the resolved root
        joined with the name; ``0`` when nothing is there; ``None`` when :meth:`_path` must answer (a symlink, a name
        with a ``/``, one :func:`~mtp_audit.sources.bounded.contained_relpath` refuses, any other ``lstat`` error).
        ``os.stat`` of what :meth:`_path` returns gives the same mode for such a name: the resolved root joined with a
        name that is no symlink is the path ``Path.resolve`` gives, and nothing there is nothing there either way."""
        if (self._flat_root is None or not rel or "/" in rel or "\x00" in rel or "\\" in rel or rel in (".", "..")
                or (len(rel) > 1 and rel[1] == ":")):
            return None
        try:
            mode = os.lstat(os.path.join(self._flat_text, rel)).st_mode
        except (FileNotFoundError, UnicodeEncodeError):  # a lone surrogate spells no file name here: nothing there
            return 0
        except OSError:
            return None
        return None if stat.S_ISLNK(mode) else mode

    def linked_out(self, rel: str) -> str | None:
        """See :meth:`CheckpointSource.linked_out`: the first folder of ``rel`` that is a symlink, when ``rel`` resolves
        outside the containment folder (:meth:`_path` refuses it)."""
        if "/" not in rel or contained_relpath(rel) is None:
            return None
        try:
            self._path(rel)
            return None
        except ReadProblem as exc:
            if exc.kind != "escapes":
                return None
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            link = "/".join(parts[:i])
            if (self.root / link).is_symlink():
                return link
        return None

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
            return read_json_bounded(path, limit=MAX_JSON_BYTES, display=rel, follow=False)
        except BudgetSpent as exc:
            raise ReadProblem(rel, exc.problem, "unreadable") from None
        except InputError as exc:
            kind = "missing" if exc.problem == "no such file" else "malformed"
            raise ReadProblem(rel, exc.problem, kind) from None

    def read_header(self, rel: str) -> ShardHeader:
        """Read a local shard header: size caps on the length prefix, then :func:`fast_header`, which
        decodes and validates the header in one pass and accepts only what the strict reader would
        accept. Anything it does not certify goes to the strict reader: our pass (UTF-8, JSON,
        duplicate names), then ``safetensors.safe_open`` as the authoritative validator, whose verdict
        and message we report (its serde_json grammar, dtype variants, offset tiling, file length).
        Tensor data is never read (safetensors memory-maps the file but never touches it).

        Raises:
            ReadProblem: see :meth:`CheckpointSource.read_header`.
        """
        path = self._path(rel)
        raw, size, counts = _read_header_bytes(path, rel)
        fast = fast_header(rel, raw, size, counts)
        if fast is not None:
            return fast
        obj, dups = parse_header_json(rel, raw)
        if dups:
            shown = ", ".join(dups[:3])
            raise ReadProblem(rel, f"header names {len(dups)} tensor(s) more than once: {shown}")
        _validate_with_safetensors(raw, size, rel)
        return header_from_dict(rel, obj, len(raw))


def _read_header_bytes(path: Path, rel: str) -> tuple[bytes, int, HeaderCounts | None]:
    """``(header JSON bytes, file size, its byte counts or None)`` of a shard, read through one descriptor opened with
    ``O_NOFOLLOW`` (``path`` is already resolved and checked to stay inside the checkpoint), counted against the
    run's totals (the counts are the ones :func:`mtp_audit.sources.bounded.charge_header_json` took; None outside a
    run).

    Raises:
        ReadProblem: missing, not a regular file (a FIFO or symlink swapped in), too short, a length
            prefix over the limits, or a run total spent.
    """
    try:
        fd = open_regular(path, follow=False)
        try:
            size = os.fstat(fd).st_size
            prefix = os.pread(fd, 8, 0)
            if len(prefix) < 8:
                raise ReadProblem(rel, f"file is {size} bytes, too short for a safetensors header")
            (n,) = struct.unpack("<Q", prefix)
            if n > MAX_HEADER_BYTES:
                raise ReadProblem(rel, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
            if 8 + n > size:
                raise ReadProblem(rel, f"header length {n} exceeds the file size {size}")
            charge_read(8 + n, rel)
            raw = _pread_exact(fd, n, 8)
            counts = charge_header_json(raw, rel)
        finally:
            os.close(fd)
    except BudgetSpent as exc:
        raise ReadProblem(rel, exc.problem, "unreadable") from None
    except NotRegularFile as exc:
        raise ReadProblem(rel, str(exc), {"directory": "directory", "other": "not-a-file"}.get(exc.entry, "unreadable")) from None
    except FileNotFoundError:
        raise ReadProblem(rel, "no such file", "missing") from None
    except IsADirectoryError:
        raise ReadProblem(rel, "is a directory", "directory") from None
    except PermissionError:
        raise ReadProblem(rel, "permission denied", "unreadable") from None
    except OSError as exc:
        raise ReadProblem(rel, f"cannot read: {exc.strerror or exc}", "unreadable") from None
    return raw, size, counts


def _pread_exact(fd: int, n: int, offset: int) -> bytes:
    """``n`` bytes of ``fd`` from ``offset`` (fewer when the file ends first)."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = os.pread(fd, n - got, offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


#: The problem of a header only safetensors can judge when numpy (which it needs for that) is not installed.
NO_NUMPY = ("its header is one that only safetensors can judge (the fast reader does not certify it), and safetensors "
            "needs numpy for that: numpy is not installed (pip install \"mtp-audit[numpy]\")")


def _validate_with_safetensors(raw: bytes, size: int, rel: str) -> None:
    """Let ``safetensors.safe_open`` judge the header bytes already read (``raw``, from a file of ``size``
    bytes): they are written to a private sparse temporary file of the same length (length prefix and
    header, the data region a hole), which safetensors opens, so the audited path is never opened a
    second time (a file swapped for a FIFO or a symlink after the first read is never followed).
    Tensor data is never read.

    ``safe_open(framework="numpy")`` imports numpy, an optional dependency (``pip install "mtp-audit[numpy]"``):
    without it the header is not judged, which is said (an ``unreadable`` problem: a gap, never a finding).

    Raises:
        ReadProblem: safetensors rejects the header, numpy is not installed, or no temporary file could be written.
    """
    import tempfile

    from safetensors import SafetensorError, safe_open

    try:
        with tempfile.TemporaryDirectory(prefix="mtp-audit-") as tmp:
            copy = os.path.join(tmp, "shard.safetensors")
            with open(copy, "wb") as fh:
                fh.write(struct.pack("<Q", len(raw)) + raw)
                fh.truncate(size)
            try:
                with safe_open(copy, framework="numpy"):
                    pass
            except ImportError:
                raise ReadProblem(rel, NO_NUMPY, "unreadable") from None
            except (SafetensorError, OSError, ValueError) as exc:
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ReadProblem(rel, f"safetensors rejects the file: {msg}") from None
    except OSError as exc:
        raise ReadProblem(rel, f"cannot check the header with safetensors: {exc.strerror or exc}", "unreadable") from None
