"""The one-pass header reader (:func:`mtp_audit.sources.local.fast_header`) against the strict reader it
shortcuts: our JSON pass with its duplicate-key hook, then ``safetensors.safe_open`` on the real file,
then :func:`header_from_dict`. Whenever the fast reader returns a header, the strict reader must accept
the same bytes and build an equal header; when the fast reader declines, ``LocalSource.read_header``
must give exactly the strict reader's verdict (same header, or the same message)."""

from __future__ import annotations

import contextlib
import json
import math
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtp_audit.sources.bounded import run_budget
from mtp_audit.sources.hub import shard_header_from_prefix
from mtp_audit.sources.local import (
    DTYPE_BITS,
    LocalSource,
    ReadProblem,
    fast_header,
    header_from_dict,
    parse_header_json,
)

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _strict(raw: bytes, extra: int) -> object:
    """The reader before the fast path: a header, or ``"rejected"``."""
    from safetensors import SafetensorError, safe_open

    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "x.safetensors")
        p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * extra)
        try:
            obj, dups = parse_header_json("x.safetensors", raw)
        except ReadProblem:
            return "rejected"
        if dups:
            return "rejected"
        try:
            with safe_open(str(p), framework="numpy"):
                pass
        except (SafetensorError, OSError, ValueError):
            return "rejected"
        try:
            return header_from_dict("x.safetensors", obj, len(raw))
        except ReadProblem:
            return "rejected"


def _local(raw: bytes, extra: int) -> object:
    """The local reader's verdict, in a run (where the ``[`` count taken for the JSON budget is handed to the fast
    reader) and outside one (where the fast reader counts it): both must be the same."""
    got = []
    for budget in (run_budget, contextlib.nullcontext):
        with tempfile.TemporaryDirectory() as d, budget():
            Path(d, "x.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * extra)
            try:
                got.append(LocalSource(Path(d)).read_header("x.safetensors"))
            except ReadProblem:
                got.append("rejected")
    assert got[0] == got[1]
    return got[0]


NAMES = st.sampled_from(["a", "b", "a:b", "mtp.fc.weight", "__metadata__", "x-0", "true"])
ODD = st.sampled_from(
    ['"dtype"', '"shape"', '"data_offsets"', '"BF16"', '"F4"', "[2]", "[0]", "[]", "[1,2]", "[0,2]", "[2,4]",
     "[4,2]", "-0", "-1", "0", "2", "true", "2.0", "1e0", "null", '"b:c"', '{"k":"v"}', "{}", "[0,2,3]",
     '"\\u0061"', '"\\ud800"', "NaN", "18446744073709551616", "[4294967296,4294967296,0]", " ", ",", ":"]
)


@st.composite
def headers(draw: st.DrawFn) -> tuple[bytes, int]:
    """A mostly valid header (tensors tiling the data area), then up to two textual mutations."""
    entries: list[tuple[str, object]] = []
    off = 0
    for _ in range(draw(st.integers(0, 4))):
        dtype = draw(st.sampled_from(sorted(DTYPE_BITS)))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        nbytes = math.ceil(math.prod(shape) * DTYPE_BITS[dtype] / 8)
        entries.append((draw(NAMES), {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nbytes]}))
        off += nbytes
    if draw(st.booleans()):
        meta = draw(st.sampled_from([None, {"format": "pt"}, {"a:b": "c:d"}, [], {"x": 1}, "pt", {"here": "be true"},
                                     {"e": "false"}]))
        entries.insert(draw(st.integers(0, len(entries))), ("__metadata__", meta))
    if draw(st.booleans()):
        entries = draw(st.permutations(entries))
    sep = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    text = "{" + sep[0].join(json.dumps(k) + sep[1] + json.dumps(v, separators=sep) for k, v in entries) + "}"
    for _ in range(draw(st.integers(0, 2))):
        if len(text) > 2:
            i = draw(st.integers(0, len(text) - 1))
            j = min(len(text), i + draw(st.integers(0, 6)))
            text = text[:i] + draw(ODD) + text[j:]
    extra = max(off + draw(st.sampled_from([0, 0, 0, 1, -1])), 0)
    return text.encode(), extra


@SETTINGS
@given(headers())
def test_fast_reader_accepts_only_what_the_strict_reader_accepts(case: tuple[bytes, int]) -> None:
    raw, extra = case
    fast = fast_header("x.safetensors", raw, 8 + len(raw) + extra)
    strict = _strict(raw, extra)
    if fast is not None:
        assert strict == fast
    assert _local(raw, extra) == strict


