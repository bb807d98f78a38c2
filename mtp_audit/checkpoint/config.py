"""Reading ``config.json`` and the quantization configs of a checkpoint into plain facts.

Pure functions over already-parsed JSON (the :class:`~mtp_audit.sources.local.CheckpointSource`
does the reading). Sources: ``../shared/research/checkpoint_formats.md`` §1 (declaration dialects,
``text_config``) and §4 (quantization formats and their exclusion lists).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.checkpoint.layouts import (
    DECLARATION_KEYS,
    EXPERT_KEYS,
    Layout,
    layout_for,
)


class ConfigError(ValueError):
    """``config.json`` is JSON but not a model config the audit can use (no ``architectures``,
    wrong types). Carries a JSON pointer to the offending value."""

    def __init__(self, pointer: str, problem: str) -> None:
        super().__init__(f"{pointer}: {problem}" if pointer else problem)
        self.pointer = pointer
        self.problem = problem


@dataclass(frozen=True)
class Declaration:
    """What the config says about MTP.

    Attributes:
        layers: declared MTP depth (0 = none declared or explicitly 0).
        key: JSON pointer of the declaring key (``"/text_config/mtp_num_hidden_layers"``), ``""`` if none.
        implicit: True when no key exists but the family always ships MTP (Qwen3-Next, MiMo-V2);
            ``layers`` then holds the depth engines assume.
        explicit_zero: a key is present with value 0 (Kimi-K2 ``num_nextn_predict_layers: 0``).
    """

    layers: int
    key: str = ""
    implicit: bool = False
    explicit_zero: bool = False

    @property
    def declared(self) -> bool:
        """Whether the checkpoint claims MTP layers (explicitly or implicitly)."""
        return self.layers > 0


@dataclass(frozen=True)
class ModelConfig:
    """The facts of ``config.json`` the analyzer uses.

    Attributes:
        architectures: ``config.architectures``.
        model_type: top-level ``model_type`` (``""`` if absent).
        text_model_type: ``text_config.model_type`` when a ``text_config`` exists.
        text_pointer: ``"/text_config"`` when facts come from the nested text config, else ``""``.
        num_hidden_layers: trunk depth ``N`` (``num_hidden_layers``; LongCat ``num_layers``), or None.
        num_experts: routed experts per MoE layer, or None for a dense model.
        experts_key: JSON pointer of the expert-count key.
        declaration: the MTP declaration.
        layout: the family row from :data:`mtp_audit.checkpoint.layouts.LAYOUTS`, or None.
        dims: integer dimensions used to estimate tensor shapes (``hidden_size``, ``vocab_size``...).
        torch_dtype: ``torch_dtype`` / ``dtype`` string (``"bfloat16"``), ``""`` if absent.
        blocks_per_layer: ``mtp.layers.i`` blocks per MTP layer (Nemotron-H pattern length), 1 otherwise.
        raw_quantization: ``quantization_config`` dict or None.
    """

    architectures: tuple[str, ...]
    model_type: str
    text_model_type: str
    text_pointer: str
    num_hidden_layers: int | None
    num_experts: int | None
    experts_key: str
    declaration: Declaration
    layout: Layout | None
    dims: Mapping[str, Any] = field(default_factory=dict)
    torch_dtype: str = ""
    blocks_per_layer: int = 1
    raw_quantization: Mapping[str, Any] | None = None
    #: ``config.json`` has a ``speculators_config`` table: a speculators-format draft checkpoint (vLLM
    #: ``transformers_utils/configs/speculators``; such a folder replaces ``--model``, rule MTP407).
    speculators: bool = False


#: Plausibility caps. The largest real values (checkpoint_formats.md §2): 3 MTP layers (Step-3.5),
#: 512 routed experts (Qwen3.5-397B, LongCat), 92 decoder layers (GLM-4.5). A config far beyond these
#: is refused rather than expanded into millions of expected tensor names (bounded work, issue 2).
MAX_MTP_LAYERS = 64
MAX_EXPERTS = 1 << 16
MAX_HIDDEN_LAYERS = 1 << 16


def _capped(n: int, cap: int, pointer: str, what: str) -> int:
    """``n`` unchanged, or :class:`ConfigError` when it exceeds ``cap``."""
    if n > cap:
        raise ConfigError(pointer, f"{n} {what} is implausible (more than {cap}); not audited")
    return n


def json_text(value: Any, limit: int = 80) -> str:
    """``value`` as compact JSON for a message, cut to ``limit`` characters."""
    import json

    try:
        text = json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int(value: Any) -> int | None:
    """A non-negative int from a JSON value (bools and floats with fractions are refused)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _declaration(top: Mapping[str, Any], text: Mapping[str, Any], tp: str, layout: Layout | None) -> Declaration:
    """The MTP declaration in every dialect (checkpoint_formats.md §1.2): first non-null of
    ``num_nextn_predict_layers``, ``mtp_num_hidden_layers`` (top level or ``text_config``),
    ``num_mtp_layers``, MiniMax ``num_mtp_modules`` (only with ``use_mtp`` true; ``use_mtp: false``
    declares none), Inkling ``mtp_config.num_nextn_predict_layers``; else the family's implicit depth."""
    scopes: list[tuple[str, Mapping[str, Any]]] = [(tp, text)] if tp else []
    scopes.append(("", top))
    for key in DECLARATION_KEYS:
        for ptr, scope in scopes:
            if key not in scope or scope[key] is None:
                continue
            n = _int(scope[key])
            if n is None:
                raise ConfigError(f"{ptr}/{key}", f"expected a non-negative integer, got {scope[key]!r}")
            if key == "num_mtp_modules":
                use = scope.get("use_mtp", top.get("use_mtp"))
                if use is False:
                    return Declaration(0, f"{ptr}/use_mtp", explicit_zero=True)
                depth = _capped(n * (_int(scope.get("mtp_transformer_layers")) or 1), MAX_MTP_LAYERS, f"{ptr}/{key}", "MTP layers")
                return Declaration(depth, f"{ptr}/{key}", explicit_zero=depth == 0)
            return Declaration(_capped(n, MAX_MTP_LAYERS, f"{ptr}/{key}", "MTP layers"), f"{ptr}/{key}", explicit_zero=n == 0)
    for ptr, scope in scopes:
        sub = scope.get("mtp_config")
        if isinstance(sub, Mapping) and _int(sub.get("num_nextn_predict_layers")) is not None:
            n = _capped(_int(sub["num_nextn_predict_layers"]) or 0, MAX_MTP_LAYERS, f"{ptr}/mtp_config/num_nextn_predict_layers", "MTP layers")
            return Declaration(n, f"{ptr}/mtp_config/num_nextn_predict_layers", explicit_zero=n == 0)
    if layout is not None and layout.implicit_layers:
        return Declaration(layout.implicit_layers, "", implicit=True)
    return Declaration(0)


