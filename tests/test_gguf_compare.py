"""``compare`` between a safetensors base and its GGUF export, on DeepSeek-V3's real tensor names (fixture spec.json:
91,991 names, the MTP layer model.layers.61) and a GGUF laid out as the converter writes DeepSeek/GLM (block_count 62,
blk.61.nextn.{eh_proj, embed_tokens, enorm, hnorm, shared_head_head, shared_head_norm})."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mtp_audit.compare.analyze import compare_checkpoints
from mtp_audit.synth.gguf import model_kv, nextn_tensors, trunk_tensors, write_gguf

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3"
ALL = ("eh_proj", "embed_tokens", "enorm", "hnorm", "shared_head_head", "shared_head_norm")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mtp_audit.synth.shards import write_checkpoint

    d = tmp_path_factory.mktemp("ds") / "DeepSeek-V3"
    write_checkpoint(d, json.loads((FIX / "spec.json").read_text()), shards=False)
    shutil.copy(FIX / "config.json", d / "config.json")
    return d


def _export(d: Path, parts: tuple[str, ...] | None, nextn: int | None = 1) -> Path:
    d.mkdir()
    tensors = trunk_tensors(range(3)) + (nextn_tensors(61, parts=parts) if parts else [])
    write_gguf(d / "DeepSeek-V3-Q4_K_M.gguf", model_kv("deepseek2", blocks=62 if nextn else 61, nextn=nextn), tensors)
    return d


def test_all_six_parts_map(base: Path, tmp_path: Path) -> None:
    r = compare_checkpoints(base, _export(tmp_path / "g", ALL))
    doc = r.facts["compare"]
    assert r.findings == ()
    assert (doc["summary"]["hallmarks"], doc["summary"]["mapped"]) == (6, 6)
    assert {m["base"]: m["gguf"] for m in doc["mapping"]}["model.layers.61.eh_proj.weight"] == "blk.61.nextn.eh_proj.weight"


def test_dropped_and_optional_parts(base: Path, tmp_path: Path) -> None:
    r = compare_checkpoints(base, _export(tmp_path / "none", None, None))
    assert [(f.rule_id, f.severity.label) for f in r.findings] == [("MTP055", "error")]
    r = compare_checkpoints(base, _export(tmp_path / "qwenlike", ("eh_proj", "enorm", "hnorm", "shared_head_norm")))
    assert [(f.rule_id, f.severity.label) for f in r.findings] == [("MTP056", "warning")]  # embed/head shared with trunk
    r = compare_checkpoints(base, _export(tmp_path / "nohnorm", ("eh_proj", "embed_tokens", "enorm", "shared_head_head", "shared_head_norm")))
    # the derived GGUF's own MTP032 (a NextN block without hnorm) is carried over, prefixed with its side
    assert [(f.rule_id, f.severity.label) for f in r.findings] == [("MTP056", "error"), ("MTP032", "error")]
    assert r.findings[1].message.startswith(f"derived ({tmp_path / 'nohnorm'}): ")
    assert "model.layers.61.hnorm.weight -> blk.61.nextn.hnorm.weight" in r.findings[0].message
