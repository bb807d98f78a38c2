"""Issue 10 §3/§4: severity follows consequence, schemes are identified from their parameters, misplaced MTP
tensors are not "go", and config-only audits predict the MTP module path, exclusion and bytes.

Inputs are real: the Qwen3.5-397B-A17B-NVFP4 and DeepSeek-V3 header specs (tests/test_checkpoint_fixtures.py
says where their facts come from), the real configs under fixtures/checkpoint/ (SOURCE.txt each), the real
quantization_config excerpts under fixtures/quant/ (SOURCE.txt), and public bug reports cited per test.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.checks import mtp_patterns
from mtp_audit.checkpoint.config import fp4_scheme_of, parse_config, parse_quantization_config
from mtp_audit.checkpoint.layouts import expected_names
from mtp_audit.checkpoint.overrides import quant_overrides
from mtp_audit.cli.main import main
from mtp_audit.synth.shards import write_checkpoint

FIX = Path(__file__).resolve().parent.parent / "fixtures"
CK = FIX / "checkpoint"
QW = CK / "nvidia--Qwen3.5-397B-A17B-NVFP4"
DS = CK / "deepseek-ai--DeepSeek-V3"
QUANT = FIX / "quant"


def _spec_folder(tmp: Path, fixture: Path, *, shards: bool) -> Path:
    write_checkpoint(tmp, json.loads((fixture / "spec.json").read_text()), shards=shards)
    return tmp


# --- §3a: MTP007 is an error unless engine code overrides the list -----------------------------------


def test_compressed_tensors_ignore_missing_bf16_mtp_experts_is_an_error(tmp_path):
    """vLLM PR #41994: a compressed-tensors NVFP4 Qwen3.5 MoE checkpoint whose ignore list names mtp.fc, the MTP
    attention and shared expert but not the BF16 MTP experts fails with KeyError layers.0.mlp.experts.w2_weight.
    Real shapes: the 397B header spec (1,544 MTP linears, all BF16); real scheme: RedHatAI's quantization_config."""
    folder = _spec_folder(tmp_path, QW, shards=True)
    cfg = json.loads((QW / "config.json").read_text())
    qc = json.loads((QUANT / "RedHatAI--Qwen3-Coder-Next-NVFP4.quantization_config.json").read_text())
    qc["ignore"] = ["lm_head", "mtp.fc", "re:mtp\\.layers\\.0\\.self_attn\\..*", "re:mtp\\.layers\\.0\\.mlp\\.shared_expert\\..*"]
    cfg["quantization_config"] = qc
    (folder / "config.json").write_text(json.dumps(cfg))
    rep = audit_checkpoint(folder)
    hits = [f for f in rep.findings if f.rule_id == "MTP007"]
    assert len(hits) == 1 and hits[0].severity.label == "error"
    # 1,544 MTP linears - mtp.fc - q/k/v/o - 3 shared-expert projections = 1,536 = 512 experts x 3
    assert hits[0].message.startswith("1536 MTP linear module(s) stored BF16 are not covered by /quantization_config/ignore")
    assert "no engine code known to override the list" in hits[0].message
    ev = {e.label: e.value for e in hits[0].evidence}
    assert ev["quantization"] == "compressed-tensors NVFP4"
    closing = rep.facts["checkpoint"]["closing"]["lines"]
    # the same ignore list misses the trunk sample's BF16 attention (4) and shared expert (3): declared NVFP4 by
    # config_groups target "Linear", stored BF16 in the header
    declared = [f for f in rep.findings if f.rule_id == "MTP015"]
    assert len(declared) == 1 and declared[0].message.startswith(
        "7 linear module(s) are declared NVFP4, group 16 by config.json but their tensors are stored BF16 "
        "(read from the shard header): model.language_model.layers.3.mlp.shared_expert.down_proj")
    assert closing[-1] == "SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads (MTP007, MTP015)."
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False
    assert main(["checkpoint", str(folder)]) == 1


def test_modelopt_exclude_list_missing_mtp_fc_is_a_warning_naming_the_engines(tmp_path):
    """vLLM PR #38832: nvidia/Qwen3.5-397B-A17B-NVFP4 excludes only mtp.layers.0*; SGLang 0.5.23 and vLLM 0.20.0
    build mtp.fc unquantized for modelopt_fp4, so the load works there: a warning, exit 0, and the answer says why."""
    folder = _spec_folder(tmp_path, QW, shards=False)
    for f in ("config.json", "hf_quant_config.json"):
        shutil.copy(QW / f, folder / f)
    rep = audit_checkpoint(folder)
    x = [f for f in rep.findings if f.rule_id == "MTP007"][0]
    assert x.severity.label == "warning"
    assert "SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69" in x.message
    assert "vLLM 0.20.0 vllm/model_executor/models/qwen3_5_mtp.py:80-88" in x.message
    assert x.remediation.endswith("Until then serve it with SGLang >= 0.5.23 or vLLM >= 0.20.0.")
    closing = rep.facts["checkpoint"]["closing"]["lines"]
    assert closing[2].startswith("SGLang: yes")
    assert closing[3].startswith("  Only because SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69 and vLLM 0.20.0 "
                                 "vllm/model_executor/models/qwen3_5_mtp.py:80-88 ignore(s)")
    assert main(["checkpoint", str(folder)]) == 0