_DIM_KEYS = (
    "hidden_size",
    "vocab_size",
    "intermediate_size",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "n_shared_experts",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "attn_output_gate",
)


def parse_config(obj: Any) -> ModelConfig:
    """Turn a parsed ``config.json`` into a :class:`ModelConfig`.

    Nested ``text_config`` (Qwen3.5/3.6, Kimi-K2.5, Nemotron-H Omni) wins over top-level keys, as in
    vLLM ``get_hf_text_config`` (checkpoint_formats.md §1.1).

    Raises:
        ConfigError: not a JSON object, no non-empty ``architectures`` list of strings, or an MTP /
            layer / expert key with a non-integer value.
    """
    if not isinstance(obj, dict):
        raise ConfigError("", f"expected a JSON object, got {type(obj).__name__}")
    archs = obj.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise ConfigError("/architectures", "missing or not a non-empty list of strings")
    text = obj.get("text_config")
    tp = "/text_config" if isinstance(text, dict) else ""
    text = text if isinstance(text, dict) else {}
    model_type = obj.get("model_type") if isinstance(obj.get("model_type"), str) else ""
    text_mt = text.get("model_type") if isinstance(text.get("model_type"), str) else ""
    layout = layout_for(tuple(archs), tuple(t for t in (model_type, text_mt) if t))

    def pick(key: str) -> tuple[Any, str]:
        if tp and key in text and text[key] is not None:
            return text[key], f"{tp}/{key}"
        if key in obj and obj[key] is not None:
            return obj[key], f"/{key}"
        return None, ""

    layers_raw, ptr = pick("num_hidden_layers")
    if layers_raw is None:
        layers_raw, ptr = pick("num_layers")  # LongCat-Flash
    n_layers = _int(layers_raw) if layers_raw is not None else None
    if layers_raw is not None and (n_layers is None or isinstance(layers_raw, bool)):
        raise ConfigError(ptr, f"expected a non-negative integer, got {layers_raw!r}")
    if n_layers is not None:
        _capped(n_layers, MAX_HIDDEN_LAYERS, ptr, "decoder layers")
    n_experts, ekey = None, ""
    for key in EXPERT_KEYS:
        raw, p = pick(key)
        if raw is not None:
            n_experts = _int(raw)
            if n_experts is None or isinstance(raw, bool):
                raise ConfigError(p, f"expected a non-negative integer, got {raw!r}")
            _capped(n_experts, MAX_EXPERTS, p, "experts")
            ekey = p
            break
    dims: dict[str, Any] = {}
    for key in _DIM_KEYS:
        raw, _ = pick(key)
        if isinstance(raw, bool):
            dims[key] = raw
        elif _int(raw) is not None:
            dims[key] = _int(raw)
    dtype_raw, _ = pick("torch_dtype")
    if dtype_raw is None:
        dtype_raw, _ = pick("dtype")
    blocks = 1
    if layout is not None and layout.blocks_key:
        pat, _ = pick(layout.blocks_key)
        if isinstance(pat, str) and pat:
            blocks = len(pat)
    quant = obj.get("quantization_config")
    return ModelConfig(
        architectures=tuple(archs),
        model_type=model_type,
        text_model_type=text_mt,
        speculators=isinstance(obj.get("speculators_config"), dict),
        text_pointer=tp,
        num_hidden_layers=n_layers,
        num_experts=n_experts,
        experts_key=ekey,
        declaration=_declaration(obj, text, tp, layout),
        layout=layout,
        dims=dims,
        torch_dtype=dtype_raw if isinstance(dtype_raw, str) else "",
        blocks_per_layer=blocks,
        raw_quantization=quant if isinstance(quant, dict) else None,
    )