def test_fast_reader_takes_the_common_header(tmp_path: Path) -> None:
    """A header as safetensors writes it is certified (so safe_open, and numpy, are not needed)."""
    hdr = {"__metadata__": {"format": "pt"}, "w": {"dtype": "F4", "shape": [2, 3], "data_offsets": [0, 3]},
           "s": {"dtype": "F8_E4M3", "shape": [2, 1], "data_offsets": [3, 5]}}
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    got = fast_header("m.safetensors", raw, 8 + len(raw) + 5)
    assert got is not None and got.metadata == {"format": "pt"} and got.data_bytes == 5
    assert got.tensors["w"] == ("w", "F4", (2, 3), 3) and got.tensors["s"].shape == (2, 1)
    assert fast_header("m.safetensors", raw, 8 + len(raw) + 6) is None  # file longer than the data


@pytest.mark.parametrize(
    "raw, why",
    [
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}',
         "duplicate tensor"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"dtype":"U8"}}', "duplicate key inside an entry"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[-0,2]}}', "-0 (a float to serde_json)"),
        (b'{"a":{"dtype":"U8","shape":[true,2],"data_offsets":[0,2]}}', "bool dimension"),
        (b'{"__metadata__":null,"a":{"dtype":"U8","shape":[true,2],"data_offsets":[0,2]}}', "bool dimension, null metadata"),
        (b'{"__metadata__":{"e":"e"},"a":{"dtype":"U8","shape":[2],"data_offsets":[false,2]}}', "bool offset"),
        (b'{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,true]}}', "bool end, no other e"),
        (b'{"a":{"dtype":"U8","shape":{},"data_offsets":[0,1]}}', "object as shape"),
        (b'{"a":{"dtype":"U8","shape":["x",3000000000],"data_offsets":[0,1]}}', "string dimension (no 3 GB repeat)"),
        (b'{"a":{"dtype":"U8","shape":[[0],3000000000],"data_offsets":[0,1]}}', "list dimension (no 24 GB repeat)"),
        (b'{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}', "checked_mul overflow"),
        (b'{"a":{"dtype":"U8","shape":[2305843009213693952],"data_offsets":[0,2305843009213693952]}}',
         "2**61 bytes: 2**64 bits (checked_mul)"),
        (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[2305843009213693952],'
         b'"data_offsets":[1,2305843009213693953]}}', "2**61 bytes after a small tensor"),
        (b'{"\\ud800":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', "lone surrogate"),
        (b'{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', "sub-byte tensor off a byte boundary"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', "gap at the start"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4,4]}}',
         "three offsets beside two"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2,2]}}', "three offsets"),
        (b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[0]},"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}',
         "one offset beside two"),
    ],
)
def test_fast_reader_declines_what_safetensors_or_our_pass_refuse(raw: bytes, why: str) -> None:
    assert fast_header("x.safetensors", raw, None) is None, why
    assert _strict(raw, 3) == "rejected", why


def test_hub_prefix_reader_uses_the_same_fast_path() -> None:
    raw = b'{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}'
    prefix = struct.pack("<Q", len(raw)) + raw
    assert shard_header_from_prefix("x.safetensors", prefix, len(prefix) + 4) == fast_header("x.safetensors", raw, len(prefix) + 4)
    with pytest.raises(ReadProblem, match="incomplete metadata"):
        shard_header_from_prefix("x.safetensors", prefix, len(prefix) + 5)


def _literal_outside_strings(raw: bytes) -> bool:
    """Whether ``true`` or ``false`` occurs outside the strings of a header with no backslash (every other ``"``
    piece, split at the quotes, is outside)."""
    return any(b"true" in part or b"false" in part for part in raw.split(b'"')[0::2])


@SETTINGS
@given(headers())
def test_bool_pass_runs_exactly_when_a_literal_is_outside_the_strings(case: tuple[bytes, int]) -> None:
    """The ``e`` count stands in for two scans of the text for ``true`` and ``false``: for every header that reaches
    the per-element checks (counts agree, known dtypes), it says "bools possible" exactly when such a literal sits
    outside the strings. Too small a count of the strings' ``e`` would let ``[true,2]`` pass as ``[1,2]``; too large
    would run the type pass on every header."""
    from mtp_audit.sources.bounded import header_counts
    from mtp_audit.sources.local import (
        _bools_possible,
        _counts_agree,
        _decode_entries,
        _name_counts,
        _numbers_only_in_arrays,
    )

    raw, _ = case
    decoded = None if b"\\" in raw else _decode_entries(raw)
    if decoded is None:
        return
    obj, metadata, keys, colons = decoded
    names, entries = list(obj), list(obj.values())
    brackets, raw_colons, quotes, es = header_counts(raw)
    in_names = _name_counts(names)
    assert in_names == tuple(sum(x.count(c) for x in names) for c in ":[e")
    if not (names and _counts_agree(raw_colons, in_names, len(names), keys, colons)
            and _numbers_only_in_arrays(brackets, quotes, in_names, keys, metadata, len(names))
            and all(type(e) is dict and set(e) == {"dtype", "shape", "data_offsets"} and e["dtype"] in DTYPE_BITS
                    for e in entries)):
        return
    assert _bools_possible(es, in_names, len(names), keys, metadata) == _literal_outside_strings(raw)


