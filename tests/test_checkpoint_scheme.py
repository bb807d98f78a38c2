"""The declared quantization scheme decides each module's format; tensor names decide only where no config
speaks; a disagreement is MTP015; bytes use the declared format.

Real inputs: nvidia/Qwen3.6-35B-A3B-NVFP4's config.json and hf_quant_config.json (ModelOpt MIXED_PRECISION, byte
copies, fixtures/checkpoint/nvidia--Qwen3.6-35B-A3B-NVFP4/SOURCE.txt) with header-only shards from its spec.json;
the Quark W4A16 scheme of amd/Qwen3.8-27B-Quark-AWQ-INT4-W4A16 as its model card states it (INT4 weight-only,
group 128, BF16 activations). Every number below was computed by hand from the shapes (comments show how).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.config import parse_hf_quant_config, parse_quantization_config
from mtp_audit.checkpoint.declared import DeclaredFormat, declared_bytes
from mtp_audit.checkpoint.rules import _QUARK_W4A16
from mtp_audit.engines.vllm.checkpoint import vllm_modelopt_method, vllm_quantization_method
from mtp_audit.synth.shards import write_checkpoint

CK = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"
Q36 = CK / "nvidia--Qwen3.6-35B-A3B-NVFP4"
P = "model.language_model.layers."


def _q36(tmp: Path) -> Path:
    write_checkpoint(tmp, json.loads((Q36 / "spec.json").read_text()))
    for f in ("config.json", "hf_quant_config.json"):
        (tmp / f).write_bytes((Q36 / f).read_bytes())
    return tmp


def test_mixed_precision_entries_decide_per_module_including_parent_entries():
    """quantized_layers keys the routed experts by their parent (``...layers.0.mlp.experts``), as vLLM's
    _resolve_quant_algo prefix lookup reads them: an expert projection is NVFP4 W4A16, not 'not in
    quantized_layers'; attention is FP8; a module no entry names is BF16; the exclusion list wins for MTP."""
    s = parse_hf_quant_config(json.loads((Q36 / "hf_quant_config.json").read_text()))
    assert s is not None and s.algo == "MIXED_PRECISION" and len(s.layer_formats) == 291
    expert = f"{P}0.mlp.experts.17.down_proj"
    assert s.mixed_entry(expert) == f"{P}0.mlp.experts"
    assert s.excluded_by(expert) is None  # was "(not in quantized_layers)"
    assert s.declared_format(expert) == DeclaredFormat("NVFP4", 16, False, "A16", None, "W4A16_NVFP4",
                                                       "hf_quant_config.json#/quantization/quantized_layers")
    assert s.declared_format(f"{P}3.self_attn.q_proj").label() == "FP8 W8A8"
    assert s.declared_format(f"{P}0.linear_attn.in_proj_b").format == "BF16"  # named by no entry: unquantized
    assert s.declared_format("mtp.layers.0.mlp.shared_expert.up_proj").pointer.endswith("'mtp.layers.0*'")
    assert s.expected_format("mtp.fc") == "BF16"
    fact = s.to_fact()
    assert fact["declared"]["quantized_layers_formats"] == {"FP8 W8A8": 130, "NVFP4 W4A16, group 16": 161}
    assert vllm_quantization_method(s.method, s.quant_algo)["method"] == "modelopt_mixed"


def test_mixed_precision_in_config_json_is_not_called_nvfp4():
    """config.json's quantization_config of the same release carries config_groups (group_1 is 4-bit float,
    group 16); the scheme is still MIXED_PRECISION, not NVFP4 as a whole."""
    cfg = json.loads((Q36 / "config.json").read_text())
    s = parse_quantization_config(cfg["quantization_config"])
    assert s is not None and s.algo == "MIXED_PRECISION" and s.identified_by == "name"
    assert s.declared_format(f"{P}3.self_attn.o_proj").format == "FP8"
    assert s.declared_format(f"{P}7.mlp.experts.0.up_proj").format == "NVFP4"