@pytest.mark.network
@pytest.mark.parametrize("row", quant_overrides(), ids=lambda r: f"{r.engine}-{r.version}")
def test_each_engine_override_is_where_the_table_says(row):
    """Every engine's row (mtp_audit/engines/<engine>/, through mtp_audit/checkpoint/overrides.py): the cited lines
    of the named release hold the code."""
    from conftest import cache_dir, sglang_wheel

    if row.engine == "SGLang":
        wheel = sglang_wheel(row.version)
    else:
        found = sorted((cache_dir() / "vllm-wheels").glob(f"vllm-{row.version}-*.whl"))
        if not found:
            pytest.skip(f"vllm {row.version} wheel not in the test cache")
        wheel = found[0]
    with zipfile.ZipFile(wheel) as z:
        lines = z.read(row.file).decode().splitlines()
    a, b = row.lines
    cited = "\n".join(lines[a - 1 : b])
    assert row.needle in cited, cited


# --- §3b/§3d: the closing answer agrees; misplaced MTP tensors are not "go" ----------------------------


def test_mtp_layer_counted_as_trunk_is_not_go(tmp_path):
    """DeepSeek-V3's real 91,991 tensor names with num_hidden_layers set to 62 (the MTP layer counted as a trunk
    layer): model.layers.61 holds enorm/hnorm/eh_proj/shared_head, which the loader (vLLM 0.33.0 models/utils.py
    get_spec_layer_idx_from_weight_name) would look for in model.layers.62. MTP014 + MTP001, exit 1, answer no."""
    folder = _spec_folder(tmp_path, DS, shards=False)
    cfg = json.loads((DS / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 61
    cfg["num_hidden_layers"] = 62
    (folder / "config.json").write_text(json.dumps(cfg))
    rep = audit_checkpoint(folder)
    m14 = [f for f in rep.findings if f.rule_id == "MTP014"]
    assert len(m14) == 1 and m14[0].severity.label == "error"
    assert m14[0].message.startswith(
        "model.layers.61 holds MTP-only tensors (eh_proj, enorm, hnorm, shared_head) but it is trunk layer 61 of 62")
    assert "reads the MTP layer from model.layers.62.*" in m14[0].message
    assert {"MTP001", "MTP014"} <= {f.rule_id for f in rep.findings}
    assert rep.facts["checkpoint"]["closing"]["lines"][-1].startswith("SGLang: no,")
    assert main(["checkpoint", str(folder)]) == 1


def test_real_deepseek_layout_has_no_misplaced_tensors(tmp_path):
    folder = _spec_folder(tmp_path, DS, shards=False)
    shutil.copy(DS / "config.json", folder / "config.json")
    rep = audit_checkpoint(folder)
    assert "MTP014" not in {f.rule_id for f in rep.findings}


# --- §3c: the scheme from its parameters ------------------------------------------------------------


def test_quark_mxfp4_identified_from_parameters_and_vision_excludes_are_not_mtp():
    qc = json.loads((QUANT / "amd--Qwen3.8-27B-Quark-AWQ-MXFP4.quantization_config.json").read_text())
    s = parse_quantization_config(qc)
    assert (s.method, s.algo, s.group_size, s.scale_format, s.identified_by) == ("quark", "MXFP4", 32, "E8M0", "parameters")
    # the exclude list is ["model.visual.pos_embed", "lm_head"]: none of it covers a Qwen3.5 MTP module
    cfg = parse_config(json.loads((CK / "nvidia--Qwen3.5-397B-A17B-NVFP4" / "config.json").read_text()))
    mtp = expected_names(cfg.layout, cfg.num_hidden_layers, 1, cfg.num_experts)
    assert len(mtp) == 1553
    assert mtp_patterns(s, [n.rsplit(".", 1)[0] for n in mtp]) == []


def test_quark_nvfp4_is_not_called_mxfp4():
    """Quark writes NVFP4 as a two-element weight spec (fp4 per_group group 16 + fp8_e4m3 per_tensor), the shape
    vLLM 0.33.0 quark.py _is_nvfp4 (lines 602-651) accepts; the method name alone would have said MXFP4."""
    qc = {"quant_method": "quark", "exclude": [], "global_quant_config": {
        "weight": [{"dtype": "fp4", "qscheme": "per_group", "group_size": 16, "is_dynamic": False},
                   {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}]}}
    s = parse_quantization_config(qc)
    assert (s.algo, s.group_size, s.scale_format) == ("NVFP4", 16, "FP8 E4M3")


def test_compressed_tensors_nvfp4_identified_from_parameters():
    qc = json.loads((QUANT / "RedHatAI--Qwen3-Coder-Next-NVFP4.quantization_config.json").read_text())
    s = parse_quantization_config(qc)
    assert (s.algo, s.group_size, s.scale_format, s.identified_by) == ("NVFP4", 16, "FP8 E4M3", "parameters")
    # a format string that says nothing about FP4 does not matter: the parameters decide
    qc["format"] = "pack-quantized"
    qc["config_groups"]["group_0"]["weights"]["group_size"] = 32
    assert parse_quantization_config(qc).algo == "MXFP4"


@pytest.mark.parametrize(("spec", "expected"), [
    ({"num_bits": 4, "type": "float", "group_size": 16}, ("NVFP4", "FP8 E4M3")),
    ({"num_bits": 4, "type": "float", "group_size": 32}, ("MXFP4", "E8M0")),
    ({"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}, ("MXFP4", "E8M0")),
    ({"num_bits": 4, "type": "int", "group_size": 128}, None),  # W4A16 INT4 is not FP4
    ({"num_bits": 4, "type": "float", "group_size": 64}, None),  # neither scheme: no guess
    ({"dtype": "fp8_e4m3", "qscheme": "per_tensor"}, None),
])
def test_fp4_scheme_of(spec, expected):
    assert fp4_scheme_of(spec) == expected


# --- §4: config-only audits predict what they can ---------------------------------------------------


def _prediction(path: Path) -> tuple[dict, list[str], int]:
    rep = audit_checkpoint(path)
    c = rep.facts["checkpoint"]
    blocking = [g for g in rep.gaps if g.blocking]
    assert len(blocking) == 1 and "whether the MTP tensors ship cannot be checked" in blocking[0].message
    return c["prediction"], c["closing"]["lines"], main(["checkpoint", str(path)])


def test_config_only_deepseek_v31_nvfp4_predicts_layer_61_excluded_bf16():
    pred, lines, code = _prediction(CK / "nvidia--DeepSeek-V3.1-NVFP4")
    assert code == 3
    assert pred["module_paths"] == ["model.layers.61"] and pred["placement"] == "appended"
    assert pred["exclusion"] == "all" and pred["exclude_patterns"] == ["model.layers.61*"]
    assert pred["expected_formats"] == {"BF16": 777}  # 256 experts x 3 + 3 shared + 5 MLA + eh_proj
    # by hand, BF16 (2 bytes) from config.json: experts 768 x 2048 x 7168, shared 3 x 2048 x 7168, embed_tokens +
    # shared_head.head 2 x 129280 x 7168, eh_proj 7168 x 14336, q_a 1536 x 7168, q_b 24576 x 1536, kv_a 576 x 7168,
    # kv_b 32768 x 512, o_proj 7168 x 16384, router 256 x 7168; 5 norms x 7168 + 1536 + 512; bias 256 x 4 bytes
    h, i, v = 7168, 2048, 129280
    by_hand = 2 * (768 * i * h + 3 * i * h + 2 * v * h + h * 2 * h + 1536 * h + 24576 * 1536 + 576 * h
                   + 32768 * 512 + h * 16384 + 256 * h + 5 * h + 1536 + 512) + 256 * 4
    assert pred["bytes"] == by_hand == 26_926_853_120
    assert lines[2].startswith("Predicted from config: the MTP layer loads from model.layers.61.*")
    assert "excludes it (model.layers.61*), so it is expected BF16; about 26,926,853,120 bytes" in lines[2]


def test_config_only_exclude_list_without_the_mtp_layer_predicts_nvfp4(tmp_path):
    """NVIDIA/Model-Optimizer #750: an NVFP4 export whose hf_quant_config.json does not exclude the MTP layer
    (there GLM-4.7's model.layers.92*): engines then build the MTP layer NVFP4. The DeepSeek-V3.1-NVFP4 files
    with model.layers.61* taken out of exclude_modules."""
    src = CK / "nvidia--DeepSeek-V3.1-NVFP4"
    for f in ("config.json", "hf_quant_config.json"):
        shutil.copy(src / f, tmp_path / f)
    hq = json.loads((tmp_path / "hf_quant_config.json").read_text())
    hq["quantization"]["exclude_modules"].remove("model.layers.61*")
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(hq))
    pred, lines, code = _prediction(tmp_path)
    assert code == 3
    assert pred["exclusion"] == "none" and pred["expected_formats"] == {"NVFP4": 777}
    assert "does not exclude it, so it is expected NVFP4" in lines[2]


def test_config_only_qwen35_397b_predicts_mtp_fc_not_excluded():
    pred, lines, code = _prediction(QW)
    assert code == 3
    assert pred["module_paths"] == ["mtp"] and pred["exclusion"] == "partly"
    assert pred["not_excluded"] == ["mtp.fc"]
    assert pred["expected_formats"] == {"BF16": 1543, "NVFP4": 1}
    assert "(not excluded: mtp.fc; if they ship BF16, an engine that trusts the list fails to load them: MTP007)" in lines[2]


def test_config_only_qwen35_122b_predicts_all_excluded():
    pred, _, code = _prediction(CK / "nvidia--Qwen3.5-122B-A10B-NVFP4")
    assert code == 3
    assert pred["exclusion"] == "all" and pred["exclude_patterns"] == ["mtp*", "mtp.layers.0*"]
    assert pred["expected_formats"] == {"BF16": 776}  # 256 experts x 3 + q/k/v/o + 3 shared + fc


def test_config_only_glm5_fp8_predicts_layer_78_partly_excluded():
    pred, lines, code = _prediction(CK / "zai-org--GLM-5-FP8")
    assert code == 3
    assert pred["module_paths"] == ["model.layers.78"] and pred["basis"] == "probe"
    # modules_to_not_convert names model.layers.78.eh_proj (and norms); attention and experts stay FP8 blocks
    assert pred["exclusion"] == "partly" and pred["exclude_patterns"] == ["model.layers.78.eh_proj"]
    assert pred["expected_formats"] == {"BF16": 1, "FP8": 3}
    assert pred["bytes"] is None  # no verified GLM-5 tensor-name template: no byte estimate, not a guess


def test_config_only_nemotron_super_and_minimax_and_qwen3_next():
    pred, lines, code = _prediction(CK / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")
    assert code == 3 and pred["module_paths"] == ["mtp"] and pred["exclusion"] == "no exclusion list"
    pred, lines, code = _prediction(CK / "nvidia--MiniMax-M2.5-NVFP4")
    assert code == 3
    assert pred["module_paths"] == ["model.layers.62", "model.layers.63", "model.layers.64"]
    assert pred["upstream_unpublished"] is True and "never published upstream" in lines[2]
    pred, lines, code = _prediction(CK / "Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert code == 3 and pred["module_paths"] == ["mtp"] and pred["exclusion"] == "not quantized"
    assert pred["expected_formats"] == {"BF16": 1544}


def test_override_by_vllm_only_does_not_make_sglang_say_yes(tmp_path, monkeypatch):
    """The closing question is about SGLang: an MTP007 warning earned by a vLLM override alone still blocks SGLang.
    (The table is narrowed to its vLLM row for this test; the audit input is the real 397B metadata.)"""
    from mtp_audit.checkpoint import overrides

    rows = tuple(o for o in quant_overrides() if o.engine == "vLLM")
    monkeypatch.setattr(overrides, "quant_overrides", lambda: rows)
    folder = _spec_folder(tmp_path, QW, shards=False)
    for f in ("config.json", "hf_quant_config.json"):
        shutil.copy(QW / f, folder / f)
    rep = audit_checkpoint(folder)
    x = [f for f in rep.findings if f.rule_id == "MTP007"][0]
    assert x.severity.label == "warning" and "vLLM 0.20.0" in x.message and "SGLang" not in x.message
    c = rep.facts["checkpoint"]
    assert c["closing"]["lines"][-1] == "SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads (MTP007)."
    assert c["engine"]["sglang"]["blocked_by"] == ["MTP007"]


def test_headline_says_the_scheme_came_from_parameters(tmp_path):
    cfg = json.loads((CK / "Qwen--Qwen3-Next-80B-A3B-Thinking" / "config.json").read_text())
    cfg["quantization_config"] = json.loads((QUANT / "RedHatAI--Qwen3-Coder-Next-NVFP4.quantization_config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    rep = audit_checkpoint(tmp_path)
    assert rep.facts["checkpoint"]["summary"]["quantization"] == (
        "NVFP4 (compressed-tensors, config.json, group size 16, FP8 E4M3 scales, identified from the weight parameters)")
    # config-only: the compressed-tensors config has no ignore list, so every MTP linear is expected NVFP4
    pred = rep.facts["checkpoint"]["prediction"]
    assert pred["exclusion"] == "no exclusion list" and pred["expected_formats"] == {"NVFP4": 1544}