# --- quantization -------------------------------------------------------------------------------

#: ``quant_algo`` values meaning "weights stored as FP4 with FP8 group scales" (ModelOpt).
_FP4_ALGOS = {"NVFP4", "W4A16_NVFP4", "NVFP4_AWQ", "W4A8_NVFP4_FP8", "MXFP4"}


@dataclass(frozen=True)
class QuantScheme:
    """How a checkpoint says it is quantized, and which modules it says it left alone.

    Attributes:
        method: ``"modelopt"``, ``"compressed-tensors"``, ``"fp8"``, ``"gptq"``, ``"awq"``, ``"quark"``,
            ``"mlx"`` or another ``quant_method`` string.
        algo: weight format the scheme applies: ``"NVFP4"``, ``"FP8"``, ``"MIXED_PRECISION"``, ``"INT4"``...
        source: file and JSON pointer it came from (``"hf_quant_config.json#/quantization"``).
        group_size: elements per scale group, when given.
        weight_block_size: FP8 block shape (DeepSeek ``[128, 128]``), when given.
        excludes: the exclusion patterns, as written.
        exclude_style: how ``excludes`` match a module name: ``"fnmatch"`` (ModelOpt ``exclude_modules``
            / ``ignore`` wildcards), ``"ct"`` (compressed-tensors: exact name or ``re:`` regex),
            ``"substring"`` (transformers ``modules_to_not_convert``), ``"gptq-dynamic"`` (``-:`` regex keys),
            ``"none"`` (no list: unquantized tensors simply lack scales, DeepSeek FP8).
        exclude_pointer: where the list lives (``"hf_quant_config.json#/quantization/exclude_modules"``).
        quantized_layers: MIXED_PRECISION ``module -> algo`` map (absent module = unquantized).
        kv_cache: KV-cache quantization algorithm, when given.
        producer: producer name and version (``"modelopt 0.0.1.dev538+g26cad678d"``).
        scale_format: weight scale format when the config states it or the identified scheme implies it
            (``"FP8 E4M3"`` for NVFP4, ``"E8M0"`` for MXFP4), ``""`` otherwise.
        identified_by: how ``algo`` was decided: ``"parameters"`` (element type, bits, group size and
            scale format of the weight spec: :func:`fp4_scheme_of`) or ``"name"`` (the method's
            ``quant_algo`` / ``format`` string only).
        defects: config values that were ignored because they cannot be right (a block size of 0),
            one line each naming the JSON pointer; the analyzer reports them as non-blocking gaps.
    """

    method: str
    algo: str
    source: str
    group_size: int | None = None
    weight_block_size: tuple[int, ...] | None = None
    excludes: tuple[str, ...] = ()
    exclude_style: str = "none"
    exclude_pointer: str = ""
    quantized_layers: Mapping[str, str] = field(default_factory=dict)
    kv_cache: str = ""
    producer: str = ""
    scale_format: str = ""
    identified_by: str = "name"
    defects: tuple[str, ...] = ()

    @property
    def has_exclusion_list(self) -> bool:
        """Whether the scheme names the modules it leaves unquantized (so it can disagree with the dtypes)."""
        return self.exclude_style != "none" or self.algo == "MIXED_PRECISION"

    def _compiled(self) -> list[tuple[str, Any]]:
        cache = self.__dict__.get("_cache")
        if cache is not None:
            return cache
        out: list[tuple[str, Any]] = []
        for pat in self.excludes:
            if self.exclude_style == "fnmatch":
                out.append((pat, re.compile(fnmatch.translate(pat))))
            elif self.exclude_style == "ct" and pat.startswith("re:"):
                try:
                    out.append((pat, re.compile(pat[3:])))
                except re.error:
                    continue
            elif self.exclude_style == "gptq-dynamic":
                try:
                    out.append((pat, re.compile(pat[2:])))
                except re.error:
                    continue
            else:
                out.append((pat, None))
        object.__setattr__(self, "_cache", out)
        return out

    def excluded_by(self, module: str) -> str | None:
        """The exclusion pattern that covers ``module`` (``"mtp.layers.0*"``), or None.

        Matching follows each format's consumer: fnmatch for ModelOpt (``exclude_modules``/``ignore``
        wildcards, checkpoint_formats.md §4); exact name or ``re:`` full match for compressed-tensors;
        substring for ``modules_to_not_convert``; ``re.search`` of the key minus ``-:`` for GPTQ
        ``dynamic`` (vLLM ``qwen3_5_mtp.py``). For MIXED_PRECISION, a module absent from
        ``quantized_layers`` counts as excluded (pattern ``"(not in quantized_layers)"``).
        """
        for pat, rx in self._compiled():
            if self.exclude_style == "fnmatch":
                if rx.match(module):
                    return pat
            elif self.exclude_style == "ct":
                if (rx is not None and rx.fullmatch(module)) or (rx is None and pat == module):
                    return pat
            elif self.exclude_style == "substring":
                if pat and pat in module:
                    return pat
            elif self.exclude_style == "gptq-dynamic":
                if rx is not None and rx.search(module):
                    return pat
        if self.algo == "MIXED_PRECISION" and self.quantized_layers and module not in self.quantized_layers:
            return "(not in quantized_layers)"
        return None

    def expected_format(self, module: str) -> str:
        """Format the scheme promises for linear ``module``: ``"BF16"`` when excluded (or unquantized),
        else the algorithm (``"NVFP4"``, ``"FP8"``...; MIXED_PRECISION uses the module's own entry)."""
        if self.excluded_by(module) is not None:
            return "BF16"
        if self.algo == "MIXED_PRECISION":
            return normalize_algo(self.quantized_layers.get(module, "BF16"))
        return self.algo

    def mtp_patterns(self, mtp_modules: Any) -> list[str]:
        """The exclusion patterns that cover at least one of ``mtp_modules`` (module names), in list order: so
        DeepSeek's ``model.layers.61*`` counts and a vision tower's ``model.visual.*`` does not."""
        mods = list(mtp_modules)
        out = []
        for pat in self.excludes:
            probe = QuantScheme(self.method, self.algo, self.source, excludes=(pat,), exclude_style=self.exclude_style)
            if any(probe.excluded_by(m) is not None for m in mods):
                out.append(pat)
        return out

    def to_fact(self, mtp_modules: Any = None) -> dict[str, Any]:
        """JSON-ready summary for ``facts["checkpoint"]["quantization"]``. ``mtp_patterns`` lists the exclusion
        patterns that cover one of ``mtp_modules`` (found or, config-only, expected MTP module names); without
        them, the patterns whose text names ``mtp``."""
        mtp_pats = (self.mtp_patterns(mtp_modules) if mtp_modules is not None
                    else [p for p in self.excludes if "mtp" in p.lower()])
        return {
            "method": self.method,
            "algo": self.algo,
            "source": self.source,
            "group_size": self.group_size,
            "weight_block_size": list(self.weight_block_size) if self.weight_block_size else None,
            "kv_cache": self.kv_cache or None,
            "producer": self.producer or None,
            "scale_format": self.scale_format or None,
            "identified_by": self.identified_by,
            "exclude_list": self.exclude_pointer or None,
            "exclude_patterns": len(self.excludes),
            "mtp_exclude_patterns": sorted(mtp_pats),
            "quantized_layers": len(self.quantized_layers),
        }


