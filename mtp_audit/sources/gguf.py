"""A streaming, bounded reader for GGUF headers: key/value metadata and tensor infos, never tensor data.

GGUF (the llama.cpp file format, spec: ggml-org/ggml ``docs/gguf.md``; reader semantics:
ggml-org/llama.cpp ``ggml/src/gguf.cpp``) starts with ``"GGUF"``, a uint32 version, the tensor and
key/value counts, the key/value pairs, then one info record per tensor (name, dimensions, GGML type,
offset into the data section). The data section starts at the next multiple of ``general.alignment``
(default 32). Versions 2 and 3 use 64-bit counts and string lengths; version 1 used 32-bit ones.
Version 3 files may be big-endian (the version reads byte-swapped).

Why not ``gguf.GGUFReader``: it maps the whole file and builds one numpy view per array element, so a
248k-token vocabulary costs tens of seconds and hundreds of MB. This reader walks the header once,
keeps scalars and small arrays, counts the elements of large arrays (the tokenizer's ``tokens``,
``scores``, ``token_type``, ``merges``) without building them, and stops at the end of the tensor
infos. The ``gguf`` package is used by the tests as the oracle for this module, never at run time.

Every read is bounded (:class:`GGUFLimits`): header bytes, key/value and tensor counts, string lengths,
dimensions. A malformed header raises :class:`~mtp_audit.sources.local.ReadProblem` (kind
``"malformed"``) with one line naming the problem and the byte offset.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mtp_audit.sources.bounded import open_regular
from mtp_audit.sources.local import ReadProblem

#: The four magic bytes at offset 0 (``GGUF_MAGIC`` in ggml/src/gguf.cpp).
MAGIC = b"GGUF"

#: GGUF value types: id -> (name, struct code, size in bytes); 8 = string, 9 = array
#: (``enum gguf_type`` in ggml/include/gguf.h; ``GGUFValueType`` in gguf-py 0.19.0 constants.py:4157).
VALUE_TYPES: dict[int, tuple[str, str, int]] = {
    0: ("UINT8", "B", 1),
    1: ("INT8", "b", 1),
    2: ("UINT16", "H", 2),
    3: ("INT16", "h", 2),
    4: ("UINT32", "I", 4),
    5: ("INT32", "i", 4),
    6: ("FLOAT32", "f", 4),
    7: ("BOOL", "?", 1),
    8: ("STRING", "", 0),
    9: ("ARRAY", "", 0),
    10: ("UINT64", "Q", 8),
    11: ("INT64", "q", 8),
    12: ("FLOAT64", "d", 8),
}
STRING = 8
ARRAY = 9

#: GGML tensor types: id -> (name, block size in elements, bytes per block). Ids from ``enum ggml_type``
#: in ggml-org/llama.cpp ``ggml/include/ggml.h`` (MXFP4 = 39 at commit 004eaba8); NVFP4 = 40 and
#: Q1_0 = 41 from gguf-py 0.19.0 ``GGMLQuantizationType`` (constants.py:4059-4093, built from ggml.h at
#: llama.cpp master, 2026); block sizes from ``GGML_QUANT_SIZES`` (constants.py:4232-4268), which
#: mirror ``type_traits`` in ggml/src/ggml.c. 31-33 and 36-38 were removed from GGUF files. Q2_0 = 42 (64, 18): ggml.h
#: ``GGML_TYPE_Q2_0 = 42`` and gguf-py ``GGML_QUANT_SIZES`` after 0.19.0 (llama.cpp master, late 2026).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}

#: ``GGML_MAX_DIMS`` (ggml/include/ggml.h): a tensor info has at most 4 dimensions.
MAX_DIMS = 4

#: Default ``general.alignment`` (``GGUF_DEFAULT_ALIGNMENT`` in ggml/include/gguf.h).
DEFAULT_ALIGNMENT = 32

#: Keys whose arrays are never built by default: the tokenizer's vocabulary (hundreds of thousands of
#: elements); their type and element count are kept.
SKIP_PREFIXES = ("tokenizer.ggml.",)


@dataclass(frozen=True)
class GGUFLimits:
    """Bounds on one header read; a header past any of them is refused (:class:`ReadProblem`).

    Attributes:
        max_header_bytes: bytes from offset 0 to the end of the tensor infos. The 248k-token
            Qwen3.5/3.6 header is ~10.6 MB; 256 MiB leaves room for huge vocabularies and chat templates.
        max_kv: key/value pairs (real files: 30-60).
        max_tensors: tensor infos (DeepSeek-V3 with split experts: ~2,000; 1M leaves room).
        max_string: bytes of one string (a key or a value; chat templates are ~10-100 KB).
        keep_array: arrays with at most this many elements are built; longer ones are counted only.
    """

    max_header_bytes: int = 256 * 1024 * 1024
    max_kv: int = 65_536
    max_tensors: int = 1_000_000
    max_string: int = 16 * 1024 * 1024
    keep_array: int = 65_536


class SkippedArray(NamedTuple):
    """An array whose elements were walked but not built.

    Attributes:
        item_type: GGUF value type id of the elements (never 9 for the outer array's elements here).
        count: number of elements.
        nbytes: bytes the array's elements occupy in the file.
    """

    item_type: int
    count: int  # type: ignore[assignment]  # the GGUF field's name; it shadows tuple.count on purpose
    nbytes: int


class GGUFTensor(NamedTuple):
    """One tensor info record.

    Attributes:
        name: tensor name (``"blk.40.nextn.eh_proj.weight"``).
        dims: dimensions in GGML order (``ne[0]`` first: the row length).
        ggml_type: GGML type id (:data:`GGML_TYPES`).
        offset: byte offset inside the data section.
        nbytes: bytes of the tensor's data (elements / block size * bytes per block).
    """

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int
    nbytes: int

    @property
    def type_name(self) -> str:
        """The GGML type's name (``"Q8_0"``, ``"NVFP4"``)."""
        return GGML_TYPES[self.ggml_type][0]


@dataclass
class GGUFHeader:
    """A parsed GGUF header.

    Attributes:
        file: the file as the caller named it.
        version: 1, 2 or 3.
        byte_order: ``"<"`` (little-endian) or ``">"``.
        kv: key -> value: int/float/bool/str scalars, lists for built arrays (nested lists for arrays of
            arrays), :class:`SkippedArray` for counted ones.
        kv_types: key -> GGUF value type id (for arrays: ``(9, item type)``).
        tensors: tensor infos in file order.
        alignment: the data section's alignment.
        header_bytes: bytes from 0 to the end of the tensor infos.
        data_offset: where the data section starts (``header_bytes`` rounded up to ``alignment``).
        file_size: size of the file when known.
    """

    file: str
    version: int
    byte_order: str
    kv: dict[str, Any] = field(default_factory=dict)
    kv_types: dict[str, Any] = field(default_factory=dict)
    tensors: list[GGUFTensor] = field(default_factory=list)
    alignment: int = DEFAULT_ALIGNMENT
    header_bytes: int = 0
    data_offset: int = 0
    file_size: int | None = None

    @property
    def data_bytes(self) -> int:
        """Sum of the tensors' data bytes."""
        return sum(t.nbytes for t in self.tensors)

    @property
    def architecture(self) -> str | None:
        """``general.architecture`` when it is a string."""
        arch = self.kv.get("general.architecture")
        return arch if isinstance(arch, str) else None


#: ``fetch(offset, size) -> bytes``: at most ``size`` bytes from ``offset``; shorter only at end of file.
Fetch = Callable[[int, int], bytes]

#: Bytes fetched per read beyond what is needed (local reads and hub range requests alike).
CHUNK = 1 << 20


class _Cursor:
    """A forward-only window over ``fetch``: holds at most one chunk plus what one item needs."""

    def __init__(self, fetch: Fetch, file: str, limit: int, file_size: int | None, chunk: int = CHUNK) -> None:
        self.fetch = fetch
        self.file = file
        self.size_limit = limit
        self.file_size = file_size
        self.limit = limit if file_size is None else min(limit, file_size)
        self.chunk = chunk
        self.buf = b""
        self.start = 0  # file offset of buf[0]
        self.pos = 0  # file offset of the next byte

    def fail(self, problem: str, at: int | None = None) -> ReadProblem:
        return ReadProblem(self.file, f"{problem} (at byte {self.pos if at is None else at:,})", "malformed")

    def past(self, end: int) -> ReadProblem:
        if self.file_size is not None and end > self.file_size:
            return self.fail(f"truncated GGUF header: reading to byte {end:,} runs past the end of the {self.file_size:,}-byte file")
        return self.fail(f"GGUF header longer than {self.size_limit:,} bytes; not read further")

    def need(self, n: int) -> int:
        """Make ``n`` bytes from ``pos`` available; returns their index in ``buf``."""
        end = self.pos + n
        if end > self.limit:
            raise self.past(end)
        have = self.start + len(self.buf)
        if end <= have:
            return self.pos - self.start
        keep = self.buf[self.pos - self.start:] if self.pos < have else b""
        at = max(self.pos, have)
        want = max(end - at, self.chunk)
        got = self.fetch(at, want) if end > at else b""
        self.buf = keep + got
        self.start = self.pos
        if self.start + len(self.buf) < end:
            raise self.fail(f"truncated GGUF header: {n} byte(s) needed, file ends at byte {self.start + len(self.buf)}")
        return 0

    def unpack(self, fmt: str, size: int) -> Any:
        i = self.need(size)
        self.pos += size
        return struct.unpack_from(fmt, self.buf, i)[0]

    def take(self, n: int) -> bytes:
        i = self.need(n)
        self.pos += n
        return self.buf[i:i + n]

    def skip(self, n: int) -> None:
        if self.pos + n > self.limit:
            raise self.past(self.pos + n)
        self.pos += n


class _Parser:
    """One header walk; the byte order and the width of counts depend on the version."""

    def __init__(self, cur: _Cursor, limits: GGUFLimits, keep: Callable[[str, int], bool]) -> None:
        self.cur = cur
        self.limits = limits
        self.keep = keep
        self.bo = "<"
        self.size_fmt, self.size_len = "Q", 8
        self.last_item = -1  # element type of the array read last

    def size(self) -> int:
        return int(self.cur.unpack(self.bo + self.size_fmt, self.size_len))

    def string(self, what: str) -> str:
        at = self.cur.pos
        n = self.size()
        if self.cur.pos + n > self.cur.limit:
            raise self.cur.fail(f"{what} claims {n:,} bytes, past the end of the "
                                f"{'file' if self.cur.limit == self.cur.file_size else 'header limit'}", at)
        if n > self.limits.max_string:
            raise self.cur.fail(f"{what} is {n:,} bytes long (limit {self.limits.max_string:,})", at)
        return self.cur.take(n).decode("utf-8", errors="replace")

    def value_type(self, what: str) -> int:
        at = self.cur.pos
        t = int(self.cur.unpack(self.bo + "I", 4))
        if t not in VALUE_TYPES:
            raise self.cur.fail(f"unknown GGUF value type {t} for {what}", at)
        return t

    def scalar(self, t: int) -> Any:
        _, code, n = VALUE_TYPES[t]
        return self.cur.unpack(self.bo + code, n)

    def value(self, t: int, key: str, depth: int = 0) -> Any:
        if t == STRING:
            return self.string(f"string value of {key!r}")
        if t != ARRAY:
            return self.scalar(t)
        return self.array(key, depth)

    def array(self, key: str, depth: int) -> Any:
        item = self.value_type(f"an element of {key!r}")
        at = self.cur.pos
        count = self.size()
        least = (VALUE_TYPES[item][2] or self.size_len) if item != ARRAY else 4 + self.size_len
        room = self.cur.limit - self.cur.pos
        if count * least > room:
            where = "the file" if self.cur.limit == self.cur.file_size else "the header limit"
            raise self.cur.fail(f"array {key!r} claims {count:,} elements, more than {where} can hold", at)
        if item == ARRAY and depth >= 2:
            raise self.cur.fail(f"arrays nested deeper than 3 levels in {key!r}", at)
        if self.keep(key, count) or item == ARRAY:
            values = [self.value(item, key, depth + 1) for _ in range(count)]
            self.last_item = item
            return values
        start = self.cur.pos
        if item == STRING:
            self.skip_strings(count, key)
        else:
            self.cur.skip(count * VALUE_TYPES[item][2])
        self.last_item = item
        return SkippedArray(item, count, self.cur.pos - start)

    def skip_strings(self, count: int, key: str) -> None:
        """Walk ``count`` strings without decoding them (the tokenizer vocabulary: ~500k strings). Strings that fit
        the read window are stepped over in a tight loop (a window is at most :data:`CHUNK` bytes, below the string
        limit); one that runs past it is length-checked and skipped without being read."""
        cur, width, limit = self.cur, self.size_len, self.limits.max_string
        unpack = struct.Struct(self.bo + self.size_fmt).unpack_from
        left = count
        while left:
            i = cur.need(width)
            buf, base = cur.buf, cur.start
            end = len(buf)
            safe_end = end - width
            p = i
            done = left
            for k in range(left):
                if p > safe_end:
                    done = k
                    break
                q = p + width + unpack(buf, p)[0]
                if q > end:
                    done = k
                    break
                p = q
            left -= done
            cur.pos = base + p
            if left and p <= safe_end:  # this string runs past the window: skip it unread
                n = unpack(buf, p)[0]
                if n > limit:
                    raise cur.fail(f"string of {n:,} bytes in {key!r} (limit {limit:,})", base + p)
                cur.skip(width + n)
                left -= 1

    def tensor(self, index: int) -> GGUFTensor:
        name = self.string(f"name of tensor {index}")
        at = self.cur.pos
        n_dims = int(self.cur.unpack(self.bo + "I", 4))
        if n_dims > MAX_DIMS:
            raise self.cur.fail(f"tensor {name!r} has {n_dims} dimensions (GGML_MAX_DIMS is {MAX_DIMS})", at)
        dfmt, dlen = (self.size_fmt, self.size_len) if self.size_len == 8 else ("I", 4)
        dims = tuple(int(self.cur.unpack(self.bo + dfmt, dlen)) for _ in range(n_dims))
        at = self.cur.pos
        gtype = int(self.cur.unpack(self.bo + "I", 4))
        if gtype not in GGML_TYPES:
            raise self.cur.fail(f"tensor {name!r} has unknown GGML type {gtype}", at)
        offset = int(self.cur.unpack(self.bo + "Q", 8))
        return GGUFTensor(name, dims, gtype, offset, self.nbytes(name, dims, gtype, at))

    def nbytes(self, name: str, dims: tuple[int, ...], gtype: int, at: int) -> int:
        tname, block, size = GGML_TYPES[gtype]
        elements = 1
        for d in dims:
            if d < 0 or d >= 1 << 62:
                raise self.cur.fail(f"tensor {name!r} has dimension {d}", at)
            elements *= d
            if elements >= 1 << 62:
                raise self.cur.fail(f"tensor {name!r} has more than 2^62 elements", at)
        if dims and dims[0] % block:
            raise self.cur.fail(f"tensor {name!r}: row length {dims[0]} is not a multiple of the {tname} block size {block}", at)
        return elements // block * size


def _keep_default(limits: GGUFLimits) -> Callable[[str, int], bool]:
    def keep(key: str, count: int) -> bool:
        return count <= limits.keep_array and not key.startswith(SKIP_PREFIXES)

    return keep


def parse_gguf(
    fetch: Fetch,
    file: str,
    file_size: int | None = None,
    *,
    limits: GGUFLimits = GGUFLimits(),
    keep_arrays: bool | Callable[[str, int], bool] | None = None,
    check_layout: bool = True,
) -> GGUFHeader:
    """Read a GGUF header through ``fetch`` (see :data:`Fetch`).

    Args:
        fetch: byte source; called with increasing offsets, about :data:`CHUNK` bytes at a time.
        file: the file's name for messages.
        file_size: total file size when known; enables the checks that the tensor data fits the file.
        limits: bounds (:class:`GGUFLimits`).
        keep_arrays: ``True`` builds every array (what ``gguf.GGUFReader`` does), ``False`` none, a
            callable ``(key, count) -> bool`` decides per array; default: arrays of at most
            ``limits.keep_array`` elements outside ``tokenizer.ggml.*``.
        check_layout: check the data section as llama.cpp does (tensor offsets in order, each padded to the
            alignment; the data inside the file); ``False`` reads what ``gguf.GGUFReader`` reads.

    Returns:
        The header. Tensor data is never read.

    Raises:
        ReadProblem: (kind ``"malformed"``) not a GGUF file, a version other than 1-3, truncated, a
            count/length past :class:`GGUFLimits` or past the file, an unknown value or GGML type, a
            duplicate key or tensor name, a bad ``general.alignment``, tensor offsets out of order or
            past the file's end (the checks ``ggml/src/gguf.cpp`` makes when llama.cpp loads the file).
    """
    keep = (lambda k, c: keep_arrays) if isinstance(keep_arrays, bool) else keep_arrays or _keep_default(limits)
    cur = _Cursor(fetch, file, limits.max_header_bytes, file_size)
    if cur.take(4) != MAGIC:
        raise ReadProblem(file, "not a GGUF file (no 'GGUF' magic at byte 0)", "malformed")
    p = _Parser(cur, limits, keep)
    raw = cur.take(4)
    version = struct.unpack("<I", raw)[0]
    if version & 0xFFFF == 0 and version:
        p.bo, version = ">", struct.unpack(">I", raw)[0]
    if version not in (1, 2, 3):
        raise ReadProblem(file, f"unsupported GGUF version {version} (known: 1, 2, 3)", "malformed")
    if version == 1:
        p.size_fmt, p.size_len = "I", 4
    header = GGUFHeader(file, version, p.bo, file_size=file_size)
    n_tensors, n_kv = p.size(), p.size()
    if n_kv > limits.max_kv:
        raise cur.fail(f"{n_kv:,} key/value pairs claimed (limit {limits.max_kv:,})")
    if n_tensors > limits.max_tensors:
        raise cur.fail(f"{n_tensors:,} tensors claimed (limit {limits.max_tensors:,})")
    room = cur.limit - cur.pos
    if n_kv * (p.size_len + 5) > room or n_tensors * (p.size_len + 16) > room:
        raise cur.fail(f"truncated GGUF header: {n_tensors:,} tensors and {n_kv:,} key/value pairs claimed, more than "
                       f"the remaining {room:,} bytes can hold")
    _read_kv(p, header, n_kv)
    _read_tensors(p, header, n_tensors)
    _place_data(header, check_layout)
    return header


def _read_kv(p: _Parser, header: GGUFHeader, n_kv: int) -> None:
    for i in range(n_kv):
        at = p.cur.pos
        key = p.string(f"key {i}")
        if key in header.kv:
            raise p.cur.fail(f"duplicate key {key!r}", at)
        t = p.value_type(repr(key))
        header.kv[key] = p.value(t, key)
        header.kv_types[key] = (ARRAY, p.last_item) if t == ARRAY else t


def _read_tensors(p: _Parser, header: GGUFHeader, n_tensors: int) -> None:
    seen: set[str] = set()
    for i in range(n_tensors):
        at = p.cur.pos
        t = p.tensor(i)
        if t.name in seen:
            raise p.cur.fail(f"duplicate tensor name {t.name!r}", at)
        seen.add(t.name)
        header.tensors.append(t)
    header.header_bytes = p.cur.pos


def _place_data(header: GGUFHeader, check_layout: bool) -> None:
    align = header.kv.get("general.alignment", DEFAULT_ALIGNMENT)
    if "general.alignment" in header.kv and (header.kv_types["general.alignment"] != 4 or align <= 0 or align & (align - 1)):
        raise ReadProblem(header.file, f"general.alignment {align!r} is not a power of 2 stored as UINT32", "malformed")
    header.alignment = align
    header.data_offset = -(-header.header_bytes // align) * align
    if not check_layout:
        return
    expected = 0
    for t in header.tensors:
        if t.offset != expected:
            raise ReadProblem(
                header.file, f"tensor {t.name!r} has offset {t.offset}, expected {expected} (llama.cpp's gguf reader refuses the file)",
                "malformed")
        expected += -(-t.nbytes // align) * align
    if header.file_size is not None and header.tensors:
        end = header.data_offset + header.tensors[-1].offset + header.tensors[-1].nbytes
        if end > header.file_size:
            raise ReadProblem(
                header.file, f"tensor data ends at byte {end:,}, past the end of the {header.file_size:,}-byte file (truncated)",
                "malformed")


def read_gguf_file(path: str | os.PathLike[str], *, display: str | None = None, **options: Any) -> GGUFHeader:
    """Read the GGUF header of a local regular file (options as :func:`parse_gguf`).

    Raises:
        ReadProblem: malformed (see :func:`parse_gguf`), or ``"unreadable"`` (not a regular file, I/O error).
    """
    name = display or os.fspath(path)
    try:
        fd = open_regular(os.fspath(path))
    except OSError as exc:
        raise ReadProblem(name, f"cannot be read: {exc.strerror or exc}", "unreadable") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        size = os.fstat(fd).st_size

        def fetch(offset: int, n: int) -> bytes:
            f.seek(offset)
            return f.read(n)

        try:
            return parse_gguf(fetch, name, size, **options)
        except OSError as exc:
            raise ReadProblem(name, f"cannot be read: {exc.strerror or exc}", "unreadable") from None
