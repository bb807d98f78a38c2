"""Format and byte accounting over :class:`~mtp_audit.checkpoint.facts.CheckpointFacts`: how each MTP
linear is stored (BF16 / NVFP4 / FP8 ...), the trunk's formats, experts per MTP MoE layer, and the MTP bytes
(from shard headers, or estimated from config shapes when no header is at hand).

Format detection follows ``../shared/research/checkpoint_formats.md`` §4 (sibling scale tensors).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from mtp_audit.checkpoint.facts import CheckpointFacts, Module
from mtp_audit.checkpoint.layouts import (
    EXPERT_RE,
    STACKED_EXPERT_RE,
    expected_names,
)
from mtp_audit.checkpoint.tensors import (
    bytes_if_quantized,
    estimate_module_bytes,
    is_linear,
    is_linear_leaf,
    linear_shape,
    module_format,
    split_param,
    vector_len,
)


def _hint(facts: CheckpointFacts) -> str:
    s = facts.primary_scheme
    return s.algo if s else ""


def _dtype(facts: CheckpointFacts) -> str:
    return facts.config.torch_dtype if facts.config else ""


def linear_formats(facts: CheckpointFacts, modules: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """Linear module -> ``(format, inferred)`` (see :func:`mtp_audit.checkpoint.tensors.module_format`);
    cached per module table on ``facts``."""
    key = id(modules)
    cached = facts.cache.get(key)
    if cached is not None:
        return cached
    hint, dt = _hint(facts), _dtype(facts)
    out: dict[str, tuple[str, bool]] = {}
    # Modules of one kind share a signature (leaf name, parameter suffixes, weight dtype and rank), so
    # the decision is made once per signature: 46k trunk modules in DeepSeek-V3 have a few dozen.
    memo: dict[tuple[Any, ...], tuple[str, bool] | None] = {}
    for name, mod in modules.items():
        params = mod.params if type(mod) is Module else mod
        w = params.get("weight")
        sig = (name[name.rfind(".") + 1 :], *params, None if w is None else (w[1], len(w[2])))  # dtype, rank
        res = memo.get(sig, memo)
        if res is memo:
            res = memo[sig] = module_format(params, dt, hint) if is_linear(name, params) else None
        if res is not None:
            out[name] = res
    facts.cache[key] = out
    return out


def trunk_format_counts(facts: CheckpointFacts) -> dict[str, int]:
    """Linear modules of the trunk per storage format (``{"FP8": 45032}``).

    Exact (per module, header dtypes) when shard headers were read. In metadata-only mode it is
    derived from suffix counts, one sibling per quantized linear (checkpoint_formats.md §4):
    ``weight_scale_2`` = ModelOpt NVFP4, ``weight_global_scale`` = compressed-tensors NVFP4, other
    ``weight_packed`` = packed INT4, ``qweight`` = GPTQ/AWQ, ``weight_scale_inv`` = FP8 block,
    remaining ``weight_scale`` = FP8 per-tensor (MXFP4 when the config says so), ``scales`` +
    ``biases`` = MLX; projection-named ``.weight`` tensors beyond those are unquantized.
    """
    if "trunk" in facts.cache:
        return facts.cache["trunk"]
    if facts.infos:
        out = summarize_formats(linear_formats(facts, facts.trunk_modules))[1]
    else:
        c = facts.trunk_suffixes
        nv_mo = c.get("weight_scale_2", 0)
        nv_ct = c.get("weight_global_scale", 0)
        int4 = max(c.get("weight_packed", 0) - nv_ct, 0) + c.get("qweight", 0)
        fp8b = c.get("weight_scale_inv", 0)
        mlx = min(c.get("scales", 0), c.get("biases", 0))
        ws = max(c.get("weight_scale", 0) - nv_mo - nv_ct - max(c.get("weight_packed", 0) - nv_ct, 0), 0)
        linear_w = sum(n for leaf, n in facts.trunk_weight_leaves.items() if is_linear_leaf(leaf))
        plain = max(linear_w - (nv_mo + fp8b + ws + mlx), 0)
        fmt_plain = module_format({"weight": None}, _dtype(facts), _hint(facts))[0]
        raw = {
            "NVFP4": nv_mo + nv_ct,
            "INT4": int4,
            "FP8" if _hint(facts) != "MXFP4" else "MXFP4": fp8b + ws,
            "MLX-affine": mlx,
            fmt_plain: plain,
        }
        out = {k: v for k, v in sorted(raw.items()) if v}
    facts.cache["trunk"] = out
    return out


def summarize_formats(fmts: Mapping[str, tuple[str, bool]]) -> tuple[str, dict[str, int]]:
    """``("BF16", {"BF16": 1541})`` or ``("mixed", {...})``; ``("none", {})`` without linears."""
    c = Counter(f for f, _ in fmts.values())
    if not c:
        return "none", {}
    state = next(iter(c)) if len(c) == 1 else "mixed"
    return state, dict(sorted(c.items()))


def expert_facts(facts: CheckpointFacts) -> dict[str, dict[str, Any]]:
    """Per MTP layer with experts: ids found, expected count, missing ids and missing projections.

    Stacked layouts (``experts.gate_up_proj``) report the count from the header's first dimension when
    a header is known, else ``None`` (never "truncated", checkpoint_formats.md §7.7).
    """
    cfg = facts.config
    expected = cfg.num_experts if cfg else None
    per: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    stacked: dict[str, int | None] = {}
    for name, (label, _) in facts.mtp.items():
        m = EXPERT_RE.search(name)
        if m:
            per[label][int(m.group(1))].add(m.group(2))
            continue
        s = STACKED_EXPERT_RE.search(name)
        if s:
            info = facts.infos.get(name)
            n = info.shape[0] if info is not None and info.shape else None
            if label not in stacked or stacked[label] is None:
                stacked[label] = n
    out: dict[str, dict[str, Any]] = {}
    for label in sorted(set(per) | set(stacked)):
        if label in stacked and label not in per:
            out[label] = {"layout": "stacked", "found": stacked[label], "expected": expected, "missing": [], "incomplete": {}}
            continue
        ids = per[label]
        projs = set().union(*ids.values()) if ids else set()
        missing = sorted(set(range(expected)) - set(ids)) if expected else []
        incomplete = {str(e): sorted(projs - p) for e, p in sorted(ids.items()) if projs - p}
        out[label] = {
            "layout": "per-expert",
            "found": len(ids),
            "expected": expected,
            "missing": missing,
            "extra": sorted(e for e in ids if expected is not None and e >= expected),
            "projections": sorted(projs),
            "incomplete": incomplete,
        }
    return out


def mtp_bytes(facts: CheckpointFacts) -> dict[str, Any]:
    """Bytes of the MTP tensors: exact from headers when every MTP tensor's header was read, else
    estimated from config dimensions (marked ``"estimated": true``; tensors whose shape cannot be
    derived are counted in ``"unestimated_tensors"``). In config-only mode the expected MTP layout of
    the family (``layouts.expected_names``) is estimated with the format the quantization config
    promises for each module."""
    if facts.mtp and all(n in facts.infos for n in facts.mtp):
        return {"value": sum(facts.infos[n].nbytes for n in facts.mtp), "estimated": False}
    if facts.tensors_known and not facts.mtp:
        return {"value": 0, "estimated": False}
    cfg = facts.config
    if cfg is None:
        return {"value": None, "estimated": True, "reason": "no config.json"}
    modules: Mapping[str, Module]
    scheme = facts.primary_scheme
    promised = False
    if facts.mtp:
        modules = facts.mtp_modules
    else:
        layout = cfg.layout
        names = (
            expected_names(layout, cfg.num_hidden_layers, cfg.declaration.layers, cfg.num_experts)
            if layout is not None
            else []
        )
        if not names:
            return {"value": None, "estimated": True, "reason": "no MTP tensors and no verified layout template"}
        promised = True
        tmp: dict[str, Module] = {}
        for n in names:
            mod, p = split_param(n)
            tmp.setdefault(mod, Module(mod)).params[p] = None
        modules = tmp
    total, unest = 0, 0
    block = scheme.weight_block_size if scheme else None
    gs = scheme.group_size if scheme else None
    hint, dt = _hint(facts), _dtype(facts)
    for name, mod in modules.items():
        if all(v is not None for v in mod.params.values()):
            total += sum(v.nbytes for v in mod.params.values() if v is not None)
            continue
        shape = linear_shape(name, cfg.dims, cfg.num_experts)
        if is_linear(name, mod.params) and shape is not None:
            if promised and scheme is not None:
                fmt = scheme.expected_format(name)
                total += bytes_if_quantized(shape, fmt, block=block, group_size=gs) if fmt != "BF16" else shape[0] * shape[1] * 2
            else:
                fmt, _ = module_format(mod.params, dt, hint)
                total += estimate_module_bytes(shape, fmt, set(mod.params), block=block, group_size=gs)
            if "bias" in mod.params:
                total += 2 * shape[0]
            continue
        if shape is not None and set(mod.params) <= {"weight"}:  # router, embedding, LM head copies
            total += 2 * shape[0] * shape[1]
            continue
        for p in mod.params:
            n = vector_len(name, p, cfg.dims, cfg.num_experts)
            if n is None:
                unest += 1
            else:
                total += n * (4 if name.endswith("e_score_correction_bias") else 2)
    out: dict[str, Any] = {"value": total, "estimated": True, "unestimated_tensors": unest}
    if promised:
        out["basis"] = "expected layout from config (no tensors inspected)"
    return out


#: MTP tensor names that belong to the attention block (SGLang shards these over the attention-TP group,
#: ``tp_size / dp_size`` with DP attention, ``layers/dp_attention.py`` 0.5.9 :234 ``attn_tp_size = tp_size //
#: attn_dp_size // attn_cp_size``); every other MTP tensor is split over the whole TP group or replicated.
ATTENTION_PARTS = re.compile(r"\.(self_attn|attn|attention|linear_attn|mla_attn)\.")


def mtp_attention_bytes(facts: CheckpointFacts) -> int | None:
    """Bytes of the MTP tensors of the attention block (names matching :data:`ATTENTION_PARTS`), read from
    the safetensors headers; ``None`` when some MTP tensor's header was not read (no estimate is made)."""
    if not facts.mtp or not all(n in facts.infos for n in facts.mtp):
        return None
    return sum(facts.infos[n].nbytes for n in facts.mtp if ATTENTION_PARTS.search(n))


def human_bytes(n: int) -> str:
    """``13,191,136,256 bytes (13.19 GB)`` (:func:`mtp_audit.units.human_bytes`)."""
    from mtp_audit.units import human_bytes as _human

    return _human(n)
