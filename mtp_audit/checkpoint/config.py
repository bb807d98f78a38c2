"""Reading ``config.json`` and the quantization configs of a checkpoint into plain facts.

Pure functions over already-parsed JSON (the :class:`~mtp_audit.sources.local.CheckpointSource`
does the reading). Sources: ``../shared/research/checkpoint_formats.md`` §1 (declaration dialects,
``text_config``) and §4 (quantization formats and their exclusion lists).
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.checkpoint.declared import (
    BF16,
    DeclaredFormat,
    algo_format,
    weight_spec_format,
)
from mtp_audit.checkpoint.layouts import (
    DECLARATION_KEYS,
    EXPERT_KEYS,
    Layout,
    layout_for,
)
from mtp_audit.valueclass import Value


class ConfigError(ValueError):
    """``config.json`` is JSON but not a model config the audit can use (no ``architectures``,
    wrong types). Carries a JSON pointer to the offending value."""

    def __init__(self, pointer: str, problem: str) -> None:
        super().__init__(f"{pointer}: {problem}" if pointer else problem)
        self.pointer = pointer
        self.problem = problem


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Declaration(Value):
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


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class ModelConfig(Value):
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
    #: ``dspark_*`` keys (top level or ``text_config``): the checkpoint declares a DSpark parallel-block drafter
    #: (DeepSeek-V4-Flash-0731 ``dspark_block_size``, ``dspark_target_layer_ids``; vLLM PR #41834).
    dspark: Mapping[str, Any] = field(default_factory=dict)


#: Plausibility caps. The largest real values (checkpoint_formats.md §2): 3 MTP layers (Step-3.5),
#: 512 routed experts (Qwen3.5-397B, LongCat), 92 decoder layers (GLM-4.5). A config far beyond these
#: is refused rather than expanded into millions of expected tensor names (bounded work).
MAX_MTP_LAYERS = 64
MAX_EXPERTS = 1 << 16
MAX_HIDDEN_LAYERS = 1 << 16


#: Largest width a dimension key may have: 1,048,576 (hidden sizes of released models stay below 32,768; vocabularies
#: below 262,144; MoE intermediate sizes below 65,536). Byte estimates multiply two or three of them.
MAX_DIM = 1 << 20
#: Dimension keys every model of the audited families has and that cannot be 0 (a 0-wide model has no weights).
_POSITIVE_DIMS = frozenset({"hidden_size", "vocab_size", "num_attention_heads"})


def _dims(pick: Any) -> dict[str, Any]:
    """The :data:`_DIM_KEYS` of a config (``pick(key) -> (value, pointer)``): ints, ``attn_output_gate`` a bool; a
    key that is null or absent is left out.

    Raises:
        ConfigError: a dimension that is negative, fractional, not a number, above :data:`MAX_DIM`, or 0 for a key of
            :data:`_POSITIVE_DIMS`: every engine sizes a weight from it, so no engine builds that model.
    """
    dims: dict[str, Any] = {}
    for key in _DIM_KEYS:
        raw, ptr = pick(key)
        if raw is None:
            continue
        if key == "attn_output_gate" or isinstance(raw, bool):
            dims[key] = raw
            continue
        n = _int(raw)
        if n is None or (n == 0 and key in _POSITIVE_DIMS):
            raise ConfigError(ptr, f"expected a {'positive' if key in _POSITIVE_DIMS else 'non-negative'} integer, "
                                   f"got {json_text(raw)}")
        dims[key] = _capped(n, MAX_DIM, ptr, key)
    return dims


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


def _dspark_keys(top: Mapping[str, Any], text: Mapping[str, Any]) -> dict[str, Any]:
    """``dspark_*`` keys of the config, ``text_config`` winning."""
    out = {k: v for k, v in top.items() if isinstance(k, str) and k.startswith("dspark_")}
    out.update({k: v for k, v in text.items() if isinstance(k, str) and k.startswith("dspark_")})
    return out


def parse_config(obj: Any) -> ModelConfig:
    """Turn a parsed ``config.json`` into a :class:`ModelConfig`.

    Nested ``text_config`` (Qwen3.5/3.6, Kimi-K2.5, Nemotron-H Omni) wins over top-level keys, as in
    vLLM ``get_hf_text_config`` (checkpoint_formats.md §1.1).

    Raises:
        ConfigError: not a JSON object, no non-empty ``architectures`` list of strings, or an MTP /
            layer / expert key with a non-integer value.
    """
    if not isinstance(obj, dict):
        raise ConfigError("", f"expected a JSON object, got {'null' if obj is None else type(obj).__name__}")
    archs = obj.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise ConfigError("/architectures", "missing or not a non-empty list of strings")
    text = obj.get("text_config")
    tp = "/text_config" if isinstance(text, dict) else ""
    text = text if isinstance(text, dict) else {}
    model_type = _str_or_empty(obj.get("model_type"))
    text_mt = _str_or_empty(text.get("model_type"))
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
    dims = _dims(pick)
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
        dspark=_dspark_keys(obj, text),
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


@functools.lru_cache(maxsize=8192)
def _fnmatch_rx(pat: str) -> re.Pattern[str]:
    """``fnmatch.translate(pat)`` compiled once per process (a scheme's patterns are matched by several steps)."""
    return re.compile(fnmatch.translate(pat))


@functools.lru_cache(maxsize=64)
def _fnmatch_any(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """The alternation of :meth:`QuantScheme._any_fnmatch` for ``patterns``, compiled once per process."""
    return re.compile("|".join(f"(?P<_x{i}>{fnmatch.translate(p)})" for i, p in enumerate(patterns)) or r"(?!)")


def _prefix_match(pat: str, sorted_mods: list[str]) -> bool:
    """Whether fnmatch pattern ``pat`` matches one of ``sorted_mods``: fnmatch matches from the start, so only the
    modules that begin with the pattern's literal prefix (up to its first wildcard) are tried."""
    prefix = re.split(r"[*?\[]", pat, maxsplit=1)[0]
    rx = _fnmatch_rx(pat)
    for m in itertools.islice(sorted_mods, bisect.bisect_left(sorted_mods, prefix), None):
        if not m.startswith(prefix):
            return False
        if rx.match(m):
            return True
    return False


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class QuantScheme(Value):
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
        layer_formats: MIXED_PRECISION ``quantized_layers`` entry -> its declared format (group size included).
        rules: ``(pattern, style, format)`` per-module declarations in the consumer's priority order
            (compressed-tensors ``config_groups`` targets, Quark ``layer_quant_config``, GPTQ ``dynamic``
            overrides); style ``"ct"`` (exact / ``re:`` / module class ``Linear``), ``"quark"`` (fnmatch with
            ``*``, else the name contained in the pattern), ``"regex"`` (``re.search``).
        default: the format of a module no exclusion, ``quantized_layers`` entry or rule names (Quark
            ``global_quant_config``, ModelOpt ``quant_algo``, GPTQ/AWQ ``bits``; BF16 for compressed-tensors,
            whose untargeted modules stay unquantized); None when the config does not decide per module (FP8
            block without an exclusion list: the model code builds its unquantized modules).
        nominal: the scheme's headline weight format (for "as the rest of the model" estimates), or None.
        quant_algo: ModelOpt's ``quant_algo`` as written (``"MIXED_PRECISION"``, ``"W4A16_NVFP4"``), ``""`` otherwise.
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
    layer_formats: Mapping[str, DeclaredFormat] = field(default_factory=dict)
    rules: tuple[tuple[str, str, DeclaredFormat], ...] = ()
    default: DeclaredFormat | None = None
    nominal: DeclaredFormat | None = None
    quant_algo: str = ""

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
                out.append((pat, _fnmatch_rx(pat)))
            elif self.exclude_style in ("ct", "quark") and pat.startswith("re:"):
                try:
                    out.append((pat, re.compile(pat[3:])))
                except re.error:
                    continue
            elif self.exclude_style == "quark" and "*" in pat:
                out.append((pat, _fnmatch_rx(pat)))
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
        ``dynamic`` (vLLM ``qwen3_5_mtp.py``); Quark ``exclude``: ``re:`` regexes, exact names and
        wildcards. For MIXED_PRECISION, a module that no ``quantized_layers`` entry names (itself or a
        parent, as vLLM 0.33.0 ``modelopt.py:1748-1800`` ``_resolve_quant_algo`` looks it up) counts as
        excluded (pattern ``"(not in quantized_layers)"``).
        """
        pat = self._listed_exclusion(module)
        if pat is not None:
            return pat
        if self.algo == "MIXED_PRECISION" and self.quantized_layers and self.mixed_entry(module) is None:
            return "(not in quantized_layers)"
        return None

    def _any_fnmatch(self) -> Any:
        """All fnmatch patterns as one compiled alternation, each alternative in its own named group ``_x<i>``
        (``fnmatch.translate`` of each, in list order): one regex match tells whether any pattern matches and, as
        an alternation tries its alternatives in order, which one comes first in the list."""
        return _fnmatch_any(tuple(self.excludes))

    def _fnmatch_groups(self) -> dict[int, str]:
        """Group number of each alternative of :meth:`_any_fnmatch` -> its pattern."""
        groups = self.__dict__.get("_groups")
        if groups is None:
            index = self._any_fnmatch().groupindex
            groups = {index[f"_x{i}"]: p for i, p in enumerate(self.excludes)}
            object.__setattr__(self, "_groups", groups)
        return groups

    def _listed_exclusion(self, module: str) -> str | None:
        """The pattern of the exclusion list itself that covers ``module`` (no MIXED_PRECISION fallback).

        fnmatch lists (ModelOpt, hundreds of patterns) are matched with one compiled alternation
        (:meth:`_any_fnmatch`) and memoised per module: the first pattern in list order, as the loop finds it."""
        if self.exclude_style == "fnmatch":
            memo = self.__dict__.get("_memo")
            if memo is None:
                memo = {}
                object.__setattr__(self, "_memo", memo)
            if module not in memo:
                m = self._any_fnmatch().match(module)
                # the matched alternative's own group closes after any group inside it: it is the last index
                memo[module] = None if m is None else self._fnmatch_groups()[m.lastindex]
            return memo[module]
        for pat, rx in self._compiled():
            if self.exclude_style == "fnmatch":
                if rx.match(module):
                    return pat
            elif self.exclude_style in ("ct", "quark"):
                if (rx is not None and rx.fullmatch(module)) or (rx is None and pat == module):
                    return pat
            elif self.exclude_style == "substring":
                if pat and pat in module:
                    return pat
            elif self.exclude_style == "gptq-dynamic":
                if rx is not None and rx.search(module):
                    return pat
        return None

    def mixed_entry(self, module: str) -> str | None:
        """The ``quantized_layers`` key that decides ``module``: the module itself or its closest parent
        (``model.language_model.layers.0.mlp.experts`` decides ``...experts.7.up_proj``, as in nvidia
        Qwen3.6-35B-A3B-NVFP4), also under the ``model.language_model.`` / ``language_model.model.`` spellings
        vLLM 0.33.0 ``modelopt.py:1826-1842`` tries; None when no entry names it."""
        layers = self.quantized_layers
        if not layers:
            return None
        names = [module]
        for a, b in (("model.language_model.", "language_model.model."), ("language_model.model.", "model.language_model.")):
            if module.startswith(a):
                names.append(b + module[len(a):])
        for name in names:
            probe = name
            while probe:
                if probe in layers:
                    return probe
                probe = probe.rpartition(".")[0]
        return None

    def declared_format(self, module: str) -> DeclaredFormat | None:
        """The format this config declares for linear ``module``, in the consumer's order: an exclusion
        (BF16), the MIXED_PRECISION ``quantized_layers`` entry (absent = BF16), the first matching rule, else
        :attr:`default`; None when the config does not speak for this module (then tensor names decide)."""
        pat = self._listed_exclusion(module)
        if pat is not None:
            return DeclaredFormat("BF16", algo="excluded", pointer=f"{self.exclude_pointer} {pat!r}")
        if self.algo == "MIXED_PRECISION" and self.layer_formats:
            key = self.mixed_entry(module)
            if key is None:
                return DeclaredFormat("BF16", algo="not in quantized_layers", pointer=self.source)
            return self.layer_formats[key]
        for pat, style, fmt in self.rules:
            if _rule_matches(pat, style, module):
                return fmt
        return self.default

    def uniform_declaration(self) -> tuple[bool, DeclaredFormat | None]:
        """``(True, format)`` when :meth:`declared_format` gives that same answer for every module (no exclusion
        pattern, no per-module rule, no MIXED_PRECISION ``quantized_layers``: only :attr:`default` speaks), else
        ``(False, None)``; lets a caller skip asking once per module of a 46k-module trunk."""
        if self.excludes or self.rules or (self.algo == "MIXED_PRECISION" and self.layer_formats):
            return False, None
        return True, self.default

    def expected_format(self, module: str) -> str:
        """Format the scheme promises for linear ``module``: ``"BF16"`` when excluded (or unquantized),
        else the declared format (``"NVFP4"``, ``"FP8"``...; MIXED_PRECISION uses the module's own entry),
        else the algorithm."""
        d = self.declared_format(module)
        if d is not None:
            return d.format
        if self.excluded_by(module) is not None:
            return "BF16"
        return self.algo

    def mtp_patterns(self, mtp_modules: Any) -> list[str]:
        """The exclusion patterns that cover at least one of ``mtp_modules`` (module names), in list order: so
        DeepSeek's ``model.layers.61*`` counts and a vision tower's ``model.visual.*`` does not."""
        mods = sorted(set(mtp_modules))
        out = []
        for pat in self.excludes:
            if self.exclude_style == "fnmatch":
                hit = _prefix_match(pat, mods)
            else:
                probe = QuantScheme(self.method, self.algo, self.source, excludes=(pat,), exclude_style=self.exclude_style)
                hit = any(probe.excluded_by(m) is not None for m in mods)
            if hit:
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
            "declared": self._declared_fact(),
        }

    def _declared_fact(self) -> dict[str, Any]:
        """What the config declares per module: the default format, the per-module rules and, for
        MIXED_PRECISION, the ``quantized_layers`` entries per format."""
        per: dict[str, int] = {}
        for f in self.layer_formats.values():
            per[f.label()] = per.get(f.label(), 0) + 1
        return {
            "default": self.default.label() if self.default is not None else None,
            "nominal": self.nominal.label() if self.nominal is not None else None,
            "rules": len(self.rules),
            "quantized_layers_formats": dict(sorted(per.items())),
        }


#: Module class names a compressed-tensors target may name instead of a module path (vLLM 0.33.0
#: ``compressed_tensors/utils.py`` ``find_matched_target``: the module's class name, as a substring).
_CLASS_TARGETS = ("Linear", "LinearBase", "nn.Linear", "torch.nn.Linear")


@functools.lru_cache(maxsize=1024)
def _rx(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _rule_matches(pat: str, style: str, module: str) -> bool:
    """Whether a per-module declaration ``pat`` names linear ``module`` (see :attr:`QuantScheme.rules`)."""
    if style == "ct":
        if pat in _CLASS_TARGETS:
            return True
        if pat.startswith("re:"):
            rx = _rx(pat[3:])
            return rx is not None and rx.fullmatch(module) is not None
        return pat == module
    if style == "quark":
        return fnmatch.fnmatchcase(module, pat) if "*" in pat else module in pat
    if style == "regex":
        rx = _rx(pat)
        return rx is not None and rx.search(module) is not None
    return False


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
    base = f"{file}#/quantization"
    layers, formats = _modelopt_layers(q.get("quantized_layers"), f"{base}/quantized_layers")
    default = algo_format(q["quant_algo"], q.get("group_size"), f"{base}/quant_algo")
    return QuantScheme(
        method="modelopt",
        algo=normalize_algo(q["quant_algo"]),
        source=base,
        group_size=_int(q.get("group_size")),
        excludes=_str_list(q.get("exclude_modules")),
        exclude_style="fnmatch" if isinstance(q.get("exclude_modules"), list) else "none",
        exclude_pointer=f"{base}/exclude_modules" if isinstance(q.get("exclude_modules"), list) else "",
        quantized_layers=layers,
        kv_cache=str(q.get("kv_cache_quant_algo") or ""),
        producer=_producer(obj),
        scale_format=FP4_SCALE_FORMAT.get(normalize_algo(q["quant_algo"]), ""),
        quant_algo=q["quant_algo"],
        layer_formats=formats,
        default=default,
        nominal=default,
    )


def _modelopt_layers(ql: Any, ptr: str) -> tuple[dict[str, str], dict[str, DeclaredFormat]]:
    """MIXED_PRECISION ``quantized_layers``: ``({module: quant_algo}, {module: declared format})``; entries
    whose algorithm this module does not know keep their name but get no format (the module then has no
    declared format and tensor names decide)."""
    layers: dict[str, str] = {}
    formats: dict[str, DeclaredFormat] = {}
    if not isinstance(ql, dict):
        return layers, formats
    memo: dict[tuple[str, Any], DeclaredFormat | None] = {}
    for k, v in ql.items():
        if isinstance(v, dict) and isinstance(v.get("quant_algo"), str):
            layers[str(k)] = v["quant_algo"]
            key = (v["quant_algo"], v.get("group_size"))
            if key not in memo:  # 22k entries in MiniMax-M3 share two recipes
                memo[key] = algo_format(v["quant_algo"], v.get("group_size"), ptr)
            fmt = memo[key]
            if fmt is not None:
                formats[str(k)] = fmt
    return layers, formats


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


def _str_or_empty(value: Any) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def _producer(qc: Mapping[str, Any]) -> str:
    """``"modelopt 0.37.0"`` from a ``producer`` object, ``""`` without one."""
    found = qc.get("producer")
    prod: Mapping[str, Any] = found if isinstance(found, dict) else {}
    return " ".join(str(prod.get(k)) for k in ("name", "version") if prod.get(k))


def _modelopt_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """ModelOpt in ``config.json``: ``quant_algo`` (or the weight parameters), ``ignore`` / ``exclude_modules``
    wildcards, MIXED_PRECISION ``quantized_layers``."""
    key = "ignore" if isinstance(qc.get("ignore"), list) else "exclude_modules"
    has = isinstance(qc.get(key), list)
    layers, formats = _modelopt_layers(qc.get("quantized_layers"), f"{base}/quantized_layers")
    ident = _identified(qc)
    named = normalize_algo(str(qc.get("quant_algo") or ""))
    # MIXED_PRECISION names no single format; its config_groups list one format per group
    algo = named if named == "MIXED_PRECISION" or not ident else ident[0]
    default = algo_format(str(qc.get("quant_algo") or ""), _group_size(qc), f"{base}/quant_algo")
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
        scale_format=ident[1] if ident and algo != "MIXED_PRECISION" else FP4_SCALE_FORMAT.get(algo, ""),
        identified_by="parameters" if ident and algo != "MIXED_PRECISION" else "name",
        quant_algo=str(qc.get("quant_algo") or ""),
        layer_formats=formats,
        default=default,
        nominal=default,
    )


def _compressed_tensors_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """compressed-tensors: the weight parameters (or the ``format`` string), the ``ignore`` list and one rule per
    ``config_groups`` target (a module no group targets stays unquantized)."""
    fmt = str(qc.get("format") or "")
    ident = _identified(qc)
    if ident:
        algo = ident[0]
    else:
        algo = ("NVFP4" if "nvfp4" in fmt else "MXFP4" if "mxfp4" in fmt else "FP8" if "float-quantized" in fmt
                else "INT4" if "pack" in fmt else fmt)
    has = isinstance(qc.get("ignore"), list)
    rules = _ct_rules(qc.get("config_groups"), f"{base}/config_groups")
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
        rules=rules,
        default=BF16 if rules else None,
        nominal=rules[0][2] if rules else None,
    )


def _ct_rules(groups: Any, ptr: str) -> tuple[tuple[str, str, DeclaredFormat], ...]:
    """One ``(target, "ct", format)`` per target of each ``config_groups`` entry whose ``weights`` name a
    format, in group order (vLLM matches a layer against each group's targets in turn)."""
    out: list[tuple[str, str, DeclaredFormat]] = []
    if not isinstance(groups, Mapping):
        return ()
    for name, g in groups.items():
        if not isinstance(g, Mapping) or not isinstance(g.get("targets"), list):
            continue
        fmt = weight_spec_format(g.get("weights"), g.get("input_activations", "?"), f"{ptr}/{name}")
        if fmt is None:
            continue
        out += [(str(t), "ct", fmt) for t in g["targets"]]
    return tuple(out)


def _gptq_awq_scheme(qc: Mapping[str, Any], method: str, base: str) -> QuantScheme:
    """GPTQ / AWQ / AutoRound: ``bits`` / ``w_bit``, ``group_size`` / ``q_group_size``, zero points (GPTQ always
    stores ``qzeros``; AWQ when ``zero_point``), ``dynamic`` ``-:`` skip keys and ``+:`` overrides, else
    ``modules_to_not_convert`` substrings."""
    bits = _int(qc.get("bits")) or _int(qc.get("w_bit")) or 4
    gs = _int(qc.get("group_size")) or _int(qc.get("q_group_size"))
    zp = method != "awq" or qc.get("zero_point") is not False
    fmt = "INT4" if bits == 4 else "INT8" if bits == 8 else f"INT{bits}"
    default = DeclaredFormat(fmt, gs if gs and gs > 0 else None, zp, "A16", None, f"{method} {bits}-bit", base)
    dyn = qc.get("dynamic")
    rules: list[tuple[str, str, DeclaredFormat]] = []
    skips: tuple[str, ...] = ()
    if isinstance(dyn, dict):
        skips = tuple(str(k) for k in dyn if str(k).startswith("-:"))
        for k, v in dyn.items():
            if str(k).startswith("-:") or not isinstance(v, dict):
                continue
            b = _int(v.get("bits")) or bits
            g = _int(v.get("group_size")) or gs
            f = "INT4" if b == 4 else "INT8" if b == 8 else f"INT{b}"
            pat = str(k)[2:] if str(k).startswith("+:") else str(k)
            rules.append((pat, "regex", DeclaredFormat(f, g, zp, "A16", None, f"{method} {b}-bit", f"{base}/dynamic")))
    if skips:
        return QuantScheme(method, "INT4", base, excludes=skips, exclude_style="gptq-dynamic",
                           exclude_pointer=f"{base}/dynamic", group_size=gs, rules=tuple(rules), default=default,
                           nominal=default)
    mtnc = qc.get("modules_to_not_convert")
    return QuantScheme(method, "INT4", base, excludes=_str_list(mtnc),
                       exclude_style="substring" if isinstance(mtnc, list) else "none",
                       exclude_pointer=f"{base}/modules_to_not_convert" if isinstance(mtnc, list) else "",
                       group_size=gs, rules=tuple(rules), default=default, nominal=default)


def _quark_scheme(qc: Mapping[str, Any], base: str) -> QuantScheme:
    """Quark writes NVFP4, MXFP4, FP8 and INT schemes under one method name: the weight spec decides. Per module:
    ``exclude``, then ``layer_quant_config`` (fnmatch when the key has ``*``, else the module name contained in
    the key), then ``global_quant_config`` (vLLM 0.33.0 ``quark/quark.py:724-808``)."""
    has = isinstance(qc.get("exclude"), list)
    ident = _identified(qc)
    glob = qc.get("global_quant_config")
    default = (weight_spec_format(glob.get("weight"), glob.get("input_tensors", "?"), f"{base}/global_quant_config")
               if isinstance(glob, Mapping) else None)
    lqc = qc.get("layer_quant_config")
    rules: list[tuple[str, str, DeclaredFormat]] = []
    if isinstance(lqc, Mapping):
        for pat, spec in lqc.items():
            f = (weight_spec_format(spec.get("weight"), spec.get("input_tensors", "?"), f"{base}/layer_quant_config")
                 if isinstance(spec, Mapping) else None)
            if f is not None:
                rules.append((str(pat), "quark", f))
    algo = ident[0] if ident else (default.format if default is not None else _quark_non_fp4(qc))
    return QuantScheme("quark", algo, base,
                       group_size=ident[2] if ident else (default.group_size if default else None),
                       excludes=_str_list(qc.get("exclude")),
                       exclude_style="quark" if has else "none", exclude_pointer=f"{base}/exclude" if has else "",
                       kv_cache=_kv_cache(qc), scale_format=ident[1] if ident else "",
                       identified_by="parameters" if ident or default is not None else "name",
                       rules=tuple(rules), default=default, nominal=default)


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
    nominal = (DeclaredFormat("FP8", None, False, "A8", (wbs_t[0], wbs_t[1]) if wbs_t and len(wbs_t) >= 2 else None,
                              method, f"{base}/quant_method") if algo == "FP8" else None)
    return QuantScheme(
        nominal=nominal,
        default=nominal if has else None,
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
