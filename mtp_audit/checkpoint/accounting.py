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

from mtp_audit.checkpoint.declared import DeclaredFormat, declared_bytes
from mtp_audit.checkpoint.facts import CheckpointFacts, HeaderInfos, Module
from mtp_audit.checkpoint.layouts import (
    EXPERT_RE,
    STACKED_EXPERT_RE,
    expected_names,
)
from mtp_audit.checkpoint.tensors import (
    Shapes,
    bytes_if_quantized,
    estimate_module_bytes,
    is_linear,
    module_format,
    module_leaf,
    shape_key,
    split_param,
    vector_len,
)
from mtp_audit.checkpoint.trunk import census


def _hint(facts: CheckpointFacts) -> str:
    """The primary scheme's format for modules it does not decide one by one (``""`` without a scheme)."""
    s = facts.primary_scheme
    if s is None:
        return ""
    return s.nominal.format if s.nominal is not None else s.algo


def _dtype(facts: CheckpointFacts) -> str:
    return facts.config.torch_dtype if facts.config else ""


#: Declared formats that change what ambiguous tensor names mean (see :func:`module_format`).
_PROBE_HINTS = ("FP8", "INT8", "MXFP4")


def module_hint(facts: CheckpointFacts, module: str) -> str:
    """The format the primary quantization config declares for ``module`` (``"INT4"``, ``"BF16"``...), or the
    scheme's headline format when it does not decide per module."""
    s = facts.primary_scheme
    if s is None:
        return ""
    d = s.declared_format(module)
    return d.format if d is not None else _hint(facts)


