"""Fuzz kind for GGUF headers (joins tests/test_fuzz.py's suite, same invariants: :func:`fuzzkit.run_cli`): valid
GGUF models, split sets and sidecars built by mtp_audit.synth.gguf, then damaged (truncated at any byte, a count or
length overwritten with absurd values, a type id replaced, random bytes spliced in), audited as a file or a folder
with ``mtp-audit checkpoint`` and as ``-m`` of ``mtp-audit launch -- llama-server``. Exit 2 must be one line; nothing
may take more than the fuzz bounds of time and memory."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from fuzzkit import Workspace, fuzz_settings, run_cli
from hypothesis import given
from hypothesis import strategies as st

from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

ABSURD = [0, 1, 2**31 - 1, 2**32 - 1, 2**32, 2**40, 2**62, 2**63 - 1, 2**64 - 1]
NAMES = ["model.gguf", "mtp-model.gguf", "M-00001-of-00002.gguf", "M-00002-of-00002.gguf", "mmproj-F16.gguf"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf-fuzz")


@st.composite
def valid_gguf(draw: st.DrawFn) -> bytes:
    arch = draw(st.sampled_from(["qwen35moe", "qwen35", "glm4moe", "step35", "deepseek2", "llama", ""]))
    heads = draw(st.integers(0, 3))
    declared = draw(st.sampled_from([None, 0, heads, heads + 1, 2**32 - 1]))
    tensors = trunk_tensors(range(2))
    for b in range(2, 2 + heads):
        tensors += nextn_tensors(b, ggml_type=draw(st.sampled_from([0, 1, 2, 8, 12, 39, 40])))
    extra = []
    if draw(st.booleans()):
        extra = [("split.no", 2, draw(st.integers(0, 3))), ("split.count", 2, draw(st.integers(0, 3))),
                 ("split.tensors.count", 5, draw(st.integers(-1, 40)))]
    kv = model_kv(arch, blocks=draw(st.integers(0, 6)), nextn=declared, extra=extra)
    if draw(st.booleans()):
        kv.append(("tokenizer.ggml.tokens", (9, 8), [f"t{i}" for i in range(draw(st.integers(0, 300)))]))
    return gguf_bytes(kv, tensors, version=draw(st.sampled_from([1, 2, 3, 3])),
                      byte_order=draw(st.sampled_from(["<", "<", ">"])), alignment=draw(st.sampled_from([None, 32, 64, 3])))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    raw = bytearray(draw(valid_gguf()))
    how = draw(st.sampled_from(["none", "truncate", "count", "count", "type", "splice", "flip"]))
    if how == "truncate":
        return bytes(raw[:draw(st.integers(0, len(raw)))])
    if how == "count" and len(raw) >= 16:
        at = draw(st.integers(4, len(raw) - 8))
        raw[at:at + 8] = struct.pack("<Q", draw(st.sampled_from(ABSURD)))
    elif how == "type" and len(raw) >= 8:
        at = draw(st.integers(8, len(raw) - 4))
        raw[at:at + 4] = struct.pack("<I", draw(st.sampled_from([9, 13, 255, 2**31, 33, 41, 99])))
    elif how == "splice":
        at = draw(st.integers(0, len(raw)))
        raw[at:at] = draw(st.binary(max_size=64))
    elif how == "flip" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(raw)


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_gguf_headers(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "ck")
    folder = ws.inputs / "ck"
    folder.mkdir()
    names = data.draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    for name in names:
        (folder / name).write_bytes(data.draw(damaged()))
    pick = data.draw(st.sampled_from(["folder", *names]))
    target = os.path.relpath(folder if pick == "folder" else folder / pick, ws.root)
    fmt = data.draw(st.sampled_from(["json", "text"]))
    run_cli(["checkpoint", target, "-f", fmt], ws, json_stdout=fmt == "json")


@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_gguf_llamacpp_launch(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "launch")
    (ws.inputs / "model.gguf").write_bytes(data.draw(damaged()))
    if data.draw(st.booleans()):
        (ws.inputs / "mtp-model.gguf").write_bytes(data.draw(damaged()))
    cmd = ["llama-server", "-m", "in/model.gguf"]
    for extra in data.draw(st.lists(st.sampled_from([
            ("--spec-type", "draft-mtp"), ("--spec-type", "mtp:n_max=3,p_min=0.5"), ("--spec-type", "ngram-mod,draft-mtp"),
            ("-md", "in/mtp-model.gguf"), ("-np", "4"), ("--spec-draft-n-max", "9"), ("-sm", "tensor"),
            ("--spec-default",), ("--spec-draft-n-max", "x"), ("-np",)]), max_size=4)):
        cmd += list(extra)
    build = data.draw(st.sampled_from([[], ["--llamacpp-build", "10444"], ["--llamacpp-build", "ik:4100"],
                                       ["--llamacpp-build", "b10742"], ["--llamacpp-build", "nope"]]))
    fmt = data.draw(st.sampled_from(["json", "text"]))
    run_cli(["launch", "-f", fmt, *build, "--", *cmd], ws, json_stdout=fmt == "json")