# --- identifying FP4 schemes by their parameters ------------------------------------------------

#: Scale formats per FP4 scheme (NVFP4: FP4 E2M1 elements, groups of 16, FP8 E4M3 group scales plus an
#: FP32 global scale; MXFP4: FP4 E2M1 elements, groups of 32, E8M0 power-of-two scales). Sources: vLLM
#: 0.33.0 ``quantization/quark/quark.py`` ``_is_nvfp4`` (fp4 per_group group_size 16 + fp8_e4m3 per_tensor,
#: lines 602-651) and ``_is_w4a8_mxfp4_fp8`` (fp4 per_group group_size 32 scale_format e8m0, lines 575-600);
#: vLLM 0.33.0 ``compressed_tensors/compressed_tensors.py`` ``_is_fp4a4_nvfp4`` (num_bits 4, type float,
#: group_size 16, line 428) and ``_is_mxfp4`` (num_bits 4, type float, group_size 32, line 446).
FP4_SCALE_FORMAT = {"NVFP4": "FP8 E4M3", "MXFP4": "E8M0"}


def fp4_scheme_of(weight: Any) -> tuple[str, str] | None:
    """Identify an FP4 weight scheme from a weight quantization spec, whatever tool wrote it.

    Args:
        weight: a compressed-tensors / llm-compressor ``config_groups.*.weights`` object
            (``{"num_bits": 4, "type": "float", "group_size": 16}``), a Quark ``global_quant_config.weight``
            object (``{"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}``) or
            a Quark list whose first element is the FP4 spec and second the FP8 per-tensor scale (Quark NVFP4).

    Returns:
        ``("NVFP4", "FP8 E4M3")`` for 4-bit float elements in groups of 16, ``("MXFP4", "E8M0")`` for groups
        of 32 (or an ``e8m0`` scale format), None when the spec is not 4-bit float or the group size is
        neither (no guess). Sources: :data:`FP4_SCALE_FORMAT`.
    """
    if isinstance(weight, list):
        if not weight or not isinstance(weight[0], Mapping):
            return None
        weight = weight[0]
    if not isinstance(weight, Mapping):
        return None
    dtype = str(weight.get("dtype") or "").lower()
    is_fp4 = dtype in {"fp4", "fp4_e2m1", "float4_e2m1fn", "mxfp4", "nvfp4"} or (
        _int(weight.get("num_bits")) == 4 and str(weight.get("type") or "").lower() == "float"
    )
    if not is_fp4:
        return None
    gs = _int(weight.get("group_size"))
    scale = str(weight.get("scale_format") or weight.get("scale_dtype") or "").lower()
    if gs == 16 and "e8m0" not in scale:
        return "NVFP4", FP4_SCALE_FORMAT["NVFP4"]
    if gs == 32 or "e8m0" in scale:
        return "MXFP4", FP4_SCALE_FORMAT["MXFP4"]
    return None


