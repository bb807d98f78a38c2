"""Property-based tests: random bytes as a shard header and random JSON as an index or config never
produce a traceback; only ReadProblem (header reader), InputError (the user's input) or a report
with findings / gaps come out."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.errors import InputError
from mtp_audit.report import Report
from mtp_audit.sources.local import LocalSource, ReadProblem, ShardHeader

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CFG = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 2, "num_nextn_predict_layers": 1}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=30), inner, max_size=5),
    max_leaves=30,
)
header_entry = st.fixed_dictionaries(
    {},
    optional={
        "dtype": st.sampled_from(["BF16", "F8_E4M3", "U8", "F32", "XX", ""]) | st.integers(),
        "shape": st.lists(st.integers(-3, 2**40), max_size=4) | st.text(max_size=3),
        "data_offsets": st.lists(st.integers(-5, 2**40), max_size=3),
    },
)


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "x.safetensors").write_bytes(data)
        try:
            hdr = LocalSource(Path(d)).read_header("x.safetensors")
        except ReadProblem as exc:
            assert exc.file == "x.safetensors" and "\n" not in exc.problem
        else:
            assert isinstance(hdr, ShardHeader)


@SETTINGS
@given(st.binary(max_size=300))
def test_header_reader_random_bytes(data):
    _read(data)


@SETTINGS
@given(st.binary(max_size=300))
def test_header_reader_random_header_with_valid_length(raw):
    _read(struct.pack("<Q", len(raw)) + raw)


@SETTINGS
@given(st.dictionaries(st.text(max_size=40), header_entry, max_size=6), st.binary(max_size=64))
def test_header_reader_random_entries(entries, tail):
    raw = json.dumps(entries).encode()
    _read(struct.pack("<Q", len(raw)) + raw + tail)


def _audit(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as d:
        for k, v in files.items():
            Path(d, k).write_bytes(v)
        try:
            rep = audit_checkpoint(Path(d))
        except InputError as exc:
            assert "\n" not in str(exc)
        else:
            assert isinstance(rep, Report)
            json.dumps(rep.to_dict())


@SETTINGS
@given(json_values)
def test_index_reader_random_json(obj):
    _audit({"config.json": json.dumps(CFG).encode(), "model.safetensors.index.json": json.dumps(obj).encode()})


@SETTINGS
@given(st.dictionaries(st.text(max_size=40), json_values | st.text(max_size=30), max_size=8), json_values)
def test_index_reader_random_weight_map(wm, meta):
    doc = {"metadata": meta, "weight_map": wm}
    _audit({"config.json": json.dumps(CFG).encode(), "model.safetensors.index.json": json.dumps(doc).encode()})


@SETTINGS
@given(json_values)
def test_config_reader_random_json(obj):
    _audit({"config.json": json.dumps(obj).encode()})


@SETTINGS
@given(
    st.fixed_dictionaries(
        {"architectures": st.lists(st.sampled_from(["DeepseekV3ForCausalLM", "Qwen3NextForCausalLM", "X"]), min_size=1, max_size=2)},
        optional={
            "text_config": st.dictionaries(st.sampled_from(["num_hidden_layers", "mtp_num_hidden_layers", "num_experts"]), json_values),
            "num_nextn_predict_layers": json_values,
            "use_mtp": json_values,
            "num_mtp_modules": json_values,
            "quantization_config": json_values,
            "num_hidden_layers": json_values,
        },
    )
)
def test_config_reader_random_mtp_keys(cfg):
    _audit({"config.json": json.dumps(cfg).encode()})


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_as_config(data):
    _audit({"config.json": data})
