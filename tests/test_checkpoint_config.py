"""config.json MTP dialects and quantization-config parsing (checkpoint_formats.md §1, §4), plus the
checkpoint rules' own examples and the layout table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.checkpoint.config import (
    ConfigError,
    parse_config,
    parse_hf_quant_config,
    parse_quantization_config,
)
from mtp_audit.checkpoint.examples import run_example
from mtp_audit.checkpoint.layouts import LAYOUTS, classify, expected_names, layout_for
from mtp_audit.checkpoint.rules import RULES

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"
REAL = json.loads((FIX / "nvidia--Qwen3.5-397B-A17B-NVFP4" / "hf_quant_config.json").read_text())


@pytest.mark.parametrize(
    "cfg, layers, key",
    [
        ({"architectures": ["DeepseekV3ForCausalLM"], "num_nextn_predict_layers": 1}, 1, "/num_nextn_predict_layers"),
        ({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "text_config": {"mtp_num_hidden_layers": 1}}, 1,
         "/text_config/mtp_num_hidden_layers"),
        ({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "mtp_num_hidden_layers": 2}, 2, "/mtp_num_hidden_layers"),
        ({"architectures": ["Glm4MoeForCausalLM"], "num_mtp_layers": 1}, 1, "/num_mtp_layers"),
        ({"architectures": ["MiniMaxM2ForCausalLM"], "use_mtp": True, "num_mtp_modules": 3, "mtp_transformer_layers": 1}, 3,
         "/num_mtp_modules"),
        ({"architectures": ["MiniMaxM2ForCausalLM"], "use_mtp": False, "num_mtp_modules": 3}, 0, "/use_mtp"),
        ({"architectures": ["X"], "mtp_config": {"num_nextn_predict_layers": 2}}, 2, "/mtp_config/num_nextn_predict_layers"),
        ({"architectures": ["Qwen3NextForCausalLM"]}, 1, ""),
        ({"architectures": ["MiMoV2FlashForCausalLM"]}, 1, ""),
        ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_nextn_predict_layers": 0}, 0,
         "/num_nextn_predict_layers"),
        ({"architectures": ["MixtralForCausalLM"]}, 0, ""),
    ],
)
def test_declaration_dialects(cfg, layers, key):
    d = parse_config(cfg).declaration
    assert (d.layers, d.key) == (layers, key)
    assert d.implicit == (key == "" and layers > 0)


def test_real_configs_family_and_experts():
    cases = {
        "deepseek-ai--DeepSeek-V3": ("deepseek-v3", 61, 256, "/n_routed_experts"),
        "nvidia--Qwen3.5-397B-A17B-NVFP4": ("qwen3.5-moe", 60, 512, "/text_config/num_experts"),
        "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding": ("qwen3.5-moe", 40, 180, "/num_experts"),
        "mistralai--Mixtral-8x22B-v0.1": ("mixtral", 56, 8, "/num_local_experts"),
        "MiniMaxAI--MiniMax-M2.5": ("minimax-m2", 62, 256, "/num_local_experts"),
        "jj8127--mimo_kor": ("mimo-7b", 36, None, ""),
    }
    for folder, (family, n, e, key) in cases.items():
        c = parse_config(json.loads((FIX / folder / "config.json").read_text()))
        assert (c.layout.family, c.num_hidden_layers, c.num_experts, c.experts_key) == (family, n, e, key), folder


def test_config_errors():
    with pytest.raises(ConfigError, match="architectures"):
        parse_config({"model_type": "x"})
    with pytest.raises(ConfigError, match="architectures"):
        parse_config({"architectures": "DeepseekV3ForCausalLM"})
    with pytest.raises(ConfigError, match="/num_hidden_layers"):
        parse_config({"architectures": ["X"], "num_hidden_layers": -1})


def test_modelopt_exclude_wildcards_real_file():
    s = parse_hf_quant_config(REAL)
    assert s.algo == "NVFP4" and s.group_size == 16
    assert s.excluded_by("mtp.layers.0.mlp.experts.5.up_proj") == "mtp.layers.0*"
    assert s.excluded_by("mtp.fc") is None  # the vLLM PR #38832 gap
    assert s.excluded_by("model.language_model.layers.3.mlp.shared_expert.up_proj") == "*.mlp.shared_expert.*"
    assert s.excluded_by("model.language_model.layers.3.mlp.experts.0.up_proj") is None
    assert s.expected_format("mtp.fc") == "NVFP4" and s.expected_format("mtp.layers.0.self_attn.q_proj") == "BF16"


def test_mixed_precision_quantized_layers():
    s = parse_hf_quant_config({"quantization": {"quant_algo": "MIXED_PRECISION", "exclude_modules": ["mtp*"],
                                                "quantized_layers": {"model.layers.0.mlp.up_proj": {"quant_algo": "NVFP4"},
                                                                     "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}})
    assert s.expected_format("model.layers.0.mlp.up_proj") == "NVFP4"
    assert s.expected_format("model.layers.0.self_attn.q_proj") == "FP8"
    assert s.excluded_by("model.layers.0.self_attn.o_proj") == "(not in quantized_layers)"
    assert s.excluded_by("mtp.fc") == "mtp*"


def test_compressed_tensors_ignore():
    s = parse_quantization_config({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                   "config_groups": {"group_0": {"weights": {"group_size": 16}}},
                                   "ignore": ["lm_head", "mtp.fc", "re:mtp\\.layers\\.0\\.mlp\\.experts\\..*"]})
    assert (s.algo, s.group_size, s.exclude_style) == ("NVFP4", 16, "ct")
    assert s.excluded_by("mtp.fc") == "mtp.fc"
    assert s.excluded_by("mtp.fc2") is None  # exact names, not prefixes
    assert s.excluded_by("mtp.layers.0.mlp.experts.3.up_proj").startswith("re:")
    assert s.excluded_by("mtp.layers.0.self_attn.q_proj") is None


def test_fp8_block_gptq_and_not_convert():
    ds = parse_quantization_config(json.loads((FIX / "deepseek-ai--DeepSeek-V3" / "config.json").read_text())["quantization_config"])
    assert (ds.method, ds.algo, ds.weight_block_size, ds.has_exclusion_list) == ("fp8", "FP8", (128, 128), False)
    mm = parse_quantization_config({"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["gate", "mtp"]})
    assert mm.excluded_by("mtp.layers.0.mlp.gate") == "gate" and mm.excluded_by("model.layers.0.self_attn.q_proj") is None
    g = parse_quantization_config({"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:.*mtp.*": {}, "+:x": {}}})
    assert (g.algo, g.exclude_style, g.excludes) == ("INT4", "gptq-dynamic", ("-:.*mtp.*",))
    assert g.excluded_by("mtp.fc") == "-:.*mtp.*" and g.excluded_by("model.layers.0.mlp.up_proj") is None


def test_layout_table_rows_have_sources_and_unique_families():
    assert len({r.family for r in LAYOUTS}) == len(LAYOUTS)
    assert all(r.source for r in LAYOUTS)
    assert {r.placement for r in LAYOUTS} == {"appended", "prefix", "none"}
    assert layout_for(("Qwen3_5MoeForConditionalGeneration",), ()).family == "qwen3.5-moe"
    assert layout_for((), ("qwen3_5_moe_text",)).family == "qwen3.5-moe"


@pytest.mark.parametrize(
    "name, n, expected",
    [
        ("model.layers.61.eh_proj.weight", 61, ("model.layers.61", 0)),
        ("model.layers.60.eh_proj.weight", 61, None),
        ("model.language_model.layers.62.mlp.gate.weight", 61, ("model.language_model.layers.62", 1)),
        ("layers.61.enorm.weight", 61, ("layers.61", 0)),
        ("mtp.fc.weight", 60, ("mtp", None)),
        ("mtp.layers.0.mlp.experts.1.up_proj.weight", 60, ("mtp.layers.0", 0)),
        ("language_model.mtp.layers.1.norm.weight", 60, ("language_model.mtp.layers.1", 1)),
        ("model.mtp.layers.2.eh_proj.weight", 48, ("model.mtp.layers.2", 2)),
        ("model.mtp_layers.0.input_proj.weight", 36, ("model.mtp_layers.0", 0)),
        ("model.mtp_block.0.mlp.up_proj.weight", 54, ("model.mtp_*.0", 0)),
        ("model.layers.3.mlp.gate.weight", None, None),
    ],
)
def test_classify(name, n, expected):
    assert classify(name, n) == expected


def test_expected_names_counts():
    ds = next(r for r in LAYOUTS if r.family == "deepseek-v3")
    qw = next(r for r in LAYOUTS if r.family == "qwen3.5-moe")
    mimo = next(r for r in LAYOUTS if r.family == "mimo-7b")
    assert len(expected_names(ds, 61, 1, 256)) == 3 * 256 + 20 == 788  # checkpoint_formats.md §3
    assert len(expected_names(qw, 60, 1, 512)) == 1553 and len(expected_names(qw, 48, 1, 256)) == 785
    assert len(expected_names(mimo, 36, 1, None)) == 16


@pytest.mark.parametrize("rule, example", [(r, e) for r in RULES for e in r.examples], ids=lambda x: getattr(x, "id", ""))
def test_rule_examples(tmp_path, rule, example):
    example.materialize(tmp_path)
    rep = run_example(tmp_path, example)
    fired = [f for f in rep.findings if f.rule_id == rule.id]
    assert bool(fired) == example.fires, (rule.id, example.note, [f.message for f in rep.findings])
    if not example.fires:  # a "good" example is clean apart from informational facts
        assert [f.rule_id for f in rep.findings if f.severity.label != "info"] == []