def _weight_specs(qc: Mapping[str, Any]) -> list[Any]:
    """Weight specs of a quantization config: compressed-tensors ``config_groups.*.weights`` and Quark
    ``global_quant_config.weight`` (then ``layer_type_quant_config.*.weight``)."""
    out: list[Any] = []
    groups = qc.get("config_groups")
    if isinstance(groups, Mapping):
        out += [g.get("weights") for g in groups.values() if isinstance(g, Mapping) and g.get("weights") is not None]
    glob = qc.get("global_quant_config")
    if isinstance(glob, Mapping) and glob.get("weight") is not None:
        out.append(glob["weight"])
    ltq = qc.get("layer_type_quant_config")
    if isinstance(ltq, Mapping):
        out += [v.get("weight") for v in ltq.values() if isinstance(v, Mapping) and v.get("weight") is not None]
    return out


def _identified(qc: Mapping[str, Any]) -> tuple[str, str, int | None] | None:
    """``(algo, scale format, group size)`` from the first weight spec :func:`fp4_scheme_of` recognises."""
    for w in _weight_specs(qc):
        hit = fp4_scheme_of(w)
        if hit is not None:
            spec = w[0] if isinstance(w, list) else w
            return hit[0], hit[1], _int(spec.get("group_size"))
    return None


