"""What a config-only audit can still say about the MTP layer: where the family's loader will look for it,
whether the quantization config excludes it, and so the format and bytes to expect once it is downloaded.

Used when there is ``config.json`` (and perhaps ``hf_quant_config.json``) but no index and no shards, the
common case when planning a download. Whether the tensors really ship stays a blocking gap (exit 3): this is
a prediction from the config, never a substitute for the tensors. Sources: the per-family table in
:mod:`mtp_audit.checkpoint.layouts` (each row cites the SGLang / vLLM loader it comes from) and the exclusion
semantics of :meth:`mtp_audit.checkpoint.config.QuantScheme.excluded_by`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mtp_audit.checkpoint.accounting import mtp_bytes
from mtp_audit.checkpoint.facts import CheckpointFacts
from mtp_audit.checkpoint.layouts import expected_names
from mtp_audit.checkpoint.tensors import is_linear, split_param

#: Linear modules probed under an MTP layer prefix when the family row has no verified tensor-name template
#: (GLM-5, MiniMax, Nemotron-H, Bailing...): the projections that every appended MTP layer has (DeepSeek-style
#: ``eh_proj``, attention output, routed and shared experts; SGLang deepseek_nextn.py / vLLM deepseek_mtp.py).
#: Only used to decide "excluded or not"; bytes are not estimated from probes.
_APPENDED_PROBES = ("eh_proj", "self_attn.o_proj", "mlp.experts.0.down_proj", "mlp.shared_experts.down_proj")
#: The same for ``mtp.*`` prefix families without a template (Nemotron-H: vLLM nemotron_h_mtp.py ``mtp.layers.{i}``).
_PREFIX_PROBES = ("layers.0.mixer.o_proj", "layers.1.mixer.experts.0.down_proj", "layers.0.self_attn.o_proj")


def mtp_module_paths(facts: CheckpointFacts) -> list[str]:
    """The module path(s) the MTP layer(s) will have, per the family's loader: ``["model.layers.61"]`` for
    DeepSeek-V3 (``num_hidden_layers`` = 61), ``["mtp"]`` for Qwen3.5 / Qwen3-Next / Nemotron-H (``mtp.fc``,
    ``mtp.layers.{i}``...), ``["model.mtp_layers.0"]`` for MiMo-7B; ``[]`` when the family or, for appended
    placement, ``num_hidden_layers`` is unknown."""
    cfg = facts.config
    if cfg is None or cfg.layout is None or not cfg.declaration.declared:
        return []
    lay, k = cfg.layout, cfg.declaration.layers
    if lay.placement == "appended":
        if cfg.num_hidden_layers is None:
            return []
        return [f"model.layers.{cfg.num_hidden_layers + i}" for i in range(k)]
    if lay.placement == "prefix":
        if lay.prefix.endswith("mtp."):
            return [lay.prefix.rstrip(".")]
        return [f"{lay.prefix}{i}" for i in range(k)]
    return []


def expected_mtp_modules(facts: CheckpointFacts) -> list[str]:
    """Linear MTP module names expected from the config (template or probes), ``[]`` when none can be named."""
    cfg = facts.config
    if cfg is None or cfg.layout is None or not cfg.declaration.declared:
        return []
    paths = mtp_module_paths(facts)
    return _probe_modules(facts, paths)[0] if paths else []


def _probe_modules(facts: CheckpointFacts, paths: list[str]) -> tuple[list[str], bool]:
    """``(linear module names, from a verified template)`` to test against the exclusion list."""
    cfg = facts.config
    assert cfg is not None and cfg.layout is not None
    names = expected_names(cfg.layout, cfg.num_hidden_layers, cfg.declaration.layers, cfg.num_experts)
    if names:
        mods = sorted({split_param(n)[0] for n in names})
        return [m for m in mods if is_linear(m, {"weight": None})], True
    probes = _APPENDED_PROBES if cfg.layout.placement == "appended" else _PREFIX_PROBES
    return [f"{p}.{leaf}" for p in paths for leaf in probes], False


def predict(facts: CheckpointFacts) -> dict[str, Any] | None:
    """The config-only prediction for ``facts["checkpoint"]["prediction"]``, or None when tensors are known
    (nothing to predict) or no MTP layer is declared.

    Returns:
        ``{"family", "module_paths", "placement", "quant_config", "exclusion": "all" | "partly" | "none" |
        "no exclusion list" | "not quantized", "exclude_patterns": [...], "expected_formats": {format: count},
        "basis": "template" | "probe", "bytes": int | None, "bytes_estimated": True}``; ``expected_formats``
        counts linear modules by the format the quantization config promises (``"BF16"`` when excluded);
        ``bytes`` is :func:`mtp_audit.checkpoint.accounting.mtp_bytes` (template families only).
    """
    cfg = facts.config
    if facts.tensors_known or cfg is None or not cfg.declaration.declared:
        return None
    paths = mtp_module_paths(facts)
    out: dict[str, Any] = {
        "family": cfg.layout.display if cfg.layout else None,
        "placement": cfg.layout.placement if cfg.layout else None,
        "module_paths": paths,
        "quant_config": None,
        "exclusion": None,
        "exclude_patterns": [],
        "expected_formats": {},
        "basis": None,
        "bytes": None,
        "bytes_estimated": True,
        "upstream_unpublished": bool(cfg.layout and cfg.layout.upstream_unpublished),
    }
    if not paths:
        return out
    modules, templ = _probe_modules(facts, paths)
    out["basis"] = "template" if templ else "probe"
    scheme = facts.primary_scheme
    if scheme is None:
        out["exclusion"] = "not quantized"
        out["expected_formats"] = {"BF16": len(modules)} if templ else {}
    else:
        out["quant_config"] = f"{scheme.method} {scheme.algo} ({scheme.source.split('#')[0]})"
        hits = {m: scheme.excluded_by(m) for m in modules}
        covered = [m for m, p in hits.items() if p is not None]
        out["exclude_patterns"] = sorted({p for p in hits.values() if p is not None})
        out["not_excluded"] = sorted(m for m, p in hits.items() if p is None)
        if not scheme.has_exclusion_list:
            out["exclusion"] = "no exclusion list"
        elif covered and len(covered) == len(modules):
            out["exclusion"] = "all"
        elif covered:
            out["exclusion"] = "partly"
        else:
            out["exclusion"] = "none"
        out["expected_formats"] = dict(sorted(Counter(scheme.expected_format(m) for m in modules).items()))
        if not templ:
            out["probed_modules"] = modules
    if templ:
        b = mtp_bytes(facts)
        out["bytes"] = b.get("value")
    return out


def prediction_line(pred: dict[str, Any]) -> str | None:
    """One closing-answer line for a prediction (None when there is nothing to say)."""
    paths = pred.get("module_paths") or []
    if not paths:
        return None
    where = ", ".join(f"{p}.*" for p in paths)
    line = f"Predicted from config: the MTP layer loads from {where} ({pred['family']}, {pred['placement']} placement)"
    ex, q = pred.get("exclusion"), pred.get("quant_config")
    fmts = pred.get("expected_formats") or {}
    fmt_s = ", ".join(f"{n:,} {f}" for f, n in fmts.items())
    kind = "linear modules" if pred.get("basis") == "template" else "probed linear modules"
    if ex == "not quantized":
        line += "; no quantization config, so it is expected unquantized"
    elif ex == "no exclusion list":
        line += f"; {q} has no exclusion list, so engines build it {next(iter(fmts), '?')}"
    elif ex == "all":
        line += f"; {q} excludes it ({', '.join(pred['exclude_patterns'])}), so it is expected BF16"
    elif ex == "partly":
        rest = pred.get("not_excluded") or []
        shown = ", ".join(rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
        line += (f"; {q} excludes part of it ({', '.join(pred['exclude_patterns'][:3])}): expected {fmt_s} {kind} "
                 f"(not excluded: {shown}; if they ship BF16, an engine that trusts the list fails to load them: MTP007)")
    elif ex == "none":
        line += f"; {q} does not exclude it, so it is expected {next(iter(fmts), '?')}"
    if isinstance(pred.get("bytes"), int):
        line += f"; about {pred['bytes']:,} bytes (estimated)"
    if pred.get("upstream_unpublished"):
        line += f"; {pred['family']} MTP weights were never published upstream, so expect none (MTP002)"
    return line + ". Whether these tensors ship is not checked."
