"""MTP023: the MTP glue (DeepSeek NextN eh_proj / enorm / hnorm / shared_head.norm, Qwen3.5 mtp.fc / mtp.norm /
mtp.pre_fc_norm_*) has the shape the engine builds from config.json's hidden_size, judged only from a header.

Real inputs: the DeepSeek-V3 and Qwen3.5-397B-A17B-NVFP4 header specs (fixtures/checkpoint/*/spec.json, real shapes:
DeepSeek eh_proj [7168, 14336], norms [7168]; Qwen3.5 mtp.fc [4096, 8192], norms [4096]) written as header-only shards.
"""

from __future__ import annotations

import json
from pathlib import Path

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.synth.shards import tiny, write_checkpoint

CK = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"
DS = CK / "deepseek-ai--DeepSeek-V3"
QW = CK / "nvidia--Qwen3.5-397B-A17B-NVFP4"


def _real(tmp: Path, fixture: Path, hidden: int | None, *, shards: bool = True) -> Path:
    write_checkpoint(tmp, json.loads((fixture / "spec.json").read_text()), shards=shards)
    cfg = json.loads((fixture / "config.json").read_text())
    if hidden is not None:
        (cfg["text_config"] if "text_config" in cfg else cfg)["hidden_size"] = hidden
    (tmp / "config.json").write_text(json.dumps(cfg))
    for extra in ("hf_quant_config.json",):
        if (fixture / extra).exists():
            (tmp / extra).write_bytes((fixture / extra).read_bytes())
    return tmp


def _m23(rep):
    return [f for f in rep.findings if f.rule_id == "MTP023"]


def test_real_shapes_agree_with_their_config(tmp_path):
    assert _m23(audit_checkpoint(_real(tmp_path / "ds", DS, None))) == []
    assert _m23(audit_checkpoint(_real(tmp_path / "qw", QW, None))) == []


def test_deepseek_hidden_size_of_another_model_is_mtp023(tmp_path):
    """hidden_size 4096 against DeepSeek-V3's 7168-wide MTP layer 61: the 4 glue tensors disagree. Was PASS."""
    folder = _real(tmp_path, DS, 4096)
    hits = _m23(audit_checkpoint(folder))
    assert len(hits) == 1 and hits[0].severity.label == "error"
    assert hits[0].message.startswith(
        "4 MTP tensor(s) of model.layers.61 do not have the shape the engine's MTP module builds from hidden_size 4096 "
        "(config.json#/hidden_size): model.layers.61.eh_proj.weight BF16 [7168, 14336], expected [4096, 8192];")
    assert hits[0].location.symbol == "model.layers.61.eh_proj.weight"
    assert main(["checkpoint", str(folder)]) == 1


def test_qwen35_text_config_hidden_size_is_read_from_text_config(tmp_path):
    """text_config.hidden_size 2048 against the 4096-wide mtp.fc [4096, 8192] and 3 norms: 4 tensors."""
    hits = _m23(audit_checkpoint(_real(tmp_path, QW, 2048)))
    assert len(hits) == 1
    assert hits[0].message.startswith("4 MTP tensor(s) of mtp do not have the shape the engine's MTP module builds "
                                      "from hidden_size 2048 (config.json#/text_config/hidden_size): mtp.fc.weight BF16 "
                                      "[4096, 8192], expected [2048, 4096];")


def test_index_alone_says_nothing_about_shapes(tmp_path):
    """Metadata-only (no header read): the wrong hidden_size cannot be judged, so no MTP023."""
    assert _m23(audit_checkpoint(_real(tmp_path, DS, 4096, shards=False))) == []


def _tiny_qwen(tmp: Path, fc: tuple[str, list[int]]) -> Path:
    cfg = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
           "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 1, "mtp_num_hidden_layers": 1,
                           "num_experts": 0, "hidden_size": 8}}
    t = {"model.language_model.layers.0.self_attn.q_proj.weight": ("BF16", [8, 8]), "mtp.fc.weight": fc,
         "mtp.norm.weight": ("BF16", [8]), "mtp.layers.0.self_attn.q_proj.weight": ("BF16", [8, 8])}
    (tmp / "config.json").write_text(json.dumps(cfg))
    (tmp / "model.safetensors").write_bytes(tiny(t))
    return tmp


def test_transposed_fc_and_packed_fp4_fc(tmp_path):
    """hidden 8: fc BF16 [16, 8] (transposed) is MTP023; U8 [8, 8] is NVFP4's packing of [8, 16] (fine); U8 [8, 16]
    would hold [8, 32]: MTP023, expected [8, 8]."""
    for name, fc, want in (("t", ("BF16", [16, 8]), "mtp.fc.weight BF16 [16, 8], expected [8, 16]"),
                           ("p", ("U8", [8, 8]), None),
                           ("w", ("U8", [8, 16]), "mtp.fc.weight U8 [8, 16], expected [8, 8]")):
        (tmp_path / name).mkdir()
        hits = _m23(audit_checkpoint(_tiny_qwen(tmp_path / name, fc)))
        assert [h.evidence[0].value for h in hits] == ([want] if want else []), name