def linear_formats(facts: CheckpointFacts, modules: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """Linear module -> ``(format, inferred)`` (see :func:`mtp_audit.checkpoint.tensors.module_format`);
    cached per module table on ``facts``. Where the tensor names alone cannot tell (a ``weight_scale`` sibling
    without a header), the format the quantization config declares for that module decides."""
    key = id(modules)
    cached = facts.cache.get(key)
    if cached is not None:
        return cached
    dt = _dtype(facts)
    out: dict[str, tuple[str, bool]] = {}
    # Modules of one kind share a signature (leaf name as is_linear reads it, parameter suffixes, weight dtype and
    # rank), so the decision is made once per signature: 46k trunk modules in DeepSeek-V3 have a few dozen. A
    # signature whose answer depends on the declared format is decided per module (None in the memo).
    memo: dict[tuple[Any, ...], tuple[str, bool] | None | bool] = {}
    for name, mod in modules.items():
        params = mod.params if type(mod) is Module else mod
        w = params.get("weight")
        leaf = name[name.rfind(".") + 1 :]
        if leaf.isdigit():  # "fc.0" is an fc, "norm.0" a norm: module_leaf looks one component up
            leaf = module_leaf(name)
        sig = (leaf, *params, None if w is None else (w[1], len(w[2])))  # dtype, rank
        res = memo.get(sig, memo)
        if res is memo:
            res = memo[sig] = _signature_format(name, params, dt)
        if res is None:
            res = module_format(params, dt, module_hint(facts, name))
        if isinstance(res, tuple):  # False: not a linear layer (module_format always answers a tuple)
            out[name] = res
    facts.cache[key] = out
    return out


def _signature_format(name: str, params: Mapping[str, Any], dt: str) -> tuple[str, bool] | None | bool:
    """False for a module that is not a linear layer; None when its format depends on the declared one;
    else its format."""
    if not is_linear(name, params):
        return False
    answers = {module_format(params, dt, h) for h in _PROBE_HINTS}
    return answers.pop() if len(answers) == 1 else None


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
        got = trunk_census(facts)
        if got is None:
            out = summarize_formats(linear_formats(facts, facts.trunk_modules))[1]
        else:
            per: Counter[str] = Counter()
            for (fmt, _), n in got.items():
                per[fmt] += n
            out = dict(sorted(per.items()))
    else:
        c = facts.trunk_suffixes
        nv_mo = c.get("weight_scale_2", 0)
        nv_ct = c.get("weight_global_scale", 0)
        packed_int = max(c.get("weight_packed", 0) - nv_ct, 0)
        int4 = packed_int + c.get("qweight", 0)
        zp = max(c.get("weight_zero_point", 0) - packed_int, 0)  # Quark asymmetric int: weight + scale + zero point
        fp8b = c.get("weight_scale_inv", 0)
        mlx = min(c.get("scales", 0), c.get("biases", 0))
        ws = max(c.get("weight_scale", 0) - nv_mo - nv_ct - packed_int - zp, 0)
        linear_w = facts.trunk_linear_weights
        plain = max(linear_w - (nv_mo + fp8b + ws + mlx + zp), 0)
        fmt_plain = module_format({"weight": None}, _dtype(facts), _hint(facts))[0]
        fmt_ws = module_format({"weight": None, "weight_scale": None}, _dtype(facts), _hint(facts))[0]
        raw: Counter[str] = Counter()
        for fmt, n in (("NVFP4", nv_mo + nv_ct), ("INT4", int4), ("FP8", fp8b), (fmt_ws, ws), ("MLX-affine", mlx),
                       ("INT8" if _hint(facts) == "INT8" else "INT4", zp), (fmt_plain, plain)):
            raw[fmt] += n
        out = {k: v for k, v in sorted(raw.items()) if v}
    facts.cache["trunk"] = out
    return out


def trunk_census(facts: CheckpointFacts) -> Counter[tuple[str, bool]] | None:
    """Trunk linear modules per ``(format, inferred)`` without building each module
    (:func:`mtp_audit.checkpoint.trunk.census`, computed once); ``None`` when the census cannot certify its counts
    (then :func:`linear_formats` over :attr:`CheckpointFacts.trunk_modules` decides)."""
    if "trunk_census" in facts.cache:
        return facts.cache["trunk_census"]
    scheme = facts.primary_scheme
    uniform, same = scheme.uniform_declaration() if scheme is not None else (True, None)
    hint = (same.format if same is not None else _hint(facts)) if uniform else None
    dt = _dtype(facts)

    def decide(name: str, params: Mapping[str, Any]) -> tuple[str, bool] | bool | None:
        got = _signature_format(name, params, dt)
        if got is None and hint is not None:
            got = module_format(params, dt, hint)  # the same declaration for every module
        return got

    joined = facts.joined_names if facts.names_newline_free else None
    shards = (facts.weight_map, facts.headers) if isinstance(facts.infos, HeaderInfos) else None
    out = facts.cache["trunk_census"] = census(facts.tensors, facts.infos, facts.mtp, facts.mtp_modules, facts.name_ends_with,
                                                 decide, joined, shards)
    return out


def summarize_formats(fmts: Mapping[str, tuple[str, bool]]) -> tuple[str, dict[str, int]]:
    """``("BF16", {"BF16": 1541})`` or ``("mixed", {...})``; ``("none", {})`` without linears."""
    c = Counter(f for f, _ in fmts.values())
    if not c:
        return "none", {}
    state = next(iter(c)) if len(c) == 1 else "mixed"
    return state, dict(sorted(c.items()))


def expert_facts(facts: CheckpointFacts) -> dict[str, dict[str, Any]]:
    """Per MTP layer with experts: ids found, expected count, missing ids and missing projections (computed once
    per audit: MTP004 and the facts document both read it).

    Stacked layouts (``experts.gate_up_proj``) report the count from the header's first dimension when
    a header is known, else ``None`` (never "truncated", checkpoint_formats.md §7.7).
    """
    got = facts.cache.get("expert_facts")
    if got is None:
        got = facts.cache["expert_facts"] = _expert_facts(facts)
    return got


def _expert_facts(facts: CheckpointFacts) -> dict[str, dict[str, Any]]:
    """See :func:`expert_facts`."""
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


#: The MTP layer's own copies of the embedding and the LM head (DeepSeek / GLM layout: ``model.layers.61.embed_tokens``,
#: ``model.layers.61.shared_head.head``). SGLang loads them with the draft model, then its EAGLE worker replaces both
#: with the target's and frees them (sglang 0.5.23 wheel: ``speculative/eagle_worker_v2.py:377-378`` calls
#: ``set_embed_and_head``; ``models/deepseek_v2.py:3442-3448`` deletes ``embed_tokens.weight`` and ``lm_head.weight``;
#: ``models/deepseek_nextn.py:83-86,294-298`` builds them under those prefixes).
EMBED_HEAD = re.compile(r"\.(embed_tokens|shared_head\.head)(\.|$)")


def mtp_embed_head_bytes(facts: CheckpointFacts) -> int | None:
    """Bytes of the MTP layer's own embedding and LM-head copies (names matching :data:`EMBED_HEAD`), exact or
    estimated like :func:`mtp_bytes`; 0 for a layout without them; ``None`` when they cannot be counted."""
    return mtp_bytes(facts, select=EMBED_HEAD).get("value")


def mtp_bytes(facts: CheckpointFacts, select: re.Pattern[str] | None = None) -> dict[str, Any]:
    """Bytes of the MTP tensors: exact from headers when every MTP tensor's header was read, else
    estimated from config dimensions (marked ``"estimated": true``; tensors whose shape cannot be
    derived are counted in ``"unestimated_tensors"``). In config-only mode the expected MTP layout of
    the family (``layouts.expected_names``) is estimated with the format the quantization config
    promises for each module. ``select``: count only the tensors (modules) whose name it matches. Without
    ``select`` the answer is computed once per facts (the report and the prediction both ask) and a copy returned."""
    if select is None:
        got = facts.cache.get("mtp_bytes")
        if got is None:
            got = facts.cache["mtp_bytes"] = _mtp_bytes(facts, None)
        return dict(got)
    return _mtp_bytes(facts, select)


def _mtp_bytes(facts: CheckpointFacts, select: re.Pattern[str] | None) -> dict[str, Any]:
    """:func:`mtp_bytes`, computed."""
    read = facts.mtp_infos  # every MTP tensor's header read: the exact sum
    if facts.mtp and len(read) == len(facts.mtp):
        return {"value": sum(info.nbytes for n, info in read.items() if select is None or select.search(n)),
                "estimated": False}
    if facts.tensors_known and not facts.mtp:
        return {"value": 0, "estimated": False}
    cfg = facts.config
    if cfg is None:
        return {"value": None, "estimated": True, "reason": "no config.json"}
    modules: Mapping[str, Module]
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
            owner, p = split_param(n)
            tmp.setdefault(owner, Module(owner)).params[p] = None
        modules = tmp
    total, unest = 0, 0
    shapes = Shapes(cfg.dims, cfg.num_experts)
    memo: dict[tuple[Any, ...], Any] = {}
    for name, mod in modules.items():
        if select is not None and not select.search(name + "."):
            continue
        got = _estimate_module(facts, name, mod, promised, shapes, memo)
        if got is None:
            unest += 1
        else:
            total += got[0]
            unest += got[1]
    out: dict[str, Any] = {"value": total, "estimated": True, "unestimated_tensors": unest}
    if promised:
        out["basis"] = "expected layout from config (no tensors inspected)"
    return out


def _estimate_module(facts: CheckpointFacts, name: str, mod: Module, promised: bool, shapes: Shapes,
                     memo: dict[tuple[Any, ...], Any]) -> tuple[int, int] | None:
    """``(bytes, tensors not estimated)`` of one MTP module: header bytes when every tensor's header is known;
    else a linear's bytes (:func:`_linear_bytes`); norms and routers from config dimensions. ``promised``: the
    module is expected from the config, not listed. ``shapes``: the config's
    :func:`~mtp_audit.checkpoint.tensors.linear_shape` answers; ``memo``: :func:`_linear_bytes`'s, for one config."""
    cfg = facts.config
    assert cfg is not None
    if all(v is not None for v in mod.params.values()):
        return sum(v.nbytes for v in mod.params.values() if v is not None), 0
    key = shape_key(name)
    shape = shapes.of(key)
    if shape is not None and is_linear(name, mod.params):
        return _linear_bytes(facts, name, mod, promised, shape, key, memo), 0
    if shape is not None and set(mod.params) <= {"weight"}:  # router, embedding, LM head copies
        return 2 * shape[0] * shape[1], 0
    total, unest = 0, 0
    for p in mod.params:
        n = vector_len(name, p, cfg.dims, cfg.num_experts)
        if n is None:
            unest += 1
        else:
            total += n * (4 if name.endswith("e_score_correction_bias") else 2)
    return total, unest


def _linear_bytes(facts: CheckpointFacts, name: str, mod: Module, promised: bool, shape: tuple[int, int],
                  key: tuple[str, bool, bool], memo: dict[tuple[Any, ...], Any]) -> int:
    """Bytes of linear module ``name`` (logical ``shape``, :func:`~mtp_audit.checkpoint.tensors.shape_key` ``key``)
    in the format its quantization config declares (or, where the config does not speak, the format its tensor names
    show), with that format's group size and zero points.

    A listed module's answer is kept in ``memo`` under its key, its parameters with their header infos and its
    declared format: all it is computed from besides the audit's constants (the primary scheme, ``torch_dtype``, the
    config's dimensions), so the 768 experts of an MTP layer are computed once per projection."""
    scheme = facts.primary_scheme
    declared = _declared(scheme, name, memo) if scheme is not None else None
    sig = None if promised else (key, tuple(mod.params.items()), declared)
    if sig is not None and sig in memo:
        kept: int = memo[sig]
        return kept
    fmt, _ = module_format(mod.params, _dtype(facts), declared.format if declared else _hint(facts))
    if promised:
        nbytes = declared_bytes(shape, declared) if declared is not None else (
            bytes_if_quantized(shape, scheme.expected_format(name), block=scheme.weight_block_size,
                               group_size=scheme.group_size) if scheme is not None and scheme.algo != "BF16"
            else shape[0] * shape[1] * 2)
    elif declared is not None and declared.format == fmt:
        nbytes = declared_bytes(shape, declared)
    else:
        nbytes = estimate_module_bytes(shape, fmt, set(mod.params), block=scheme.weight_block_size if scheme else None,
                                       group_size=scheme.group_size if scheme else None)
    got = nbytes + (2 * shape[0] if "bias" in mod.params else 0)
    if sig is not None:
        memo[sig] = got
    return got


#: ``memo`` key of the primary scheme's :meth:`~mtp_audit.checkpoint.config.QuantScheme.uniform_declaration` (a
#: 1-tuple: never one of :func:`_linear_bytes`'s 3-tuple signatures).
_UNIFORM = ("uniform declaration",)


def _declared(scheme: Any, name: str, memo: dict[tuple[Any, ...], Any]) -> Any:
    """``scheme.declared_format(name)``; asked once per memo when the scheme declares one format for every module
    (:meth:`~mtp_audit.checkpoint.config.QuantScheme.uniform_declaration`: no exclusion, rule or per-layer entry)."""
    uniform = memo.get(_UNIFORM)
    if uniform is None:
        uniform = memo[_UNIFORM] = scheme.uniform_declaration()
    return uniform[1] if uniform[0] else scheme.declared_format(name)


#: MTP tensor names that belong to the attention block (SGLang shards these over the attention-TP group,
#: ``tp_size / dp_size`` with DP attention, ``layers/dp_attention.py`` 0.5.9 :234 ``attn_tp_size = tp_size //
#: attn_dp_size // attn_cp_size``); every other MTP tensor is split over the whole TP group or replicated.
ATTENTION_PARTS = re.compile(r"\.(self_attn|attn|attention|linear_attn|mla_attn)\.")


def mtp_attention_bytes(facts: CheckpointFacts) -> int | None:
    """Bytes of the MTP tensors of the attention block (names matching :data:`ATTENTION_PARTS`), read from
    the safetensors headers; ``None`` when some MTP tensor's header was not read (no estimate is made)."""
    read = facts.mtp_infos
    if not facts.mtp or len(read) != len(facts.mtp):
        return None
    return sum(info.nbytes for n, info in read.items() if ATTENTION_PARTS.search(n))


def human_bytes(n: int) -> str:
    """``13,191,136,256 bytes (13.19 GB)`` (:func:`mtp_audit.units.human_bytes`)."""
    from mtp_audit.units import human_bytes as _human

    return _human(n)


# --- the declared scheme, as the rest of the model uses it ------------------------------------------------

_LAYER_PREFIX = re.compile(r"^(?:.*?\.)?(?:layers|mtp_layers)\.\d+\.")
_EXPERT_ID = re.compile(r"\.experts\.\d+(?=\.|$)")


def module_role(module: str) -> str:
    """A module's place inside its decoder layer, the same in every layer and in the MTP layer:
    ``"model.language_model.layers.3.mlp.experts.7.up_proj"`` and ``"mtp.layers.0.mlp.experts.1.up_proj"`` ->
    ``"mlp.experts.up_proj"``; a module outside numbered layers (``"mtp.fc"``) is its own role."""
    return _EXPERT_ID.sub(".experts", _LAYER_PREFIX.sub("", module, count=1))


def _role_formats(facts: CheckpointFacts) -> dict[str, DeclaredFormat]:
    """MIXED_PRECISION: role -> declared format of the ``quantized_layers`` entries with that role (cached)."""
    got = facts.cache.get("role_formats")
    if got is None:
        s = facts.primary_scheme
        got = {}
        for key, fmt in (s.layer_formats.items() if s is not None else ()):
            got.setdefault(module_role(key), fmt)
        facts.cache["role_formats"] = got
    return got


def as_rest_of_model(facts: CheckpointFacts, module: str) -> DeclaredFormat | None:
    """The format the quantization config gives the trunk's counterpart of MTP ``module``: for
    MIXED_PRECISION the ``quantized_layers`` entry with the same role (``mlp.experts`` -> NVFP4 W4A16,
    ``self_attn.q_proj`` -> FP8: nvidia Qwen3.6 NVFP4), else the scheme's headline format; None without one."""
    s = facts.primary_scheme
    if s is None:
        return None
    if s.algo == "MIXED_PRECISION" and s.layer_formats:
        roles = _role_formats(facts)
        r = module_role(module)
        while r:
            if r in roles:
                return roles[r]
            r = r.rpartition(".")[0]
        return None
    d = s.declared_format(module)
    if d is not None and d.quantized:
        return d
    return s.nominal if s.nominal is not None and s.nominal.quantized else None


def declared_summary(facts: CheckpointFacts) -> str | None:
    """The primary scheme in words for messages: ``"MIXED_PRECISION (208 FP8, 193 NVFP4 W4A16, group 16
    quantized_layers entries)"``, ``"INT4 W4A16, group 128, zero points"``; None without a scheme format."""
    s = facts.primary_scheme
    if s is None:
        return None
    if s.algo == "MIXED_PRECISION" and s.layer_formats:
        c = Counter(f.label() for f in s.layer_formats.values())
        parts = ", ".join(f"{n:,} {lab}" for lab, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"MIXED_PRECISION ({parts} quantized_layers entries)"
    fmt = s.nominal if s.nominal is not None else None
    return fmt.label() if fmt is not None and fmt.quantized else None