def _quark_non_fp4(qc: Mapping[str, Any]) -> str:
    """Format of a Quark ``global_quant_config.weight`` that is not FP4 (``"FP8"``, ``"INT4"``, ``"INT8"``),
    or ``"unknown"``: never a guess from the method name."""
    for w in _weight_specs(qc):
        spec = w[0] if isinstance(w, list) and w else w
        if isinstance(spec, Mapping):
            d = str(spec.get("dtype") or "").lower()
            if d.startswith("fp8"):
                return "FP8"
            if d in {"int4", "uint4"}:
                return "INT4"
            if d in {"int8", "uint8"}:
                return "INT8"
    return "unknown"


def normalize_algo(algo: str) -> str:
    """Map a quantization algorithm name onto the formats the audit reports
    (``"NVFP4"``, ``"FP8"``, ``"INT4"``, ``"MXFP4"``, ``"MIXED_PRECISION"``, ``"BF16"``)."""
    a = algo.upper()
    if a in _FP4_ALGOS and a != "MXFP4":
        return "NVFP4"
    if a.startswith("FP8") or a in {"W8A8_FP8", "FP8_PB_WO"}:
        return "FP8"
    if a in {"W4A16_AWQ", "INT4_AWQ", "W4A8_AWQ", "GPTQ", "AWQ", "INT4"}:
        return "INT4"
    return a


def _str_list(value: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in value) if isinstance(value, list) else ()


def parse_hf_quant_config(obj: Any, file: str = "hf_quant_config.json") -> QuantScheme | None:
    """ModelOpt's legacy ``hf_quant_config.json``: ``{"producer": {...}, "quantization": {"quant_algo",
    "kv_cache_quant_algo", "group_size", "exclude_modules", "quantized_layers"}}``
    (checkpoint_formats.md §4 "ModelOpt NVFP4 (legacy)", "MIXED_PRECISION").

    Returns None when the object has no ``quantization.quant_algo`` string.
    """
    if not isinstance(obj, dict):
        return None
    q = obj.get("quantization")
    if not isinstance(q, dict) or not isinstance(q.get("quant_algo"), str):
        return None
    prod = obj.get("producer") if isinstance(obj.get("producer"), dict) else {}
    ql = q.get("quantized_layers")
    layers = {}
    if isinstance(ql, dict):
        for k, v in ql.items():
            if isinstance(v, dict) and isinstance(v.get("quant_algo"), str):
                layers[str(k)] = v["quant_algo"]
    return QuantScheme(
        method="modelopt",
        algo=normalize_algo(q["quant_algo"]),
        source=f"{file}#/quantization",
        group_size=_int(q.get("group_size")),
        excludes=_str_list(q.get("exclude_modules")),
        exclude_style="fnmatch" if isinstance(q.get("exclude_modules"), list) else "none",
        exclude_pointer=f"{file}#/quantization/exclude_modules" if isinstance(q.get("exclude_modules"), list) else "",
        quantized_layers=layers,
        kv_cache=str(q.get("kv_cache_quant_algo") or ""),
        producer=" ".join(str(prod.get(k)) for k in ("name", "version") if prod.get(k)),
        scale_format=FP4_SCALE_FORMAT.get(normalize_algo(q["quant_algo"]), ""),
    )