def test_mixed_precision_audit_prices_mtp_like_its_trunk_counterparts(tmp_path):
    """The 8 BF16 MTP linears of the 19-tensor MTP branch, priced per role: q/k/v/o as FP8 W8A8 (n + 8), the
    shared expert as NVFP4 W4A16 (n/2 + n/16 + 4), mtp.fc (no counterpart) as the trunk's most common format,
    NVFP4 with input_scale (n/2 + n/16 + 8)."""
    rep = audit_checkpoint(_q36(tmp_path))
    ck = rep.facts["checkpoint"]
    assert ck["mtp"]["tensors"] == 19 and ck["mtp"]["format"] == "BF16"
    # 768 expert projections + 3 shared-expert projections + lm_head NVFP4; q/k/v/o FP8
    assert ck["trunk"]["format_modules"] == {"FP8": 4, "NVFP4": 772}
    assert [f.rule_id for f in rep.findings] == ["MTP006"]
    msg = rep.findings[0].message
    assert "the rest of the model is MIXED_PRECISION (161 NVFP4 W4A16, group 16, 130 FP8 W8A8 quantized_layers entries)" in msg
    # now: fc 2048x4096 + q 8192x2048 + o 2048x4096 = 33,554,432 elements x 3 ... in BF16: 77,594,624 bytes
    #   = 2*(8,388,608 + 16,777,216 + 1,048,576*2 + 8,388,608 + 1,048,576*3)
    # would: fc 4,194,304+524,288+8 = 4,718,600; q 16,777,224; k, v 1,048,584 each; o 8,388,616;
    #   shared 3 x (524,288+65,536+4) = 1,769,484 -> 33,751,092
    assert "77,594,624 bytes (77.6 MB) kept for MTP" in msg
    assert "would take about 33,751,092 bytes (33.8 MB), 43,843,532 bytes (43.8 MB) more" in msg
    assert ck["summary"]["quantization"] == ("MIXED_PRECISION (modelopt, hf_quant_config.json, 161 NVFP4 W4A16, group 16 "
                                             "+ 130 FP8 W8A8 quantized_layers entries)")
    assert ck["quantization"][0]["vllm_method"] == {
        "method": "modelopt_mixed",
        "source": "vllm 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1658-1664",
        "replaces_flag": "vllm 0.33.0 vllm/config/model.py:1429-1449 (ModelConfig._verify_quantization)",
    }


def test_mixed_precision_entry_stored_in_another_format_is_mtp015(tmp_path):
    """Store layer 3's q_proj as NVFP4 while quantized_layers declares FP8: MTP015, error, exit 1."""
    folder = _q36(tmp_path)
    spec = json.loads((Q36 / "spec.json").read_text())
    q = f"{P}3.self_attn.q_proj"
    spec["tensors"] = [t for t in spec["tensors"] if not t.get("name", "").startswith(q + ".")] + [
        {"name": f"{q}.weight", "dtype": "U8", "shape": [8192, 1024], "shard": "model-00001-of-00002.safetensors"},
        {"name": f"{q}.weight_scale", "dtype": "F8_E4M3", "shape": [8192, 128], "shard": "model-00001-of-00002.safetensors"},
        {"name": f"{q}.weight_scale_2", "dtype": "F32", "shape": [], "shard": "model-00001-of-00002.safetensors"},
    ]
    write_checkpoint(folder, spec)
    rep = audit_checkpoint(folder)
    hits = [f for f in rep.findings if f.rule_id == "MTP015"]
    assert len(hits) == 1 and hits[0].severity.label == "error"
    assert hits[0].message.startswith(
        "1 linear module(s) are declared FP8 W8A8 by hf_quant_config.json but their tensors are stored NVFP4 "
        f"(read from the shard header): {q};")
    assert hits[0].location.symbol == "/quantization/quantized_layers"
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False


