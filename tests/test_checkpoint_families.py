"""The 2026 families: layout rows on their real configs, DSpark under mtp.* (MTP016), several MTP layers of which
an engine runs one (MTP017), a shared_head the engine renames past the NVFP4 exclusion list (MTP018), NVFP4 experts
missing per-expert input_scale (MTP019).

Real inputs: config.json / hf_quant_config.json byte copies under fixtures/checkpoint/ (SOURCE.txt each: Kimi-K3,
DeepSeek-V4-Flash, nvidia DeepSeek-V4-Flash-NVFP4, Step-3.7-Flash, MiMo-V2-Flash), the DeepSeek-V4-Flash-0731
DSpark keys as public tests quote its config (dspark_block_size 5, dspark_target_layer_ids [40, 41, 42]), the
Qwen3.5-397B-A17B-NVFP4 header spec. Tensor names not in a saved file are named as such per test.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.config import parse_config, parse_hf_quant_config
from mtp_audit.checkpoint.layouts import classify
from mtp_audit.cli.main import main
from mtp_audit.synth.shards import tiny, write_checkpoint

CK = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"
SHARD = "model-00001-of-00001.safetensors"


def _cfg(name: str) -> dict:
    return json.loads((CK / name / "config.json").read_text())


def _write(folder: Path, cfg: dict, names: list[str], extra: dict[str, str] | None = None) -> Path:
    (folder / "config.json").write_text(json.dumps(cfg))
    wm = {n: SHARD for n in names}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    for k, v in (extra or {}).items():
        (folder / k).write_text(v)
    return folder


def test_new_family_rows_on_real_configs():
    k3 = parse_config(_cfg("moonshotai--Kimi-K3"))
    assert k3.layout.family == "kimi-k3" and k3.declaration.explicit_zero
    assert k3.declaration.key == "/text_config/num_nextn_predict_layers" and k3.num_experts == 896
    v4 = parse_config(_cfg("deepseek-ai--DeepSeek-V4-Flash"))
    assert v4.layout.family == "deepseek-v4" and v4.declaration.layers == 1 and v4.num_hidden_layers == 43
    step = parse_config(_cfg("stepfun-ai--Step-3.7-Flash"))
    assert step.layout.family == "step-3.5" and step.declaration.layers == 3 and step.num_hidden_layers == 45
    assert parse_config({"architectures": ["Glm5NextForCausalLM"], "model_type": "glm5next"}).layout.family == "glm-5.3"
    assert parse_config({"architectures": ["Qwen4ExpForConditionalGeneration"]}).layout.family == "qwen3.8-flash-next"
    assert parse_config({"architectures": ["Cohere2MoeForCausalLM"]}).layout.family == "cohere2-moe"
    # DeepSeek-V4 numbers its MTP blocks mtp.0, mtp.1 (no "layers."): they are MTP layers 0, 1
    assert classify("mtp.1.ffn.experts.3.w1.weight", 43) == ("mtp.1", 1)


def test_config_only_new_families_exit_codes():
    assert main(["checkpoint", str(CK / "moonshotai--Kimi-K3")]) == 0  # declares 0: conclusive
    assert main(["checkpoint", str(CK / "stepfun-ai--Step-3.7-Flash")]) == 3
    rep = audit_checkpoint(CK / "stepfun-ai--Step-3.7-Flash")
    assert rep.facts["checkpoint"]["prediction"]["module_paths"] == ["model.layers.45", "model.layers.46", "model.layers.47"]


def test_v4_nvfp4_mixed_precision_excludes_mtp_and_resolves_to_modelopt_mixed():
    s = parse_hf_quant_config(json.loads((CK / "nvidia--DeepSeek-V4-Flash-NVFP4" / "hf_quant_config.json").read_text()))
    assert s.algo == "MIXED_PRECISION" and len(s.layer_formats) == 43
    assert s.declared_format("layers.7.ffn.experts.12.w2").label() == "NVFP4 W4A4, group 16"
    assert s.declared_format("layers.7.attn.wq_a").format == "BF16"  # '*.attn.*'
    assert s.declared_format("mtp.0.ffn.experts.0.w1").pointer.endswith("'mtp.*'")
    from mtp_audit.engines.vllm.checkpoint import vllm_quantization_method

    assert vllm_quantization_method(s.method, s.quant_algo) == {
        "method": "modelopt_mixed", "source": "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1658-1664",
        "replaces_flag": "vllm 0.33.0 vllm/config/model.py:1429-1449 (ModelConfig._verify_quantization)"}


#: A DSpark block drafter under mtp.0/1/2: attention, experts and the markov head, no enorm/hnorm/eh_proj
#: (vLLM PR #41834 describes the 4,705 tensors; these names are an abridged stand-in).
_DSPARK_NAMES = ["mtp.0.attn.wq_a.weight", "mtp.0.ffn.experts.0.w1.weight", "mtp.1.attn.wq_a.weight",
                 "mtp.2.attn.wq_a.weight", "mtp.2.markov_head.weight", "layers.0.attn.wq_a.weight"]


def test_dspark_under_mtp_is_named_with_the_method_each_engine_needs(tmp_path):
    cfg = {**_cfg("deepseek-ai--DeepSeek-V4-Flash"), "dspark_block_size": 5, "dspark_target_layer_ids": [40, 41, 42]}
    rep = audit_checkpoint(_write(tmp_path, cfg, _DSPARK_NAMES))
    assert [f.rule_id for f in rep.findings] == ["MTP016"]  # not MTP004 (3 layers vs 1), not MTP005
    f = rep.findings[0]
    assert f.severity.label == "error"
    assert f.message.startswith("config.json declares a DSpark drafter (dspark_block_size = 5, dspark_target_layer_ids "
                                "= [40, 41, 42]) and the 5 tensors under mtp.0, mtp.1, mtp.2 have no enorm/hnorm/eh_proj")
    assert f.remediation == (
        "Serve it with vLLM 0.33.0: --speculative-config '{\"method\": \"dspark\", \"num_speculative_tokens\": 5}' "
        "(vllm/config/speculative.py:1269-1275); or SGLang 0.5.23: --speculative-algorithm DSPARK "
        "--speculative-dspark-block-size 5 (sglang/srt/speculative/spec_info.py:41, "
        "arg_groups/speculative_hook.py:807-813).")
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False
    assert rep.facts["checkpoint"]["mtp"]["dspark_drafter"] is True
    assert rep.facts["checkpoint"]["config"]["dspark"] == {"dspark_block_size": 5, "dspark_target_layer_ids": [40, 41, 42]}


def test_deepseek_v4_mtp_with_hallmarks_is_mtp(tmp_path):
    names = ["mtp.0.e_proj.weight", "mtp.0.h_proj.weight", "mtp.0.enorm.weight", "mtp.0.hnorm.weight", "mtp.0.attn.wq_a.weight",
             "layers.0.attn.wq_a.weight"]
    rep = audit_checkpoint(_write(tmp_path, _cfg("deepseek-ai--DeepSeek-V4-Flash"), names))
    assert not rep.findings and rep.facts["checkpoint"]["mtp"]["found_layers"] == 1


def test_mimo_v2_three_layers_vllm_builds_one_sglang_runs_three(tmp_path):
    names = [f"model.mtp.layers.{i}.{t}.weight" for i in range(3) for t in ("enorm", "hnorm", "eh_proj", "input_layernorm")]
    rep = audit_checkpoint(_write(tmp_path, _cfg("XiaomiMiMo--MiMo-V2-Flash"), names))
    assert [f.rule_id for f in rep.findings] == ["MTP017"]
    assert rep.findings[0].message == (
        "the checkpoint ships 3 MTP layers (model.mtp.layers.0, model.mtp.layers.1, model.mtp.layers.2), but vLLM "
        "0.33.0 builds only layer 0 (layers 1..2 are never loaded); SGLang 0.5.23 runs all 3 (one per draft step)")


def test_step37_three_layers_run_everywhere_no_mtp017(tmp_path):
    names = [f"model.layers.{45 + i}.{t}.weight" for i in range(3) for t in ("enorm", "hnorm", "eh_proj")]
    rep = audit_checkpoint(_write(tmp_path, _cfg("stepfun-ai--Step-3.7-Flash"), names))
    assert "MTP017" not in [f.rule_id for f in rep.findings]
    assert rep.facts["checkpoint"]["mtp"]["found_layers"] == 3


def test_qwen35_two_layers_vllm_runs_layer_zero_only(tmp_path):
    cfg = json.loads((CK / "nvidia--Qwen3.5-122B-A10B-NVFP4" / "config.json").read_text())
    cfg.pop("quantization_config", None)
    cfg["text_config"]["mtp_num_hidden_layers"] = 2
    names = ["mtp.fc.weight", "mtp.layers.0.self_attn.q_proj.weight", "mtp.layers.1.self_attn.q_proj.weight"]
    rep = audit_checkpoint(_write(tmp_path, cfg, names))
    hit = next(f for f in rep.findings if f.rule_id == "MTP017")
    assert hit.message == ("the checkpoint ships 2 MTP layers (mtp.layers.0, mtp.layers.1), but vLLM 0.33.0 "
                           "loads all 2 but runs layer 0 at every draft step")


def _step37_nvfp4(tmp: Path, exclude: list[str]) -> Path:
    """Step-3.7-Flash (real config) as NVIDIA's NVFP4 export lays it out per SGLang PR #32325: NVFP4 trunk, the 3 MTP
    layers BF16 in model-mtp-bf16.safetensors; the exclusion list is the report's per-layer pattern."""
    cfg = _cfg("stepfun-ai--Step-3.7-Flash")
    hq = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                            "exclude_modules": exclude}}
    trunk = {"model.layers.3.moe.down_proj.weight": ("U8", [4096, 640]),
             "model.layers.3.moe.down_proj.weight_scale": ("F8_E4M3", [4096, 80]),
             "model.layers.3.moe.down_proj.weight_scale_2": ("F32", [])}
    mtp = {}
    for i in range(45, 48):
        mtp.update({f"model.layers.{i}.eh_proj.weight": ("BF16", [4096, 8192]),
                    f"model.layers.{i}.enorm.weight": ("BF16", [4096]),
                    f"model.layers.{i}.shared_head.norm.weight": ("BF16", [4096]),
                    f"model.layers.{i}.shared_head.output.weight": ("BF16", [128896, 4096])})
    (tmp / "config.json").write_text(json.dumps(cfg))
    (tmp / "hf_quant_config.json").write_text(json.dumps(hq))
    (tmp / "model-00001-of-00002.safetensors").write_bytes(tiny(trunk))
    write_checkpoint(tmp, {"tensors": [{"name": k, "dtype": d, "shape": s, "shard": "model-mtp-bf16.safetensors"}
                                        for k, (d, s) in mtp.items()]}, index=False)
    wm = {**{k: "model-00001-of-00002.safetensors" for k in trunk}, **{k: "model-mtp-bf16.safetensors" for k in mtp}}
    (tmp / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return tmp


def test_step37_nvfp4_shared_head_renamed_past_the_exclusion_list(tmp_path):
    rep = audit_checkpoint(_step37_nvfp4(tmp_path, ["lm_head", "model.layers.45.*", "model.layers.46.*",
                                                    "model.layers.47.*"]))
    ids = [f.rule_id for f in rep.findings]
    assert "MTP018" in ids and "MTP007" not in ids and "MTP017" not in ids
    f = next(f for f in rep.findings if f.rule_id == "MTP018")
    assert f.message.startswith("model.layers.45.shared_head is stored BF16; /quantization/exclude_modules covers it as "
                                "model.layers.45.shared_head.head ('model.layers.45.*'), but SGLang (before PR #32325) "
                                "builds it as model.shared_head")
    assert rep.facts["checkpoint"]["mtp"]["shards"] == ["model-mtp-bf16.safetensors"]
    clean = audit_checkpoint(_step37_nvfp4(tmp_path, ["lm_head", "model.layers.4*", "model.shared_head*"]))
    assert "MTP018" not in [f.rule_id for f in clean.findings]


def test_nvfp4_experts_missing_input_scale_on_real_shapes(tmp_path):
    """The Qwen3.5-397B-A17B-NVFP4 header spec (512 NVFP4 experts in layer 3, each with input_scale) with the
    input_scale of experts 100-102 dropped: 9 projections, one layer."""
    spec = json.loads((CK / "nvidia--Qwen3.5-397B-A17B-NVFP4" / "spec.json").read_text())
    for t in spec["tensors"]:
        if "for" in t and "model.language_model.layers.3.mlp.experts.{E}.gate_proj.weight" in json.dumps(t):
            kept = t
    kept["each"] = [x for x in kept["each"] if not x["name"].endswith("input_scale")]
    spec["tensors"].append({"for": {"E": [0, 99]}, "each": [
        {"name": f"model.language_model.layers.3.mlp.experts.{{E}}.{p}.input_scale", "dtype": "F32", "shape": []}
        for p in ("gate_proj", "up_proj", "down_proj")], "shard": "model-00001-of-00002.safetensors"})
    spec["tensors"].append({"for": {"E": [103, 511]}, "each": [
        {"name": f"model.language_model.layers.3.mlp.experts.{{E}}.{p}.input_scale", "dtype": "F32", "shape": []}
        for p in ("gate_proj", "up_proj", "down_proj")], "shard": "model-00001-of-00002.safetensors"})
    write_checkpoint(tmp_path, spec)
    for f in ("config.json", "hf_quant_config.json"):
        (tmp_path / f).write_bytes((CK / "nvidia--Qwen3.5-397B-A17B-NVFP4" / f).read_bytes())
    rep = audit_checkpoint(tmp_path)
    hit = [f for f in rep.findings if f.rule_id == "MTP019"]
    assert len(hit) == 1 and hit[0].message.startswith(
        "9 NVFP4 expert projection(s) in 1 MoE layer(s) lack the per-expert input_scale their siblings carry "
        "(e.g. model.language_model.layers.3.mlp.experts: 100.down_proj, 100.gate_proj, 100.up_proj, 101.down_proj)")


def test_mtp017_names_the_layers_in_one_order_whatever_the_hash_seed(tmp_path: Path) -> None:
    """Found by a new user: two MTP layer labels of one index (``mtp.layers.0`` and ``model.layers.61``, both layer 0
    of the MTP stack) were listed in set order, so the message changed with ``PYTHONHASHSEED``."""
    import subprocess
    import sys

    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3" / "config.json", tmp_path / "config.json")
    names = ["mtp.layers.0.eh_proj.weight", "model.layers.61.eh_proj.weight", "mtp.layers.1.eh_proj.weight"]
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": dict.fromkeys(names, "a.safetensors")}))
    code = "import sys; from mtp_audit.cli.main import main; sys.exit(main(sys.argv[1:]))"
    messages = set()
    for seed in ("0", "1", "2", "3", "4"):
        proc = subprocess.run([sys.executable, "-c", code, "checkpoint", str(tmp_path), "--select", "MTP017", "-f", "json"],
                              capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": seed})
        messages |= {f["message"] for f in json.loads(proc.stdout)["findings"] if f["rule_id"] == "MTP017"}
    assert len(messages) == 1 and "(model.layers.61, mtp.layers.0, mtp.layers.1)" in messages.pop()