def parse_quantization_config(qc: Mapping[str, Any] | None, file: str = "config.json") -> QuantScheme | None:
    """``config.json`` ``quantization_config`` in its dialects (checkpoint_formats.md §4):

    - ModelOpt (``quant_method: modelopt``): ``quant_algo`` + ``ignore`` (or ``exclude_modules``) wildcards;
    - compressed-tensors: ``format`` (``nvfp4-pack-quantized``, ``float-quantized``...) + ``ignore``
      (exact names or ``re:`` regexes);
    - FP8 block (``quant_method: fp8``): ``weight_block_size``; exclusions only via ``modules_to_not_convert``;
    - GPTQ / AWQ: ``dynamic`` keys starting with ``-:`` skip modules; ``modules_to_not_convert``;
    - Quark: ``exclude``.

    Returns None when there is no ``quantization_config`` or no ``quant_method``.
    """
    if not isinstance(qc, Mapping) or not isinstance(qc.get("quant_method"), str):
        return None
    method = qc["quant_method"].lower()
    base = f"{file}#/quantization_config"
    if method == "modelopt":
        return _modelopt_scheme(qc, base)
    if method == "compressed-tensors":
        return _compressed_tensors_scheme(qc, base)
    if method in {"gptq", "awq", "gptqmodel", "auto-round"}:
        return _gptq_awq_scheme(qc, method, base)
    if method == "quark":
        return _quark_scheme(qc, base)
    return _other_scheme(qc, method, base)


def _kv_cache(qc: Mapping[str, Any]) -> str:
    """``"FP8"`` when ``kv_cache_scheme`` is 8-bit float, else ``""``."""
    kv = qc.get("kv_cache_scheme")
    if isinstance(kv, dict) and kv.get("num_bits") == 8 and kv.get("type") == "float":
        return "FP8"
    return ""


def _producer(qc: Mapping[str, Any]) -> str:
    """``"modelopt 0.37.0"`` from a ``producer`` object, ``""`` without one."""
    prod = qc.get("producer") if isinstance(qc.get("producer"), dict) else {}
    return " ".join(str(prod.get(k)) for k in ("name", "version") if prod.get(k))


def _modelopt_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """ModelOpt in ``config.json``: ``quant_algo`` (or the weight parameters), ``ignore`` / ``exclude_modules``
    wildcards, MIXED_PRECISION ``quantized_layers``."""
    key = "ignore" if isinstance(qc.get("ignore"), list) else "exclude_modules"
    has = isinstance(qc.get(key), list)
    ql = qc.get("quantized_layers")
    layers = {
        str(k): v["quant_algo"]
        for k, v in (ql.items() if isinstance(ql, dict) else ())
        if isinstance(v, dict) and isinstance(v.get("quant_algo"), str)
    }
    ident = _identified(qc)
    algo = ident[0] if ident else normalize_algo(str(qc.get("quant_algo") or ""))
    return QuantScheme(
        method="modelopt",
        algo=algo,
        source=base,
        group_size=_group_size(qc),
        excludes=_str_list(qc.get(key)),
        exclude_style="fnmatch" if has else "none",
        exclude_pointer=f"{base}/{key}" if has else "",
        quantized_layers=layers,
        kv_cache=_kv_cache(qc),
        producer=_producer(qc),
        scale_format=ident[1] if ident else FP4_SCALE_FORMAT.get(algo, ""),
        identified_by="parameters" if ident else "name",
    )


def _compressed_tensors_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """compressed-tensors: the weight parameters (or the ``format`` string) and the ``ignore`` list."""
    fmt = str(qc.get("format") or "")
    ident = _identified(qc)
    if ident:
        algo = ident[0]
    else:
        algo = ("NVFP4" if "nvfp4" in fmt else "MXFP4" if "mxfp4" in fmt else "FP8" if "float-quantized" in fmt
                else "INT4" if "pack" in fmt else fmt)
    has = isinstance(qc.get("ignore"), list)
    return QuantScheme(
        method="compressed-tensors",
        algo=algo or "unknown",
        source=base,
        group_size=_group_size(qc),
        excludes=_str_list(qc.get("ignore")),
        exclude_style="ct" if has else "none",
        exclude_pointer=f"{base}/ignore" if has else "",
        kv_cache=_kv_cache(qc),
        scale_format=ident[1] if ident else FP4_SCALE_FORMAT.get(algo, ""),
        identified_by="parameters" if ident else "name",
    )


