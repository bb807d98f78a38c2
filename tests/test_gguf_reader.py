"""The GGUF header reader (mtp_audit.sources.gguf) against the ``gguf`` package's ``GGUFReader`` (the
test oracle): on generated files of GGUF versions 2 and 3, both byte orders, every value type, arrays
and arrays of arrays, every GGML tensor type, each field and tensor info must equal the oracle's.
Version 1 (which GGUFReader cannot read) is checked against the writer's own input."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtp_audit.sources.gguf import GGML_TYPES, GGUFLimits, SkippedArray, parse_gguf, read_gguf_file
from mtp_audit.sources.local import ReadProblem
from mtp_audit.synth.gguf import gguf_header, write_gguf

gguf = pytest.importorskip("gguf")
# the gguf package is the reference reader here (a test dependency), so this runs in the default suite

#: GGML types the oracle (gguf 0.19.0) knows; ours also knows newer ones (Q2_0 = 42).
ORACLE_TYPES = sorted(t for t in GGML_TYPES if t in {int(q) for q in gguf.GGMLQuantizationType})

_INT_RANGES = {0: (0, 255), 1: (-128, 127), 2: (0, 65535), 3: (-32768, 32767), 4: (0, 2**32 - 1),
               5: (-(2**31), 2**31 - 1), 10: (0, 2**64 - 1), 11: (-(2**63), 2**63 - 1)}


def _scalar(vtype: int) -> st.SearchStrategy:
    if vtype in _INT_RANGES:
        lo, hi = _INT_RANGES[vtype]
        return st.integers(lo, hi)
    if vtype == 6:
        return st.floats(width=32, allow_nan=False)
    if vtype == 12:
        return st.floats(allow_nan=False)
    if vtype == 7:
        return st.booleans()
    return st.text(max_size=20)


_SCALAR_TYPES = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12])


@st.composite
def _kv(draw: st.DrawFn, key: str) -> tuple:
    shape = draw(st.sampled_from(["scalar", "array", "nested"]))
    item = draw(_SCALAR_TYPES)
    if shape == "scalar":
        return key, item, draw(_scalar(item))
    if shape == "array":
        return key, (9, item), draw(st.lists(_scalar(item), max_size=6))
    return key, (9, 9, item), draw(st.lists(st.lists(_scalar(item), min_size=1, max_size=3), min_size=1, max_size=3))


@st.composite
def _tensor(draw: st.DrawFn, index: int) -> tuple:
    gtype = draw(st.sampled_from(ORACLE_TYPES))
    block = GGML_TYPES[gtype][1]
    dims = [block * draw(st.integers(1, 3))] + draw(st.lists(st.integers(1, 4), max_size=3))
    return f"blk.{index}.t.weight", tuple(dims), gtype


@st.composite
def _files(draw: st.DrawFn) -> dict:
    n_kv = draw(st.integers(0, 12))
    kv = [draw(_kv(f"k.{i}")) for i in range(n_kv)]
    tensors = [draw(_tensor(i)) for i in range(draw(st.integers(0, 6)))]
    alignment = draw(st.sampled_from([None, 8, 32, 64]))
    return {"kv": kv, "tensors": tensors, "alignment": alignment,
            "version": draw(st.sampled_from([2, 3])), "byte_order": draw(st.sampled_from(["<", ">"]))}


def _flatten(value: object) -> list:
    if isinstance(value, list):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))  # type: ignore[arg-type]
    return a == b


def assert_matches_oracle(path: Path) -> None:
    """Every key/value and tensor info our reader returns equals GGUFReader's."""
    ours = read_gguf_file(path, keep_arrays=True)
    oracle = gguf.GGUFReader(path)
    fields = {k: f for k, f in oracle.fields.items() if not k.startswith("GGUF.")}
    assert list(ours.kv) == list(fields)
    for key, field in fields.items():
        types = [int(t) for t in field.types]
        mine = ours.kv_types[key]
        if types[0] == 9:
            assert mine[0] == 9
            flat = _flatten(ours.kv[key])
            got = field.contents()
            got = got if isinstance(got, list) else [got]
            assert len(flat) == len(got), key
            assert all(_same(a, b) for a, b in zip(flat, got)), key
            if len(types) > 1 and types[1] != 9:
                assert mine[1] == types[1], key
        else:
            assert mine == types[0], key
            assert _same(ours.kv[key], field.contents()), key
    assert len(ours.tensors) == len(oracle.tensors)
    for t, o in zip(ours.tensors, oracle.tensors):
        assert t.name == o.name
        assert list(t.dims) == [int(x) for x in o.shape]
        assert t.ggml_type == int(o.tensor_type)
        assert ours.data_offset + t.offset == o.data_offset
        assert t.nbytes == int(o.n_bytes)
    assert ours.data_offset == oracle.data_offset
    assert ours.alignment == oracle.alignment


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_files())
def test_every_field_and_tensor_info_equals_gguf_reader(tmp_path: Path, spec: dict) -> None:
    path = tmp_path / "m.gguf"
    write_gguf(path, **spec)
    assert_matches_oracle(path)


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_every_value_type_once(tmp_path: Path, version: int, byte_order: str) -> None:
    kv = [(f"s.{t}", t, v) for t, v in [(0, 255), (1, -1), (2, 65535), (3, -2), (4, 7), (5, -7), (6, 0.5), (7, True),
                                         (8, "héllo"), (10, 2**64 - 1), (11, -(2**63)), (12, -0.25)]]
    kv += [("a.str", (9, 8), ["x", "", "yz"]), ("a.f32", (9, 6), [1.5, -2.0]), ("a.empty", (9, 4), []),
           ("a.nested", (9, 9, 5), [[1, 2], [3]])]
    tensors = [(f"t.{i}", (GGML_TYPES[i][1] * 2, 3), i) for i in ORACLE_TYPES]
    path = tmp_path / "all.gguf"
    write_gguf(path, kv, tensors, version=version, byte_order=byte_order)
    assert_matches_oracle(path)
    ours = read_gguf_file(path)
    assert ours.version == version and ours.byte_order == byte_order
    names = {t.ggml_type: t.type_name for t in ours.tensors}
    assert (names[39], names[40], names[8]) == ("MXFP4", "NVFP4", "Q8_0")


