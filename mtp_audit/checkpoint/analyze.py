"""The checkpoint analyzer: gather facts from a :class:`CheckpointSource`, then run pure rule checks.

Two stages, so each rule check is a plain function of :class:`CheckpointFacts`:

1. :func:`gather` reads ``config.json``, the quantization configs, the index and the shard headers
   (only through the ``CheckpointSource`` methods, so local folders and the hub look the same) and
   derives the MTP facts: layers declared vs found, MTP tensors total and per layer, experts per MTP
   MoE layer, storage format of the MTP linears vs the rest, bytes.
2. :func:`check` runs every ``check_*`` function below and :func:`build_report` turns the result into a
   :class:`~mtp_audit.report.Report` with facts under ``facts["checkpoint"]``.

Sources: ``../shared/research/checkpoint_formats.md`` (§1 how to find MTP, §2 layouts, §4 quantization,
§7 failure modes); SGLang ``python/sglang/srt/server_args.py`` ("NEXTN shares the same implementation
of EAGLE"; the target model path doubles as the draft model path).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from mtp_audit.checkpoint import rules as R
from mtp_audit.checkpoint.config import (
    ConfigError,
    ModelConfig,
    QuantScheme,
    mlx_scheme,
    parse_config,
    parse_hf_quant_config,
    parse_quantization_config,
)
from mtp_audit.checkpoint.layouts import EXPERT_RE, STACKED_EXPERT_RE, classify, expected_names
from mtp_audit.sources.local import CheckpointSource, ReadProblem, ShardHeader, TensorInfo
from mtp_audit.checkpoint.tensors import (
    PARAM_SUFFIXES,
    is_linear_leaf,
    SCALE_SUFFIXES,
    bytes_if_quantized,
    estimate_module_bytes,
    is_linear,
    is_quantized,
    linear_shape,
    module_format,
    split_param,
    vector_len,
)
from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import contained_relpath
from mtp_audit.report import Evidence, Finding, Gap, Location, Report

ANALYZER = "checkpoint"
CONFIG = "config.json"
HF_QUANT = "hf_quant_config.json"
INDEX = "model.safetensors.index.json"
SGLANG_SOURCE = (
    "SGLang python/sglang/srt/server_args.py: '# NEXTN shares the same implementation of EAGLE' "
    "(speculative_algorithm NEXTN -> EAGLE); the draft model path defaults to the target model path"
)


def pointer(*parts: str) -> str:
    """RFC 6901 JSON pointer from raw keys (``"~"`` -> ``"~0"``, ``"/"`` -> ``"~1"``); control
    characters are shown as ``\\uXXXX`` so messages stay on one line."""
    return "".join("/" + _printable(p.replace("~", "~0").replace("/", "~1")) for p in parts)


def _printable(text: str) -> str:
    """``text`` with control characters escaped (``"\\n"`` -> ``"\\u000a"``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


@dataclass
class Module:
    """One module (a linear layer, a norm...) assembled from its parameter tensors.

    Attributes:
        name: dotted module path (``"mtp.layers.0.mlp.experts.7.up_proj"``).
        params: parameter suffix -> header info, or None when only the index names it.
        shard: shard file of its main tensor, when known.
    """

    name: str
    params: dict[str, TensorInfo | None] = field(default_factory=dict)
    shard: str | None = None


@dataclass
class CheckpointFacts:
    """Everything the rule checks look at. Built by :func:`gather`; rule checks never read files.

    Attributes:
        display: how the target is named in the report.
        mode: ``"shards"`` (headers read), ``"metadata-only"`` (config + index, no shards),
            ``"config-only"``, ``"single-file"`` or ``"index-file"``.
        files: every file of the source.
        config: parsed ``config.json`` (None when absent).
        schemes: quantization schemes found, primary first (``hf_quant_config.json`` before
            ``config.json#/quantization_config``).
        index_file: the index used, or None.
        index_names: every tensor name in the index, in file order.
        weight_map: tensor -> shard for the entries whose path is contained in the folder.
        escaping: ``(tensor, raw_path)`` for weight_map entries that are absolute or leave the folder.
        total_size: ``metadata.total_size`` when it is an integer.
        shards_present: ``.safetensors`` files at the root of the source.
        headers: shard -> header for every shard read successfully.
        problems: shard -> read problem for shards that could not be read.
        tensors: tensor name -> shard (index first, then headers).
        infos: tensor name -> header info (only for tensors whose shard header was read).
        mtp: MTP tensor name -> (layer label, layer index or None).
        mtp_modules: MTP modules assembled from their tensors.
        trunk_modules: trunk module -> parameter suffix -> header info (plain dicts: 46k of them
            in DeepSeek-V3, so no per-module objects).
        source: where the metadata came from and the I/O it cost (:meth:`CheckpointSource.describe`
            plus :meth:`CheckpointSource.stats`).
    """

    display: str
    mode: str
    files: tuple[str, ...]
    config: ModelConfig | None = None
    schemes: list[QuantScheme] = field(default_factory=list)
    index_file: str | None = None
    index_names: list[str] = field(default_factory=list)
    weight_map: dict[str, str] = field(default_factory=dict)
    escaping: list[tuple[str, str]] = field(default_factory=list)
    total_size: int | None = None
    shards_present: tuple[str, ...] = ()
    headers: dict[str, ShardHeader] = field(default_factory=dict)
    problems: dict[str, ReadProblem] = field(default_factory=dict)
    tensors: dict[str, str | None] = field(default_factory=dict)
    infos: dict[str, TensorInfo] = field(default_factory=dict)
    mtp: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    mtp_modules: dict[str, Module] = field(default_factory=dict)
    trunk_modules: dict[str, dict[str, TensorInfo | None]] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    trunk_suffixes: dict[str, int] = field(default_factory=dict)
    trunk_weight_leaves: dict[str, int] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    # -- derived, cached -------------------------------------------------------------------------

    @property
    def indexed_shards(self) -> set[str]:
        """Shard files named by the (contained) weight_map entries (computed once)."""
        got = self.cache.get("indexed_shards")
        if got is None:
            got = self.cache["indexed_shards"] = set(self.weight_map.values())
        return got

    @property
    def missing_shards(self) -> list[str]:
        """Indexed shards absent from a folder that has at least one shard (empty in metadata-only mode)."""
        if not self.shards_present:
            return []
        present = set(self.shards_present)
        return sorted(s for s in self.indexed_shards if s not in present)

    @property
    def unindexed_shards(self) -> list[str]:
        """Shards present in the folder but not named by the index (empty when there is no index)."""
        if self.index_file is None:
            return []
        idx = self.indexed_shards
        return sorted(s for s in self.shards_present if s not in idx)

    @property
    def primary_scheme(self) -> QuantScheme | None:
        """The quantization scheme engines read first (``hf_quant_config.json`` when present)."""
        return self.schemes[0] if self.schemes else None

    @property
    def tensors_known(self) -> bool:
        """Whether tensor names are known at all (an index, or at least one readable header)."""
        return self.index_file is not None or bool(self.headers)

    @property
    def declared_layers(self) -> int:
        """Declared (or implicit) MTP depth; 0 without a config."""
        return self.config.declaration.layers if self.config else 0

    def mtp_layer_labels(self) -> dict[str, int]:
        """Tensors per MTP layer label (``{"model.layers.61": 1564}``, ``{"mtp": 4, "mtp.layers.0": 1549}``)."""
        return dict(sorted(Counter(lab for lab, _ in self.mtp.values()).items()))

    def found_layers(self) -> int:
        """MTP layers found: distinct numbered MTP layers divided by blocks per layer (Nemotron-H
        stores one MTP layer as ``mtp.layers.0`` + ``mtp.layers.1``)."""
        idx = {i for _, i in self.mtp.values() if i is not None}
        bpl = self.config.blocks_per_layer if self.config else 1
        return math.ceil(len(idx) / max(bpl, 1)) if idx else 0


# --- stage 1: gather ------------------------------------------------------------------------------


def _read_json(source: CheckpointSource, rel: str, facts: CheckpointFacts | None = None) -> Any:
    """Read a metadata JSON file; the user's input cannot be audited when it is broken.

    A file the *transport* could not deliver (``ReadProblem.kind == "network"``: offline and not
    cached, 5xx, time-out) is not the user's mistake: when ``facts`` is given it becomes a blocking
    gap and ``None`` is returned, so the audit goes on and ends inconclusive (exit 3).

    Raises:
        InputError: missing, unreadable, too large or invalid JSON (one line naming the file).
    """
    try:
        return source.read_json(rel)
    except ReadProblem as exc:
        if exc.kind == "network" and facts is not None:
            facts.gaps.append(Gap(ANALYZER, f"{rel}: {exc.problem}", rel))
            return None
        raise InputError(_where(source, rel), exc.problem) from None


def _where(source: CheckpointSource, rel: str) -> str:
    disp = source.display.rstrip("/")
    return f"{disp}/{rel}" if disp and not disp.endswith(rel) else rel


def gather(source: CheckpointSource, *, mode_hint: str | None = None) -> CheckpointFacts:
    """Collect the facts of one checkpoint.

    Args:
        source: where the metadata comes from; only its public methods are used.
        mode_hint: ``"single-file"`` or ``"index-file"`` when the user named one file.

    Raises:
        InputError: the source lists nothing auditable, or ``config.json`` / the index is not valid
            JSON, ``config.json`` lacks ``architectures``, or ``weight_map`` has the wrong type.
    """
    files = source.list_files()
    fset = set(files)
    root_shards = tuple(sorted(f for f in files if f.endswith(".safetensors") and "/" not in f))
    index_candidates = sorted(f for f in files if f.endswith(".safetensors.index.json") and "/" not in f)
    index_file = INDEX if INDEX in fset else (index_candidates[0] if index_candidates else None)
    if CONFIG not in fset and not root_shards and index_file is None:
        raise InputError(source.display, "no config.json, no *.safetensors.index.json and no *.safetensors: not a checkpoint")

    facts = CheckpointFacts(display=source.display, mode="", files=files, shards_present=root_shards)

    raw = _read_json(source, CONFIG, facts) if CONFIG in fset else None
    if raw is not None:
        try:
            facts.config = parse_config(raw)
        except ConfigError as exc:
            raise InputError(_where(source, CONFIG), f"{exc.pointer or '/'}: {exc.problem}") from None
        extra = mlx_scheme(raw) if isinstance(raw, dict) else None
    else:
        extra = None
    if HF_QUANT in fset:
        scheme = parse_hf_quant_config(_read_json(source, HF_QUANT, facts))
        if scheme is not None:
            facts.schemes.append(scheme)
    if facts.config is not None:
        scheme = parse_quantization_config(facts.config.raw_quantization)
        if scheme is not None:
            facts.schemes.append(scheme)
    if extra is not None:
        facts.schemes.append(extra)

    if index_file is not None:
        _read_index(source, index_file, facts)

    if mode_hint == "index-file":
        facts.mode = "index-file"
    elif root_shards:
        facts.mode = "single-file" if mode_hint == "single-file" else "shards"
    elif index_file is not None:
        facts.mode = "metadata-only"
    else:
        facts.mode = "config-only"

    if facts.mode in ("shards", "single-file"):
        for rel, res in sorted(source.read_headers(root_shards).items()):
            if isinstance(res, ShardHeader):
                facts.headers[rel] = res
            else:
                facts.problems[rel] = res
        if mode_hint == "single-file" and facts.problems:
            rel, prob = next(iter(facts.problems.items()))
            raise InputError(_where(source, rel), prob.problem)

    n_layers = facts.config.num_hidden_layers if facts.config else None
    if len(facts.weight_map) == len(facts.index_names) and not facts.headers:
        tensors: dict[str, str | None] = facts.weight_map  # type: ignore[assignment]  # read-only from here on
    elif len(facts.weight_map) == len(facts.index_names):
        tensors = dict(facts.weight_map)
    else:
        tensors = dict.fromkeys(facts.index_names)
        tensors.update(facts.weight_map)
    for rel, hdr in facts.headers.items():
        for name, info in hdr.tensors.items():
            if name not in tensors or tensors[name] is None:
                tensors[name] = rel
            facts.infos.setdefault(name, info)
    facts.tensors = tensors
    _classify_and_group(facts, n_layers)
    _gaps(facts)
    return facts


def _read_index(source: CheckpointSource, index_file: str, facts: CheckpointFacts) -> None:
    """Parse the index: ``weight_map`` (tensor -> shard) and ``metadata.total_size``.

    Raises:
        InputError: not JSON, not an object, or ``weight_map`` not an object of strings.
    """
    obj = _read_json(source, index_file, facts)
    if obj is None and any(g.path == index_file for g in facts.gaps):
        return  # not delivered (offline, network): a blocking gap already says so
    where = _where(source, index_file)
    if not isinstance(obj, dict):
        raise InputError(where, f"expected a JSON object, got {type(obj).__name__}")
    wm = obj.get("weight_map")
    if not isinstance(wm, dict):
        got = "nothing" if wm is None else type(wm).__name__
        raise InputError(where, f"/weight_map: expected an object mapping tensor names to shard files, got {got}")
    facts.index_file = index_file
    facts.index_names = list(wm)
    try:
        distinct = set(wm.values())  # a 92k-entry index names ~163 distinct shards
    except TypeError:  # an unhashable value (a list or an object)
        distinct = None
    if distinct is None or not all(isinstance(v, str) for v in distinct):
        name, shard = next((k, v) for k, v in wm.items() if not isinstance(v, str))
        raise InputError(where, f"{pointer('weight_map', name)}: expected a shard file name, got {type(shard).__name__}")
    checked: dict[str, str | None] = {}
    for shard in distinct:
        p = contained_relpath(shard)
        checked[shard] = None if p is None else p.as_posix()
    if all(checked[v] == v for v in distinct):
        facts.weight_map = wm  # the common case: no copy
    else:
        out = facts.weight_map
        for name, shard in wm.items():
            rel = checked[shard]
            if rel is None:
                facts.escaping.append((name, shard))
            else:
                out[name] = rel
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        ts = meta.get("total_size")
        if isinstance(ts, int) and not isinstance(ts, bool) and ts >= 0:
            facts.total_size = ts
        elif isinstance(ts, float) and ts.is_integer() and ts >= 0:
            facts.total_size = int(ts)


def _lines_matching(pattern: str, joined: str) -> set[str]:
    """Whole lines of ``joined`` that contain a match of ``pattern`` (hits expanded to their line)."""
    out: set[str] = set()
    for m in re.finditer(pattern, joined):
        start = joined.rfind("\n", 0, m.start()) + 1
        end = joined.find("\n", m.end())
        out.add(joined[start : end if end >= 0 else len(joined)])
    return out


def _mtp_candidates(names: list[str], n_layers: int | None) -> list[str]:
    """Names that may be MTP tensors: those containing ``mtp`` and those of decoder layers with index
    ``>= n_layers``. Found with regex scans over the newline-joined names (C speed, only the rare hits
    touched from Python) instead of a Python-level test per name; :func:`layouts.classify` then
    decides each candidate. A superset of what ``classify`` accepts, so no MTP tensor is missed;
    names that themselves contain a newline are checked one by one."""
    joined = "\n".join(names)
    cands = _lines_matching("mtp", joined) if "mtp" in joined else set()
    if n_layers is not None and "layers." in joined:
        high = sorted(i for i in map(int, set(re.findall(r"layers\.(\d+)\.", joined))) if i >= n_layers)
        if high:
            cands |= _lines_matching(r"layers\.(?:%s)\." % "|".join(map(str, high)), joined)
    odd = [n for n in names if "\n" in n]
    if odd:
        known = set(names)
        cands = {c for c in cands if c in known} | set(odd)
    return sorted(cands)


def _classify_and_group(facts: CheckpointFacts, n_layers: int | None) -> None:
    """Split tensors into MTP (:func:`layouts.classify`) and trunk. MTP tensors are grouped into
    :class:`Module` objects. Trunk tensors are grouped into modules only when shard headers were read
    (the exact path); in metadata-only mode they are only counted by parameter suffix and by the leaf
    name of their ``.weight`` tensors, which is all :func:`trunk_format_counts` needs. This is the
    audit's hot path on a 92k-tensor index (benchmarks/bench_checkpoint.py): candidates are found by
    :func:`_mtp_candidates`, and trunk counting uses ``collections.Counter`` over comprehensions."""
    infos = facts.infos
    mtp = facts.mtp
    mtp_mods = facts.mtp_modules
    tensors = facts.tensors
    exact = bool(infos)
    suffixes = PARAM_SUFFIXES
    get_info = infos.get
    names = list(tensors)
    for name in _mtp_candidates(names, n_layers):
        hit = classify(name, n_layers)
        if hit is None:
            continue
        module, _, param = name.rpartition(".")
        if not module or param not in suffixes:
            module, param = name, ""
        mtp[name] = hit
        mod = mtp_mods.get(module)
        if mod is None:
            mod = mtp_mods[module] = Module(module)
        mod.params[param] = get_info(name)
        if param in ("weight", "weight_packed", "qweight", "") or mod.shard is None:
            mod.shard = tensors[name]
    trunk_names = [n for n in names if n not in mtp] if mtp else names
    trunk: dict[str, dict[str, TensorInfo | None]] = {}
    if exact:
        for name in trunk_names:
            module, _, param = name.rpartition(".")
            if not module or param not in suffixes:
                module, param = name, ""
            params = trunk.get(module)
            if params is None:
                trunk[module] = {param: get_info(name)}
            else:
                params[param] = get_info(name)
        facts.trunk_suffixes = {}
        facts.trunk_weight_leaves = {}
    else:
        facts.trunk_suffixes = dict(Counter([n[n.rfind(".") + 1 :] for n in trunk_names]))
        facts.trunk_weight_leaves = dict(
            Counter([n[n.rfind(".", 0, -7) + 1 : -7] for n in trunk_names if n.endswith(".weight")])
        )
    facts.trunk_modules = trunk


def _gaps(facts: CheckpointFacts) -> None:
    """What could not be examined, and whether it blocks the answer (see docs/checkpoint.md
    "Inconclusive")."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    layout = cfg.layout if cfg else None
    if cfg is None:
        facts.gaps.append(
            Gap(
                ANALYZER,
                "config.json missing: the MTP declaration and the trunk depth are unknown, so MTP layers appended "
                "as model.layers.N+i cannot be recognised",
                CONFIG,
                blocking=not facts.mtp,
            )
        )
    elif (
        cfg.num_hidden_layers is None
        and layout is not None
        and layout.placement == "appended"
        and facts.tensors_known
    ):
        facts.gaps.append(
            Gap(ANALYZER, "config.json has no num_hidden_layers: appended MTP layers cannot be located", CONFIG)
        )
    if facts.mode == "config-only":
        if decl is not None and decl.declared:
            how = "implicitly (family always ships MTP)" if decl.implicit else f"at {decl.key}"
            facts.gaps.append(
                Gap(
                    ANALYZER,
                    f"config.json declares {decl.layers} MTP layer(s) {how}, but there is no "
                    "model.safetensors.index.json and no *.safetensors: whether the MTP tensors ship cannot be checked",
                )
            )
        elif layout is None or layout.placement != "none":
            facts.gaps.append(
                Gap(
                    ANALYZER,
                    "no index and no shards: MTP tensors not inspected (none declared, so engines will not load any)",
                    blocking=False,
                )
            )
    if facts.mode in ("metadata-only", "index-file") and facts.index_file is not None:
        n = len(facts.indexed_shards)
        facts.gaps.append(
            Gap(
                ANALYZER,
                f"{facts.index_file} names {n} shard file(s), none read: MTP presence decided from tensor names; "
                "dtypes inferred from sibling scale-tensor names and bytes estimated from config.json",
                facts.index_file,
                blocking=False,
            )
        )
    for rel, prob in sorted(facts.problems.items()):
        if prob.kind == "malformed":
            continue  # a defect of the checkpoint: reported as MTP013
        covered = facts.index_file is not None and rel in facts.indexed_shards
        facts.gaps.append(
            Gap(
                ANALYZER,
                f"{prob.problem}; tensor dtypes and shapes in this shard unknown",
                rel,
                blocking=not covered,
            )
        )


# --- derived facts ------------------------------------------------------------------------------


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
        params = mod.params if isinstance(mod, Module) else mod
        w = params.get("weight")
        sig = (name[name.rfind(".") + 1 :], tuple(params), None if w is None else (w.dtype, len(w.shape)))
        try:
            res = memo[sig]
        except KeyError:
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


def _quant_headline(facts: CheckpointFacts) -> str | None:
    """``"NVFP4 (modelopt, hf_quant_config.json, group size 16)"`` for the primary scheme, or None."""
    s = facts.primary_scheme
    if s is None:
        return None
    bits = [s.method, s.source.split("#")[0]]
    if s.group_size:
        bits.append(f"group size {s.group_size}")
    if s.weight_block_size:
        bits.append("block " + "x".join(map(str, s.weight_block_size)))
    return f"{s.algo} ({', '.join(bits)})"


def build_facts(facts: CheckpointFacts, findings: Iterable[Finding]) -> dict[str, Any]:
    """The JSON facts document for ``facts["checkpoint"]`` (schema in docs/checkpoint.md)."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    mtp_fmts = linear_formats(facts, facts.mtp_modules)
    mtp_state, mtp_counts = summarize_formats(mtp_fmts)
    trunk_counts = trunk_format_counts(facts)
    trunk_state = "none" if not trunk_counts else next(iter(trunk_counts)) if len(trunk_counts) == 1 else "mixed"
    mtp_dtypes = dict(sorted(Counter(facts.infos[n].dtype for n in facts.mtp if n in facts.infos).items()))
    scale_tensors = sorted(n for n in facts.mtp if split_param(n)[1] in SCALE_SUFFIXES)
    experts = expert_facts(facts)
    nbytes = mtp_bytes(facts)
    total_bytes = sum(h.data_bytes for h in facts.headers.values()) if facts.headers else None
    errors = [f for f in findings if f.severity.label == "error"]
    blocking = [f.rule_id for f in errors if f.rule_id in R.BLOCKS_MTP]
    usable: bool | None
    if not (decl and decl.declared) and not facts.mtp:
        usable = False
    elif not facts.tensors_known or any(g.blocking for g in facts.gaps):
        usable = None
    else:
        usable = bool(facts.mtp) and bool(decl and decl.declared) and not blocking
    inferred = any(inf for _, inf in mtp_fmts.values())
    summary = {
        "architecture": cfg.architectures[0] if cfg else None,
        "family": cfg.layout.family if cfg and cfg.layout else None,
        "mode": facts.mode,
        "mtp_layers_declared": decl.layers if decl else None,
        "mtp_layers_found": facts.found_layers() if facts.tensors_known else None,
        "mtp_tensors": len(facts.mtp) if facts.tensors_known else None,
        "mtp_format": mtp_state if facts.tensors_known else None,
        "trunk_format": trunk_state if facts.tensors_known else None,
        "mtp_bytes": nbytes.get("value"),
        "mtp_bytes_estimated": nbytes.get("estimated"),
        "tensors": len(facts.tensors) if facts.tensors_known else None,
        "quantization": _quant_headline(facts),
        "mtp_exclude_patterns": ", ".join(p for s in facts.schemes[:1] for p in s.excludes if "mtp" in p.lower()) or None,
        "sglang_mtp_usable": usable,
    }
    return {
        "summary": summary,
        "closing": _closing(summary, decl, usable, sorted(set(blocking)), facts, mtp_counts),
        "mode": facts.mode,
        "source": facts.source,
        "config": None
        if cfg is None
        else {
            "architectures": list(cfg.architectures),
            "model_type": cfg.model_type,
            "text_model_type": cfg.text_model_type or None,
            "text_config": bool(cfg.text_pointer),
            "num_hidden_layers": cfg.num_hidden_layers,
            "num_experts": cfg.num_experts,
            "experts_key": cfg.experts_key or None,
            "family": cfg.layout.family if cfg.layout else None,
            "family_source": cfg.layout.source if cfg.layout else None,
        },
        "mtp": {
            "declared_layers": decl.layers if decl else None,
            "declared_by": (decl.key or ("implicit" if decl.implicit else None)) if decl else None,
            "found_layers": facts.found_layers(),
            "tensors": len(facts.mtp),
            "tensors_per_layer": facts.mtp_layer_labels(),
            "dtypes": mtp_dtypes,
            "scale_tensors": len(scale_tensors),
            "format": mtp_state,
            "format_modules": mtp_counts,
            "format_inferred": inferred,
            "experts": experts,
            "bytes": nbytes,
            "shards": sorted({s for n in facts.mtp if (s := facts.tensors.get(n))}),
        },
        "trunk": {"format": trunk_state, "format_modules": trunk_counts, "tensors": len(facts.tensors) - len(facts.mtp)},
        "quantization": [s.to_fact() for s in facts.schemes],
        "index": None
        if facts.index_file is None
        else {
            "file": facts.index_file,
            "tensors": len(facts.index_names),
            "shards": len(facts.indexed_shards),
            "total_size": facts.total_size,
        },
        "shards": {
            "present": len(facts.shards_present),
            "read": len(facts.headers),
            "missing": facts.missing_shards,
            "unindexed": facts.unindexed_shards,
            "bytes": total_bytes,
        },
        "engine": {
            "sglang": {
                "flags": "--speculative-algorithm NEXTN",
                "runs_as": "EAGLE",
                "draft_model": "the target checkpoint itself (no separate draft model)",
                "usable": usable,
                "blocked_by": sorted(set(blocking)),
                "source": SGLANG_SOURCE,
            }
        },
    }


def _closing(summary: dict[str, Any], decl: Any, usable: bool | None, blocking: list[str], facts: CheckpointFacts,
             mtp_counts: Mapping[str, int]) -> dict[str, Any]:
    """The plain-words answer printed at the end of text/Markdown reports: what the checkpoint
    declares and holds, and whether SGLang will use the MTP heads (``--speculative-algorithm NEXTN``,
    an alias that runs SGLang's EAGLE worker with the target checkpoint as its own draft model;
    SGLang ``server_args.py``, see docs/sglang.md)."""
    declared = summary.get("mtp_layers_declared")
    if decl is not None and decl.declared:
        how = "implicitly (this family always ships MTP)" if decl.implicit else f"at {decl.key}"
        lines = [f"Declared: {declared} MTP layer(s) {how}."]
    else:
        lines = ["Declared: no MTP layers."]
    if facts.tensors_known:
        found = f"Found: {summary.get('mtp_tensors', 0):,} MTP tensor(s) in {summary.get('mtp_layers_found') or 0} layer(s)"
        if summary.get("mtp_tensors"):
            nbytes = summary.get("mtp_bytes")
            est = " (estimated)" if summary.get("mtp_bytes_estimated") else ""
            fmt = summary.get("mtp_format")
            if fmt == "mixed" and mtp_counts:
                fmt = "mixed (" + ", ".join(f"{n:,} {k}" for k, n in sorted(mtp_counts.items())) + " linear modules)"
            found += f", stored {fmt}" + (f", {nbytes:,} bytes{est}" if isinstance(nbytes, int) else "")
        lines.append(found + ".")
    else:
        lines.append("Found: not inspectable (no index and no shards).")
    if usable is True:
        lines.append(
            "SGLang: yes, with --speculative-algorithm NEXTN (an alias: SGLang runs its EAGLE worker with this "
            "checkpoint as its own draft model and loads these MTP weights as the draft)."
        )
    elif usable is False and blocking:
        lines.append(f"SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads ({', '.join(blocking)}).")
    elif usable is False:
        lines.append("SGLang: no MTP heads to use; speculative decoding would need a separate draft model.")
    else:
        lines.append("SGLang: could not tell (see 'not examined').")
    return {"title": "Will SGLang use the MTP heads?", "lines": lines}


# --- stage 2: checks ----------------------------------------------------------------------------

Check = Callable[[CheckpointFacts], Iterator[Finding]]


def _decl_location(facts: CheckpointFacts) -> Location:
    decl = facts.config.declaration if facts.config else None
    return Location(CONFIG, symbol=decl.key or None) if decl else Location(CONFIG)


def _mtp_where(facts: CheckpointFacts) -> str:
    """Where the family keeps MTP tensors, for messages (``"model.layers.61.*"``, ``"mtp.*"``)."""
    cfg = facts.config
    if cfg is None or cfg.layout is None:
        return "an MTP prefix (mtp.*, model.mtp*.*, or model.layers.N+i.*)"
    lay = cfg.layout
    if lay.placement == "appended" and cfg.num_hidden_layers is not None:
        n, k = cfg.num_hidden_layers, max(cfg.declaration.layers, 1)
        return f"model.layers.{n}.*" if k == 1 else f"model.layers.{n}..{n + k - 1}.*"
    return f"{lay.prefix}*" if lay.prefix else "mtp.*"


def _names_source(facts: CheckpointFacts) -> tuple[str, str]:
    """``(file, description)`` of where tensor names were listed."""
    if facts.index_file is not None:
        return facts.index_file, f"{facts.index_file} ({len(facts.index_names):,} tensors)"
    shards = sorted(facts.headers)
    return (shards[0] if shards else ""), f"{len(shards)} shard header(s) ({len(facts.tensors):,} tensors)"


def check_declared_missing(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP001 / MTP002: declared MTP layers, no MTP tensor anywhere."""
    cfg = facts.config
    if cfg is None or not cfg.declaration.declared or facts.mtp or not facts.tensors_known:
        return
    if any(g.blocking for g in facts.gaps):
        return
    decl = cfg.declaration
    file, listed = _names_source(facts)
    ev = [
        Evidence("config" + (decl.key.replace("/", ".") if decl.key else " (implicit)"), str(decl.layers), _decl_location(facts)),
        Evidence("tensors listed", listed, Location(file) if file else None),
        Evidence("MTP tensors found", "0"),
    ]
    where = _mtp_where(facts)
    if cfg.layout is not None and cfg.layout.upstream_unpublished:
        yield R.MTP002.finding(
            f"config.json declares {decl.layers} MTP layer(s) ({decl.key[1:]}), but no tensor matches {where}; "
            f"{cfg.layout.display} MTP weights were never published upstream, so this is expected of the release, "
            "not a broken copy",
            _decl_location(facts),
            evidence=ev,
        )
        return
    yield R.MTP001.finding(
        f"config.json declares {decl.layers} MTP layer(s) "
        f"({decl.key[1:] if decl.key else 'implicit for ' + (cfg.layout.display if cfg.layout else 'this family')}), "
        f"but none of the {len(facts.tensors):,} tensors matches {where}",
        _decl_location(facts),
        evidence=ev,
    )


def check_undeclared(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP003: MTP tensors present but the config declares none (or 0)."""
    cfg = facts.config
    if cfg is None or not facts.mtp or cfg.declaration.declared:
        return
    labels = facts.mtp_layer_labels()
    first = sorted(facts.mtp)[0]
    yield R.MTP003.finding(
        f"{len(facts.mtp):,} MTP tensor(s) under {', '.join(labels)} but config.json declares no MTP layer"
        + (f" ({cfg.declaration.key[1:]} = 0)" if cfg.declaration.explicit_zero else ""),
        Location(facts.tensors.get(first) or facts.index_file or CONFIG, symbol=first),
        evidence=[Evidence("MTP tensors per layer", ", ".join(f"{k}: {v}" for k, v in labels.items()))],
    )


def check_layer_count(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP004: declared depth differs from the MTP layers found (implicit declarations excepted:
    MiMo-V2 ships several layers while engines use one)."""
    cfg = facts.config
    if cfg is None or not facts.mtp or not cfg.declaration.declared or cfg.declaration.implicit:
        return
    found = facts.found_layers()
    if found == cfg.declaration.layers:
        return
    yield R.MTP004.finding(
        f"config.json declares {cfg.declaration.layers} MTP layer(s) ({cfg.declaration.key[1:]}) but "
        f"{found} numbered MTP layer(s) were found ({', '.join(facts.mtp_layer_labels())})",
        _decl_location(facts),
        evidence=[Evidence("MTP tensors per layer", ", ".join(f"{k}: {v}" for k, v in facts.mtp_layer_labels().items()))],
    )


def check_experts(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP005: an MTP MoE layer lacks experts or projections that config.json promises."""
    cfg = facts.config
    if cfg is None:
        return
    for label, e in expert_facts(facts).items():
        if e["layout"] != "per-expert":
            if e["found"] is not None and e["expected"] is not None and e["found"] != e["expected"]:
                yield R.MTP005.finding(
                    f"{label}: stacked expert tensors hold {e['found']} experts, config.json {cfg.experts_key[1:]} "
                    f"= {e['expected']}",
                    Location(CONFIG, symbol=cfg.experts_key or None),
                )
            continue
        missing, incomplete, extra = e["missing"], e["incomplete"], e.get("extra", [])
        if not missing and not incomplete and not extra:
            continue
        parts = []
        if missing:
            shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
            parts.append(f"{len(missing)} of {e['expected']} experts missing (ids {shown})")
        if incomplete:
            k = next(iter(incomplete))
            parts.append(f"{len(incomplete)} expert(s) lack projections (expert {k}: {', '.join(incomplete[k])})")
        if extra:
            parts.append(f"{len(extra)} expert id(s) >= {e['expected']}")
        yield R.MTP005.finding(
            f"{label}: " + "; ".join(parts) + f" (config.json {cfg.experts_key[1:]} = {e['expected']})",
            Location(facts.index_file or CONFIG, symbol=f"{label}.mlp.experts"),
            evidence=[
                Evidence("experts found", str(e["found"])),
                Evidence("projections per expert", ", ".join(e["projections"])),
                Evidence(f"config {cfg.experts_key[1:]}", str(e["expected"]), Location(CONFIG, symbol=cfg.experts_key or None)),
            ],
        )


def _human(n: int) -> str:
    return f"{n:,} bytes ({n / 1e9:.2f} GB)"


def check_excluded_cost(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP006: MTP linears stored unquantized while the trunk's linears are quantized; reports the
    bytes kept and what the trunk's format would take (checkpoint_formats.md §5, §7.3)."""
    cfg = facts.config
    if cfg is None or not facts.mtp:
        return
    mtp_fmts = linear_formats(facts, facts.mtp_modules)
    trunk_counts = trunk_format_counts(facts)
    quant_trunk = {f: c for f, c in trunk_counts.items() if is_quantized(f)}
    if not quant_trunk:
        return
    target = max(quant_trunk, key=lambda f: quant_trunk[f])
    plain = {m: f for m, (f, _) in mtp_fmts.items() if not is_quantized(f)}
    if not plain:
        return
    scheme = facts.primary_scheme
    block = scheme.weight_block_size if scheme and target == "FP8" else None
    gs = scheme.group_size if scheme else None
    now = would = 0
    exact = True
    for m in plain:
        mod = facts.mtp_modules[m]
        info = mod.params.get("weight")
        if info is not None and len(info.shape) == 2:
            shape = (info.shape[0], info.shape[1])
            now += info.nbytes
        else:
            shape = linear_shape(m, cfg.dims, cfg.num_experts)  # type: ignore[assignment]
            exact = False
            if shape is None:
                continue
            now += shape[0] * shape[1] * 2
        would += bytes_if_quantized(shape, target, block=block, group_size=gs)
    inferred = any(inf for _, inf in mtp_fmts.values())
    first = sorted(plain)[0]
    kinds = ", ".join(f"{c} {f}" for f, c in sorted(Counter(plain.values()).items()))
    est = "" if exact else " (estimated from config.json)"
    yield R.MTP006.finding(
        f"{len(plain)} of {len(mtp_fmts)} MTP linear module(s) are stored unquantized ({kinds}) while the rest of "
        f"the model is {target}: {_human(now)}{est} kept for MTP; as {target} they would take about "
        f"{_human(would)}, {_human(max(now - would, 0))} more GPU memory per copy of the weights",
        Location(facts.mtp_modules[first].shard or facts.index_file or CONFIG, symbol=first),
        evidence=[
            Evidence("MTP linear formats", ", ".join(f"{f}: {c}" for f, c in summarize_formats(mtp_fmts)[1].items())),
            Evidence("trunk linear formats", ", ".join(f"{f}: {c}" for f, c in trunk_counts.items())),
            Evidence("formats inferred from tensor names", "yes" if inferred else "no (read from shard headers)"),
        ],
        remediation=(
            "Nothing to fix if this is deliberate (NVIDIA's ModelOpt exports keep MTP in BF16); budget the extra "
            "memory, or re-export with the MTP layer quantized if your engine supports quantized MTP."
        ),
    )


def check_exclude_disagrees(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP007: for each MTP linear, "excluded by the quantization config" must match "stored
    unquantized" (vLLM PR #38832: ``mtp.fc`` stored BF16 while ``exclude_modules`` lists only
    ``mtp.layers.0*``)."""
    scheme = facts.primary_scheme
    if scheme is None or not scheme.has_exclusion_list or not facts.mtp:
        return
    file, _, ptr = scheme.exclude_pointer.partition("#")
    if not file:
        file, _, ptr = scheme.source.partition("#")
    plain_not_excluded: list[tuple[str, str, bool]] = []
    quant_excluded: list[tuple[str, str, str]] = []
    for m, (fmt, inferred) in sorted(linear_formats(facts, facts.mtp_modules).items()):
        pat = scheme.excluded_by(m)
        if pat is None and not is_quantized(fmt):
            plain_not_excluded.append((m, fmt, inferred))
        elif pat is not None and is_quantized(fmt):
            quant_excluded.append((m, fmt, pat))
    mtp_pats = [p for p in scheme.excludes if "mtp" in p.lower()] or list(scheme.excludes[:3])
    if plain_not_excluded:
        names = [m for m, _, _ in plain_not_excluded]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        fmt0, inf0 = plain_not_excluded[0][1], plain_not_excluded[0][2]
        t0 = names[0]
        tensor0 = t0 + ".weight"
        yield R.MTP007.finding(
            f"{len(names)} MTP linear module(s) stored {fmt0}{' (inferred: no scale tensors)' if inf0 else ''} "
            f"are not covered by {scheme.exclude_pointer.split('#')[-1] or 'the exclusion list'}: {shown}; an engine "
            f"that trusts the list builds them as {scheme.algo} and fails or loads garbage",
            Location(file, symbol=ptr or None),
            evidence=[
                Evidence("stored dtype", f"{tensor0}: {fmt0}", Location(facts.mtp_modules[t0].shard or facts.index_file or "", symbol=tensor0)),
                Evidence("MTP patterns in the exclusion list", ", ".join(mtp_pats) if mtp_pats else "(none)"),
                Evidence("quantization", f"{scheme.method} {scheme.algo}"),
            ],
            remediation=(
                f"Add the module(s) to the exclusion list (e.g. \"{t0}\" or \"mtp*\"; Model-Optimizer PR #1124 exports "
                "\"mtp*\"), or use an engine that forces MTP to BF16 (vLLM PR #38832, SGLang qwen3_5_mtp.py "
                "_mtp_quant_config)."
            ),
        )
    if quant_excluded:
        m, fmt, pat = quant_excluded[0]
        yield R.MTP007.finding(
            f"{len(quant_excluded)} MTP linear module(s) are excluded by \"{pat}\" but stored {fmt} "
            f"(e.g. {m}); an engine that trusts the list builds them unquantized and cannot load the packed weights",
            Location(file, symbol=ptr or None),
            evidence=[Evidence("stored format", f"{m}: {fmt}", Location(facts.mtp_modules[m].shard or "", symbol=m + ".weight"))],
            remediation=f"Remove \"{pat}\" from the exclusion list, or re-export {m} unquantized.",
        )


def check_missing_shards(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP008: the index names shard files that a folder with shards does not have."""
    missing = facts.missing_shards
    if not missing or facts.index_file is None:
        return
    per: Counter[str] = Counter(facts.weight_map.values())
    mtp_in = Counter(facts.weight_map[n] for n in facts.mtp if n in facts.weight_map)
    for shard in missing:
        extra = f", {mtp_in[shard]:,} of them MTP tensors" if mtp_in.get(shard) else ""
        yield R.MTP008.finding(
            f"{facts.index_file} maps {per[shard]:,} tensor(s) to {shard}, which is not in the folder{extra}",
            Location(facts.index_file, symbol=pointer("weight_map", next(n for n, s in facts.weight_map.items() if s == shard))),
            evidence=[Evidence("shards present", f"{len(facts.shards_present)} of {len(facts.indexed_shards)}")],
        )


def check_unindexed_mtp(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP009: a shard the index does not name holds MTP tensors (engines that follow the index never
    load it: Model-Optimizer PR #2427, osaurus-ai/vmlx-swift PR #388)."""
    for shard in facts.unindexed_shards:
        hdr = facts.headers.get(shard)
        if hdr is None:
            continue
        mtp = sorted(n for n in hdr.tensors if n in facts.mtp and n not in facts.weight_map)
        if not mtp:
            continue
        yield R.MTP009.finding(
            f"{shard} holds {len(mtp):,} MTP tensor(s) (e.g. {mtp[0]}) but {facts.index_file} does not name this shard",
            Location(shard, symbol=mtp[0]),
            evidence=[Evidence("index", f"{facts.index_file} names {len(facts.indexed_shards)} shard(s)", Location(facts.index_file or ""))],
        )


def check_escaping_paths(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP010: weight_map values that are absolute, contain ``..`` or a URL; they are never opened."""
    for name, raw in facts.escaping:
        yield R.MTP010.finding(
            f"{facts.index_file} maps {name} to {raw!r}, a path outside the checkpoint folder; it was not opened",
            Location(facts.index_file, symbol=pointer("weight_map", name)),
        )


def check_total_size(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP011: ``metadata.total_size`` differs from the sum of tensor bytes in the indexed shards'
    headers (only when every indexed shard's header was read)."""
    if facts.total_size is None or facts.index_file is None:
        return
    idx = facts.indexed_shards
    if not idx or any(s not in facts.headers for s in idx):
        return
    actual = sum(facts.headers[s].data_bytes for s in idx)
    if actual == facts.total_size:
        return
    elems = sum(math.prod(t.shape) for s in idx for t in facts.headers[s].tensors.values())
    note = ""
    if facts.total_size == 2 * elems:
        note = f"; total_size equals 2 bytes x {elems:,} elements, i.e. it was computed as if every tensor were BF16"
    yield R.MTP011.finding(
        f"{facts.index_file} metadata.total_size is {facts.total_size:,} but the {len(idx)} indexed shard header(s) "
        f"sum to {actual:,} bytes{note}",
        Location(facts.index_file, symbol="/metadata/total_size"),
        evidence=[Evidence("header sum", f"{actual:,}"), Evidence("metadata.total_size", f"{facts.total_size:,}")],
    )


def check_index_vs_headers(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP012: an index entry whose shard header lacks it (a ghost key), or a tensor in an indexed
    shard's header that the index does not list (redai-studio/Relax PR #148; vmlx-swift PR #388)."""
    if facts.index_file is None or not facts.headers:
        return
    by_shard: dict[str, list[str]] = defaultdict(list)
    for n, s in facts.weight_map.items():
        by_shard[s].append(n)
    ghosts: list[tuple[str, str]] = []
    omitted: list[tuple[str, str]] = []
    for s, names in by_shard.items():
        hdr = facts.headers.get(s)
        if hdr is None:
            continue
        ghosts += [(n, s) for n in names if n not in hdr.tensors]
        listed = set(names)
        omitted += [(n, s) for n in hdr.tensors if n not in listed and facts.weight_map.get(n) is None]
    if ghosts:
        ghosts.sort()
        n_mtp = sum(1 for n, _ in ghosts if n in facts.mtp)
        n, s = ghosts[0]
        yield R.MTP012.finding(
            f"{len(ghosts):,} tensor(s) in {facts.index_file} are not in the shard the index names"
            f"{f' ({n_mtp:,} MTP)' if n_mtp else ''}, e.g. {n} -> {s}",
            Location(facts.index_file, symbol=pointer("weight_map", n)),
        )
    if omitted:
        omitted.sort()
        n_mtp = sum(1 for n, _ in omitted if n in facts.mtp)
        n, s = omitted[0]
        yield R.MTP012.finding(
            f"{len(omitted):,} tensor(s) in indexed shard headers are missing from {facts.index_file}"
            f"{f' ({n_mtp:,} MTP)' if n_mtp else ''}, e.g. {n} in {s}; loaders that follow the index skip them",
            Location(s, symbol=n),
        )


def check_bad_headers(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP013: a shard whose safetensors header is malformed (length beyond the file or over 100 MB,
    not UTF-8, duplicate tensor names, bad entries); safetensors refuses to load it."""
    for rel, prob in sorted(facts.problems.items()):
        if prob.kind != "malformed":
            continue
        yield R.MTP013.finding(f"{rel}: {prob.problem}", Location(rel))


#: Every check, in rule-id order.
CHECKS: tuple[Check, ...] = (
    check_declared_missing,
    check_undeclared,
    check_layer_count,
    check_experts,
    check_excluded_cost,
    check_exclude_disagrees,
    check_missing_shards,
    check_unindexed_mtp,
    check_escaping_paths,
    check_total_size,
    check_index_vs_headers,
    check_bad_headers,
)


def check(facts: CheckpointFacts) -> list[Finding]:
    """Run every rule check on ``facts``."""
    out: list[Finding] = []
    for fn in CHECKS:
        out.extend(fn(facts))
    return out


def build_report(facts: CheckpointFacts) -> Report:
    """Facts -> findings -> :class:`Report` (rules evaluated: every checkpoint rule)."""
    findings = check(facts)
    return Report.build(
        ANALYZER,
        facts.display,
        findings=findings,
        gaps=facts.gaps,
        facts=build_facts(facts, findings),
        rule_ids=[r.id for r in R.RULES],
    )


def analyze(source: CheckpointSource, *, mode_hint: str | None = None) -> Report:
    """Audit one checkpoint source (see :func:`gather` for what is read and what raises). What the
    source itself could not see (:meth:`CheckpointSource.gaps`) becomes blocking gaps, and its
    description and I/O counters (HTTP requests, bytes read) become ``facts["checkpoint"]["source"]``."""
    facts = gather(source, mode_hint=mode_hint)
    facts.gaps += [Gap(ANALYZER, message, path) for path, message in source.gaps()]
    facts.source = {**source.describe(), **source.stats()}
    return build_report(facts)
