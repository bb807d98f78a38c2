"""MTP015 in both directions: tensors stored quantized that nothing declares (no ``quantization_config``, no
``hf_quant_config.json``), and tensors stored in another quantized format than the one the config names (FP8 block
declared, NVFP4 stored), the way the declared-NVFP4-stored-BF16 direction already was.

Real input: nvidia/Qwen3.6-35B-A3B-NVFP4's config.json (byte copy, fixtures/checkpoint/nvidia--Qwen3.6-35B-A3B-NVFP4/
SOURCE.txt) with header-only shards from its spec.json; its trunk holds 772 NVFP4 linears (U8 weight, F8_E4M3
weight_scale, F32 weight_scale_2) and 4 FP8 ones (q/k/v/o of layer 3), its MTP branch 8 BF16 linears.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.report import Severity, exit_code
from mtp_audit.report.questions import STARTS
from mtp_audit.synth.shards import write_checkpoint

Q36 = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint" / "nvidia--Qwen3.6-35B-A3B-NVFP4"
FP8_BLOCK = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}


def _q36(tmp: Path, quantization_config: dict | None, index_only: bool = False) -> Path:
    """The Qwen3.6 NVFP4 layout without hf_quant_config.json and with ``quantization_config`` replaced."""
    write_checkpoint(tmp, json.loads((Q36 / "spec.json").read_text()))
    cfg = json.loads((Q36 / "config.json").read_text())
    del cfg["quantization_config"]
    if quantization_config is not None:
        cfg["quantization_config"] = quantization_config
    (tmp / "config.json").write_text(json.dumps(cfg))
    if index_only:
        for shard in tmp.glob("*.safetensors"):
            shard.unlink()
    return tmp


def test_nvfp4_tensors_with_no_quantization_config_are_mtp015(tmp_path):
    """Nothing declares a quantization, so engines build every linear BF16: the 776 quantized modules (772 NVFP4 +
    4 FP8, counted by hand from spec.json) do not fit. Was PASS (MTP006 info only), exit 0."""
    rep = audit_checkpoint(_q36(tmp_path, None))
    hits = [f for f in rep.findings if f.rule_id == "MTP015"]
    assert len(hits) == 1 and hits[0].severity is Severity.ERROR
    assert hits[0].message.startswith(
        "776 linear module(s) are stored quantized (FP8: 4, NVFP4: 772), e.g. lm_head, but nothing declares a "
        "quantization: config.json has no quantization_config and there is no hf_quant_config.json;")
    ev = {e.label: e.value for e in hits[0].evidence}
    assert ev["stored tensors"] == ("lm_head.weight U8 [248320, 1024], lm_head.weight_scale_2 F32 [], "
                                    "lm_head.weight_scale F8_E4M3 [248320, 128]")
    assert ev["declared"] == "none: config.json#/quantization_config absent, hf_quant_config.json absent"
    assert exit_code(rep, Severity.ERROR) == 1
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False


def test_no_config_from_the_index_alone_names_the_scale_tensors(tmp_path):
    """Metadata-only (index, no shards): the same 776 modules from the sibling names; dtypes not read."""
    rep = audit_checkpoint(_q36(tmp_path, None, index_only=True))
    hit = next(f for f in rep.findings if f.rule_id == "MTP015")
    assert hit.message.startswith("776 linear module(s) are stored quantized (FP8: 4, NVFP4: 772)")
    assert dict((e.label, e.value) for e in hit.evidence)["stored tensors"] == (
        "lm_head.weight (header not read), lm_head.weight_scale_2 (header not read), "
        "lm_head.weight_scale (header not read)")


def test_a_quantization_sidecar_the_audit_does_not_read_makes_it_could_not_tell(tmp_path):
    """An AutoGPTQ-style quantize_config.json (read by vLLM when --quantization names the method): no error, a
    blocking gap on the 'starts' question instead (exit 3)."""
    folder = _q36(tmp_path, None)
    (folder / "quantize_config.json").write_text("{}")
    rep = audit_checkpoint(folder)
    assert "MTP015" not in [f.rule_id for f in rep.findings]
    gaps = [g for g in rep.gaps if g.question == STARTS]
    assert len(gaps) == 1 and gaps[0].blocking and gaps[0].path == "quantize_config.json"
    assert gaps[0].message.startswith("776 linear module(s) are stored quantized (FP8: 4, NVFP4: 772)")
    assert exit_code(rep, Severity.ERROR) == 3


@pytest.mark.parametrize("extra", ["hf_quant_config.json", "config.json#/quantization_config"])
def test_a_quantization_config_no_scheme_was_read_from_is_not_called_absent(tmp_path, extra):
    """hf_quant_config.json present but holding no scheme the audit knows (here {}), or a quantization_config that is
    not an object: never 'there is no hf_quant_config.json'; a blocking gap naming it instead."""
    folder = _q36(tmp_path, None)
    if extra == "hf_quant_config.json":
        (folder / extra).write_text("{}")
    else:
        cfg = json.loads((folder / "config.json").read_text())
        cfg["quantization_config"] = "modelopt"
        (folder / "config.json").write_text(json.dumps(cfg))
    rep = audit_checkpoint(folder)
    assert "MTP015" not in [f.rule_id for f in rep.findings]
    assert [g.path for g in rep.gaps if g.question == STARTS] == [extra.partition("#")[0]]
    assert exit_code(rep, Severity.ERROR) == 3


def test_fp8_block_declared_over_nvfp4_tensors_is_mtp015(tmp_path):
    """config.json declares FP8 block 128x128 (no modules_to_not_convert); 772 linears are stored NVFP4: MTP015.
    The 4 FP8 modules agree and the 8 BF16 MTP linears are left to the model code (DeepSeek keeps eh_proj BF16
    under the same declaration). Was PASS, exit 0."""
    rep = audit_checkpoint(_q36(tmp_path, FP8_BLOCK))
    hits = [f for f in rep.findings if f.rule_id == "MTP015"]
    assert len(hits) == 1 and hits[0].severity is Severity.ERROR
    assert hits[0].message.startswith(
        "772 linear module(s) are declared FP8 W8A8, block 128x128 by config.json but their tensors are stored "
        "NVFP4 (read from the shard header): lm_head, model.language_model.layers.3.mlp.experts.0.down_proj,")
    assert hits[0].location.symbol == "/quantization_config"
    assert exit_code(rep, Severity.ERROR) == 1


def test_fp8_block_declared_over_fp8_and_bf16_tensors_is_not_mtp015(tmp_path):
    """The real DeepSeek-V3 layout (163 header-only shards from its spec.json; FP8 block declared with no exclusion
    list, gate and eh_proj stored BF16, the rest F8_E4M3 + weight_scale_inv) stays free of MTP015."""
    ds = Q36.parent / "deepseek-ai--DeepSeek-V3"
    write_checkpoint(tmp_path, json.loads((ds / "spec.json").read_text()))
    (tmp_path / "config.json").write_bytes((ds / "config.json").read_bytes())
    rep = audit_checkpoint(tmp_path)
    assert rep.facts["checkpoint"]["mode"] == "shards"
    assert "FP8" in rep.facts["checkpoint"]["trunk"]["format_modules"]
    assert "MTP015" not in [f.rule_id for f in rep.findings]