def test_gguf_writer_file_matches(tmp_path: Path) -> None:
    """A file written by the gguf package's own GGUFWriter (with tensor data), not by our writer."""
    np = pytest.importorskip("numpy")
    path = tmp_path / "w.gguf"
    w = gguf.GGUFWriter(path, "qwen35moe")
    w.add_block_count(3)
    w.add_uint32("qwen35moe.nextn_predict_layers", 1)
    w.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc"] * 500)
    w.add_array("tokenizer.ggml.scores", [0.5] * 1500)
    w.add_tensor("blk.2.nextn.eh_proj.weight", np.zeros((4, 64), dtype=np.float16))
    w.add_tensor("blk.2.nextn.enorm.weight", np.ones((64,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert_matches_oracle(path)
    h = read_gguf_file(path)  # default: the tokenizer arrays are counted, not built
    assert h.kv["tokenizer.ggml.tokens"] == SkippedArray(8, 1500, 1500 * 8 + 500 * 6)
    assert h.kv["tokenizer.ggml.scores"] == SkippedArray(6, 1500, 6000)
    assert [t.name for t in h.tensors] == ["blk.2.nextn.eh_proj.weight", "blk.2.nextn.enorm.weight"]


def test_version_1_uses_32_bit_counts(tmp_path: Path) -> None:
    kv = [("general.architecture", 8, "llama"), ("a", (9, 4), [1, 2, 3])]
    header, _ = gguf_header(kv, [("t", (64, 2), 0)], version=1)
    assert header[8:12] == struct.pack("<I", 1) and header[12:16] == struct.pack("<I", 2)  # 32-bit counts
    path = tmp_path / "v1.gguf"
    write_gguf(path, kv, [("t", (64, 2), 0)], version=1)
    h = read_gguf_file(path)
    assert (h.version, h.kv["a"], h.tensors[0].dims, h.tensors[0].nbytes) == (1, [1, 2, 3], (64, 2), 512)


def test_long_string_array_across_chunks(tmp_path: Path) -> None:
    """A vocabulary larger than one read window, with one string longer than the window."""
    tokens = [f"tok{i}" for i in range(200_000)] + ["x" * 3_000_000] + ["end"]
    path = tmp_path / "v.gguf"
    write_gguf(path, [("tokenizer.ggml.tokens", (9, 8), tokens), ("after", 4, 9)], [])
    h = read_gguf_file(path)
    assert h.kv["after"] == 9
    assert h.kv["tokenizer.ggml.tokens"].count == 200_002
    assert h.kv["tokenizer.ggml.tokens"].nbytes == sum(len(t) + 8 for t in tokens)


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda b: b[:30], "truncated GGUF header"),
        (lambda b: b[:16] + struct.pack("<Q", 2**60) + b[24:], "key/value pairs claimed"),
        (lambda b: b[:8] + struct.pack("<Q", 2**40) + b[16:], "tensors claimed"),
        (lambda b: b"GGUF" + struct.pack("<I", 7) + b[8:], "unsupported GGUF version 7"),
        (lambda b: b"GGML" + b[4:], "not a GGUF file"),
    ],
)
def test_bad_headers_are_one_problem(tmp_path: Path, mutate, problem: str) -> None:
    header, data = gguf_header([("general.architecture", 8, "llama")], [("t", (32,), 0)])
    path = tmp_path / "bad.gguf"
    path.write_bytes(mutate(header + b"\0" * data))
    with pytest.raises(ReadProblem) as e:
        read_gguf_file(path)
    assert problem in e.value.problem and "\n" not in e.value.problem


