"""Rules of ``mtp-audit compare`` for a safetensors base and its GGUF export (MTP055-MTP057) and their examples.

Declarations only; the checks live in :mod:`mtp_audit.compare.gguf`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mtp_audit.report import Severity
from mtp_audit.report.questions import MTP_HEADS
from mtp_audit.report.rules import Example, Rule

ANALYZER = "compare"

_QWEN = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
         "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 2, "mtp_num_hidden_layers": 1, "num_experts": 2}}
_MTP = ("mtp.fc.weight", "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight",
        "mtp.layers.0.self_attn.q_proj.weight")


def _base() -> dict[str, bytes]:
    from mtp_audit.synth.shards import tiny

    trunk = {"model.language_model.embed_tokens.weight": ("BF16", [16, 8]),
             **{f"model.language_model.layers.{i}.self_attn.q_proj.weight": ("BF16", [8, 8]) for i in range(2)},
             "lm_head.weight": ("BF16", [16, 8])}
    mtp = {n: ("BF16", [8, 16] if "fc" in n else [8] if "norm" in n else [8, 8]) for n in _MTP}
    return {"config.json": json.dumps(_QWEN).encode(), "model.safetensors": tiny({**trunk, **mtp})}


def _gguf(parts: tuple[str, ...] | None, declared: int | None = 1) -> dict[str, bytes]:
    from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

    tensors = trunk_tensors(range(2)) + (nextn_tensors(2, parts=parts) if parts else [])
    return {"Qwen3.5-MTP-Q8_0.gguf": gguf_bytes(model_kv("qwen35moe", blocks=3 if declared else 2, nextn=declared), tensors)}


def _pair(parts: tuple[str, ...] | None, declared: int | None = 1) -> Callable[[], dict[str, bytes]]:
    """The example files of a compare run, built on demand: ``base/...`` (the safetensors base) and ``derived/...``
    (its GGUF export with the blocks of ``parts``)."""
    return lambda: {**{f"base/{k}": v for k, v in _base().items()}, **{f"derived/{k}": v for k, v in _gguf(parts, declared).items()}}


_ALL = ("eh_proj", "enorm", "hnorm", "shared_head_norm")
_SOURCES = ("ggml-org/llama.cpp PR #22673 review (2026-05-11: mtp.fc -> nextn.eh_proj, mtp.pre_fc_norm_* -> nextn.enorm/hnorm, "
            "mtp.norm -> nextn.shared_head_norm)", "ikawrakow/ik_llama.cpp PR #1654",
            "gguf-py 0.19.0 tensor_mapping.py (model.layers.{bid}.eh_proj -> blk.{bid}.nextn.eh_proj ...)")

MTP055 = Rule(
    id="MTP055", name="compare-gguf-mtp-dropped", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="the GGUF export lost every MTP tensor of its safetensors base",
    what="Maps the base's MTP tensors to their GGUF nextn names and looks for them in every GGUF file of DERIVED "
         "(split parts and mtp-*.gguf sidecars included).",
    why="Converters before MTP export (and quantizers that drop unknown tensors) write the trunk only: llama.cpp then has "
        "no head for --spec-type draft-mtp.",
    fix="Convert with a llama.cpp whose converter exports MTP for the family (supports_mtp_export), or with --mtp to "
        "write an mtp-NAME.gguf sidecar.",
    sources=_SOURCES + ("ggml-org/llama.cpp PR #20533 (Qwen3.5 converter skipped mtp.* before it)", "Thireus/GGUF-Tool-Suite #61"),
    basis="bug report",
    examples=(Example(True, _pair(None, None), note="the GGUF has no blk.N.nextn.*"),
              Example(False, _pair(_ALL), note="blk.2.nextn.{eh_proj,enorm,hnorm,shared_head_norm}")),
    question=MTP_HEADS,
)

MTP056 = Rule(
    id="MTP056", name="compare-gguf-mtp-parts-lost", analyzer=ANALYZER, severity=Severity.ERROR,
    summary="some MTP tensors of the base have no GGUF nextn counterpart",
    what="For each base MTP tensor with a GGUF mapping (mtp.fc -> nextn.eh_proj ...), checks the nextn block of its MTP "
         "layer (block_count - k + i).",
    why="A missing eh_proj/enorm/hnorm/shared_head_norm leaves the draft-mtp graph without an input; embed_tokens and "
        "shared_head_head are optional (llama.cpp falls back to the trunk's): a warning.",
    fix="Re-convert from the base with a converter that maps every MTP tensor.",
    sources=_SOURCES,
    basis="code",
    examples=(Example(True, _pair(("eh_proj", "enorm", "shared_head_norm")), note="mtp.pre_fc_norm_hidden lost"),
              Example(False, _pair(_ALL), note="all four mapped")),
    question=MTP_HEADS,
)

MTP057 = Rule(
    id="MTP057", name="compare-gguf-mtp-depth-changed", analyzer=ANALYZER, severity=Severity.WARNING,
    summary="the GGUF declares or carries another number of MTP layers than its base",
    what="Compares the base's declared MTP layers with the GGUF's {arch}.nextn_predict_layers and nextn blocks.",
    why="Chained-head families (Step-3.x, MiMo-V2.5: 3 layers) exported with one head lose the deeper drafts; a larger "
        "declaration than blocks fails the loader.",
    fix="Export every MTP layer and set nextn_predict_layers to the base's depth.",
    sources=_SOURCES + ("ggml-org/llama.cpp PR #24340 (loader requires all n_layer_nextn blocks)",),
    basis="code",
    examples=(Example(True, _pair(_ALL, 2), note="base 1 MTP layer, GGUF declares 2"),
              Example(False, _pair(_ALL, 1), note="1 and 1")),
    question=MTP_HEADS,
)

GGUF_RULES: tuple[Rule, ...] = (MTP055, MTP056, MTP057)
