"""Rules of ``mtp-audit compare`` (MTP050-MTP054, inside the checkpoint id range) and their examples.

Registered under the analyzer name ``"compare"`` (``ANALYZER_RULE_MODULES`` / ``ID_RANGES`` in
:mod:`mtp_audit.report.rules`). An example writes two checkpoints, ``base/`` and ``derived/``, and
:func:`run_example` compares them. The example checkpoints are tiny MiMo-7B folders: the config keys
are those of the real ``XiaomiMiMo/MiMo-7B-Base`` config (``../shared/realdata/jj8127--mimo_kor``), the
MTP tensor names those of its real index (16 ``model.mtp_layers.0.*``), with 2 trunk layers and tiny
shapes so each file is a few kilobytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mtp_audit.checkpoint.layouts import MIMO7B_MTP_NAMES
from mtp_audit.compare.gguf_rules import GGUF_RULES
from mtp_audit.report import Severity
from mtp_audit.report.questions import MTP_HEADS
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.shards import shard_bytes

ANALYZER = "compare"
# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research/checkpoint_formats.md

# MiMo-7B MTP module names: the layout table's verified list (real index jj8127/mimo_kor @ 1bdf82c).
_MTP_NAMES = MIMO7B_MTP_NAMES
_LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def _safetensors(tensors: list[tuple[str, str, tuple[int, ...]]]) -> bytes:
    """A valid safetensors file (zero-filled data), written by the shared fixture tool."""
    return shard_bytes(sorted(tensors), {"format": "pt"})


def _shape(name: str) -> tuple[int, ...]:
    return (4,) if name.endswith(("norm.weight", ".bias")) else (4, 4)


def mimo_checkpoint(
    *,
    mtp: str | None = "model.mtp_layers.0",
    mtp_drop: tuple[str, ...] = (),
    declared: int = 1,
    fp8_trunk: bool = False,
    fp8_mtp: bool = False,
) -> dict[str, bytes]:
    """Files of a tiny MiMo-7B checkpoint (``config.json`` + ``model.safetensors``).

    Args:
        mtp: prefix of the MTP layer's tensors (None: no MTP tensors).
        mtp_drop: MTP tensor names (relative to ``mtp``) left out.
        declared: ``num_nextn_predict_layers``.
        fp8_trunk: store trunk linears as FP8 block (``F8_E4M3`` + ``weight_scale_inv``) and declare
            ``quantization_config`` fp8, as DeepSeek's FP8 release does.
        fp8_mtp: quantize the MTP linears the same way.
    """
    config = {
        "architectures": ["MiMoForCausalLM"],
        "model_type": "mimo",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 2,
        "vocab_size": 151680,
        "attention_bias": True,
        "torch_dtype": "bfloat16",
        "num_nextn_predict_layers": declared,
    }
    if fp8_trunk or fp8_mtp:
        config["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}

    def linear(prefix: str, fp8: bool) -> list[tuple[str, str, tuple[int, ...]]]:
        if fp8:
            return [(f"{prefix}.weight", "F8_E4M3", (4, 4)), (f"{prefix}.weight_scale_inv", "F32", (1, 1))]
        return [(f"{prefix}.weight", "BF16", (4, 4))]

    tensors: list[tuple[str, str, tuple[int, ...]]] = [
        ("model.embed_tokens.weight", "BF16", (8, 4)),
        ("model.norm.weight", "BF16", (4,)),
        ("lm_head.weight", "BF16", (8, 4)),
    ]
    for i in range(2):
        p = f"model.layers.{i}"
        tensors += [(f"{p}.input_layernorm.weight", "BF16", (4,)), (f"{p}.post_attention_layernorm.weight", "BF16", (4,))]
        tensors += [(f"{p}.self_attn.{b}_proj.bias", "BF16", (4,)) for b in "qkv"]
        for lin in _LINEARS:
            tensors += linear(f"{p}.{lin}", fp8_trunk)
    if mtp is not None:
        for rel in _MTP_NAMES:
            if rel in mtp_drop:
                continue
            module = rel.rsplit(".", 1)[0]
            if rel.endswith(".weight") and (module.endswith(_LINEARS) or module == "input_proj"):
                tensors += linear(f"{mtp}.{module}", fp8_mtp)
            else:
                tensors.append((f"{mtp}.{rel}", "BF16", _shape(rel)))
    return {"config.json": json.dumps(config, indent=2).encode("utf-8"), "model.safetensors": _safetensors(tensors)}


def _pair(base: dict[str, bytes], derived: dict[str, bytes]) -> Callable[[], dict[str, bytes]]:
    """Example files: ``base/...`` and ``derived/...`` (built on demand: they are binary)."""
    return lambda: {**{f"base/{k}": v for k, v in base.items()}, **{f"derived/{k}": v for k, v in derived.items()}}


def _same() -> dict[str, bytes]:
    return _pair(mimo_checkpoint(), mimo_checkpoint())()


_SAME = Example(False, _same, note="derived is a byte-for-byte copy of base")

MTP050 = Rule(
    id="MTP050",
    name="compare-mtp-dropped",
    analyzer=ANALYZER,
    severity=Severity.ERROR,
    summary="the derived checkpoint lost every MTP tensor of its base",
    what=(
        "Compares the MTP tensors found in BASE and DERIVED (each audited by `mtp-audit checkpoint`). Fires when BASE "
        "has MTP tensors and DERIVED has none, and says whether DERIVED's config.json still declares MTP layers "
        "(error) or dropped the declaration too (warning). The message gives the bytes of the lost MTP weights."
    ),
    why=(
        "Quantizers and converters build only `num_hidden_layers` decoder layers, so the MTP layer is orphaned and never "
        "saved while config.json keeps `num_nextn_predict_layers` / `mtp_num_hidden_layers`. vLLM now refuses such a "
        "checkpoint; engines that skip the check load uninitialised weights and accept no draft token."
    ),
    fix=(
        "Re-export with the MTP layer included (ModelOpt: a version with Model-Optimizer PR #2312/#2427 MTP export; "
        "llm-compressor: add the MTP modules, PR #2482), or copy the base's MTP tensors into a shard and the index, "
        "or remove the MTP declaration from config.json and serve without --speculative-algorithm NEXTN."
    ),
    sources=(
        "https://github.com/vllm-project/vllm/pull/35548 (lukealonso/GLM-5-NVFP4 has no MTP weights)",
        "https://github.com/NVIDIA/Model-Optimizer/issues/750",
        "https://github.com/vllm-project/llm-compressor/pull/2482",
        "https://huggingface.co/bryce-hoehn/Qwen3.5-25B-REAP-A3B-Coding (config declares 1 MTP layer, the index has no mtp.* tensor)",
    ),
    basis="bug report",
    examples=(
        Example(True, _pair(mimo_checkpoint(), mimo_checkpoint(mtp=None)), note="derived has no model.mtp_layers.0.* but still declares num_nextn_predict_layers: 1"),
        Example(True, _pair(mimo_checkpoint(), mimo_checkpoint(mtp=None, declared=0)), note="derived dropped the tensors and the declaration (warning)"),
        _SAME,
    ),
    question=MTP_HEADS,
)

MTP051 = Rule(
    id="MTP051",
    name="compare-mtp-modules-lost",
    analyzer=ANALYZER,
    severity=Severity.ERROR,
    summary="the derived checkpoint kept only part of the base's MTP modules",
    what=(
        "Counts MTP linear modules (and MTP layers, and experts per MTP MoE layer) in BASE and DERIVED. Fires when "
        "DERIVED has fewer, unless the difference is an expert pruning that DERIVED's config agrees with "
        "(e.g. REAP pruning both trunk and MTP from 256 to 180 experts and setting num_experts to 180)."
    ),
    why=(
        "A partially exported MTP layer cannot be built: engines fail on the missing weights or, where loading is "
        "lenient, run the draft with uninitialised projections."
    ),
    fix="Re-export the MTP layer completely; compare the derived index against the base's MTP tensor names.",
    sources=("https://github.com/osaurus-ai/vmlx-swift/pull/388",),
    basis="bug report",
    examples=(
        Example(
            True,
            _pair(mimo_checkpoint(), mimo_checkpoint(mtp_drop=("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"))),
            note="derived lost the MTP layer's MLP projections",
        ),
        _SAME,
    ),
    question=MTP_HEADS,
)

MTP052 = Rule(
    id="MTP052",
    name="compare-mtp-renamed",
    analyzer=ANALYZER,
    severity=Severity.WARNING,
    summary="the derived checkpoint stores the MTP layer under other names",
    what=(
        "Compares the MTP layer labels of BASE and DERIVED (`model.layers.61`, `mtp.layers.0`, `model.mtp_layers.0`). "
        "Fires when they differ, or when DERIVED raised `num_hidden_layers` by the number of MTP layers so the MTP "
        "layer now reads as an ordinary decoder layer."
    ),
    why=(
        "Engine loaders find MTP weights by the family's names (SGLang `deepseek_nextn.py` remaps only known "
        "spellings); renamed tensors are skipped or mistaken for trunk layers."
    ),
    fix="Keep the base's MTP tensor names and num_hidden_layers, or use an engine version that knows the new names.",
    sources=("SGLang deepseek_nextn.py hf_to_sglang_mapper (amd/DeepSeek-R1-0528-MXFP4 renames model.layers.61)", "https://github.com/vllm-project/vllm/issues/52111"),
    basis="bug report",
    examples=(
        Example(True, _pair(mimo_checkpoint(), mimo_checkpoint(mtp="model.layers.2")), note="model.mtp_layers.0.* became model.layers.2.*"),
        _SAME,
    ),
    question=MTP_HEADS,
)

MTP053 = Rule(
    id="MTP053",
    name="compare-mtp-left-unquantized",
    analyzer=ANALYZER,
    severity=Severity.WARNING,
    summary="the export quantized the trunk but left the MTP linears unquantized",
    what=(
        "Compares storage formats: fires when DERIVED's trunk uses a quantized format BASE's trunk did not "
        "(NVFP4, FP8, INT4...) while DERIVED's MTP linears are all unquantized. The message gives the MTP bytes. "
        "Info instead of warning when DERIVED's quantization config excludes every MTP linear module on purpose "
        "(an exclusion list that covers only some of them stays a warning, and the checkpoint's own MTP007 comes "
        "with it). Each side's own checkpoint errors (MTP008, MTP013, MTP007...) are carried into the compare "
        "report, prefixed with the side."
    ),
    why=(
        "An unquantized MTP layer costs memory (Qwen3.5-397B-A17B NVFP4 keeps 1,553 BF16 MTP tensors, about 13 GB) "
        "and engines must build it unquantized; if the exclude list does not say so, engines build it quantized and "
        "fail or compute garbage (vLLM PR #38832)."
    ),
    fix=(
        "Quantize the MTP layer with the trunk, or list it in the exclude/ignore list (ModelOpt `mtp*`, "
        "Model-Optimizer PR #1124) so engines build it unquantized."
    ),
    sources=(
        "nvidia/Qwen3.5-397B-A17B-NVFP4 hf_quant_config.json (excludes mtp.layers.0*; 1,553 MTP tensors stored BF16)",
        "https://github.com/vllm-project/vllm/pull/38832",
        "https://github.com/NVIDIA/Model-Optimizer/pull/1124",
    ),
    basis="real checkpoint",
    examples=(
        Example(True, _pair(mimo_checkpoint(), mimo_checkpoint(fp8_trunk=True)), note="trunk FP8 block, MTP left BF16"),
        Example(False, _pair(mimo_checkpoint(), mimo_checkpoint(fp8_trunk=True, fp8_mtp=True)), note="trunk and MTP both FP8"),
        _SAME,
    ),
    question=MTP_HEADS,
)

MTP054 = Rule(
    id="MTP054",
    name="compare-mtp-config-changed",
    analyzer=ANALYZER,
    severity=Severity.WARNING,
    summary="the derived config changed a key that decides how MTP is loaded",
    what=(
        "Compares the MTP declaration (key and depth), `num_hidden_layers` and the expert count of BASE and DERIVED "
        "and fires for each that changed. Other config differences are listed in the facts only."
    ),
    why=(
        "These keys tell the engine whether to build an MTP layer, where it sits (appended MTP layers are "
        "`model.layers.N+i`) and how many experts it has; a change that the tensors do not follow breaks loading."
    ),
    fix="Keep the base's values unless the tensors were changed to match (then say so in the model card).",
    sources=("https://github.com/unslothai/unsloth-zoo/pull/847",),
    basis="bug report",
    examples=(
        Example(True, _pair(mimo_checkpoint(), mimo_checkpoint(declared=0)), note="num_nextn_predict_layers 1 -> 0, tensors kept"),
        _SAME,
    ),
    question=MTP_HEADS,
)

RULES: tuple[Rule, ...] = (MTP050, MTP051, MTP052, MTP053, MTP054) + GGUF_RULES