def test_string_length_past_the_file_and_unknown_type(tmp_path: Path) -> None:
    header, _ = gguf_header([("k", 8, "v")], [])
    past = header[:24] + struct.pack("<Q", 2**50) + header[32:]
    with pytest.raises(ReadProblem, match="past the end|bytes \\(limit"):
        parse_gguf(lambda o, n: past[o:o + n], "p.gguf", len(past))
    unknown = header[:24 + 8 + 1] + struct.pack("<I", 13) + header[24 + 8 + 1 + 4:]
    with pytest.raises(ReadProblem, match="unknown GGUF value type 13"):
        parse_gguf(lambda o, n: unknown[o:o + n], "u.gguf", len(unknown))
    bad_type, _ = gguf_header([], [("t", (32,), 0)])
    bad_type = bad_type.replace(struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<I", 0),
                                struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<I", 33))
    with pytest.raises(ReadProblem, match="unknown GGML type 33"):
        parse_gguf(lambda o, n: bad_type[o:o + n], "t.gguf", None)


def test_limits_bound_the_read() -> None:
    header, _ = gguf_header([("k", (9, 4), list(range(1000)))], [])
    with pytest.raises(ReadProblem, match="more than the header limit can hold"):
        parse_gguf(lambda o, n: header[o:o + n], "l.gguf", None, limits=GGUFLimits(max_header_bytes=100))
    reads: list[tuple[int, int]] = []

    def fetch(o: int, n: int) -> bytes:
        reads.append((o, n))
        return header[o:o + n]

    parse_gguf(fetch, "l.gguf", len(header), keep_arrays=False)
    assert sum(n for _, n in reads) <= len(header) + (1 << 20)


def test_tensor_data_past_the_end_of_the_file(tmp_path: Path) -> None:
    header, data = gguf_header([], [("t", (1024, 1024), 0)])
    path = tmp_path / "short.gguf"
    path.write_bytes(header + b"\0" * 100)
    with pytest.raises(ReadProblem, match="past the end of the"):
        read_gguf_file(path)


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gguf"


def test_real_file_from_another_writer() -> None:
    """ThreatFlux/gguf's test_model.gguf (a Rust writer): equal to GGUFReader when the layout is not checked;
    refused with llama.cpp's own reason when it is (all three tensors claim data offset 0)."""
    path = FIXTURES / "threatflux-test_model.gguf"
    ours = read_gguf_file(path, keep_arrays=True, check_layout=False)
    oracle = gguf.GGUFReader(path)
    assert [t.name for t in ours.tensors] == [t.name for t in oracle.tensors] == [
        "token_embd.weight", "output_norm.weight", "output.weight"]
    assert [t.nbytes for t in ours.tensors] == [int(t.n_bytes) for t in oracle.tensors] == [512000, 512, 512000]
    assert ours.data_offset == oracle.data_offset == 416
    assert ours.kv["general.architecture"] == "test" and len(ours.kv) == 5
    with pytest.raises(ReadProblem, match="tensor 'output_norm.weight' has offset 0, expected 512000"):
        read_gguf_file(path)
