"""``mtp-audit checkpoint`` on GGUF files and folders: the MTP facts (values checked by hand against the files the
test writes), split sets, sidecars, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.synth.gguf import gguf_header, model_kv, nextn_tensors, tensor_bytes, trunk_tensors, write_gguf


def _qwen36(path: Path, *, heads: bool = True, nextn_type: int = 8) -> list:
    """Qwen3.6-35B-A3B-MTP's layout: qwen35moe, block_count 41, blk.40.nextn.{eh_proj,enorm,hnorm,shared_head_norm}
    plus the MTP block's own attention/FFN (ik_llama.cpp PR #1745 dump)."""
    tensors = trunk_tensors(range(41))
    if heads:
        tensors += nextn_tensors(40, ggml_type=nextn_type)
    write_gguf(path, model_kv("qwen35moe", blocks=41, nextn=1 if heads else None), tensors)
    return tensors


def test_mtp_facts_of_one_file(tmp_path: Path) -> None:
    tensors = _qwen36(tmp_path / "Qwen3.6-35B-A3B-MTP-Q8_0.gguf")
    r = audit_checkpoint(tmp_path / "Qwen3.6-35B-A3B-MTP-Q8_0.gguf")
    facts = r.facts["checkpoint"]
    model = facts["gguf"]["models"][0]
    assert (model["architecture"], model["block_count"], model["nextn_predict_layers"]) == ("qwen35moe", 41, 1)
    assert list(model["nextn_blocks"]) == ["40"]
    block = model["nextn_blocks"]["40"]
    assert block["parts"] == {"eh_proj": "Q8_0", "enorm": "F32", "hnorm": "F32", "shared_head_norm": "F32"}
    # eh_proj (128 x 64 Q8_0) = 8192 / 32 * 34 bytes; three F32 norms of 64 = 256 bytes each
    assert block["nextn_bytes"] == 8192 // 32 * 34 + 3 * 256 == 9472
    # the MTP block also carries its attention/FFN: blk.40.{attn_norm, attn_q, ffn_down}
    assert block["block_tensors"] == 7
    assert block["block_bytes"] == 9472 + 256 + 2 * (64 * 64 // 32 * 34)
    assert model["tensors"] == len(tensors) == 3 + 41 * 3 + 4
    assert model["data_bytes"] == sum(tensor_bytes(d, t) for _, d, t in tensors)
    assert facts["summary"]["llamacpp_mtp_usable"] is True
    assert r.findings == () and r.status.value == "pass"


def test_split_set_every_part_read(tmp_path: Path) -> None:
    """A 3-part split set: the nextn block sits in the last part; every part's header is read."""
    trunk = trunk_tensors(range(41))
    parts = [trunk[:60], trunk[60:], nextn_tensors(40)]
    total = sum(map(len, parts))
    for i, ts in enumerate(parts):
        kv = model_kv("qwen35moe", blocks=41, nextn=1) if i == 0 else [("general.architecture", 8, "qwen35moe")]
        kv += [("split.no", 2, i), ("split.count", 2, 3), ("split.tensors.count", 5, total)]
        write_gguf(tmp_path / f"Q-0000{i + 1}-of-00003.gguf", kv, ts)
    r = audit_checkpoint(tmp_path / "Q-00001-of-00003.gguf")
    model = r.facts["checkpoint"]["gguf"]["models"][0]
    assert model["files"] == [f"Q-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert model["tensors"] == total and list(model["nextn_blocks"]) == ["40"]
    assert r.findings == ()
    (tmp_path / "Q-00003-of-00003.gguf").unlink()
    r = audit_checkpoint(tmp_path)
    ids = sorted(f.rule_id for f in r.findings)
    assert ids == ["MTP030", "MTP035"]  # the head was in the missing part
    assert "1 of 3 parts missing (part 3)" in next(f.message for f in r.findings if f.rule_id == "MTP035")


def test_split_keys_disagree(tmp_path: Path) -> None:
    kv = model_kv("qwen35moe", blocks=41, nextn=None) + [("split.no", 2, 1), ("split.count", 2, 2), ("split.tensors.count", 5, 99)]
    write_gguf(tmp_path / "Q-00001-of-00002.gguf", kv, trunk_tensors(range(1)))
    write_gguf(tmp_path / "Q-00002-of-00002.gguf", [("split.no", 2, 1), ("split.count", 2, 2)], trunk_tensors(range(1, 2))[:1])
    msgs = [f.message for f in audit_checkpoint(tmp_path).findings if f.rule_id == "MTP035"]
    assert any("split.no is 1, the file name says part 1 (split.no 0)" in m for m in msgs)
    assert any("split.tensors.count is 99, the parts hold 7 tensors" in m for m in msgs)


def test_folder_with_sidecar_and_mmproj(tmp_path: Path) -> None:
    _qwen36(tmp_path / "Qwen3.8-27B-Q4_K_M.gguf", heads=False)
    write_gguf(tmp_path / "mtp-Qwen3.8-27B-Q4_0.gguf", model_kv("qwen35moe", blocks=41, nextn=1), nextn_tensors(40, ggml_type=2))
    (tmp_path / "mmproj-F16.gguf").write_bytes(b"not read")
    r = audit_checkpoint(tmp_path)
    facts = r.facts["checkpoint"]
    assert [m["kind"] for m in facts["gguf"]["models"]] == ["model", "sidecar"]
    assert facts["gguf"]["skipped"] == ["mmproj-F16.gguf"]
    assert facts["summary"]["mtp_sidecar"] == "mtp-Qwen3.8-27B-Q4_0.gguf"
    assert sorted(f.rule_id for f in r.findings) == ["MTP036", "MTP038"]  # Q4_0 eh_proj is advisory
    assert facts["summary"]["llamacpp_mtp_usable"] is True


def test_declared_but_stripped_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_gguf(tmp_path / "m.gguf", model_kv("qwen35moe", blocks=41, nextn=1), trunk_tensors(range(41)))
    assert main(["checkpoint", str(tmp_path / "m.gguf"), "-f", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP030"]
    assert doc["facts"]["checkpoint"]["summary"]["llamacpp_mtp_usable"] is False


def _header() -> bytes:
    return gguf_header(model_kv("qwen35moe", blocks=41, nextn=1), nextn_tensors(40))[0]


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda b: b[:100], "truncated GGUF header"),
    (lambda b: b[:8] + struct.pack("<Q", 2**63) + b[16:], "tensors claimed"),
    (lambda b: b[:16] + struct.pack("<Q", 10**9) + b[24:], "key/value pairs claimed"),
    (lambda b: b[:24] + struct.pack("<Q", 2**40) + b[32:], "key 0 claims 1,099,511,627,776 bytes, past the end of the file"),
    (lambda b: b[:24 + 8 + 20] + struct.pack("<I", 77) + b[24 + 8 + 20 + 4:], "unknown GGUF value type 77"),
])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate, needle: str) -> None:
    raw = _header()
    bad = mutate(raw)
    path = tmp_path / "bad.gguf"
    path.write_bytes(bad)
    assert main(["checkpoint", str(path)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and needle in cap.err and str(path) in cap.err


def test_a_cut_gguf_inside_a_folder_is_mtp013_and_the_others_are_audited(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A folder of quants with one cut download: the cut file is a defect of the checkpoint (MTP013, exit 1), as a
    malformed safetensors shard inside a folder is; the good file is still audited. It was exit 2 for the whole folder.
    Named alone, the cut file stays exit 2 (test_bad_input_is_one_line_exit_2)."""
    folder = tmp_path / "quants"
    folder.mkdir()
    good = Path(__file__).resolve().parent.parent / "fixtures" / "gguf" / "Qwen3.6-35B-A3B-MTP-layout.gguf"
    (folder / "good.gguf").write_bytes(good.read_bytes())
    (folder / "cut.gguf").write_bytes(good.read_bytes()[:100])
    rep = audit_checkpoint(folder)
    assert [(f.rule_id, f.location.path, f.message) for f in rep.findings] == [
        ("MTP013", "cut.gguf", "cut.gguf: truncated GGUF header: 130 tensors and 4 key/value pairs claimed, more than "
                               "the remaining 76 bytes can hold (at byte 24)")]
    facts = rep.facts["checkpoint"]
    assert [m["name"] for m in facts["gguf"]["models"]] == ["good.gguf"] and facts["summary"]["llamacpp_mtp_usable"] is True
    assert main(["checkpoint", str(folder)]) == 1
    assert capsys.readouterr().out.splitlines()[0].endswith("can use the MTP head; 1 GGUF file(s) of the folder could "
                                                            "not be read (exit 1)")
    (folder / "good.gguf").unlink()
    assert main(["checkpoint", str(folder)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == ("FAIL: no GGUF model could be read; 1 GGUF file(s) of the folder "
                                                       "could not be read (exit 1)")