def test_bool_pass_is_skipped_for_a_header_as_safetensors_writes_it() -> None:
    hdr = {"__metadata__": {"format": "pt", "note": "true:false"}, "model.layers.0.experts.0.weight": {"dtype": "F8_E4M3", "shape": [2, 3], "data_offsets": [0, 6]},
           "true.false": {"dtype": "BF16", "shape": [], "data_offsets": [6, 8]}}
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    from mtp_audit.sources.bounded import header_counts
    from mtp_audit.sources.local import _bools_possible, _decode_entries, _name_counts

    obj, metadata, keys, _ = _decode_entries(raw)
    in_names = _name_counts(list(obj))
    assert not _bools_possible(header_counts(raw)[3], in_names, len(obj), keys, metadata)
    assert _bools_possible(header_counts(raw.replace(b"[2,3]", b"[2,3,true]"))[3], in_names, len(obj), keys, metadata)
    assert fast_header("x.safetensors", raw, 8 + len(raw) + 8) is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":1}}',
        b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"x":{}}}',
        b'{"a":["dtype","U8","shape",[2],"data_offsets",[0,2]]}',
        b'{"a":"dtype"}',
        b'{"a":null}',
        b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":[]}',
        b'{"a":{"dtype":"U8","shape":{},"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[[]],"data_offsets":[1,2]}}',
    ],
)
def test_entries_that_are_not_objects_of_three_keys_go_to_the_strict_reader(raw: bytes) -> None:
    """No per-entry type or length pass: an entry that is not an object fails the ``itemgetter`` maps, one with a key
    more fails the ``:`` count; either way the strict reader gives the verdict (safetensors accepts an extra key)."""
    assert fast_header("x.safetensors", raw, None) is None
    assert _local(raw, 2) == _strict(raw, 2)


def _tiled_end_before(starts: tuple[object, ...], ends: tuple[object, ...], nbytes: list[int]) -> object:
    """The spans check and the tiling as they were: a span list compared with the sizes, then the sorted tiling."""
    try:
        if [e - s for s, e in zip(starts, ends)] != nbytes:  # type: ignore[operator]
            return None
        if starts[0] == 0 and starts[1:] == ends[:-1]:
            return ends[-1]
        s_sorted, e_sorted = zip(*sorted(zip(starts, ends)))  # type: ignore[type-var]
    except TypeError:
        return "TypeError"
    return e_sorted[-1] if s_sorted[0] == 0 and s_sorted[1:] == e_sorted[:-1] else None


OFFSET = st.integers(0, 12) | st.sampled_from([None, 2**64, -1])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=5), st.data())
def test_tiling_in_file_order_equals_spans_and_sort(sizes: list[int], data: st.DataObject) -> None:
    """The running-sum test of the common layout gives the answer of the span list and the sort, on tiled layouts
    (in order or shuffled) and on mutated ones (gaps, overlaps, a wrong size, an offset that is no number)."""
    from mtp_audit.sources.local import _tiled_end

    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    pairs = [[e - n, e] for n, e in zip(sizes, ends)]
    if data.draw(st.booleans()):
        pairs = data.draw(st.permutations(pairs))
    for _ in range(data.draw(st.integers(0, 2))):
        pairs[data.draw(st.integers(0, len(pairs) - 1))][data.draw(st.integers(0, 1))] = data.draw(OFFSET)
    starts, ends2 = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)  # as zip(*offsets) gives them
    nbytes = [e - s if isinstance(s, int) and isinstance(e, int) and e >= s else n for (s, e), n in zip(pairs, sizes)]
    if data.draw(st.booleans()):
        nbytes = sizes
    try:
        got: object = _tiled_end(starts, ends2, nbytes)
    except TypeError:
        got = "TypeError"
    assert got == _tiled_end_before(starts, ends2, nbytes)


