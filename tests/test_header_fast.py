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
from pathlib import Path

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
        meta = draw(st.sampled_from([None, {"format": "pt"}, {"a:b": "c:d"}, [], {"x": 1}, "pt"]))
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
        (b'{"a":{"dtype":"U8","shape":{},"data_offsets":[0,1]}}', "object as shape"),
        (b'{"a":{"dtype":"U8","shape":["x",3000000000],"data_offsets":[0,1]}}', "string dimension (no 3 GB repeat)"),
        (b'{"a":{"dtype":"U8","shape":[[0],3000000000],"data_offsets":[0,1]}}', "list dimension (no 24 GB repeat)"),
        (b'{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}', "checked_mul overflow"),
        (b'{"\\ud800":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', "lone surrogate"),
        (b'{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', "sub-byte tensor off a byte boundary"),
        (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', "gap at the start"),
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
