"""The checkpoint analyzer's rules (MTP0xx): docs, sources and runnable examples.

The checking logic lives in :mod:`mtp_audit.checkpoint.checks` (one ``check_*`` function per rule);
this module only describes the rules. Every rule has at least one input it must flag and one it must
leave alone; ``tests/test_rules.py`` runs them through :func:`run_example`. Examples that need real
safetensors shards build them on demand with :mod:`mtp_audit.synth.shards`.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from mtp_audit.checkpoint.gguf_rules import GGUF_RULES
from mtp_audit.report import Severity
from mtp_audit.report.questions import MEMORY, MTP_HEADS, STARTS
from mtp_audit.report.rules import Example, Rule

# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research/checkpoint_formats.md


def _j(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


def _index(weight_map: dict[str, str], total_size: int | None = None) -> str:
    meta = {"total_size": total_size} if total_size is not None else {}
    return _j({"metadata": meta, "weight_map": weight_map})


# Small configs used by the examples (real key names, toy sizes).
_DS = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "n_routed_experts": 4,
    "hidden_size": 8,
}
_DS_TRUNK = {
    "model.embed_tokens.weight": "model-00001-of-00001.safetensors",
    "model.layers.0.self_attn.o_proj.weight": "model-00001-of-00001.safetensors",
    "model.layers.1.self_attn.o_proj.weight": "model-00001-of-00001.safetensors",
    "lm_head.weight": "model-00001-of-00001.safetensors",
}
_DS_MTP = {
    f"model.layers.2.{n}.weight": "model-00001-of-00001.safetensors"
    for n in ("enorm", "hnorm", "eh_proj", "shared_head.norm", "self_attn.o_proj")
}


def _experts(layer: str, ids: range, shard: str = "model-00001-of-00001.safetensors") -> dict[str, str]:
    return {f"{layer}.mlp.experts.{e}.{p}.weight": shard for e in ids for p in ("gate_proj", "up_proj", "down_proj")}


_QWEN35: dict[str, Any] = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 2, "mtp_num_hidden_layers": 1, "num_experts": 2},
}
_QWEN_MTP_TINY = {
    "mtp.fc.weight": ("BF16", [4, 8]),
    "mtp.norm.weight": ("BF16", [4]),
    "mtp.layers.0.self_attn.q_proj.weight": ("BF16", [4, 4]),
}
_QWEN_TRUNK_NVFP4 = {
    "model.language_model.layers.0.self_attn.q_proj.weight": ("U8", [4, 2]),
    "model.language_model.layers.0.self_attn.q_proj.weight_scale": ("F8_E4M3", [4, 1]),
    "model.language_model.layers.0.self_attn.q_proj.weight_scale_2": ("F32", []),
    "model.language_model.layers.0.self_attn.q_proj.input_scale": ("F32", []),
}
_HF_QUANT_397B_STYLE: dict[str, Any] = {
    "producer": {"name": "modelopt", "version": "0.0.1.dev538+g26cad678d"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head", "*.mlp.shared_expert.*", "model.visual*", "mtp.layers.0*"],
    },
}


def _qwen_shards(exclude: list[str]) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    hq = json.loads(json.dumps(_HF_QUANT_397B_STYLE))
    hq["quantization"]["exclude_modules"] = exclude
    return {
        "config.json": _j(_QWEN35),
        "hf_quant_config.json": _j(hq),
        "model-00001-of-00002.safetensors": tiny(_QWEN_TRUNK_NVFP4),
        "model-00002-of-00002.safetensors": tiny(_QWEN_MTP_TINY),
        "model.safetensors.index.json": _index(
            {**{k: "model-00001-of-00002.safetensors" for k in _QWEN_TRUNK_NVFP4},
             **{k: "model-00002-of-00002.safetensors" for k in _QWEN_MTP_TINY}}
        ),
    }


#: compressed-tensors NVFP4 as llm-compressor writes it (checkpoint_formats.md §4; vLLM PR #41994's ignore list).
_CT_NVFP4 = {
    "quant_method": "compressed-tensors",
    "format": "nvfp4-pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
}
_QWEN_TRUNK_CT_NVFP4 = {
    "model.language_model.layers.0.self_attn.q_proj.weight_packed": ("U8", [4, 2]),
    "model.language_model.layers.0.self_attn.q_proj.weight_scale": ("F8_E4M3", [4, 1]),
    "model.language_model.layers.0.self_attn.q_proj.weight_global_scale": ("F32", [1]),
}


def _qwen_ct_shards(ignore: list[str]) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    cfg = json.loads(json.dumps(_QWEN35))
    cfg["quantization_config"] = {**_CT_NVFP4, "ignore": ignore}
    return {
        "config.json": _j(cfg),
        "model-00001-of-00002.safetensors": tiny(_QWEN_TRUNK_CT_NVFP4),
        "model-00002-of-00002.safetensors": tiny(_QWEN_MTP_TINY),
        "model.safetensors.index.json": _index(
            {**{k: "model-00001-of-00002.safetensors" for k in _QWEN_TRUNK_CT_NVFP4},
             **{k: "model-00002-of-00002.safetensors" for k in _QWEN_MTP_TINY}}
        ),
    }


def _with_sidecar(indexed: bool) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    trunk = {"model.language_model.layers.0.self_attn.q_proj.weight": ("BF16", [4, 4])}
    wm = {k: "model-00001-of-00001.safetensors" for k in trunk}
    if indexed:
        wm.update({k: "mtp.safetensors" for k in _QWEN_MTP_TINY})
    return {
        "config.json": _j(_QWEN35),
        "model-00001-of-00001.safetensors": tiny(trunk),
        "mtp.safetensors": tiny(_QWEN_MTP_TINY),
        "model.safetensors.index.json": _index(wm),
    }


#: The NextN glue norms of the examples' DeepSeek MTP layer (with eh_proj, what MTP021 asks for).
_GLUE_NORMS = {f"model.layers.2.{n}.weight": ("BF16", [8]) for n in ("enorm", "hnorm", "shared_head.norm")}


def _two_shards(present: int) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    a = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}
    b = {"model.layers.2.eh_proj.weight": ("BF16", [8, 16]), "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    files: dict[str, str | bytes] = {
        "config.json": _j({**_DS, "n_routed_experts": 0}),
        "model.safetensors.index.json": _index(
            {**{k: "model-00001-of-00002.safetensors" for k in a}, **{k: "model-00002-of-00002.safetensors" for k in b}}
        ),
        "model-00001-of-00002.safetensors": tiny(a),
    }
    if present == 2:
        files["model-00002-of-00002.safetensors"] = tiny(b)
    return files


def _dotted_shard(value: str) -> dict[str, str | bytes]:
    """One shard ``model.safetensors`` at the top level, indexed as ``value``."""
    from mtp_audit.synth.shards import tiny

    t = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16]),
         "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    return {"config.json": _j({**_DS, "n_routed_experts": 0}), "model.safetensors": tiny(t),
            "model.safetensors.index.json": _index({k: value for k in t})}


def _sized(total_size_delta: int) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    t = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16]), "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    return {
        "config.json": _j({**_DS, "n_routed_experts": 0}),
        "model-00001-of-00001.safetensors": tiny(t),
        "model.safetensors.index.json": _index({k: "model-00001-of-00001.safetensors" for k in t}, 128 + 256 + 16 + 48 + total_size_delta),
    }


def _ghost(ghost: bool) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    t = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16]), "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    wm = {k: "model-00001-of-00001.safetensors" for k in t}
    if ghost:
        wm["model.layers.2.shared_head.head.weight"] = "model-00001-of-00001.safetensors"
    return {
        "config.json": _j({**_DS, "n_routed_experts": 0}),
        "model-00001-of-00001.safetensors": tiny(t),
        "model.safetensors.index.json": _index(wm),
    }


def _bad_header(bad: bool) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    t = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16]), "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    good = tiny(t)
    data = struct.pack("<Q", 10**6) + good[8:] if bad else good
    return {"config.json": _j({**_DS, "n_routed_experts": 0}), "model.safetensors": data}


_NEMOTRON = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "num_hidden_layers": 4,
    "num_nextn_predict_layers": 1,
    "mtp_hybrid_override_pattern": "*E",
}

MTP001 = Rule(
    id="MTP001",
    name="mtp-declared-but-missing",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="config.json declares MTP layers but the checkpoint holds no MTP tensor",
    what=(
        "Reads the MTP depth from config.json in every dialect (num_nextn_predict_layers, mtp_num_hidden_layers at "
        "top level or under text_config, num_mtp_layers, MiniMax use_mtp + num_mtp_modules, and the implicit layer of "
        "Qwen3-Next / MiMo-V2) and looks for MTP tensors under the family's prefix (model.layers.N+i.*, mtp.*, "
        "model.mtp.*, model.mtp_layers.*, model.mtp_*.*) in the index and every shard header, including shards the "
        "index does not name."
    ),
    why=(
        "Repacks (quantized exports, expert pruning, fine-tune merges) often drop the MTP layer because transformers "
        "builds only num_hidden_layers decoder layers and never saves the rest, while the config still declares it. "
        "Engines then either refuse to start speculative decoding (vLLM: 'MTP speculative decoding layer 78 weights "
        "missing from checkpoint') or, without validation, run the draft with uninitialised weights: acceptance "
        "collapses to zero and MTP costs time instead of saving it."
    ),
    fix=(
        "Use a release that ships the MTP weights (the original checkpoint, or a re-export that keeps them), or "
        "serve without --speculative-algorithm NEXTN."
    ),
    sources=(
        "vLLM PR #35548 (lukealonso/GLM-5-NVFP4 has no MTP weights), NVIDIA/Model-Optimizer issue #750, vllm-project/llm-compressor PR #2482, GPTQModel PR #2109",
        "vllm/model_executor/model_loader/mtp_validation.py",
        "real data: bryce-hoehn/Qwen3.5-25B-REAP-A3B-Coding @ 2714ffd (declares 1 MTP layer, 22,213 tensors, none MTP)",
    ),
    basis="real checkpoint",
    examples=(
        Example(True, {"config.json": _j(_DS), "model.safetensors.index.json": _index(_DS_TRUNK)},
                note="DeepSeek-style config declares 1 NextN layer; the index has no model.layers.2.*"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="the appended layer model.layers.2 is in the index"),
    ),
    question=MTP_HEADS,
)

MTP002 = Rule(
    id="MTP002",
    name="mtp-declared-never-published",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="config.json declares MTP modules whose weights the vendor never published",
    what=(
        "For families whose vendor declares MTP in config.json but never released the weights (MiniMax-M2, M2.1, "
        "M2.5, M2.7: use_mtp true, num_mtp_modules 3, weight_map only layers 0-61), reports the missing MTP "
        "tensors as an upstream fact instead of a broken repack."
    ),
    why=(
        "--speculative-algorithm NEXTN cannot work with these checkpoints, whatever the copy: there is nothing to "
        "load. Knowing that it is upstream saves a search for a 'correct' copy that does not exist."
    ),
    fix="Serve without MTP speculative decoding, or use a separately trained draft model (EAGLE-3).",
    sources=(
        "MiniMax-AI/MiniMax-M2 issue #47, MiniMax-M2.5 #8, MiniMax-M2.7 #16",
        "SGLang python/sglang/srt/models/minimax_m2.py get_spec_layer_idx_from_weight_name",
    ),
    basis="bug report",
    examples=(
        Example(True, {
            "config.json": _j({"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "num_hidden_layers": 2,
                               "use_mtp": True, "num_mtp_modules": 3, "mtp_transformer_layers": 1, "num_local_experts": 2}),
            "model.safetensors.index.json": _index({"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00001.safetensors",
                                                    "model.layers.1.self_attn.o_proj.weight": "model-00001-of-00001.safetensors"}),
        }, note="use_mtp true, num_mtp_modules 3, weight_map stops at the last trunk layer"),
        Example(False, {
            "config.json": _j({"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "num_hidden_layers": 2,
                               "use_mtp": False, "num_mtp_modules": 3, "num_local_experts": 2}),
            "model.safetensors.index.json": _index({"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00001.safetensors"}),
        }, note="use_mtp false: nothing declared"),
    ),
    question=MTP_HEADS,
)

MTP003 = Rule(
    id="MTP003",
    name="mtp-present-undeclared",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="MTP tensors are present but config.json does not declare them",
    what=(
        "Fires when MTP tensors exist but config.json declares no MTP layer (or 0) and the family is not one that "
        "ships MTP without a key (Qwen3-Next, MiMo-V2)."
    ),
    why=(
        "Engines size the draft model from the config: with no declaration they never build the MTP module, so "
        "the weights are dead bytes and --speculative-algorithm NEXTN fails or silently drafts nothing. Converters "
        "that strip mtp_num_hidden_layers while keeping mtp.* tensors cause exactly this."
    ),
    fix="Restore the declaration (e.g. text_config.mtp_num_hidden_layers: 1 for Qwen3.5) from the original config.json.",
    sources=("unslothai/unsloth-zoo PR #847", "ggml-org/llama.cpp PR #20533"),
    basis="bug report",
    examples=(
        Example(True, {
            "config.json": _j({**_QWEN35, "text_config": {k: v for k, v in _QWEN35["text_config"].items() if k != "mtp_num_hidden_layers"}}),
            "model.safetensors.index.json": _index({k: "model-00001-of-00001.safetensors" for k in _QWEN_MTP_TINY}),
        }, note="Qwen3.5 config without mtp_num_hidden_layers, index with mtp.* tensors"),
        Example(False, {
            "config.json": _j({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "num_hidden_layers": 2}),
            "model.safetensors.index.json": _index({k: "model-00001-of-00001.safetensors" for k in _QWEN_MTP_TINY}),
        }, note="Qwen3-Next ships mtp.* without a config key; engines assume 1 layer"),
    ),
    question=MTP_HEADS,
)

MTP004 = Rule(
    id="MTP004",
    name="mtp-layer-count-mismatch",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The number of MTP layers found differs from the number declared",
    what=(
        "Counts the distinct MTP layers among the tensors (model.layers.N+i, mtp.layers.i, model.mtp_layers.i; "
        "Nemotron-H's mtp_hybrid_override_pattern blocks count as one layer) and compares with the declared depth."
    ),
    why=(
        "Engines build exactly the declared number of MTP layers: extra layers are ignored, missing ones load "
        "uninitialised weights (or fail validation). A mismatch usually means a truncated export or a config copied "
        "from another variant."
    ),
    fix="Make config.json and the shipped MTP layers agree: re-export the missing layers or correct the declared depth.",
    sources=("SGLang deepseek_weight_loader.py (asserts num_nextn_layers == 1)", "SGLang deepseek_nextn.py hf_to_sglang_mapper (amd/DeepSeek-R1-0528-MXFP4 renames model.layers.61)", "https://github.com/vllm-project/vllm/issues/52111"),
    basis="code",
    examples=(
        Example(True, {"config.json": _j({**_DS, "num_nextn_predict_layers": 2}),
                       "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="2 NextN layers declared, only model.layers.2 present"),
        Example(False, {"config.json": _j(_NEMOTRON), "model.safetensors.index.json": _index({
            "mtp.layers.0.eh_proj.weight": "model-00001-of-00001.safetensors",
            "mtp.layers.1.mixer.experts.0.up_proj.weight": "model-00001-of-00001.safetensors",
        })}, note="Nemotron-H: mtp.layers.0 and mtp.layers.1 are the two blocks ('*E') of one MTP layer"),
    ),
    question=MTP_HEADS,
)

MTP005 = Rule(
    id="MTP005",
    name="mtp-expert-set-incomplete",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="An MTP MoE layer lacks experts or projections that config.json promises",
    what=(
        "For each MTP layer with per-expert tensors (experts.<id>.<proj>), compares the expert ids with "
        "range(expert count) from config.json (mtp_num_experts / mtp_n_routed_experts override n_routed_experts, "
        "num_experts, num_local_experts, moe_num_experts) and checks every expert has the same projections. "
        "Stacked layouts (experts.gate_up_proj) are checked through the header's first dimension, never flagged "
        "from names alone."
    ),
    why=(
        "The MTP MoE layer is built with the config's expert count; missing experts are uninitialised, so tokens "
        "routed to them draft garbage. It happens when a pruned trunk (REAP) and an unpruned MTP layer, or the "
        "other way round, are mixed."
    ),
    fix="Re-export the MTP layer with the same expert set as the config (or prune it the same way as the trunk).",
    sources=("config keys mtp_num_experts (InternS2-Mobius) and mtp_n_routed_experts (nemotron_h_puzzle): the legitimate per-MTP expert counts", "inference-atlas PR #151 (Qwen3.6 NVFP4 MTP stores stacked experts: 19 tensors, not truncated)"),
    basis="code",
    examples=(
        Example(True, {"config.json": _j(_DS), "model.safetensors.index.json": _index(
            {**_DS_TRUNK, **_DS_MTP, **_experts("model.layers.2", range(3))})},
            note="n_routed_experts 4, MTP layer has experts 0-2"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index(
            {**_DS_TRUNK, **_DS_MTP, **_experts("model.layers.2", range(4))})},
            note="all 4 experts with gate/up/down"),
    ),
    question=MTP_HEADS,
)

MTP006 = Rule(
    id="MTP006",
    name="mtp-excluded-from-quantization",
    analyzer="checkpoint",
    severity=Severity.INFO,
    summary="MTP linears are stored unquantized while the rest of the model is quantized (with the byte cost)",
    what=(
        "Decides the storage format of every linear module from its tensors (header dtype, or sibling names "
        "weight_scale / weight_scale_2 / weight_scale_inv / weight_packed when only the index is at hand) and, "
        "when MTP linears are BF16 while the trunk is NVFP4 or FP8, reports the bytes they take and what the "
        "trunk's format would take."
    ),
    why=(
        "Quantized releases often keep MTP in BF16 (nvidia/Qwen3.5-397B-A17B-NVFP4: 1,553 BF16 MTP tensors, about "
        "13 GB, where NVFP4 would need under 4 GB). The memory is real on every GPU that holds the weights, and the "
        "engine must build BF16 modules for the draft."
    ),
    fix="Budget the memory; it is usually deliberate. Quantize the MTP layer only if the engine supports it.",
    sources=("vLLM PR #25987 (nvidia/DeepSeek-R1-FP4 excludes model.layers.61*)",),
    basis="real checkpoint",
    examples=(
        Example(True, lambda: _qwen_shards(["mtp*"]), note="trunk NVFP4 (weight_scale_2 siblings), MTP BF16"),
        Example(False, {"config.json": _j(_QWEN35), "hf_quant_config.json": _j(
            {**_HF_QUANT_397B_STYLE, "quantization": {**_HF_QUANT_397B_STYLE["quantization"], "exclude_modules": ["lm_head"]}}),
            "model.safetensors.index.json": _index({
            **{k: "model-00001-of-00001.safetensors" for k in _QWEN_TRUNK_NVFP4},
            **{f"mtp.{m}.{p}": "model-00001-of-00001.safetensors"
               for m in ("fc", "layers.0.self_attn.q_proj") for p in ("weight", "weight_scale", "weight_scale_2")},
        })}, note="MTP quantized like the trunk"),
    ),
    question=MEMORY,
)

MTP007 = Rule(
    id="MTP007",
    name="quant-exclude-list-disagrees",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The quantization config's exclude/ignore list disagrees with how MTP tensors are stored",
    what=(
        "For every MTP linear module, compares 'covered by the exclusion list' (hf_quant_config.json "
        "exclude_modules or config.json quantization_config ignore / exclude_modules as fnmatch wildcards, "
        "compressed-tensors ignore names and re: regexes, modules_to_not_convert substrings, GPTQ dynamic '-:' keys, "
        "ModelOpt MIXED_PRECISION quantized_layers, Quark exclude) with 'stored unquantized'. An error, unless every "
        "uncovered module is built unquantized by engine code that ignores the list for this architecture and "
        "quantization method (mtp_audit/checkpoint/overrides.py, each row read in a named engine release): then a "
        "warning that names the engine, its version and file:line. Without config.json the architecture is unknown: "
        "whether an engine overrides the list could not be told (a gap; MTP022 reports the missing config)."
    ),
    why=(
        "Engines decide each module's format from the list. nvidia/Qwen3.5-397B-A17B-NVFP4 stores the whole MTP "
        "branch in BF16 but excludes only mtp.layers.0*, so an engine that trusts the list builds mtp.fc as NVFP4 "
        "and its BF16 weight does not load; vLLM 0.20.0 qwen3_5_mtp.py:80-88 forces mtp.fc unquantized and SGLang "
        "0.5.23 qwen3_5_mtp.py:65-69 builds the whole MTP module BF16 for serialized modelopt_fp4, so there it is a "
        "warning. A compressed-tensors ignore list that misses the BF16 MTP experts has no such override: vLLM "
        "fails with KeyError layers.0.mlp.experts.w2_weight (vLLM PR #41994). The reverse (excluded but stored "
        "packed) fails the same way."
    ),
    fix="Make the exclusion list cover exactly the unquantized MTP modules (Model-Optimizer PR #1124 exports 'mtp*').",
    sources=(
        "vLLM PR #38832, #38650 and #41994; NVIDIA/Model-Optimizer PR #1124; SGLang #35797",
        "SGLang 0.5.23 python/sglang/srt/models/qwen3_5_mtp.py:65-69 _mtp_quant_config; "
        "vLLM 0.20.0 vllm/model_executor/models/qwen3_5_mtp.py:80-88",
    ),
    basis="real checkpoint",
    examples=(
        Example(True, lambda: _qwen_ct_shards(["lm_head", "mtp.fc"]),
                note="compressed-tensors ignore names mtp.fc but not the BF16 mtp.layers.0.self_attn.q_proj: error"),
        Example(True, lambda: _qwen_shards(["lm_head", "mtp.layers.0*"]),
                note="exclude_modules has mtp.layers.0* only; mtp.fc.weight is stored BF16: a warning naming SGLang "
                "0.5.23 qwen3_5_mtp.py, which builds the MTP module BF16 for modelopt_fp4"),
        Example(False, lambda: _qwen_shards(["lm_head", "mtp.layers.0*", "mtp*"]), note="'mtp*' covers mtp.fc"),
        Example(False, lambda: _qwen_ct_shards(["lm_head", "re:mtp.*"]), note="the regex covers every MTP module"),
    ),
    question=MTP_HEADS,
)

MTP008 = Rule(
    id="MTP008",
    name="index-shard-missing",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The index names shard files that are not in a folder that has shards",
    what=(
        "When the folder holds at least one .safetensors file, every shard file named in weight_map must exist; "
        "a symlink to a missing file is missing too (a symlink that leads outside the folder is never followed: "
        "a gap, not this rule). "
        "(A folder with no shards at all is a metadata-only audit, reported as a gap instead.)"
    ),
    why="The load fails at the first missing shard, or, with MTP in the missing shard, the draft has no weights. "
        "A weight_map value that is not a plain top-level name (sub/x.safetensors, sub/../x.safetensors, "
        "./x.safetensors) is missing for the loaders too: vLLM 0.33.0 compares os.path.join(folder, value) with its "
        "top-level glob of *.safetensors and raises FileNotFoundError ('Weight files referenced in index but "
        "missing'); SGLang 0.5.9 keeps only the globbed files the strings name, so that shard is never loaded.",
    fix="Download the missing shards (huggingface-cli download with the same revision) or fix weight_map.",
    sources=("NVIDIA-NeMo/Megatron-Bridge issue #4188 (45 of 48 shards written)",
             "vllm 0.33.0 vllm/model_executor/model_loader/default_loader.py:230, weight_utils.py:603-613",
             "sglang 0.5.9 sglang/srt/model_loader/loader.py:442, weight_utils.py:599-603"),
    basis="bug report",
    examples=(
        Example(True, lambda: _two_shards(1), note="weight_map names 2 shards, 1 present"),
        Example(True, lambda: _dotted_shard("sub/../model.safetensors"),
                note="weight_map says sub/../model.safetensors: inside the folder, but not the name the loaders glob"),
        Example(False, lambda: _two_shards(2), note="both shards present"),
    ),
    question=STARTS,
)

MTP009 = Rule(
    id="MTP009",
    name="unindexed-shard-holds-mtp",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="A shard the index does not name holds MTP tensors",
    what="Reads the header of every .safetensors file in the folder, including files weight_map never mentions.",
    why=(
        "Loaders pick shard files through the index (vLLM filters safetensors files by weight_map), so MTP weights "
        "in a sidecar such as mtp.safetensors are never loaded and the draft runs uninitialised."
    ),
    fix="Add the sidecar's tensors to weight_map (and metadata.total_size), or merge it into an indexed shard.",
    sources=("NVIDIA/Model-Optimizer PR #2427 and issue #750", "https://github.com/osaurus-ai/vmlx-swift/pull/388"),
    basis="bug report",
    examples=(
        Example(True, lambda: _with_sidecar(False), note="mtp.safetensors holds mtp.* but the index lists only the trunk shard"),
        Example(False, lambda: _with_sidecar(True), note="the index maps the mtp.* tensors to mtp.safetensors"),
    ),
    question=MTP_HEADS,
)

MTP010 = Rule(
    id="MTP010",
    name="weight-map-path-escapes",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="A weight_map path is absolute or leaves the checkpoint folder",
    what=(
        "Checks every weight_map value is a relative path inside the folder (no leading '/', no '..', no drive "
        "letter, no URL). Such paths are reported and never opened."
    ),
    why=(
        "A checkpoint is data from the internet: an index pointing at ../../ or /etc makes naive loaders read files "
        "outside the download, and no legitimate checkpoint needs it."
    ),
    fix="Rewrite the entry to the shard's file name inside the checkpoint folder.",
    sources=("no public report: a safety check (a weight_map path must stay inside the checkpoint folder)",),
    basis="safety",
    examples=(
        Example(True, {"config.json": _j(_DS), "model.safetensors.index.json": _index(
            {**_DS_TRUNK, **_DS_MTP, "model.norm.weight": "../outside.safetensors"})}, note="'../outside.safetensors'"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="plain shard file names"),
    ),
    question=STARTS,
)

MTP011 = Rule(
    id="MTP011",
    name="total-size-mismatch",
    analyzer="checkpoint",
    severity=Severity.WARNING,
    summary="metadata.total_size in the index differs from the sum of the shard headers",
    what=(
        "When every indexed shard's header was read, sums the tensor bytes (dtype bits x elements) and compares "
        "with metadata.total_size; says so when total_size equals 2 bytes per element (computed as if all BF16)."
    ),
    why=(
        "A stale total_size means the index was rewritten without rescanning the shards: tensors may have been "
        "dropped or added (MTP is the usual victim). Tools that plan memory from it are wrong by that much. "
        "deepseek-ai/DeepSeek-V3 itself declares 1,369,062,772,000 bytes for 688,574,839,360 bytes of tensors."
    ),
    fix="Regenerate the index from the shard headers.",
    sources=(
        "deepseek-ai/DeepSeek-V3 header dump (simpx/model-inspect README.md @ 5894630): 688,574,839,360 bytes",
    ),
    basis="real checkpoint",
    examples=(
        Example(True, lambda: _sized(1000), note="total_size 1,000 bytes more than the headers"),
        Example(False, lambda: _sized(0), note="total_size equals the header sum"),
    ),
)

MTP012 = Rule(
    id="MTP012",
    name="index-disagrees-with-headers",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The index lists tensors its shards do not hold, or omits tensors they do",
    what="Compares each indexed shard's header with the weight_map entries that point at it.",
    why=(
        "Ghost entries (an index key the shard lacks) make loaders fail with a KeyError or skip the module; "
        "omitted entries are never loaded. Both are produced by converters that write MTP keys for shards that "
        "lack them."
    ),
    fix="Regenerate weight_map from the shard headers.",
    sources=("redai-studio/Relax PR #148", "https://github.com/osaurus-ai/vmlx-swift/pull/388"),
    basis="bug report",
    examples=(
        Example(True, lambda: _ghost(True), note="weight_map lists model.layers.2.shared_head.head.weight; the shard lacks it"),
        Example(False, lambda: _ghost(False), note="index and header agree"),
    ),
    question=STARTS,
)

MTP013 = Rule(
    id="MTP013",
    name="shard-header-invalid",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="A shard's safetensors header is malformed",
    what=(
        "Reads each shard's 8-byte header length and JSON header (never tensor data): length beyond the file or over "
        "100,000,000 bytes, non-UTF-8 bytes, duplicate tensor names, malformed entries, and whatever "
        "safetensors.safe_open rejects. A .gguf file inside an audited folder whose header is malformed or cut "
        "(the checks ggml/src/gguf.cpp makes) fires it too; that model is left out and the folder's others are audited."
    ),
    why="safetensors refuses such a file (llama.cpp's gguf_init_from_file_impl a GGUF one: 'failed to read header', "
        "'failed to read tensor info', 'failed to read tensor data'), so the model (and its MTP layer, if it lives "
        "there) does not load.",
    fix="Download the shard again and compare its sha256 with the repository's LFS pointer.",
    sources=("safetensors src/tensor.rs (MAX_HEADER_SIZE = 100,000,000; header must be UTF-8 JSON)",
             "llama.cpp ggml/src/gguf.cpp gguf_init_from_file_impl (llama-cpp-python 0.3.36 vendor copy: :547, :774, :798)"),
    basis="format spec",
    examples=(
        Example(True, lambda: _bad_header(True), note="header length field says 1,000,000 bytes in a 500-byte file"),
        Example(False, lambda: _bad_header(False), note="valid header"),
    ),
    question=STARTS,
)

def _misplaced(num_hidden_layers: int) -> dict[str, str]:
    """A DeepSeek-style index whose MTP layer (enorm, hnorm, eh_proj...) sits at model.layers.2; the config says
    ``num_hidden_layers``: 2 puts the MTP layer where the loader looks, 3 turns it into a trunk layer."""
    wm = {**_DS_TRUNK, **_DS_MTP}
    return {"config.json": _j({**_DS, "n_routed_experts": 0, "num_hidden_layers": num_hidden_layers}),
            "model.safetensors.index.json": _index(wm)}


MTP014 = Rule(
    id="MTP014",
    name="mtp-tensors-misplaced",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="MTP-only tensors sit inside a trunk layer, where the family's MTP loader never looks",
    what=(
        "For families whose MTP layers are appended decoder layers (DeepSeek-V3/R1/V3.1/V3.2, GLM-4.5..5, Bailing, "
        "Step, MiniMax), looks for the tensors only an MTP layer has (enorm, hnorm, eh_proj, shared_head) in a layer "
        "whose index is below num_hidden_layers."
    ),
    why=(
        "The loader finds the MTP layer by index: vLLM 0.33.0 models/utils.py:589-595 get_spec_layer_idx_from_weight_name "
        "accepts only model.layers.{num_hidden_layers + i}. and deepseek_mtp.py:344-345 skips every other weight; SGLang's "
        "NextN loaders do the same with num_hidden_layers. MTP weights inside a trunk layer are never loaded: the draft "
        "runs uninitialised (accept rate near 0) or the load fails on the missing layer. Typical causes: "
        "num_hidden_layers counts the MTP layer, or an export renumbered the layers."
    ),
    fix="Set num_hidden_layers to the trunk depth (the MTP layer index), or rename the tensors to model.layers.{num_hidden_layers}.*.",
    sources=(
        "vLLM 0.33.0 vllm/model_executor/models/utils.py:589-595 and deepseek_mtp.py:344-345",
    ),
    basis="code",
    examples=(
        Example(True, lambda: _misplaced(3), note="num_hidden_layers 3: model.layers.2.enorm is inside the trunk"),
        Example(False, lambda: _misplaced(2), note="num_hidden_layers 2: model.layers.2 is the MTP layer"),
    ),
    question=MTP_HEADS,
)


#: Quark W4A16 as AMD's Qwen3.8-27B int4 release declares it (model card: INT4 weight-only, group 128, BF16
#: activations; Quark ``Uint4PerGroupSpec``: dtype uint4, per_group, asymmetric): weight I32 (8 values per int32),
#: BF16 group scales, I32 packed zero points (vLLM 0.33.0 quark/schemes/quark_w4a16_int4.py:130-168).
_QUARK_W4A16 = {
    "quant_method": "quark",
    "export": {"pack_method": "reorder", "weight_format": "real_quantized"},
    "global_quant_config": {"weight": {"dtype": "uint4", "qscheme": "per_group", "group_size": 128, "symmetric": False},
                            "input_tensors": None, "output_tensors": None, "bias": None},
    "layer_quant_config": {},
    "layer_type_quant_config": {},
    "exclude": ["lm_head", "re:mtp.*"],
}


def _quark_w4a16(stored: str) -> dict[str, str | bytes]:
    """A Qwen3.5-dense-style checkpoint whose trunk q_proj is stored as declared (INT4) or as FP8."""
    from mtp_audit.synth.shards import tiny

    cfg = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
           "text_config": {"model_type": "qwen3_5_text", "num_hidden_layers": 1, "mtp_num_hidden_layers": 1},
           "quantization_config": _QUARK_W4A16}
    q = "model.language_model.layers.0.self_attn.q_proj"
    if stored == "INT4":
        trunk = {f"{q}.weight": ("I32", [256, 32]), f"{q}.weight_scale": ("BF16", [2, 256]),
                 f"{q}.weight_zero_point": ("I32", [2, 32])}
    else:
        trunk = {f"{q}.weight": ("F8_E4M3", [256, 256]), f"{q}.weight_scale": ("F32", [])}
    return {"config.json": _j(cfg), "model.safetensors": tiny({**trunk, **_QWEN_MTP_TINY})}


def _nvfp4_undeclared(fp8_declared: bool) -> dict[str, str | bytes]:
    """The Qwen3.5 NVFP4 trunk (U8 weight, weight_scale, weight_scale_2, input_scale) with no hf_quant_config.json and
    either no quantization_config or an FP8 block one."""
    files = _qwen_shards(["lm_head", "mtp*"])
    del files["hf_quant_config.json"]
    if fp8_declared:
        cfg = {**_QWEN35, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                  "weight_block_size": [128, 128]}}
        files["config.json"] = _j(cfg)
    return files


MTP015 = Rule(
    id="MTP015",
    name="declared-format-disagrees-with-tensors",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="A module's tensors are not stored the way the quantization config declares",
    what=(
        "Decides each linear module's format from the quantization config first (ModelOpt quant_algo and "
        "MIXED_PRECISION quantized_layers, compressed-tensors config_groups targets and ignore, Quark exclude / "
        "layer_quant_config / global_quant_config with dtype, group size and zero points, GPTQ dynamic, AWQ "
        "modules_to_not_convert) and compares it with the format its tensors show (header dtype, or sibling "
        "names that only one format has: weight_scale_2, weight_scale_inv, weight_zero_point, qweight). Tensor names "
        "decide a module's format only where no config speaks. MTP modules stored BF16 against a quantized "
        "declaration are MTP007's. Both directions: tensors stored quantized (scale or packed siblings) when "
        "neither config.json quantization_config nor hf_quant_config.json exists (engines then build every linear "
        "unquantized; a quantization file the audit does not read, such as quantize_config.json, makes it a "
        "blocking gap instead), and, for a config that names one format without a per-module list (FP8 block), "
        "modules stored in another quantized format (NVFP4 where FP8 is declared)."
    ),
    why=(
        "Engines build every module from the declaration, not from the tensors: vLLM resolves a ModelOpt "
        "MIXED_PRECISION checkpoint to modelopt_mixed and builds each layer from its quantized_layers entry "
        "(vllm 0.33.0 modelopt.py:1748-1800), Quark per layer config (quark.py:764-808). Tensors stored in another "
        "format do not fit the parameters the engine created: the load fails on a shape or dtype, or the module "
        "computes garbage. With no quantization config, vLLM 0.33.0 (transformers_utils/config.py:951-962) and "
        "SGLang 0.5.9 (configs/model_config.py:647-735) build every linear unquantized: a packed NVFP4 weight "
        "(U8, half the last dimension) fails the shape assert of the linear loader and its scale tensors have no "
        "parameter."
    ),
    fix="Re-export the modules in the declared format, or correct the quantization config to what is stored.",
    sources=(
        "vLLM 0.33.0 vllm/model_executor/layers/quantization/modelopt.py:1748-1800, 1884; quark/quark.py:764-808",
        "vLLM 0.33.0 vllm/transformers_utils/config.py:951-962, vllm/model_executor/layers/linear.py:408, 605; "
        "SGLang 0.5.9 sglang/srt/configs/model_config.py:647-735, sglang/srt/layers/linear.py:260, 416",
        "vLLM PR #48606 (native Quark W4A16 INT4/UINT4: routers and other FP16 layers must appear in "
        "quantization_config.exclude, vLLM does not infer it from tensor dtypes)",
    ),
    basis="code",
    examples=(
        Example(True, lambda: _quark_w4a16("FP8"), note="Quark declares uint4 group 128; q_proj is stored F8_E4M3"),
        Example(True, lambda: _nvfp4_undeclared(False),
                note="q_proj stored NVFP4 (U8 + weight_scale + weight_scale_2), no quantization config anywhere"),
        Example(True, lambda: _nvfp4_undeclared(True), note="config.json declares FP8 block 128x128; q_proj is stored NVFP4"),
        Example(False, lambda: _quark_w4a16("INT4"),
                note="q_proj stored as declared: I32 packed weight, BF16 group scales, I32 zero points"),
    ),
    question=STARTS,
)


_SHARD = "model-00001-of-00001.safetensors"
#: DeepSeek-V4-Flash-0731's declaration (vLLM PR #41834; the config as quoted in public tests: num_nextn_predict_layers
#: 1, dspark_block_size 5, dspark_target_layer_ids [40, 41, 42]), toy depth.
_DSV4 = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_hidden_layers": 2,
         "num_nextn_predict_layers": 1, "n_routed_experts": 2, "hidden_size": 8}


def _dsv4(dspark: bool) -> dict[str, str | bytes]:
    cfg = {**_DSV4, "dspark_block_size": 5, "dspark_target_layer_ids": [0, 1]} if dspark else _DSV4
    names = (["mtp.0.attn.wq_a.weight", "mtp.1.ffn.experts.0.w1.weight", "mtp.2.markov_head.weight"] if dspark
             else ["mtp.0.e_proj.weight", "mtp.0.h_proj.weight", "mtp.0.enorm.weight", "mtp.0.hnorm.weight", "mtp.0.attn.wq_a.weight"])
    return {"config.json": _j(cfg), "model.safetensors.index.json": _index(
        {**{n: _SHARD for n in names}, "layers.0.attn.wq_a.weight": _SHARD})}


MTP016 = Rule(
    id="MTP016",
    name="mtp-prefix-holds-dspark",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The tensors under mtp.* are a DSpark drafter, not MTP heads",
    what=(
        "An mtp. prefix is not proof of MTP: when config.json declares a DSpark drafter (dspark_block_size, "
        "dspark_target_layer_ids, dspark_markov_rank) and no tensor under mtp.* has an MTP hallmark (eh_proj, enorm, "
        "hnorm, e_proj/h_proj, fc + pre_fc_norm_*), says it is DSpark and which method each engine needs."
    ),
    why=(
        "DeepSeek-V4-Flash-0731 ships a DSpark block drafter as mtp.0/1/2 (4,705 tensors, a markov head, no "
        "enorm/hnorm/eh_proj). --speculative-config method mtp 'is liable to half-load DSpark blocks rather than fail "
        "cleanly' (vLLM PR #41834): the draft computes garbage and acceptance collapses."
    ),
    fix=(
        "vLLM: --speculative-config '{\"method\": \"dspark\", \"num_speculative_tokens\": <dspark_block_size>}'; "
        "SGLang 0.5.23: --speculative-algorithm DSPARK --speculative-dspark-block-size <dspark_block_size>."
    ),
    sources=(
        "vLLM PR #41834 (comment, 2026-08-05)",
        "vLLM 0.33.0 vllm/config/speculative.py:70 and :1269-1275 (method dspark, weights inside the target checkpoint)",
        "SGLang 0.5.23 sglang/srt/speculative/spec_info.py:41 (DSPARK), arg_groups/speculative_hook.py:807-813",
    ),
    basis="bug report",
    examples=(
        Example(True, lambda: _dsv4(True), note="dspark_block_size 5; mtp.0/1/2 without eh_proj/enorm/hnorm"),
        Example(False, lambda: _dsv4(False), note="DeepSeek-V4 MTP: mtp.0 with e_proj/h_proj/enorm/hnorm, no dspark keys"),
    ),
    question=MTP_HEADS,
)


def _mimo_v2(layers: int) -> dict[str, str | bytes]:
    cfg = {"architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "num_hidden_layers": 2,
           "n_routed_experts": 2, "hidden_size": 8}
    names = [f"model.mtp.layers.{i}.{t}.weight" for i in range(layers) for t in ("enorm", "hnorm", "eh_proj", "input_layernorm")]
    return {"config.json": _j(cfg), "model.safetensors.index.json": _index({n: _SHARD for n in names})}


MTP017 = Rule(
    id="MTP017",
    name="mtp-layers-beyond-the-first-unused",
    analyzer="checkpoint",
    severity=Severity.INFO,
    summary="Several MTP layers ship, but an engine runs (or builds) only the first",
    what=(
        "Counts the numbered MTP layers (Step-3.5/3.7 and MiMo-V2/V2.5 ship 3) and says, per engine release, "
        "whether every draft step runs its own layer, only layer 0 is built, or layer 0 runs at every step while "
        "the others sit in memory."
    ),
    why=(
        "Draft step k is trained on layer k. vLLM 0.33.0 builds one MiMo-V2 MTP layer (mimo_v2_mtp.py:51-54) and its "
        "generic proposer never passes spec_step_idx (llm_base_proposer.py:688; vLLM #52688), so steps past the "
        "first reuse layer 0 and acceptance drops; only Step-3.x has its own proposer there. SGLang 0.5.23 turns on "
        "multi-layer EAGLE for MiMo-V2 and Step-3.x."
    ),
    fix="Keep num_speculative_tokens small on the engines that run layer 0 only, or serve with one that runs all layers.",
    sources=(
        "vLLM issue #52688, PR #42146, RFC #31204 (MiMo-V2-Flash has 3 MTP layers)",
        "vLLM 0.33.0 vllm/model_executor/models/mimo_v2_mtp.py:51-54, vllm/v1/spec_decode/step3p5.py:387-388",
        "SGLang 0.5.23 sglang/srt/arg_groups/model_overrides/mimo_v2.py:20-25, arg_groups/overrides.py:331-349",
    ),
    basis="code",
    examples=(
        Example(True, lambda: _mimo_v2(3), note="MiMo-V2-Flash with model.mtp.layers.0..2: vLLM builds layer 0 only"),
        Example(False, lambda: _mimo_v2(1), note="one MTP layer"),
    ),
    question=MTP_HEADS,
)


def _step37_nvfp4(exclude: list[str]) -> dict[str, str | bytes]:
    from mtp_audit.synth.shards import tiny

    cfg = {"architectures": ["Step3p7ForConditionalGeneration"], "model_type": "step3p7", "num_hidden_layers": 2,
           "num_nextn_predict_layers": 1, "hidden_size": 8, "num_experts": 2}
    hq = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                            "exclude_modules": exclude}}
    trunk = {"model.layers.0.mlp.down_proj.weight": ("U8", [8, 8]), "model.layers.0.mlp.down_proj.weight_scale": ("F8_E4M3", [8, 1]),
             "model.layers.0.mlp.down_proj.weight_scale_2": ("F32", [])}
    mtp = {"model.layers.2.eh_proj.weight": ("BF16", [8, 16]), "model.layers.2.input_layernorm.weight": ("BF16", [8]), "model.layers.2.enorm.weight": ("BF16", [8]),
           "model.layers.2.shared_head.output.weight": ("BF16", [32, 8])}
    return {"config.json": _j(cfg), "hf_quant_config.json": _j(hq), "model-00001-of-00002.safetensors": tiny(trunk),
            "model-mtp-bf16.safetensors": tiny(mtp),
            "model.safetensors.index.json": _index({**{k: "model-00001-of-00002.safetensors" for k in trunk},
                                                    **{k: "model-mtp-bf16.safetensors" for k in mtp}})}


MTP018 = Rule(
    id="MTP018",
    name="mtp-head-renamed-past-exclude-list",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The engine builds the MTP shared_head under a name the FP4 exclusion list does not cover",
    what=(
        "For families whose engine builds the MTP layer's shared_head under another module name than the "
        "checkpoint's (Step-3.x in SGLang: model.shared_head; GLM-5.3 in vLLM: a parallel_lm_head placeholder), checks "
        "whether the NVFP4 exclusion list covers that name when the head is stored BF16 (or not stored)."
    ),
    why=(
        "The exclusion list is matched against the engine's module name. Step-3.7-Flash-NVFP4 excludes "
        "model.layers.45.*, SGLang builds the head as model.shared_head.* in NVFP4 and the BF16 weight does not fit "
        "(width 2048 vs 4096, SGLang PR #32325); GLM-5.3-Flash NVFP4 fails in vLLM with \"NVFP4 weight_scale for layer "
        "'parallel_lm_head' was never loaded (still NaN)\" (vLLM #57532)."
    ),
    fix="Add the engine's name (\"model.shared_head*\", \"*shared_head*\") to the exclusion list, or use a release with the fix.",
    sources=("SGLang PR #32325 (open 2026-07-24)", "vLLM issue #57532; fix PR #55442; regression from PR #52501"),
    basis="bug report",
    examples=(
        Example(True, lambda: _step37_nvfp4(["lm_head", "model.layers.2.*"]),
                note="exclude model.layers.2.* only: SGLang builds model.shared_head NVFP4"),
        Example(False, lambda: _step37_nvfp4(["lm_head", "model.layers.2.*", "model.shared_head*"]),
                note="the list covers the engine's name too"),
    ),
    question=MTP_HEADS,
)


def _nvfp4_experts(with_scales: int) -> dict[str, str | bytes]:
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 1, "num_experts": 2}
    wm = {}
    for e in range(2):
        for p in ("weight", "weight_scale", "weight_scale_2"):
            wm[f"model.layers.0.mlp.experts.{e}.down_proj.{p}"] = _SHARD
        if e < with_scales:
            wm[f"model.layers.0.mlp.experts.{e}.down_proj.input_scale"] = _SHARD
    hq = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}
    return {"config.json": _j(cfg), "hf_quant_config.json": _j(hq), "model.safetensors.index.json": _index(wm)}


MTP019 = Rule(
    id="MTP019",
    name="nvfp4-expert-input-scale-missing",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="Some NVFP4 experts of a layer lack the per-expert input_scale their siblings carry",
    what=(
        "For every MoE layer (trunk and MTP), compares the NVFP4 expert projections (weight_scale_2 present) that "
        "carry input_scale with those that do not, from the index or the headers."
    ),
    why=(
        "A W4A4 MoE path loads a missing input_scale as zero and divides by it: NaN that depends on the prompt "
        "(vLLM #45212). A layer where only some experts carry it was exported or merged inconsistently."
    ),
    fix="Re-export the layer so every expert carries its input_scale (or none does and the config says W4A16).",
    sources=("vLLM issue #45212 (2026-06-11)",),
    basis="bug report",
    examples=(
        Example(True, lambda: _nvfp4_experts(1), note="expert 0 has input_scale, expert 1 does not"),
        Example(False, lambda: _nvfp4_experts(2), note="both experts carry input_scale"),
    ),
    question=STARTS,
)


MTP020 = Rule(
    id="MTP020",
    name="mtp-layer-without-decoder-block",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The MTP tensors are only the glue (eh_proj, norms, shared head): no attention or MLP weight of the MTP block",
    what=(
        "Fires when MTP tensors ship and none of their names has an attention, MLP/MoE, Mamba or linear-attention "
        "component (self_attn, attn, mlp, experts, mixer, block_sparse_moe, feed_forward, ...). A DSpark drafter "
        "(MTP016) and families without MTP are left to their own rules."
    ),
    why=(
        "Every MTP layer is a full decoder block (attention + MLP or MoE) between its input projection (eh_proj / fc) "
        "and its head. Without the block's weights vLLM refuses the load ('Following weights were not initialized from "
        "checkpoint', 0.33.0 model_loader/default_loader.py:567-571) and SGLang keeps the block's initial values, so "
        "the draft is garbage and nothing is accepted. vLLM's own MTP completeness check (0.33.0 deepseek_mtp.py:520-536) "
        "only asks that some weight of each MTP layer loaded, so the glue alone passes it."
    ),
    fix="Export the whole MTP layer (its decoder block with the glue), or launch without speculative decoding.",
    sources=("vllm 0.33.0 vllm/model_executor/model_loader/default_loader.py:567-571",
             "vllm 0.33.0 vllm/model_executor/models/deepseek_mtp.py:520-536"),
    basis="code",
    examples=(
        Example(True, {"config.json": _j(_DS), "model.safetensors.index.json": _index(
            {**_DS_TRUNK, "model.layers.2.eh_proj.weight": "model-00001-of-00001.safetensors"})},
            note="the MTP layer holds eh_proj only"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="the MTP layer holds its attention"),
    ),
    question=MTP_HEADS,
)


MTP021 = Rule(
    id="MTP021",
    name="mtp-layer-without-glue",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="A DeepSeek MTP layer ships its decoder block but not all of its glue (eh_proj, enorm, hnorm, shared_head.norm)",
    what=(
        "For the families whose MTP layer is DeepSeek's NextN module (DeepSeek-V3 / R1 / V3.1, DeepSeek-V3.2), fires "
        "for each MTP layer that holds decoder-block weights but lacks one of eh_proj.weight, enorm.weight, "
        "hnorm.weight, shared_head.norm.weight. MTP020 covers the opposite (the glue without the block). "
        "embed_tokens and shared_head.head are not required: SGLang takes them from the target model."
    ),
    why=(
        "The engines' MTP module builds those four parameters for every MTP layer (vLLM 0.33.0 deepseek_mtp.py:85-87 "
        "enorm, hnorm, eh_proj and :61 shared_head.norm; SGLang 0.5.9 deepseek_nextn.py:94-97 and :122-123). vLLM "
        "refuses a load that leaves a parameter uninitialised ('Following weights were not initialized from "
        "checkpoint', 0.33.0 model_loader/default_loader.py:567-571); SGLang keeps the initial values, so the draft "
        "projects the embedding and hidden state through garbage and nothing is accepted."
    ),
    fix="Export the MTP layer's eh_proj, enorm, hnorm and shared_head.norm with its decoder block, or launch without "
        "speculative decoding.",
    sources=("vllm 0.33.0 vllm/model_executor/models/deepseek_mtp.py:61,85-87",
             "vllm 0.33.0 vllm/model_executor/model_loader/default_loader.py:567-571",
             "sglang 0.5.9 sglang/srt/models/deepseek_nextn.py:94-97,122-123"),
    basis="code",
    examples=(
        Example(True, {"config.json": _j(_DS), "model.safetensors.index.json": _index(
            {**_DS_TRUNK, "model.layers.2.self_attn.o_proj.weight": "model-00001-of-00001.safetensors"})},
            note="the MTP layer holds its attention but no eh_proj, enorm, hnorm or shared_head.norm"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="the MTP layer holds its attention and all four glue tensors"),
    ),
    question=MTP_HEADS,
)


MTP022 = Rule(
    id="MTP022",
    name="config-json-missing",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="The checkpoint folder has no config.json: no engine loads it",
    what=(
        "Fires when a checkpoint folder (or hub repository) that holds an index or shards has no config.json "
        "(and no params.json, the Mistral format vLLM also reads). A single .safetensors file named on its own is "
        "a header inspection and is left alone (a gap says the declaration is unknown)."
    ),
    why=(
        "Every engine reads the model's config before any weight: vLLM refuses a folder with neither config.json nor "
        "params.json ('Could not detect config format for no config file found', 0.33.0 "
        "transformers_utils/config.py:899-908); SGLang builds its ModelConfig from AutoConfig.from_pretrained (0.5.9 "
        "configs/model_config.py:127 -> utils/hf_transformers_utils.py:315), which fails without config.json; "
        "TensorRT-LLM's HF loader does the same (tensorrt_llm/_torch/model_config.py ModelConfig.from_pretrained). "
        "So the MTP heads, whatever ships, are never loaded."
    ),
    fix="Copy the model's config.json into the folder (the same revision as the shards).",
    sources=("vllm 0.33.0 vllm/transformers_utils/config.py:899-908",
             "sglang 0.5.9 sglang/srt/configs/model_config.py:127, sglang/srt/utils/hf_transformers_utils.py:315",
             "TensorRT-LLM tensorrt_llm/_torch/model_config.py ModelConfig.from_pretrained "
             "@008e0af8980fc560003631ba4ac37828836a91c8"),
    basis="code",
    examples=(
        Example(True, {"model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="an index and no config.json"),
        Example(False, {"config.json": _j(_DS), "model.safetensors.index.json": _index({**_DS_TRUNK, **_DS_MTP})},
                note="config.json beside the index"),
    ),
    question=STARTS,
)


def _glue_shapes(hidden: int) -> dict[str, str | bytes]:
    """A DeepSeek-style checkpoint with one MTP layer whose glue is 8 wide (eh_proj [8, 16]); config.json says
    ``hidden``."""
    from mtp_audit.synth.shards import tiny

    t = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16]),
         "model.layers.2.input_layernorm.weight": ("BF16", [8]), **_GLUE_NORMS}
    return {"config.json": _j({**_DS, "n_routed_experts": 0, "hidden_size": hidden}),
            "model-00001-of-00001.safetensors": tiny(t),
            "model.safetensors.index.json": _index({k: "model-00001-of-00001.safetensors" for k in t})}


MTP023 = Rule(
    id="MTP023",
    name="mtp-glue-shape-disagrees-with-config",
    analyzer="checkpoint",
    severity=Severity.ERROR,
    summary="An MTP glue tensor (eh_proj / fc, enorm / hnorm / pre-fc norms) does not have the shape hidden_size gives",
    what=(
        "For the families whose MTP module the engines build from hidden_size alone (DeepSeek-V3 / R1 / V3.1 / V3.2 "
        "NextN: eh_proj [h, 2h], enorm, hnorm, shared_head.norm [h]; Qwen3.5 / Qwen3.6 / Qwen3-Next: mtp.fc [h, 2h], "
        "mtp.norm, mtp.pre_fc_norm_hidden, mtp.pre_fc_norm_embedding [h]), compares each header shape with the one "
        "config.json's hidden_size gives (a U8 weight packs two FP4 values per byte: last dimension halved). Only "
        "shapes read from a header are judged; a tensor named by the index alone, or no hidden_size, says nothing."
    ),
    why=(
        "The loader copies each checkpoint tensor into the parameter the model code created and asserts the shapes "
        "match (vLLM 0.33.0 model_loader/weight_utils.py:1538 'Attempted to load weight ... into parameter', "
        "layers/linear.py:605; SGLang 0.5.9 model_loader/weight_utils.py:1027): a transposed eh_proj, or a "
        "config.json whose hidden_size belongs to another model, stops the draft model from loading."
    ),
    fix="Use the config.json that came with these weights, or re-export the MTP layer for this config.",
    sources=("vllm 0.33.0 vllm/model_executor/models/deepseek_mtp.py:61,85-87, qwen3_5_mtp.py:98-100,135-141",
             "vllm 0.33.0 vllm/model_executor/model_loader/weight_utils.py:1538",
             "sglang 0.5.9 sglang/srt/models/deepseek_nextn.py:94-97, qwen3_5_mtp.py:60-65, "
             "sglang/srt/model_loader/weight_utils.py:1027"),
    basis="code",
    examples=(
        Example(True, lambda: _glue_shapes(16), note="hidden_size 16; eh_proj is [8, 16] and the norms [8]"),
        Example(False, lambda: _glue_shapes(8), note="hidden_size 8: eh_proj [8, 16], norms [8]"),
    ),
    question=MTP_HEADS,
)


RULES: tuple[Rule, ...] = (
    MTP001, MTP002, MTP003, MTP004, MTP005, MTP006, MTP007, MTP008, MTP009, MTP010, MTP011, MTP012, MTP013, MTP014,
    MTP015, MTP016, MTP017, MTP018, MTP019, MTP020, MTP021, MTP022, MTP023,
) + GGUF_RULES

#: Findings of these rules mean SGLang cannot use the MTP heads (``facts.engine.sglang.usable`` false).
BLOCKS_MTP = frozenset({"MTP001", "MTP002", "MTP004", "MTP005", "MTP007", "MTP008", "MTP009", "MTP012", "MTP013", "MTP014",
                        "MTP015", "MTP016", "MTP018", "MTP019", "MTP020", "MTP021", "MTP022", "MTP023"})