def test_data_past_2_61_bytes_is_certified_when_each_tensor_is_below() -> None:
    """The 2**61-byte bound is per tensor (its bit count), not on the data: two tensors of 2**60 bytes are taken."""
    half = 2**60
    raw = json.dumps({"a": {"dtype": "U8", "shape": [half], "data_offsets": [0, half]},
                      "b": {"dtype": "I16", "shape": [half // 2], "data_offsets": [half, 2 * half]}},
                     separators=(",", ":")).encode()
    got = fast_header("x.safetensors", raw, None)
    assert got is not None and got.data_bytes == 2**61 and got.tensors["b"].nbytes == half


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=6))
def test_name_counts_are_the_character_counts(names: list[str]) -> None:
    """``:``, ``[`` and ``e`` counted in the names' UTF-8 bytes are their character counts, non-ASCII and lone
    surrogates included."""
    from mtp_audit.sources.local import _name_counts

    assert _name_counts(names) == tuple(sum(x.count(c) for x in names) for c in ":[e")


def _watch_prod(monkeypatch: pytest.MonkeyPatch, prod: Callable[[Any], Any]) -> None:
    """Make :mod:`mtp_audit.sources.local` see ``math`` with ``prod`` replaced (every other name is the real one)."""
    from mtp_audit.sources import local

    class Watched:
        def __getattr__(self, name: str) -> object:
            return getattr(math, name)

    watched = Watched()
    watched.prod = prod  # type: ignore[attr-defined]
    monkeypatch.setattr(local, "math", watched)


def test_math_prod_never_sees_a_shape_longer_than_64(monkeypatch: pytest.MonkeyPatch) -> None:
    """``math.prod`` of a shape of k large dimensions costs time quadratic in k (the product's bigint grows 64 bits a
    dimension: 40,000 dimensions of 2**64 - 1, a 0.8 MB header, took ~3.4 s; a 100 MB header would take hours). No
    tensor whose element count is below 2**64 has more than 64 dimensions above 1, so a longer shape goes to the
    strict reader, where safetensors (Rust ``checked_mul``) refuses it before :func:`header_from_dict` multiplies."""
    seen: list[int] = []

    def prod(values: list[int]) -> int:
        seen.append(len(values))
        return math.prod(values)

    _watch_prod(monkeypatch, prod)
    big = ",".join(["18446744073709551615"] * 65)
    raw = b'{"a":{"dtype":"U8","shape":[%s],"data_offsets":[0,0]}}' % big.encode()
    assert fast_header("x.safetensors", raw, None) is None
    assert seen == []
    ones = b'{"a":{"dtype":"U8","shape":[%s],"data_offsets":[0,1]}}' % ",".join(["1"] * 64).encode()
    assert fast_header("x.safetensors", ones, None) is not None  # 64 dimensions: still certified
    assert seen == [64]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":{"dtype":1,"shape":[[0],3000000000],"data_offsets":"02"}}',
        b'{"a":{"dtype":"U8","shape":{},"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[[0],3000000000],"data_offsets":[1,2]}}',
        b'{"a":{"dtype":"U8","shape":[[0],3000000000],"data_offsets":{}}}',
        b'{"a":{"dtype":"U8","shape":[[0],3000000000],"data_offsets":5}}',
        b'{"a":{"dtype":"U8","shape":["x",3000000000],"data_offsets":[0,1]}}',
        # a dtype that is no string gives back the two quotes a string in a shape takes (no e: no bool pass)
        b'{"a":{"dtype":0,"shape":["x",3000000000],"data_offsets":[0,0]}}',
        b'{"a":{"dtype":null,"shape":[3,"ab"],"data_offsets":[0,6]}}',
        b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"data_offsets":[4,4],"shape":[0,"x"],"dtype":7}}',
    ],
)
def test_math_prod_only_ever_sees_ints(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A list or a string that balances the ``[`` or ``"`` count with a shape or offsets that is no list (or a dtype
    that is no string) must be stopped before ``math.prod`` repeats it (``[[0], 3000000000]`` is a 24 GB list): the
    shapes' and offsets' type and length tests do that. ``math.prod`` is watched, never run on such a shape."""
    seen: list[object] = []

    def prod(values: list[object]) -> object:
        if not all(type(v) is int for v in values):
            seen.append(values)
            return 0
        return math.prod(values)  # type: ignore[arg-type]

    _watch_prod(monkeypatch, prod)
    assert fast_header("x.safetensors", raw, None) is None
    assert seen == []
