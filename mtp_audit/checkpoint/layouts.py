"""Where each model family keeps its MTP / NextN tensors: ONE data table, plus the name patterns
that find MTP tensors in any checkpoint.

Every row names its source (an SGLang / vLLM loader file, a transformers config class, or a real
index saved under ``../shared/research``); the table is a transcription of
``../shared/research/checkpoint_formats.md`` §1-§3. Nothing here reads files.

Vocabulary:

- *appended* placement: the MTP layers are extra decoder layers ``model.layers.{N+i}`` after the
  ``N = num_hidden_layers`` trunk layers (DeepSeek-V3/R1/V3.1/V3.2, GLM-4.5..GLM-5, Bailing, Step,
  MiniMax). vLLM also accepts ``layers.{L}`` and ``model.language_model.layers.{L}``
  (``get_spec_layer_idx_from_weight_name``, vllm ``model_executor/models/utils.py``).
- *prefix* placement: the MTP module has its own name space (``mtp.*`` for Qwen3-Next/3.5/3.6 and
  Nemotron-H, ``model.mtp.*`` for MiMo-V2 and LongCat, ``model.mtp_layers.*`` for MiMo-7B,
  ``model.mtp_{emb_norm,hidden_norm,linear_proj,block}.*`` for ERNIE-4.5).
- *template*: the tensor names of ONE unquantized MTP layer, relative to its layer prefix
  (``{E}`` = every routed expert); used to estimate bytes when only ``config.json`` is available and
  by :mod:`mtp_audit.synth.shards` to build test shards. Only families whose names were verified
  against a real header dump or index, or spelled out name by name in a loader, carry one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mtp_audit.valueclass import Value

#: The research file every row below is transcribed from.
# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research/checkpoint_formats.md


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Layout(Value):
    """How one model family declares and stores its MTP layers.

    Attributes:
        family: short id (``"deepseek-v3"``).
        display: human name (``"DeepSeek-V3 / R1 / V3.1"``).
        architectures: ``config.architectures`` strings that select this row.
        model_types: ``model_type`` strings (top level or ``text_config``) that select this row.
        placement: ``"appended"``, ``"prefix"`` or ``"none"`` (family known to carry no MTP).
        prefix: MTP name prefix for prefix placement (``"mtp."``, ``"model.mtp."``), else ``""``.
        mtp_keys: config keys that declare the MTP depth for this family, in the order engines read them.
        implicit_layers: MTP depth engines assume when the config has no key (Qwen3-Next: 1,
            MiMo-V2: 1); 0 when a missing key means "no MTP".
        moe: whether the MTP decoder layer is a mixture of experts (dense for MiMo, ERNIE, LongCat, Step).
        upstream_unpublished: the vendor declares MTP but never published the weights (MiniMax-M2.x).
        blocks_key: config key whose length is the number of ``mtp.layers.i`` blocks per MTP layer
            (Nemotron-H ``mtp_hybrid_override_pattern: "*E"`` = 2 blocks), else ``""``.
        template: tensor names of one BF16 MTP layer relative to its prefix (see module docstring);
            empty when no verified name list exists.
        shared_template: names outside the numbered layer (Qwen ``fc``, ``norm``...), relative to ``prefix``.
        per_layer: tensors per MTP layer in a BF16 checkpoint with per-expert tensors, as a formula.
        source: where the row comes from.
    """

    family: str
    display: str
    architectures: tuple[str, ...]
    model_types: tuple[str, ...]
    placement: str
    prefix: str = ""
    mtp_keys: tuple[str, ...] = ("num_nextn_predict_layers",)
    implicit_layers: int = 0
    moe: bool = True
    upstream_unpublished: bool = False
    blocks_key: str = ""
    template: tuple[str, ...] = ()
    shared_template: tuple[str, ...] = ()
    per_layer: str = ""
    source: str = ""


_MLA_ATTN = (
    "self_attn.q_a_proj.weight",
    "self_attn.q_a_layernorm.weight",
    "self_attn.q_b_proj.weight",
    "self_attn.kv_a_proj_with_mqa.weight",
    "self_attn.kv_a_layernorm.weight",
    "self_attn.kv_b_proj.weight",
    "self_attn.o_proj.weight",
)
_DEEPSEEK_MTP = (
    "embed_tokens.weight",
    "enorm.weight",
    "hnorm.weight",
    "eh_proj.weight",
    "shared_head.norm.weight",
    "shared_head.head.weight",
    *_MLA_ATTN,
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
    "mlp.gate.weight",
    "mlp.gate.e_score_correction_bias",
    "mlp.experts.{E}.gate_proj.weight",
    "mlp.experts.{E}.up_proj.weight",
    "mlp.experts.{E}.down_proj.weight",
    "mlp.shared_experts.gate_proj.weight",
    "mlp.shared_experts.up_proj.weight",
    "mlp.shared_experts.down_proj.weight",
)
#: Attention and norms of a Qwen3-Next / Qwen3.5 MTP decoder layer (shared by the MoE and dense rows).
_QWEN_MTP_ATTN = (
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
)
_QWEN_MOE_MTP_LAYER = (
    *_QWEN_MTP_ATTN,
    "mlp.gate.weight",
    "mlp.shared_expert.gate_proj.weight",
    "mlp.shared_expert.up_proj.weight",
    "mlp.shared_expert.down_proj.weight",
    "mlp.shared_expert_gate.weight",
    "mlp.experts.{E}.gate_proj.weight",
    "mlp.experts.{E}.up_proj.weight",
    "mlp.experts.{E}.down_proj.weight",
)
_QWEN_DENSE_MTP_LAYER = (
    *_QWEN_MTP_ATTN,
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)
_QWEN_SHARED = ("fc.weight", "pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "norm.weight")
#: MiMo-7B MTP layer parameter names (real index jj8127/mimo_kor @ 1bdf82c: 16 tensors per layer).
MIMO7B_MTP_NAMES = (
    "token_layernorm.weight",
    "hidden_layernorm.weight",
    "input_proj.weight",
    "final_layernorm.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.q_proj.bias",
    "self_attn.k_proj.weight",
    "self_attn.k_proj.bias",
    "self_attn.v_proj.weight",
    "self_attn.v_proj.bias",
    "self_attn.o_proj.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)

#: The per-family table (checkpoint_formats.md §2). Order matters only for readability; a config
#: selects the first row whose ``architectures`` or ``model_types`` match (:func:`layout_for`).
LAYOUTS: tuple[Layout, ...] = (
    Layout(
        "deepseek-v3", "DeepSeek-V3 / R1 / V3.1", ("DeepseekV3ForCausalLM",), ("deepseek_v3",), "appended",
        template=_DEEPSEEK_MTP, per_layer="3E+20 (FP8 block release: 6E+28 = 1564)",
        source="SGLang deepseek_common/deepseek_weight_loader.py, vLLM deepseek_mtp.py; verified on the "
        "deepseek-ai/DeepSeek-V3 header dump (simpx/model-inspect README.md @ 5894630): 91,991 tensors, "
        "1,564 in model.layers.61",
    ),
    Layout(
        "deepseek-v3.2", "DeepSeek-V3.2", ("DeepseekV32ForCausalLM",), ("deepseek_v32",), "appended",
        per_layer="V3 + indexer tensors", source="vLLM deepseek_mtp.py DeepseekV32MTPModel (code-derived)",
    ),
    Layout(
        "kimi-k2", "Kimi-K2 / K2.5", ("KimiK25ForConditionalGeneration",), ("kimi_k2", "kimi_k25"), "appended",
        per_layer="0 (num_nextn_predict_layers: 0; drafts are separate EAGLE3 models)",
        source="moonshotai/Kimi-K2.5 config.json (num_nextn_predict_layers: 0)",
    ),
    Layout(
        "glm-4.5", "GLM-4.5 / 4.6 / 4.7", ("Glm4MoeForCausalLM",), ("glm4_moe",), "appended",
        per_layer="3E+22 (GLM-4.5: 502)",
        source="SGLang glm4_moe.py nextn_spec_weight_names, vLLM glm4_moe_mtp.py",
    ),
    Layout(
        "glm-4.7-flash", "GLM-4.7-Flash", ("Glm4MoeLiteForCausalLM",), ("glm4_moe_lite",), "appended",
        per_layer="DeepSeek formula", source="Megatron-Bridge #4188 (layer 47), code-derived",
    ),
    Layout(
        "glm-5", "GLM-5 / 5.1", ("GlmMoeDsaForCausalLM",), ("glm_moe_dsa",), "appended",
        per_layer="DeepSeek-V3.2 formula minus shared_head.head",
        source="zai-org/GLM-5 config.json (saved); missing head: vLLM PR #34385",
    ),
    Layout(
        "qwen3-next", "Qwen3-Next", ("Qwen3NextForCausalLM",), ("qwen3_next",), "prefix", prefix="mtp.",
        mtp_keys=("num_nextn_predict_layers",), implicit_layers=1,
        template=_QWEN_MOE_MTP_LAYER, shared_template=_QWEN_SHARED, per_layer="3E+17 (E=512: 1553)",
        source="SGLang qwen3_next.py load_weights(is_mtp=True), vLLM qwen3_next_mtp.py "
        "(getattr(config, 'num_nextn_predict_layers', 1)); Qwen3-Next-80B-A3B-Thinking config has no MTP key",
    ),
    Layout(
        "qwen3.5-moe", "Qwen3.5 / Qwen3.6 MoE",
        ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"), ("qwen3_5_moe", "qwen3_5_moe_text"),
        "prefix", prefix="mtp.", mtp_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"),
        template=_QWEN_MOE_MTP_LAYER, shared_template=_QWEN_SHARED, per_layer="3E+17 (397B: 1553, 122B: 785)",
        source="SGLang qwen3_5_mtp.py + qwen3_next.py, vLLM qwen3_5_mtp.py; 785 counted on Qwen3.5-122B-A10B "
        "(llama.cpp PR #20533)",
    ),
    Layout(
        "qwen3.5-dense", "Qwen3.5 dense", ("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"),
        ("qwen3_5", "qwen3_5_text"), "prefix", prefix="mtp.",
        mtp_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"), moe=False,
        template=_QWEN_DENSE_MTP_LAYER, shared_template=_QWEN_SHARED, per_layer="15",
        source="SGLang qwen3_5_mtp.py, vLLM qwen3_5_mtp.py (code-derived); Qwen3.5-27B config (saved); Qwen3.8-27B "
        "uses the same architecture (mudler/vllm.cpp #1060: Qwen3_5ForConditionalGeneration, one BF16 MTP head)",
    ),
    Layout(
        "exaone-moe", "EXAONE-MoE", ("ExaoneMoEForCausalLM",), ("exaone_moe",), "prefix", prefix="mtp.",
        per_layer="Qwen formula", source="vLLM exaone_moe_mtp.py (code-derived)",
    ),
    Layout(
        "mimo-7b", "MiMo-7B", ("MiMoForCausalLM",), ("mimo",), "prefix", prefix="model.mtp_layers.", moe=False,
        template=MIMO7B_MTP_NAMES, per_layer="16",
        source="real index jj8127/mimo_kor @ 1bdf82c (451 tensors, 16 model.mtp_layers.0.*); vLLM mimo_mtp.py",
    ),
    Layout(
        "mimo-v2", "MiMo-V2-Flash / V2-Pro", ("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"),
        ("mimo_v2_flash", "mimo_v2"), "prefix", prefix="model.mtp.", implicit_layers=1, moe=False,
        per_layer="about 13-14 (dense); V2-Flash / V2.5 ship 3 layers model.mtp.layers.0..2",
        source="vLLM mimo_v2_mtp.py (_MIMO_V2_FLASH_NUM_MTP_LAYERS = 1), SGLang mimo_v2_nextn.py; MiMo-V2.5: vLLM PR "
        "#41905, sglang-jax PR #1089 (3 MTP layers)",
    ),
    Layout(
        "ernie-4.5", "ERNIE-4.5 MoE", ("Ernie4_5_MoeForCausalLM",), ("ernie4_5_moe",), "prefix",
        prefix="model.mtp_", moe=False, per_layer="12 (dense block)",
        source="vLLM ernie_mtp.py, SGLang ernie4_eagle.py (code-derived)",
    ),
    Layout(
        "longcat-flash", "LongCat-Flash", ("LongcatFlashForCausalLM",), ("longcat_flash",), "prefix",
        prefix="model.mtp.", moe=False, per_layer="17 (FP8: +9 weight_scale_inv)",
        source="vLLM longcat_flash_mtp.py (explicit name table)",
    ),
    Layout(
        "bailing", "Bailing / Ling 2.0", ("BailingMoeV2ForCausalLM", "BailingMoeForCausalLM"),
        ("bailing_moe", "bailing_moe_v2"), "appended", mtp_keys=("num_nextn_predict_layers", "num_mtp_layers"),
        per_layer="3E+15", source="SGLang bailing_moe.py nextn_spec_weight_names, vLLM bailing_moe_mtp.py",
    ),
    Layout(
        "step-3.5", "Step-3.5 / 3.7 Flash", ("Step3p5ForCausalLM", "Step3p7FlashForCausalLM", "Step3p7ForConditionalGeneration"),
        ("step3p5", "step3p7"), "appended", moe=False, per_layer="about 16-17 per layer x 3 (dense)",
        source="SGLang step3p5_mtp.py + configs/step3p5.py, vLLM step3p5_mtp.py (code-derived); Step-3.7-Flash config "
        "(aiconfigurator @ 095f58a: num_nextn_predict_layers 3, 45 layers, 288 experts); Step-3.7-Flash-NVFP4 keeps MTP "
        "in a separate BF16 shard model-mtp-bf16.safetensors, exclude model.layers.45.* (SGLang PR #32325); SGLang "
        "0.5.23 arg_groups/overrides.py:331-349 registers Step3p7ForConditionalGeneration",
    ),
    Layout(
        "minimax-m2", "MiniMax-M2 / M2.1 / M2.5 / M2.7", ("MiniMaxM2ForCausalLM",), ("minimax_m2",), "appended",
        mtp_keys=("num_mtp_modules",), upstream_unpublished=True, per_layer="0 in releases",
        source="MiniMax-M2.5 config.json (saved): use_mtp true, num_mtp_modules 3; weights never published "
        "(MiniMax-AI/MiniMax-M2 #47, MiniMax-M2.5 #8, MiniMax-M2.7 #16); SGLang minimax_m2.py",
    ),
    Layout(
        "deepseek-v4", "DeepSeek-V4 Flash / Pro", ("DeepseekV4ForCausalLM",), ("deepseek_v4",), "prefix", prefix="mtp.",
        per_layer="not derived (mtp.{i}.*)",
        source="deepseek-ai/DeepSeek-V4-Flash config (aiconfigurator @ 095f58a: num_nextn_predict_layers 1, 43 layers, "
        "256 experts); nvidia DeepSeek-V4-Flash-NVFP4 hf_quant_config exclude_modules 'mtp.*'; V4-Flash-0731 ships a "
        "DSpark drafter under mtp.0/1/2 (dspark_* keys; vLLM PR #41834)",
    ),
    Layout(
        "qwen3.8-flash-next", "Qwen3.8-Flash-Next (qwen4_exp)",
        ("Qwen4ExpForConditionalGeneration", "Qwen4ExpForCausalLM"), ("qwen4_exp", "qwen4_exp_text"), "prefix",
        prefix="mtp.", mtp_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"),
        per_layer="31 mtp.* tensors incl. mtp.hyper_connection_mixer.* (HF rev f5d0827)",
        source="anthony-chaudhary/fak #9122 (31 mtp.* tensors, HF rev f5d0827); llama.cpp #27742, #27836; vLLM #55357; "
        "SGLang 0.5.23 arg_groups/model_overrides/qwen4_exp.py",
    ),
    Layout(
        "glm-5.3", "GLM-5.3 / GLM-5.3-Flash (glm5next)", ("Glm5NextForCausalLM",), ("glm5next",), "appended",
        per_layer="DeepSeek-V3.2 formula (own DSA attention + indexer) with a shared_head.head placeholder",
        source="llama.cpp conversion/glm5next.py; vLLM #57532 (Glm5NextMTP shared_head.head placeholder built with the "
        "NVFP4 config; fix PR #55442); Model-Optimizer PR #2312 (GLM-5.3-Flash MTP layer 45)",
    ),
    Layout(
        "kimi-k3", "Kimi-K3", ("KimiK3ForConditionalGeneration",), ("kimi_k3",), "appended",
        per_layer="0 in the release (text_config.num_nextn_predict_layers: 0); vLLM KimiK3MTP appended layers with "
        "shared_head.head",
        source="moonshotai/Kimi-K3 config (aiconfigurator @ 095f58a: text_config.num_nextn_predict_layers 0, 93 layers, "
        "896 experts); NVIDIA-NeMo/Megatron-Bridge PR #5130; SGLang 0.5.23 arg_groups/model_overrides/kimi_k3.py",
    ),
    Layout(
        "cohere2-moe", "Cohere2-MoE", ("Cohere2MoeForCausalLM",), ("cohere2_moe",), "appended",
        per_layer="not derived (only community MTP packs)",
        source="llama.cpp PR #24260 (num_nextn_predict_layers code path); SGLang 0.5.23 "
        "arg_groups/model_overrides/cohere2_moe.py",
    ),
    Layout(
        "nemotron-h", "Nemotron-H (Nemotron-3 Super/Ultra, 3.5 Nano)", ("NemotronHForCausalLM",), ("nemotron_h",),
        "prefix", prefix="mtp.", blocks_key="mtp_hybrid_override_pattern", per_layer="2E+14 (+2 latent)",
        source="vLLM/SGLang nemotron_h_mtp.py; 270 keys on Nano (Model-Optimizer PR #1494); "
        "NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 config (saved)",
    ),
    Layout(
        "hunyuan-v3", "Hunyuan Hy3", ("HYV3ForCausalLM",), ("hy_v3",), "appended",
        source="vLLM hy_v3_mtp.py, SGLang hunyuan_v3_nextn.py (code-derived)",
    ),
    Layout(
        "openpangu-ultra-moe", "OpenPangu Ultra MoE", (), ("pangu_ultra_moe",), "appended",
        per_layer="DeepSeek formula", source="vLLM openpangu_mtp.py (code-derived)",
    ),
    # Families known to carry no MTP at all: a config-only audit of these is conclusive.
    Layout(
        "mixtral", "Mixtral / WizardLM-2", ("MixtralForCausalLM",), ("mixtral",), "none", mtp_keys=(),
        source="mistralai/Mixtral-8x22B-v0.1 config and tbressers/WizardLM-2-8x22B index (saved, 1,739 tensors, "
        "no MTP)",
    ),
    Layout(
        "qwen3-moe", "Qwen3-MoE", ("Qwen3MoeForCausalLM",), ("qwen3_moe",), "none", mtp_keys=(),
        source="Qwen/Qwen3-30B-A3B config (saved, no MTP key; no MTP loader in SGLang/vLLM)",
    ),
    Layout(
        "qwen2-moe", "Qwen2-MoE", ("Qwen2MoeForCausalLM",), ("qwen2_moe",), "none", mtp_keys=(),
        source="transformers qwen2_moe configuration (no MTP; no MTP loader in SGLang/vLLM)",
    ),
    Layout(
        "llama", "Llama", ("LlamaForCausalLM",), ("llama",), "none", mtp_keys=(),
        source="transformers llama configuration (no MTP)",
    ),
    Layout(
        "mistral", "Mistral", ("MistralForCausalLM",), ("mistral",), "none", mtp_keys=(),
        source="transformers mistral configuration (no MTP)",
    ),
)

#: Every config key that declares an MTP depth, first non-null wins (checkpoint_formats.md §1.2).
#: ``num_mtp_layers`` is the transformers >= 5 alias (``attribute_map`` in deepseek_v3/glm4_moe/bailing
#: configuration files). MiniMax ``num_mtp_modules`` is read together with ``use_mtp``.
DECLARATION_KEYS: tuple[str, ...] = (
    "num_nextn_predict_layers",
    "mtp_num_hidden_layers",
    "num_mtp_layers",
    "num_mtp_modules",
)

#: Routed-expert count keys, MTP-specific overrides first (SGLang configs/model_config.py
#: ``mtp_num_experts``; vLLM nemotron_h_mtp.py ``mtp_n_routed_experts``).
EXPERT_KEYS: tuple[str, ...] = (
    "mtp_num_experts",
    "mtp_n_routed_experts",
    "n_routed_experts",
    "num_experts",
    "num_local_experts",
    "moe_num_experts",
)

# --- name patterns -------------------------------------------------------------------------------

#: Prefix-placement MTP names, with the MTP layer index when the name has one. One alternation so a
#: 92k-name index is classified with one regex call per name.
_PREFIX_RE = re.compile(
    r"^(?P<p>(?:model\.)?(?:language_model\.)?mtp\.)(?:(?P<l>layers\.)?(?P<a>\d+)\.)?"
    r"|^(?P<q>model\.mtp_layers\.)(?P<b>\d+)\."
    r"|^(?P<r>model\.mtp_(?:emb_norm|hidden_norm|linear_proj|block))\.(?P<c>\d+)\."
)
#: Decoder-layer names: ``model.layers.L.``, ``layers.L.``, ``model.language_model.layers.L.``
#: (vLLM ``get_spec_layer_idx_from_weight_name``).
_LAYER_RE = re.compile(r"^(?P<p>(?:model\.(?:language_model\.)?)?layers\.)(?P<i>\d+)\.")

#: ``...experts.<id>.<projection>...`` (per-expert layout).
EXPERT_RE = re.compile(r"\.experts\.(\d+)\.([A-Za-z0-9_]+)\.")
#: Stacked-expert tensors (transformers v5 / Qwen3.6 ``experts.gate_up_proj``, Step-3.5 ``moe.*_proj``).
STACKED_EXPERT_RE = re.compile(r"\.experts\.(gate_up_proj|down_proj|gate_proj|up_proj)(?:\.weight)?$")


def classify(name: str, num_hidden_layers: int | None) -> tuple[str, int | None] | None:
    """Decide whether ``name`` is an MTP tensor.

    Args:
        name: tensor name from an index or header.
        num_hidden_layers: trunk depth ``N``; decoder layers with index ``>= N`` are MTP (appended
            placement). ``None`` disables appended detection.

    Returns:
        ``(layer_label, layer_index)`` for an MTP tensor, where ``layer_label`` is the prefix that
        identifies its MTP layer (``"model.layers.61"``, ``"mtp.layers.0"``, ``"mtp.0"`` (DeepSeek-V4),
        ``"model.mtp_layers.0"``,
        or ``"mtp"`` for shared parts such as ``mtp.fc``) and ``layer_index`` is the 0-based MTP layer
        (``None`` for shared parts); ``None`` for a trunk tensor.
    """
    if "mtp" in name:
        m = _PREFIX_RE.match(name)
        if m:
            if m.group("p") is not None:
                a = m.group("a")
                if a is None:
                    return m.group("p").rstrip("."), None
                return f"{m.group('p')}{m.group('l') or ''}{a}", int(a)
            if m.group("q") is not None:
                return f"model.mtp_layers.{m.group('b')}", int(m.group("b"))
            return f"model.mtp_*.{m.group('c')}", int(m.group("c"))
    if num_hidden_layers is not None and "layers." in name:
        if name.startswith("model.layers."):  # fast path for the common spelling (92k names in DeepSeek-V3)
            end = name.find(".", 13)
            digits = name[13:end]
            if digits.isdigit():
                i = int(digits)
                return (f"model.layers.{i}", i - num_hidden_layers) if i >= num_hidden_layers else None
        m = _LAYER_RE.match(name)
        if m:
            i = int(m.group("i"))
            if i >= num_hidden_layers:
                return f"{m.group('p')}{i}", i - num_hidden_layers
    return None


def layout_for(architectures: tuple[str, ...], model_types: tuple[str, ...]) -> Layout | None:
    """The table row for a config, matched by architecture first, then by ``model_type``
    (top-level or ``text_config``); ``None`` for a family the table does not know."""
    for arch in architectures:
        for row in LAYOUTS:
            if arch in row.architectures:
                return row
    for mt in model_types:
        for row in LAYOUTS:
            if mt in row.model_types:
                return row
    return None


def expand_template(row: Layout, layer_prefix: str, num_experts: int | None) -> list[str]:
    """Tensor names of one BF16 MTP layer of ``row`` under ``layer_prefix`` (``"model.layers.61."``).

    ``{E}`` entries expand to ``range(num_experts)``; they are dropped when ``num_experts`` is unknown.
    Shared names (``row.shared_template``) are not included; see :func:`expected_names`.
    """
    out: list[str] = []
    for t in row.template:
        if "{E}" in t:
            for e in range(num_experts or 0):
                out.append(layer_prefix + t.replace("{E}", str(e)))
        else:
            out.append(layer_prefix + t)
    return out


def expected_names(row: Layout, num_hidden_layers: int | None, layers: int, num_experts: int | None) -> list[str]:
    """All MTP tensor names a BF16 checkpoint of ``row`` with ``layers`` MTP layers should hold,
    or ``[]`` when the row has no verified template (or appended placement lacks ``N``)."""
    if not row.template or layers <= 0:
        return []
    names: list[str] = []
    if row.placement == "appended":
        if num_hidden_layers is None:
            return []
        for i in range(layers):
            names += expand_template(row, f"model.layers.{num_hidden_layers + i}.", num_experts)
    elif row.prefix.endswith("mtp."):
        names += [row.prefix + s for s in row.shared_template]
        for i in range(layers):
            names += expand_template(row, f"{row.prefix}layers.{i}.", num_experts)
    else:
        for i in range(layers):
            names += expand_template(row, f"{row.prefix}{i}.", num_experts)
    return names


#: Qwen3.5/3.6/Qwen3-Next ``mtp.*`` names: ggml-org/llama.cpp PR #22673 review (2026-05-11) and ik_llama.cpp PR #1654
#: (``mtp.fc -> nextn.eh_proj``, ``mtp.pre_fc_norm_embedding -> nextn.enorm``, ``mtp.pre_fc_norm_hidden -> nextn.hnorm``,
#: ``mtp.norm -> nextn.shared_head_norm``); DeepSeek/GLM appended-layer names (``model.layers.N.eh_proj`` ...):
#: gguf-py 0.19.0 tensor_mapping.py NEXTN entries (``model.layers.{bid}.eh_proj`` -> ``blk.{bid}.nextn.eh_proj`` ...).
HF_TO_GGUF: dict[str, str] = {
    "fc": "eh_proj", "eh_proj": "eh_proj",
    "pre_fc_norm_embedding": "enorm", "enorm": "enorm",
    "pre_fc_norm_hidden": "hnorm", "hnorm": "hnorm",
    "shared_head.norm": "shared_head_norm", "norm": "shared_head_norm",
    "shared_head.head": "shared_head_head",
    "embed_tokens": "embed_tokens",
}

_HALLMARK = re.compile(r"^(?P<prefix>.*?)\.(?P<leaf>shared_head\.norm|shared_head\.head|pre_fc_norm_embedding|"
                       r"pre_fc_norm_hidden|eh_proj|enorm|hnorm|fc|norm|embed_tokens)\.weight$")
#: The endings of every name :data:`_HALLMARK` matches: ``.<leaf>.weight``, or that and the one newline ``$`` lets
#: it end with. A C-speed ``endswith`` keeps the regex off the other MTP tensors (1.5k in DeepSeek-V3, a handful end so).
_HALLMARK_ENDS = tuple(f".{leaf}.weight{end}" for leaf in ("shared_head.norm", "shared_head.head", "pre_fc_norm_embedding",
                                                          "pre_fc_norm_hidden", "eh_proj", "enorm", "hnorm", "fc", "norm",
                                                          "embed_tokens") for end in ("", "\n"))


def hf_hallmarks(mtp: dict[str, tuple[str, int | None]]) -> list[list[Any]]:
    """``[name, layer index, gguf part]`` for the MTP tensors of a Hugging Face checkpoint that map to a GGUF nextn part
    (:data:`HF_TO_GGUF`); ``mtp`` is the checkpoint analyzer's MTP tensor -> (layer label, layer index) map. Names
    inside an MTP decoder layer (``mtp.layers.0.input_layernorm``) are not hallmarks."""
    out = []
    for name, (_label, index) in mtp.items():
        if not name.endswith(_HALLMARK_ENDS):
            continue  # no match (see _HALLMARK_ENDS)
        m = _HALLMARK.match(name)
        if m is None or ".layers." in m["prefix"] and not re.search(r"(^|\.)layers\.\d+$", m["prefix"]):
            continue
        if m["leaf"] == "norm" and re.search(r"layers\.\d+$", m["prefix"]):
            continue  # model.layers.N.norm is not the MTP output norm
        out.append([name, index, HF_TO_GGUF[m["leaf"]]])
    return sorted(out, key=lambda r: (r[1] if r[1] is not None else -1, r[0]))