def _gptq_awq_scheme(qc: Mapping[str, Any], method: str, base: str) -> QuantScheme:
    """GPTQ / AWQ / AutoRound: ``dynamic`` ``-:`` skip keys, else ``modules_to_not_convert`` substrings."""
    dyn = qc.get("dynamic")
    skips = tuple(str(k) for k in dyn if str(k).startswith("-:")) if isinstance(dyn, dict) else ()
    if skips:
        return QuantScheme(method, "INT4", base, group_size=_int(qc.get("group_size")), excludes=skips,
                           exclude_style="gptq-dynamic", exclude_pointer=f"{base}/dynamic")
    mtnc = qc.get("modules_to_not_convert")
    return QuantScheme(method, "INT4", base, group_size=_int(qc.get("group_size")), excludes=_str_list(mtnc),
                       exclude_style="substring" if isinstance(mtnc, list) else "none",
                       exclude_pointer=f"{base}/modules_to_not_convert" if isinstance(mtnc, list) else "")


def _quark_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """Quark writes NVFP4, MXFP4, FP8 and INT schemes under one method name: the weight spec decides."""
    has = isinstance(qc.get("exclude"), list)
    ident = _identified(qc)
    return QuantScheme("quark", ident[0] if ident else _quark_non_fp4(qc), base,
                       group_size=ident[2] if ident else None, excludes=_str_list(qc.get("exclude")),
                       exclude_style="fnmatch" if has else "none", exclude_pointer=f"{base}/exclude" if has else "",
                       kv_cache=_kv_cache(qc), scale_format=ident[1] if ident else "",
                       identified_by="parameters" if ident else "name")


def _other_scheme(qc: Mapping[str, Any], method: str, base: str) -> QuantScheme:
    """FP8 block (``weight_block_size``) and every other method: ``modules_to_not_convert`` substrings."""
    wbs = qc.get("weight_block_size")
    wbs_t = tuple(int(x) for x in wbs if _int(x) is not None) if isinstance(wbs, list) else None
    defects: tuple[str, ...] = ()
    if wbs_t is not None and any(x <= 0 for x in wbs_t):
        # a block of 0 (or a truncated shape) describes no real FP8 layout: a defect of the config, not a crash
        defects = (f"{base}/weight_block_size: {json_text(wbs)} has a block size of 0; "
                   "ignored, byte estimates use the 128x128 default",)
        wbs_t = None
    algo = "FP8" if "fp8" in method else normalize_algo(str(qc.get("quant_algo") or method))
    mtnc = qc.get("modules_to_not_convert")
    has = isinstance(mtnc, list)
    return QuantScheme(
        method=method,
        algo=algo,
        source=base,
        weight_block_size=wbs_t,
        excludes=_str_list(mtnc),
        defects=defects,
        exclude_style="substring" if has else "none",
        exclude_pointer=f"{base}/modules_to_not_convert" if has else "",
    )


def _group_size(qc: Mapping[str, Any]) -> int | None:
    """``group_size`` of the first ``config_groups`` entry's ``weights`` (compressed-tensors shape)."""
    if _int(qc.get("group_size")) is not None:
        return _int(qc.get("group_size"))
    groups = qc.get("config_groups")
    if isinstance(groups, dict):
        for g in groups.values():
            if isinstance(g, dict) and isinstance(g.get("weights"), dict):
                gs = _int(g["weights"].get("group_size"))
                if gs is not None:
                    return gs
    return None


def mlx_scheme(obj: Mapping[str, Any]) -> QuantScheme | None:
    """MLX affine quantization (``config.json`` ``"quantization": {"group_size": 64, "bits": 4}``)."""
    q = obj.get("quantization")
    if isinstance(q, dict) and _int(q.get("bits")) is not None:
        return QuantScheme("mlx", f"INT{q['bits']}", "config.json#/quantization", group_size=_int(q.get("group_size")))
    return None