def _quark_index(tmp: Path) -> Path:
    """Metadata only: config.json with the Quark W4A16 scheme and an index whose trunk linears have the
    Quark int4 siblings (weight, weight_scale, weight_zero_point) and whose MTP branch is BF16."""
    cfg = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
           "text_config": {"model_type": "qwen3_5_text", "num_hidden_layers": 1, "mtp_num_hidden_layers": 1,
                           "hidden_size": 5120, "intermediate_size": 17408, "num_attention_heads": 24,
                           "num_key_value_heads": 4, "head_dim": 256},
           "quantization_config": _QUARK_W4A16}
    trunk = [f"{P}0.mlp.{p}.{s}" for p in ("gate_proj", "up_proj", "down_proj")
             for s in ("weight", "weight_scale", "weight_zero_point")]
    mtp = ["mtp.fc.weight", "mtp.norm.weight", "mtp.layers.0.mlp.down_proj.weight"]
    wm = {n: "model-00001-of-00001.safetensors" for n in trunk + mtp}
    (tmp / "config.json").write_text(json.dumps(cfg))
    (tmp / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return tmp


def test_quark_w4a16_siblings_are_int4_not_fp8(tmp_path):
    """The sibling weight_scale used to read as FP8 ('the rest of the model is FP8'); with weight_zero_point and
    the declared uint4 scheme the trunk is INT4 and the MTP cost is priced as INT4 group 128 with zero points:
    mtp.fc 5120x10240 (n = 52,428,800): n/2 + 2*n/128 + n/128/2 = 26,214,400 + 819,200 + 204,800 = 27,238,400;
    down_proj 5120x17408 (n = 89,128,960): 44,564,480 + 1,392,640 + 348,160 = 46,305,280."""
    rep = audit_checkpoint(_quark_index(tmp_path))
    ck = rep.facts["checkpoint"]
    assert ck["trunk"]["format_modules"] == {"INT4": 3}
    hit = next(f for f in rep.findings if f.rule_id == "MTP006")
    assert "while the rest of the model is INT4 W4A16, group 128, zero points:" in hit.message
    # BF16 now: 2 * (52,428,800 + 89,128,960) = 283,115,520; INT4: 27,238,400 + 46,305,280 = 73,543,680
    assert "283,115,520 bytes (283.1 MB) (estimated from config.json) kept for MTP" in hit.message
    assert "would take about 73,543,680 bytes (73.5 MB)" in hit.message
    assert not [f for f in rep.findings if f.rule_id == "MTP015"]
    assert ck["summary"]["quantization"] == ("INT4 (quark, config.json, group size 128, INT4 W4A16, group 128, zero points, "
                                             "identified from the weight parameters)")


def test_declared_bytes_by_format():
    """Hand-computed bytes of one 4096 x 4096 linear (n = 16,777,216) per declared format."""
    shape = (4096, 4096)
    assert declared_bytes(shape, DeclaredFormat("INT4", 128, True, "A16")) == 8_388_608 + 262_144 + 65_536
    assert declared_bytes(shape, DeclaredFormat("INT4", 128, False, "A16")) == 8_388_608 + 262_144
    assert declared_bytes(shape, DeclaredFormat("NVFP4", 16, False, "A16")) == 8_388_608 + 1_048_576 + 4
    assert declared_bytes(shape, DeclaredFormat("NVFP4", 16, False, "A4")) == 8_388_608 + 1_048_576 + 8
    assert declared_bytes(shape, DeclaredFormat("MXFP4", 32)) == 8_388_608 + 524_288
    assert declared_bytes(shape, DeclaredFormat("FP8", None, False, "A16", (128, 128))) == 16_777_216 + 4 * 32 * 32
    assert declared_bytes(shape, DeclaredFormat("BF16")) == 33_554_432


def test_compressed_tensors_groups_in_order_and_untargeted_modules_unquantized():
    """config_groups: the first group whose targets match decides; a module no group targets stays BF16
    (vLLM find_matched_target); symmetric false means zero points."""
    qc = {"quant_method": "compressed-tensors", "format": "mixed-precision", "ignore": ["lm_head"],
          "config_groups": {
              "group_0": {"targets": ["re:.*mlp\\.experts.*"], "input_activations": None,
                          "weights": {"num_bits": 4, "type": "int", "group_size": 128, "symmetric": False}},
              "group_1": {"targets": ["re:.*self_attn\\.(q|k|v|o)_proj$"],
                          "input_activations": {"num_bits": 8, "type": "float"},
                          "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}
    s = parse_quantization_config(qc)
    assert s is not None
    assert s.declared_format("model.layers.0.mlp.experts.3.up_proj").label() == "INT4 W4A16, group 128, zero points"
    assert s.declared_format("model.layers.0.self_attn.o_proj").label() == "FP8 W8A8"
    assert s.declared_format("model.layers.0.mlp.shared_expert.up_proj").format == "BF16"
    assert s.declared_format("lm_head").pointer == "config.json#/quantization_config/ignore 'lm_head'"


def test_gptq_dynamic_overrides_and_skips():
    """GPTQModel ``dynamic``: ``-:`` skips a module, ``+:`` (or a bare regex) overrides bits and group size."""
    qc = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
          "dynamic": {"-:.*mtp.*": {}, "+:.*down_proj.*": {"bits": 8, "group_size": 32}}}
    s = parse_quantization_config(qc)
    assert s is not None
    assert s.declared_format("mtp.fc").format == "BF16"
    assert s.declared_format("model.layers.0.mlp.down_proj").label() == "INT8 W8A16, group 32, zero points"
    assert s.declared_format("model.layers.0.mlp.up_proj").label() == "INT4 W4A16, group 128, zero points"


def test_awq_modules_to_not_convert_and_zero_point():
    qc = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False,
          "modules_to_not_convert": ["mtp", "visual"]}
    s = parse_quantization_config(qc)
    assert s is not None
    assert s.declared_format("mtp.layers.0.mlp.up_proj").format == "BF16"
    assert s.declared_format("model.layers.0.mlp.up_proj").label() == "INT4 W4A16, group 128"


@pytest.mark.parametrize(("algo", "method"), [("MIXED_PRECISION", "modelopt_mixed"), ("NVFP4", "modelopt_fp4"),
                                               ("W4A16_NVFP4", "modelopt_fp4"), ("FP8", "modelopt"),
                                               ("MXFP8", "modelopt_mxfp8"), ("FP8_PB_WO", None)])
def test_vllm_modelopt_method(algo, method):
    got = vllm_modelopt_method(algo)
    assert (got[0] if got else None) == method


@pytest.mark.network
def test_vllm_modelopt_mixed_resolution_is_where_cited():
    """The cited lines of vLLM 0.33.0: ModelOptMixedPrecisionConfig.override_quantization_method returns
    modelopt_mixed for MIXED_PRECISION (whatever user_quant says), the NVFP4 override needs 'FP4' in the algo,
    and _verify_quantization assigns the override to self.quantization."""
    from conftest import vllm_wheel

    with zipfile.ZipFile(vllm_wheel("0.33.0")) as z:
        mo = z.read("vllm/model_executor/layers/quantization/modelopt.py").decode().splitlines()
        model = z.read("vllm/config/model.py").decode().splitlines()
    assert 'algo == "MIXED_PRECISION"' in mo[1661] and 'return "modelopt_mixed"' in mo[1662]
    assert '"NVFP4" in algo or "FP4" in algo' in mo[779]
    assert "for name in quantization_methods:" in model[1428]
    assert "self.quantization = quantization_override" in model[1448]



def test_compressed_tensors_mxfp4_pack_quantized_is_mxfp4_not_int4() -> None:
    """compressed-tensors ``mxfp4-pack-quantized`` stores ``weight_packed`` uint8 + ``weight_scale`` uint8 (E8M0),
    group 32, no global scale (vLLM 0.33.0 ``compressed_tensors_w4a4_mxfp4.py:69-88``): declared MXFP4, it is MXFP4
    (it was read as INT4 and a correct checkpoint got MTP015); an I32-packed module stays INT4 whatever is declared."""
    from mtp_audit.checkpoint.tensors import module_format
    from mtp_audit.sources.local import TensorInfo

    mx = {"weight_packed": TensorInfo("w", "U8", (64, 32), 2048), "weight_scale": TensorInfo("s", "U8", (64, 2), 128)}
    assert module_format(mx, "bfloat16", "MXFP4") == ("MXFP4", False)
    assert module_format(dict.fromkeys(mx), "bfloat16", "MXFP4") == ("MXFP4", True)
    assert module_format(mx, "bfloat16", "") == ("INT4", False)
    int4 = {"weight_packed": TensorInfo("w", "I32", (64, 8), 2048), "weight_scale": TensorInfo("s", "BF16", (64, 2), 256)}
    assert module_format(int4, "bfloat16", "MXFP4") == ("INT4", False)
