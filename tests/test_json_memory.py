"""The parsed-JSON budget counts real memory: :func:`mtp_audit.sources.bounded.json_memory_estimate` is at least the
peak ``tracemalloc`` measures while :meth:`LocalSource.read_header` reads shard headers of real and hostile shapes
(the REAP Qwen3.5 index's 22,213 real tensor names with BF16 shapes; tiny records; a ``__metadata__`` of one-letter
strings; a shape of a million ones; names with an emoji, which make CPython store the text four bytes a character),
and a header whose real peak is over the budget is not parsed. The old estimate (text + 64 per ``{``/``[`` + 32 per
``,``) came to 3.3-6.4 times the text against real peaks of 8-15 times."""

from __future__ import annotations

import gc
import json
import struct
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.sources.bounded import (
    RunBudget,
    _token_counts,
    charge_header_json,
    charge_json,
    header_counts,
    json_counts,
    json_memory_estimate,
    run_budget,
)
from mtp_audit.sources.local import LocalSource, ReadProblem

REAP_INDEX = (Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
              / "model.safetensors.index.json")


def _records(names: list[str], dtype: str, shape: list[int], nbytes: int) -> dict[str, object]:
    return {n: {"dtype": dtype, "shape": shape, "data_offsets": [i * nbytes, (i + 1) * nbytes]} for i, n in enumerate(names)}


def shape_of(kind: str) -> dict[str, object]:
    """A shard header of one shape."""
    if kind == "real":
        names = sorted(json.loads(REAP_INDEX.read_text())["weight_map"])
        return _records(names, "BF16", [2048, 1024], 2048 * 1024 * 2)
    if kind == "tiny":
        return _records([f"t{i}" for i in range(30_000)], "BOOL", [0], 0)
    if kind == "metadata":
        return {"__metadata__": {f"k{i}": "v" for i in range(80_000)}}
    if kind == "dims":
        return {"a": {"dtype": "BOOL", "shape": [1] * 300_000, "data_offsets": [0, 1]}}
    return _records([f"t{i}\U0001F600" for i in range(20_000)], "BOOL", [0], 0)  # "astral"


def write_shard(folder: Path, header: dict[str, object]) -> bytes:
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)  # type: ignore[index]
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + end)
    return raw


def traced_peak(folder: Path) -> int:
    """Peak bytes allocated while the header is read (tracemalloc), the header kept as the analyzers keep it."""
    gc.collect()
    tracemalloc.start()
    try:
        header = LocalSource(folder).read_header("model.safetensors")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert header.tensors or header.metadata
    return peak


@pytest.mark.parametrize("kind", ["real", "tiny", "metadata", "dims", "astral"])
def test_estimate_is_at_least_the_real_peak(tmp_path, kind):
    raw = write_shard(tmp_path, shape_of(kind))
    peak = traced_peak(tmp_path)
    estimate = json_memory_estimate(raw)
    old = len(raw) + 64 * (raw.count(b"{") + raw.count(b"[")) + 32 * raw.count(b",")
    # 1.1: the process's RSS grows ~5% more than tracemalloc counts (allocator pages), measured on these shapes
    assert estimate >= 1.1 * peak, (kind, len(raw), peak, estimate)
    if kind != "dims":  # a shape of a million ones: 8 bytes a ',' against the old 32, already over-counted
        assert old < peak, (kind, old, peak)


def test_header_over_the_budget_in_real_memory_is_not_parsed(tmp_path):
    """A budget of the header's real peak: the old estimate admitted it (and the process went past the budget); the
    read is now refused, naming the variable that raises the bound."""
    raw = write_shard(tmp_path, shape_of("tiny"))
    peak = traced_peak(tmp_path)
    assert len(raw) + 64 * (raw.count(b"{") + raw.count(b"[")) + 32 * raw.count(b",") < peak
    with run_budget(RunBudget(max_json_bytes=peak)), pytest.raises(ReadProblem) as exc:
        LocalSource(tmp_path).read_header("model.safetensors")
    assert "MTP_AUDIT_MAX_JSON_BYTES" in str(exc.value)
    with run_budget(RunBudget(max_json_bytes=json_memory_estimate(raw))):
        assert len(LocalSource(tmp_path).read_header("model.safetensors").tensors) == 30_000


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=200).map(lambda t: t.encode("utf-8"))
       | st.text(alphabet='{[:,"e}] \\-ab\u00e9', max_size=300).map(lambda t: t.encode("utf-8")))
def test_token_counts_are_the_byte_counts(raw: bytes) -> None:
    """The one-pass counts the estimate and the header reader use are ``bytes.count`` of each token, on any bytes."""
    assert _token_counts(raw) == tuple(raw.count(c) for c in (b"{", b"[", b":", b",", b'"'))
    assert json_counts(raw) == (raw.count(b"["), raw.count(b":"), raw.count(b'"'))
    assert header_counts(raw) == (raw.count(b"["), raw.count(b":"), raw.count(b'"'), raw.count(b"e"))
    with run_budget(RunBudget()) as a:
        assert charge_header_json(raw, "h") == header_counts(raw)
    with run_budget(RunBudget()) as b:
        charge_json(raw, "h")
    assert a.json_bytes == b.json_bytes == json_memory_estimate(raw)  # a header is charged as any JSON
