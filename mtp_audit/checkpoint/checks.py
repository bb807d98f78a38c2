"""The checkpoint rule checks (MTP001-MTP013): one ``check_*`` function per rule, each a pure function of
:class:`~mtp_audit.checkpoint.facts.CheckpointFacts` yielding findings. The rules themselves (docs,
sources, examples) are declared in :mod:`mtp_audit.checkpoint.rules`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import itemgetter, methodcaller
from pathlib import PurePosixPath
from typing import Any

from mtp_audit.checkpoint import checks_families
from mtp_audit.checkpoint import rules as R
from mtp_audit.checkpoint.accounting import (
    as_rest_of_model,
    declared_summary,
    expert_facts,
    human_bytes,
    linear_formats,
    summarize_formats,
    trunk_census,
    trunk_format_counts,
)
from mtp_audit.checkpoint.checks_families import is_dspark
from mtp_audit.checkpoint.config import QuantScheme
from mtp_audit.checkpoint.declared import DeclaredFormat, declared_bytes
from mtp_audit.checkpoint.facts import ANALYZER, CONFIG, MTP_ONLY_LEAVES, CheckpointFacts, pointer
from mtp_audit.checkpoint.overrides import MtpQuantOverride, overrides_for
from mtp_audit.checkpoint.tensors import (
    bytes_if_quantized,
    is_quantized,
    linear_shape,
    module_format,
)
from mtp_audit.report import Evidence, Finding, Gap, Location, Severity
from mtp_audit.report.questions import MTP_HEADS, STARTS

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
    if any(g.blocking for g in facts.gaps) or is_dspark(facts):
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
    if cfg is None or not facts.mtp or not cfg.declaration.declared or cfg.declaration.implicit or is_dspark(facts):
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
    if cfg is None or is_dspark(facts):
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


#: Path components of a decoder block's weights (attention, MLP / MoE, Mamba or linear-attention mixer, the block's
#: own layer norms): an MTP layer is a full decoder block around its glue (eh_proj / fc, enorm, hnorm, shared_head).
_BLOCK_PARTS = frozenset({"self_attn", "attn", "attention", "linear_attn", "mixer", "mlp", "block_sparse_moe", "feed_forward",
                          "ffn", "moe", "experts", "mtp_block", "q_proj", "qkv_proj", "o_proj", "gate_up_proj", "down_proj",
                          "input_layernorm", "post_attention_layernorm"})


def check_no_decoder_block(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP020: MTP tensors ship, but none of them belongs to a decoder block (only the glue around it)."""
    cfg = facts.config
    if not facts.mtp or is_dspark(facts) or (cfg is not None and cfg.layout is not None and cfg.layout.placement == "none"):
        return
    if any(_BLOCK_PARTS.intersection(name.split(".")) for name in facts.mtp):
        return
    glue = sorted({name.rsplit(".", 1)[0] for name in facts.mtp})
    first = sorted(facts.mtp)[0]
    yield R.MTP020.finding(
        f"{len(facts.mtp):,} MTP tensor(s) ship ({', '.join(g for g in glue[:6])}{', ...' if len(glue) > 6 else ''}), "
        "but no attention, MLP or mixer weight of the MTP decoder block: engines build that block for every MTP layer, "
        "so its weights are missing (vLLM refuses the load, SGLang drafts from uninitialised weights)",
        Location(facts.tensors.get(first) or facts.index_file or CONFIG, symbol=first),
        evidence=[Evidence("MTP tensors per layer", ", ".join(f"{k}: {v}" for k, v in facts.mtp_layer_labels().items()))],
    )


#: The glue tensors DeepSeek's NextN module builds for every MTP layer, and the layout families that use that module:
#: vLLM 0.33.0 deepseek_mtp.py:61,85-87 (SharedHead.norm, enorm, hnorm, eh_proj), SGLang 0.5.9 deepseek_nextn.py:94-97,
#: 122-123. embed_tokens and shared_head.head are left out: SGLang shares the target's.
_DEEPSEEK_GLUE = ("eh_proj.weight", "enorm.weight", "hnorm.weight", "shared_head.norm.weight")
_DEEPSEEK_NEXTN_FAMILIES = frozenset({"deepseek-v3", "deepseek-v3.2"})


def check_missing_glue(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP021: a DeepSeek MTP layer holds decoder-block weights but lacks one of the glue tensors the engine's NextN
    module loads (:data:`_DEEPSEEK_GLUE`); one finding per such layer."""
    cfg = facts.config
    if not facts.mtp or cfg is None or cfg.layout is None or cfg.layout.family not in _DEEPSEEK_NEXTN_FAMILIES:
        return
    if _glue_everywhere(facts.mtp):
        return
    per_layer: dict[str, set[str]] = {}
    for name, (label, _) in facts.mtp.items():
        per_layer.setdefault(label, set()).add(name[len(label) + 1:])
    for label, suffixes in sorted(per_layer.items()):
        if not any(_BLOCK_PARTS.intersection(s.split(".")) for s in suffixes):
            continue  # glue only or nothing of the block: MTP020's case
        missing = [g for g in _DEEPSEEK_GLUE if g not in suffixes]
        if not missing:
            continue
        first = min(f"{label}.{s}" for s in suffixes)
        yield R.MTP021.finding(
            f"{label} holds {len(suffixes):,} MTP tensor(s) of its decoder block but not "
            f"{', '.join(f'{label}.{g}' for g in missing)}: the engine's NextN module builds them for every MTP layer, "
            "so vLLM refuses the load and SGLang drafts through uninitialised weights",
            Location(facts.tensors.get(first) or facts.index_file or CONFIG, symbol=first),
            evidence=[Evidence("glue tensors present", f"{len(_DEEPSEEK_GLUE) - len(missing)} of {len(_DEEPSEEK_GLUE)}")],
        )


def _glue_everywhere(mtp: Mapping[str, tuple[str, Any]]) -> bool:
    """Whether every MTP layer holds each of :data:`_DEEPSEEK_GLUE` (``<label>.<glue>`` among its own tensors): then
    :func:`check_missing_glue` finds nothing missing, and its pass over every MTP tensor name is skipped. Never a
    false ``True``: a glue name found here is one of its layer's suffixes there."""
    for label in set(map(itemgetter(0), mtp.values())):
        for glue in _DEEPSEEK_GLUE:
            got = mtp.get(f"{label}.{glue}")
            if got is None or got[0] != label:
                return False
    return True


def check_excluded_cost(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP006: MTP linears stored unquantized while the trunk's linears are quantized; reports the
    bytes kept and what they would take in the format the quantization config gives the rest of the model
    (per module: a MIXED_PRECISION checkpoint's MLP counterpart is NVFP4, its attention FP8), or, without a
    declared format, in the trunk's most common one (checkpoint_formats.md §5, §7.3)."""
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
    now, would, exact = _excluded_bytes(facts, plain, target)
    rest = declared_summary(facts) or target
    inferred = any(inf for _, inf in mtp_fmts.values())
    first = sorted(plain)[0]
    kinds = ", ".join(f"{c} {f}" for f, c in sorted(Counter(plain.values()).items()))
    est = "" if exact else " (estimated from config.json)"
    yield R.MTP006.finding(
        f"{len(plain)} of {len(mtp_fmts)} MTP linear module(s) are stored unquantized ({kinds}) while the rest of "
        f"the model is {rest}: {human_bytes(now)}{est} kept for MTP; quantized like the rest of the model they "
        f"would take about {human_bytes(would)}, {human_bytes(max(now - would, 0))} more GPU memory per copy of "
        "the weights",
        Location(facts.mtp_modules[first].shard or facts.index_file or CONFIG, symbol=first),
        evidence=[
            Evidence("MTP linear formats", ", ".join(f"{f}: {c}" for f, c in summarize_formats(mtp_fmts)[1].items())),
            Evidence("trunk linear formats", ", ".join(f"{f}: {c}" for f, c in trunk_counts.items())),
            Evidence("declared scheme", rest),
            Evidence("formats inferred from tensor names", "yes" if inferred else "no (read from shard headers)"),
        ],
        remediation=(
            "Nothing to fix if this is deliberate (NVIDIA's ModelOpt exports keep MTP in BF16); budget the extra "
            "memory, or re-export with the MTP layer quantized if your engine supports quantized MTP."
        ),
    )


def _excluded_bytes(facts: CheckpointFacts, plain: dict[str, str], target: str) -> tuple[int, int, bool]:
    """``(bytes now, bytes quantized like the rest of the model, exact)`` of the unquantized MTP linears
    ``plain``: per module the format :func:`as_rest_of_model` gives its trunk counterpart, else ``target``."""
    cfg = facts.config
    assert cfg is not None
    scheme = facts.primary_scheme
    block = scheme.weight_block_size if scheme and target == "FP8" else None
    gs = scheme.group_size if scheme else None
    now = would = 0
    exact = True
    for m in plain:
        info = facts.mtp_modules[m].params.get("weight")
        shape: tuple[int, int] | None
        if info is not None and len(info.shape) == 2:
            shape = (info.shape[0], info.shape[1])
            now += info.nbytes
        else:
            shape = linear_shape(m, cfg.dims, cfg.num_experts)
            exact = False
            if shape is None:
                continue
            now += shape[0] * shape[1] * 2
        fmt = as_rest_of_model(facts, m)
        would += declared_bytes(shape, fmt) if fmt is not None else bytes_if_quantized(shape, target, block=block,
                                                                                        group_size=gs)
    return now, would, exact


def mtp_patterns(scheme: QuantScheme, modules: Iterable[str]) -> list[str]:
    """The exclusion patterns of ``scheme`` that cover at least one of the MTP ``modules`` (see
    :meth:`QuantScheme.mtp_patterns`)."""
    return scheme.mtp_patterns(modules)


def _list_evidence(scheme: QuantScheme, mtp_pats: list[str]) -> list[Evidence]:
    """Evidence lines for an exclusion list: the MTP patterns, and the size of the whole list, each labelled."""
    others = len(scheme.excludes) - len(mtp_pats)
    return [
        Evidence("exclusion patterns that cover MTP modules", ", ".join(mtp_pats) if mtp_pats else "(none)"),
        Evidence("other exclusion patterns (match no MTP module)", str(others)),
    ]


def _exclusion_mismatches(facts: CheckpointFacts, scheme: QuantScheme) -> tuple[
        dict[str, tuple[str, bool]], list[tuple[str, str, bool]], list[tuple[str, str, str]]]:
    """``(MTP linear formats, [(module, format, inferred)] stored unquantized but not excluded,
    [(module, format, pattern)] excluded but stored quantized)`` against ``scheme``'s exclusion list."""
    plain_not_excluded: list[tuple[str, str, bool]] = []
    quant_excluded: list[tuple[str, str, str]] = []
    fmts = linear_formats(facts, facts.mtp_modules)
    for m, (fmt, inferred) in sorted(fmts.items()):
        pat = scheme.excluded_by(m)
        if pat is None and not is_quantized(fmt):
            plain_not_excluded.append((m, fmt, inferred))
        elif pat is not None and is_quantized(fmt):
            quant_excluded.append((m, fmt, pat))
    return fmts, plain_not_excluded, quant_excluded


def _overrides(facts: CheckpointFacts, scheme: QuantScheme) -> list[MtpQuantOverride]:
    """The engine code known to ignore ``scheme``'s exclusion list for this family and method."""
    cfg = facts.config
    family = cfg.layout.family if cfg and cfg.layout else None
    return overrides_for(family, scheme.method, scheme.algo)


def exclusion_list_overrides(facts: CheckpointFacts) -> tuple[MtpQuantOverride, ...]:
    """The engines whose code builds every MTP linear that the exclusion list fails to cover unquantized, whatever
    the list says (MTP007 is a warning, not an error, because of them); ``()`` when the list covers every
    unquantized MTP linear or no engine is known to override it. Rows of
    :func:`~mtp_audit.checkpoint.overrides.quant_overrides`."""
    scheme = facts.primary_scheme
    if scheme is None or not scheme.has_exclusion_list or not facts.mtp:
        return ()
    _fmts, plain, _quant = _exclusion_mismatches(facts, scheme)
    names = [m for m, _, _ in plain]
    return tuple(o for o in _overrides(facts, scheme) if names and all(o.covers_module(m) for m in names))


def check_exclude_disagrees(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP007: for each MTP linear, "excluded by the quantization config" must match "stored
    unquantized" (vLLM PR #38650: ``mtp.fc`` stored BF16 while ``exclude_modules`` lists only
    ``mtp.layers.0*``). An error: an engine that trusts the list builds the module in the wrong format and
    the load fails or computes garbage; a warning when every uncovered module is built unquantized by engine
    code that ignores the list for this family and method (:func:`~mtp_audit.checkpoint.overrides.quant_overrides`),
    naming that engine, release and file:line."""
    scheme = facts.primary_scheme
    if scheme is None or not scheme.has_exclusion_list or not facts.mtp:
        return
    file, _, ptr = scheme.exclude_pointer.partition("#")
    if not file:
        file, _, ptr = scheme.source.partition("#")
    fmts, plain_not_excluded, quant_excluded = _exclusion_mismatches(facts, scheme)
    mtp_pats = mtp_patterns(scheme, fmts)
    engines = _overrides(facts, scheme)
    list_name = scheme.exclude_pointer.split("#")[-1] or "the exclusion list"
    if plain_not_excluded:
        names = [m for m, _, _ in plain_not_excluded]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        fmt0, inf0 = plain_not_excluded[0][1], plain_not_excluded[0][2]
        t0 = names[0]
        tensor0 = t0 + ".weight"
        saving = [o for o in engines if all(o.covers_module(m) for m in names)]
        partial = [o for o in engines if o not in saving and any(o.covers_module(m) for m in names)]
        ev = [
            Evidence("stored dtype", f"{tensor0}: {fmt0}", Location(facts.mtp_modules[t0].shard or facts.index_file or "", symbol=tensor0)),
            *_list_evidence(scheme, mtp_pats),
            Evidence("quantization", f"{scheme.method} {scheme.algo}"),
        ]
        ev += [Evidence("engine override (all of them)", f"{o.where}: {o.what}") for o in saving]
        ev += [Evidence("engine override (only some)", f"{o.where}: {o.what}") for o in partial]
        base = (f"{len(names)} MTP linear module(s) stored {fmt0}{' (inferred: no scale tensors)' if inf0 else ''} "
                f"are not covered by {list_name}: {shown}; ")
        fix = (f"Add the module(s) to the exclusion list (e.g. \"{t0}\" or \"mtp*\"; Model-Optimizer PR #1124 exports "
               "\"mtp*\").")
        if facts.config is None and not saving:
            facts.gaps.append(_unknown_override_gap(facts, file, base))
        elif saving:
            who = "; ".join(o.where for o in saving)
            yield R.MTP007.finding(
                base + f"an engine that trusts the list builds them as {scheme.algo} and fails, but {who} builds "
                "them unquantized for this architecture whatever the list says, so the load works there",
                Location(file, symbol=ptr or None),
                evidence=ev,
                severity=Severity.WARNING,
                remediation=fix + f" Until then serve it with {' or '.join(f'{o.engine} >= {o.version}' for o in saving)}.",
            )
        else:
            yield R.MTP007.finding(
                base + f"an engine that trusts the list builds them as {scheme.algo} and fails to load or loads garbage"
                + ("" if engines else "; no engine code known to override the list for this architecture"),
                Location(file, symbol=ptr or None),
                evidence=ev,
                remediation=fix,
            )
    if quant_excluded:
        m, fmt, pat = quant_excluded[0]
        yield R.MTP007.finding(
            f"{len(quant_excluded)} MTP linear module(s) are excluded by \"{pat}\" but stored {fmt} "
            f"(e.g. {m}); an engine that trusts the list builds them unquantized and cannot load the packed weights",
            Location(file, symbol=ptr or None),
            evidence=[Evidence("stored format", f"{m}: {fmt}", Location(facts.mtp_modules[m].shard or "", symbol=m + ".weight")),
                      *_list_evidence(scheme, mtp_pats)],
            remediation=f"Remove \"{pat}\" from the exclusion list, or re-export {m} unquantized.",
        )


def _unknown_override_gap(facts: CheckpointFacts, file: str, base: str) -> Gap:
    """MTP007 without ``config.json``: the architecture is unknown, so whether engine code overrides the exclusion
    list for it (as SGLang 0.5.23 qwen3_5_mtp.py:65-69 does for Qwen3.5) could not be told; MTP022 carries the error
    of the missing config. A gap on the MTP-heads question, never an error that less evidence would raise; blocking
    only where MTP022 does not already decide that question (one file named alone, or a params.json folder)."""
    decided = facts.mode != "single-file" and "params.json" not in facts.files  # MTP022 fires: no engine loads it
    return Gap(ANALYZER, base + "whether the engine builds them unquantized whatever the list says could not be told: "
               "no config.json, so the architecture (and any engine code that overrides the list for it) is unknown",
               file or None, blocking=not decided, question=MTP_HEADS)


_UNQUANT = frozenset({"BF16", "F16", "F32", "unquantized"})


def _agrees(declared: str, stored: str) -> bool:
    """Whether a stored format is what the declared one looks like on disk (``FP4`` = 4-bit floats whose scales
    were not seen)."""
    if declared == stored:
        return True
    if declared == "BF16":
        return stored in _UNQUANT
    return declared in ("NVFP4", "MXFP4") and stored == "FP4"


def _declared_disagreements(facts: CheckpointFacts) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """``(declared label, stored format) -> [(module, inferred)]`` for every linear whose tensors are not stored
    the way the primary quantization config declares. MTP modules stored BF16 against a quantized declaration
    (or the reverse) are left to MTP007."""
    scheme = facts.primary_scheme
    out: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
    if scheme is None:
        return out
    uniform, same = scheme.uniform_declaration()
    if uniform and same is None:
        return _nominal_disagreements(facts, scheme)
    tables = ((facts.mtp_modules, True),) if uniform and same is not None and _trunk_agrees(facts, same) else \
        ((facts.trunk_modules, False), (facts.mtp_modules, True))
    for table, is_mtp in tables:
        for m, (fmt, inferred) in sorted(linear_formats(facts, table).items()):
            d = same if uniform else scheme.declared_format(m)
            if d is None or _agrees(d.format, fmt):
                continue
            if is_mtp and d.quantized != is_quantized(fmt):
                continue  # MTP007 reports it, with the engine overrides
            out[(d.label(), fmt)].append((m, inferred))
    return out


def _nominal_disagreements(facts: CheckpointFacts, scheme: QuantScheme) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """``(declared label, stored format) -> [(module, inferred)]`` for a config that names one quantized format and
    leaves the unquantized modules to the model code (FP8 block without ``modules_to_not_convert``: DeepSeek-V3 keeps
    its gate and eh_proj BF16): a module stored BF16 may be one the model code builds unquantized, so only a module
    stored in *another quantized* format disagrees. The model code builds it either as the declared format or
    unquantized, and packed NVFP4 weights (U8, half the last dimension) with their ``weight_scale`` /
    ``weight_scale_2`` fit neither (vLLM 0.33.0 layers/linear.py:408 and :605 assert the shapes). Read from the
    trunk census first, so a checkpoint stored as declared costs no pass over its modules."""
    out: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
    nominal = scheme.nominal
    if nominal is None or not nominal.quantized:
        return out  # the config declares nothing for any module: nothing can disagree

    def other(fmt: str) -> bool:
        return is_quantized(fmt) and not _agrees(nominal.format, fmt)

    tables: list[Any] = [facts.mtp_modules]
    if any(other(fmt) for fmt in trunk_format_counts(facts)):
        tables.insert(0, facts.trunk_modules)
    for table in tables:
        fmts = linear_formats(facts, table)
        if not any(other(fmt) for fmt, _ in set(fmts.values())):
            continue  # stored as declared (or BF16): no pass over the modules
        for m, (fmt, inferred) in sorted(fmts.items()):
            if other(fmt):
                out[(nominal.label(), fmt)].append((m, inferred))
    return out


def _trunk_agrees(facts: CheckpointFacts, same: DeclaredFormat) -> bool:
    """Whether every trunk linear is stored the way ``same`` (the one declaration for all modules) says, from the
    trunk census (:func:`trunk_census`); False when the census cannot tell (then each module is looked at)."""
    got = trunk_census(facts) if facts.infos else None
    return got is not None and all(_agrees(same.format, fmt) for fmt, _ in got)


def check_declared_disagrees(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP015: a linear module's tensors are not stored the way the quantization config declares (declared
    INT4 W4A16 but stored FP8, declared FP8 by a MIXED_PRECISION ``quantized_layers`` entry but stored NVFP4,
    declared BF16 by the exclusion list but stored quantized...). Engines build each module from the
    declaration (vLLM ``modelopt_mixed`` per ``quantized_layers`` entry, compressed-tensors per
    ``config_groups`` target, Quark per layer config), so the stored tensors do not fit: the load fails on a
    shape or dtype, or the module computes garbage."""
    scheme = facts.primary_scheme
    if scheme is None:
        yield from _quantized_without_config(facts)
        return
    for (label, fmt), mods in sorted(_declared_disagreements(facts).items()):
        m, inferred = mods[0]
        d = scheme.declared_format(m)
        where = d.pointer if d is not None and d.pointer else scheme.source
        file, _, ptr = where.partition("#")
        shown = ", ".join(x for x, _ in mods[:3]) + (f" and {len(mods) - 3:,} more" if len(mods) > 3 else "")
        how = "inferred from tensor names" if inferred else "read from the shard header"
        yield R.MTP015.finding(
            f"{len(mods):,} linear module(s) are declared {label} by {file} but their tensors are stored {fmt} "
            f"({how}): {shown}; an engine builds them as declared and the stored weights do not fit",
            Location(file, symbol=ptr or None),
            evidence=[
                Evidence("declared", f"{m}: {label} ({where})"),
                Evidence("stored", f"{m}: {fmt} ({how})", Location(facts.tensors.get(m + ".weight") or "", symbol=m)),
                Evidence("stored tensors", _tensor_list(facts, m)),
                Evidence("quantization", f"{scheme.method} {scheme.algo} ({scheme.source})"),
            ],
            remediation=f"Re-export {m} as {label}, or correct the quantization config to say how it is stored.",
        )


#: Parameter suffixes that exist only beside quantized weights and that a module built unquantized has no parameter
#: for (``input_scale`` alone, ``k_scale`` / ``v_scale`` are activation or KV-cache scales: not counted).
_QUANT_ONLY_SUFFIXES = ("weight_scale_2", "weight_scale_inv", "weight_scale", "weight_packed", "weight_global_scale",
                        "qweight", "qzeros", "weight_zero_point")
_QUANT_ONLY_RE = re.compile(r"^(.+)\.(" + "|".join(_QUANT_ONLY_SUFFIXES) + r")$", re.M)

#: Files and config keys where a quantization config may sit that this audit does not read (AutoGPTQ / AutoAWQ
#: sidecars that vLLM 0.33.0 weight_utils.py get_quant_config reads when ``--quantization`` names the method;
#: ``text_config.quantization_config`` and ``compression_config``, weight_utils.py:240-247).
_UNREAD_QUANT_FILES = ("quantize_config.json", "quant_config.json", "quantization_config.json")
_UNREAD_QUANT_KEYS = ("compression_config", "text_config/quantization_config")


def _tensor_list(facts: CheckpointFacts, module: str, limit: int = 4) -> str:
    """``"m.weight U8 [8, 4], m.weight_scale F8_E4M3 [8, 1]"``: the module's tensors with the dtype and shape their
    header gives (``"(header not read)"`` where only the index names them)."""
    names = [n for n in (f"{module}.{p}" for p in ("weight", *_QUANT_ONLY_SUFFIXES, "input_scale")) if n in facts.tensors]
    shown = []
    for n in names[:limit]:
        info = facts.infos.get(n)
        shown.append(f"{n} {info.dtype} {list(info.shape)}" if info is not None else f"{n} (header not read)")
    return ", ".join(shown) or "(no tensor listed)"


def _unread_quant_declaration(facts: CheckpointFacts) -> str | None:
    """Where a quantization config may be that the audit does not parse (a file or a config key), or None."""
    for f in ("hf_quant_config.json", *_UNREAD_QUANT_FILES):
        if f in facts.files:
            return f  # present but no scheme was read from it
    raw = facts.cache.get(CONFIG)
    for key in ("quantization_config", "quantization"):
        if isinstance(raw, dict) and raw.get(key) is not None:
            return f"{CONFIG}#/{key}"
    text = raw.get("text_config") if isinstance(raw, dict) else None
    if isinstance(raw, dict) and raw.get("compression_config") is not None:
        return f"{CONFIG}#/{_UNREAD_QUANT_KEYS[0]}"
    if isinstance(text, dict) and text.get("quantization_config") is not None:
        return f"{CONFIG}#/{_UNREAD_QUANT_KEYS[1]}"
    return None


def _quantized_modules(facts: CheckpointFacts) -> dict[str, str]:
    """Module -> stored format for every module whose tensors include a quantization-only sibling
    (:data:`_QUANT_ONLY_SUFFIXES`), from the tensor names (one regex pass, run only when one of the suffixes occurs)."""
    joined = facts.joined_names
    if not any("." + suf in joined for suf in ("weight_scale", "weight_packed", "weight_global_scale", "qweight",
                                               "qzeros", "weight_zero_point")):
        return {}
    groups: dict[str, set[str]] = defaultdict(set)
    for m in _QUANT_ONLY_RE.finditer(joined):
        groups[m.group(1)].add(m.group(2))
    out = {}
    for mod, sufs in groups.items():
        params = {p: facts.infos.get(f"{mod}.{p}") for p in ("weight", *sufs) if f"{mod}.{p}" in facts.tensors}
        fmt, _ = module_format(params, "")
        if is_quantized(fmt):
            out[mod] = fmt
    return out


def _quantized_without_config(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP015 with nothing declared: tensors stored quantized (NVFP4 U8 + ``weight_scale`` / ``weight_scale_2``, FP8
    + ``weight_scale_inv``...) while neither ``config.json#/quantization_config`` nor ``hf_quant_config.json`` exists.
    vLLM 0.33.0 (transformers_utils/config.py:951-962) and SGLang 0.5.9 (configs/model_config.py:647-735) then build
    every linear unquantized: a packed weight does not fit its parameter (vLLM 0.33.0 layers/linear.py:408, :605;
    SGLang 0.5.9 layers/linear.py:260, :416 assert the shapes) and the scale tensors have no parameter at all. A
    quantization config the audit does not read (an AutoGPTQ sidecar, ``compression_config``) makes it a blocking
    gap instead (could not tell)."""
    if facts.config is None or facts.schemes:
        return
    mods = _quantized_modules(facts)
    if not mods:
        return
    unread = _unread_quant_declaration(facts)
    counts = Counter(mods.values())
    kinds = ", ".join(f"{f}: {n:,}" for f, n in sorted(counts.items()))
    first = sorted(mods)[0]
    if unread is not None:
        facts.gaps.append(Gap(ANALYZER, f"{len(mods):,} linear module(s) are stored quantized ({kinds}) and the "
                              f"quantization config is in {unread}, which this audit does not read: whether the "
                              "engine builds them quantized could not be told", unread.partition("#")[0],
                              question=STARTS))
        return
    yield R.MTP015.finding(
        f"{len(mods):,} linear module(s) are stored quantized ({kinds}), e.g. {first}, but nothing declares a "
        f"quantization: {CONFIG} has no quantization_config and there is no hf_quant_config.json; an engine builds "
        "every linear unquantized and the packed weights and their scale tensors do not fit",
        Location(CONFIG),
        evidence=[
            Evidence("declared", f"none: {CONFIG}#/quantization_config absent, hf_quant_config.json absent"),
            Evidence("stored tensors", _tensor_list(facts, first),
                     Location(facts.tensors.get(first + ".weight") or facts.index_file or "", symbol=first)),
            Evidence("engines", "vLLM 0.33.0 transformers_utils/config.py:951-962 and SGLang 0.5.9 "
                     "configs/model_config.py:647-735 read only these two; layers/linear.py asserts the weight shape"),
        ],
        remediation=("Restore the quantization config that came with these weights (hf_quant_config.json or "
                     "config.json quantization_config), or use the unquantized release."),
    )


#: Tensor leaves that exist only in an appended (DeepSeek-style) MTP layer (:data:`~mtp_audit.checkpoint.facts.MTP_ONLY_LEAVES`).
#: Found inside a trunk layer (index < num_hidden_layers) they are where no MTP loader looks:
#: vLLM 0.33.0 models/utils.py:589-595 ``get_spec_layer_idx_from_weight_name`` accepts only
#: ``model.layers.{num_hidden_layers + i}.``, and deepseek_mtp.py:344-345 skips every other weight.
_MTP_ONLY_LEAVES = MTP_ONLY_LEAVES
_MISPLACED_RE = re.compile(
    r"^((?:model\.(?:language_model\.)?)?layers\.(\d+))\.(" + "|".join(_MTP_ONLY_LEAVES) + r")[.\n]", re.M
)


def _misplaced_matches(joined: str) -> Iterator[re.Match[str]]:
    """What ``_MISPLACED_RE.finditer(joined)`` finds, tried only at the starts of the lines that hold ``.<leaf>`` for
    a leaf of :data:`_MTP_ONLY_LEAVES` (a handful in a 92k-name index) instead of at every position: a match
    starts at a line start, holds ``.<leaf>`` and never runs past its line's newline, so each line has at most
    one, and it is the one ``match`` finds at that line's start."""
    starts = sorted({joined.rfind("\n", 0, i) + 1 for leaf in _MTP_ONLY_LEAVES for i in _find_all(joined, "." + leaf)})
    for start in starts:
        m = _MISPLACED_RE.match(joined, start)
        if m is not None:
            yield m


def _matches_at(joined: str, starts: list[int]) -> Iterator[re.Match[str]]:
    """What :func:`_misplaced_matches` finds, tried only at ``starts`` (ascending line starts): from
    :meth:`CheckpointFacts.mtp_only_leaf_lines`, every line holding ``layers.<i>.<leaf>`` + ``.`` or newline with ``i``
    below the trunk depth. A match of :data:`_MISPLACED_RE` is such an occurrence at its line's start, so the lines
    left out hold none with ``i`` below the depth, the only ones :func:`check_misplaced` keeps."""
    for start in starts:
        m = _MISPLACED_RE.match(joined, start)
        if m is not None:
            yield m


def _find_all(text: str, part: str) -> list[int]:
    out, i = [], text.find(part)
    while i != -1:
        out.append(i)
        i = text.find(part, i + 1)
    return out


#: Any ``.<leaf>`` of :data:`_MTP_ONLY_LEAVES`. Each alternative holds one dot, its first character, and none is a
#: prefix of another, so two occurrences never overlap and the matches of one scan count each leaf as ``str.count``
#: of ``"." + leaf`` does.
_MTP_ONLY_PART = re.compile(r"\.(?:" + "|".join(_MTP_ONLY_LEAVES) + ")")


def _only_in(names: Iterable[str], joined: str) -> bool:
    """Whether every ``.<leaf>`` of :data:`_MTP_ONLY_LEAVES` in ``joined`` lies in one of ``names`` (lines of it):
    the occurrences of each in the joined text (one C-speed regex scan, :data:`_MTP_ONLY_PART`, instead of a
    ``str.count`` per leaf) against those in these few names."""
    own = "\n".join(names)  # no ".<leaf>" spans a newline, so counting in the joined names counts in each
    return Counter(_MTP_ONLY_PART.findall(joined)) == Counter(_MTP_ONLY_PART.findall(own))


def check_misplaced(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP014: MTP-only tensors (``enorm``, ``hnorm``, ``eh_proj``, ``shared_head``) inside a trunk layer of an
    appended-placement family: the family's loader looks for the MTP layer at ``model.layers.{N}`` and never
    reads them, so the declared MTP layer is not usable (usually ``num_hidden_layers`` counts the MTP layer,
    or an export renumbered it)."""
    cfg = facts.config
    if cfg is None or cfg.layout is None or cfg.layout.placement != "appended" or cfg.num_hidden_layers is None:
        return
    n = cfg.num_hidden_layers
    mtp = facts.mtp
    # Every name joined (no Python step per name); a match on an MTP tensor's own line is skipped below. A match
    # never crosses a line, so this finds what a scan of the trunk names alone finds. A name holding a newline
    # would split into several lines (one of them looking like a trunk tensor of its own): then the trunk names
    # are joined alone, each newline inside a name written as NUL.
    odd = not facts.names_newline_free
    skip = mtp if mtp and not odd else None
    joined = facts.joined_names if not odd else "".join(n_.replace("\n", "\0") + "\n" for n_ in facts.tensors if n_ not in mtp)
    starts = None if odd else facts.mtp_only_leaf_lines(n)  # taken by the MTP candidate scan: no scan here
    if starts is None and _only_in(skip or (), joined):
        return  # no such leaf outside the MTP tensors' own lines (the common case: one C-speed scan)
    per: dict[str, set[str]] = defaultdict(set)
    first: dict[str, str] = {}
    for m in _misplaced_matches(joined) if starts is None else _matches_at(joined, starts):
        if int(m.group(2)) < n:
            if skip is not None and joined[m.start():joined.find("\n", m.start())] in skip:
                continue
            per[m.group(1)].add(m.group(3))
            first.setdefault(m.group(1), m.group(0).rstrip(".\n"))
    for layer in sorted(per, key=lambda x: int(x.rsplit(".", 1)[1])):
        leaves = sorted(per[layer])
        name = next((t for t in facts.tensors if t.startswith(first[layer] + ".")), first[layer])
        decl = cfg.declaration
        yield R.MTP014.finding(
            f"{layer} holds MTP-only tensors ({', '.join(leaves)}) but it is trunk layer "
            f"{layer.rsplit('.', 1)[1]} of {n} (num_hidden_layers = {n}): the {cfg.layout.display} loader reads the MTP "
            f"layer from {_mtp_where(facts)} and never loads these, so "
            + ("the declared MTP layer is not usable" if decl.declared else "they are dead weight"),
            Location(facts.tensors.get(name) or facts.index_file or CONFIG, symbol=name),
            evidence=[
                Evidence("config num_hidden_layers", str(n), Location(CONFIG, symbol=(cfg.text_pointer + "/num_hidden_layers"))),
                Evidence("MTP declaration", f"{decl.layers} at {decl.key or 'implicit'}", _decl_location(facts)),
                Evidence("MTP tensors where the loader looks", f"{len(facts.mtp):,}"),
            ],
        )


def check_missing_shards(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP008: the index names shard files that a folder with shards does not have, or has only as a symlink to a
    missing file, or has as a directory (in a folder with or without shards: the engine's open fails on each)."""
    missing = facts.missing_shards
    if not missing or facts.index_file is None:
        return
    per: Counter[str] = Counter(facts.weight_map.values())
    mtp_in = Counter(facts.weight_map[n] for n in facts.mtp if n in facts.weight_map)
    dangling, folders = set(facts.dangling_shards), set(facts.folder_shards)
    for shard in missing:
        extra = f", {mtp_in[shard]:,} of them MTP tensors" if mtp_in.get(shard) else ""
        where = ("a symlink to no file" if shard in dangling else "a directory, not a file (the loader's open fails on it)"
                 if shard in folders else "not in the folder")
        yield R.MTP008.finding(
            f"{facts.index_file} maps {per[shard]:,} tensor(s) to {shard}, which is {where}{extra}",
            Location(facts.index_file, symbol=pointer("weight_map", next(n for n, s in facts.weight_map.items() if s == shard))),
            evidence=[Evidence("shards present", f"{len(facts.shards_present)} of {len(facts.indexed_shards)}")],
        )


def check_unglobbed_shards(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP008 for a ``weight_map`` value that is not a plain top-level file name (``sub/x.safetensors``,
    ``sub/../x.safetensors``, ``./x.safetensors``; inside the folder, so not MTP010): vLLM 0.33.0 lists the shards with
    a top-level glob (model_loader/default_loader.py:230) and compares each ``os.path.join(folder, value)`` string with
    it, raising FileNotFoundError 'Weight files referenced in index but missing' (weight_utils.py:603-613); SGLang
    0.5.9 (model_loader/loader.py:442, weight_utils.py:599-603) keeps only the globbed files the strings name, so the
    shard is never loaded."""
    for raw, (rel, n, first) in sorted(facts.cache.get("index_paths_unglobbed", {}).items()):
        mtp = sum(1 for t in facts.mtp if facts.weight_map.get(t) == rel) if facts.mtp else 0
        extra = f", {mtp:,} of them MTP tensors" if mtp else ""
        yield R.MTP008.finding(
            f"{facts.index_file} maps {n:,} tensor(s) to \"{raw}\" (inside the folder: {rel}){extra}, which is not "
            "a top-level shard name: vLLM compares the joined path with its top-level glob of *.safetensors and "
            "raises FileNotFoundError, SGLang never loads the shard",
            Location(facts.index_file or "", symbol=pointer("weight_map", first)),
            evidence=[Evidence("weight_map value", raw),
                      Evidence("engines", "vLLM 0.33.0 model_loader/default_loader.py:230, weight_utils.py:603-613; "
                               "SGLang 0.5.9 model_loader/loader.py:442, weight_utils.py:599-603")],
            remediation=f"Move the shard to the top level of the folder and write \"{PurePosixPath(rel).name}\" in "
                        "weight_map.",
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
    elems = sum(facts.headers[s].elements for s in idx)
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
    if facts.cache.get("headers_match_index"):
        return  # every indexed tensor is in its shard and every header tensor is indexed (checked while gathering)
    located: dict[str, str] = {}
    for s, hdr in facts.headers.items():
        located.update(dict.fromkeys(hdr.tensors, s))
    if located == facts.weight_map:
        return  # the same, when the index has entries the gathering could not use (C-speed compare)
    by_shard: dict[str, list[str]] = defaultdict(list)
    for n, s in facts.weight_map.items():
        by_shard[s].append(n)
    ghosts: list[tuple[str, str]] = []
    omitted: list[tuple[str, str]] = []
    for s, names in by_shard.items():
        shard_hdr = facts.headers.get(s)
        if shard_hdr is None:
            continue
        ghosts += [(n, s) for n in names if n not in shard_hdr.tensors]
        listed = set(names)
        omitted += [(n, s) for n in shard_hdr.tensors if n not in listed and facts.weight_map.get(n) is None]
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


#: The MTP glue whose shape the engines' model code fixes from ``hidden_size`` (h): tensor suffix under the MTP layer
#: label -> shape in units of h. DeepSeek NextN: vLLM 0.33.0 deepseek_mtp.py:61 (shared_head.norm), :85-87 (enorm,
#: hnorm, eh_proj = nn.Linear(2h, h): weight [h, 2h]); SGLang 0.5.9 deepseek_nextn.py:94-97. Qwen3.5 / Qwen3-Next
#: MTP: vLLM 0.33.0 qwen3_5_mtp.py:98-100 (fc = ColumnParallelLinear(2h, h)), :135-141 (norm, pre_fc_norm_hidden,
#: pre_fc_norm_embedding); SGLang 0.5.9 qwen3_5_mtp.py:60-65, qwen3_next_mtp.py:56-61. Their loaders assert the
#: shape (vLLM 0.33.0 model_loader/weight_utils.py:1538, layers/linear.py:605; SGLang 0.5.9
#: model_loader/weight_utils.py:1027).
_DEEPSEEK_GLUE_SHAPES = {"eh_proj.weight": (1, 2), "enorm.weight": (1,), "hnorm.weight": (1,),
                         "shared_head.norm.weight": (1,)}
_QWEN_GLUE_SHAPES = {"fc.weight": (1, 2), "norm.weight": (1,), "pre_fc_norm_hidden.weight": (1,),
                     "pre_fc_norm_embedding.weight": (1,)}
_GLUE_SHAPES = {"deepseek-v3": _DEEPSEEK_GLUE_SHAPES, "deepseek-v3.2": _DEEPSEEK_GLUE_SHAPES,
                "qwen3.5-moe": _QWEN_GLUE_SHAPES, "qwen3.5-dense": _QWEN_GLUE_SHAPES, "qwen3-next": _QWEN_GLUE_SHAPES}
#: Weight dtypes whose stored shape is the module's: unquantized and one-byte formats; U8 packs two FP4 values
#: per byte (NVFP4 / MXFP4: the last dimension halved). Other dtypes (I32 packing) are not judged.
_WHOLE_DTYPES = frozenset({"BF16", "F16", "F32", "F8_E4M3", "F8_E5M2", "I8"})


def _expected_glue_shape(units: tuple[int, ...], h: int, dtype: str) -> tuple[int, ...] | None:
    """The header shape a glue tensor of ``units`` (multiples of ``h``) must have when stored as ``dtype``; None when
    the packing of ``dtype`` is not known."""
    shape = tuple(u * h for u in units)
    if dtype in _WHOLE_DTYPES or len(shape) == 1:
        return shape
    if dtype == "U8" and shape[-1] % 2 == 0:
        return (*shape[:-1], shape[-1] // 2)
    return None


def check_glue_shapes(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP023: an MTP glue tensor (eh_proj / fc, the enorm / hnorm / pre-fc norms) whose header shape is not the one
    the engine's MTP module builds from config.json's ``hidden_size`` (:data:`_GLUE_SHAPES`); the loader asserts the
    shape, so the draft does not load. Judged only from a header read and a known ``hidden_size``; one finding per
    MTP layer label, naming every tensor that disagrees."""
    cfg = facts.config
    table = _GLUE_SHAPES.get(cfg.layout.family) if cfg is not None and cfg.layout is not None else None
    h = cfg.dims.get("hidden_size") if cfg is not None else None
    if table is None or not isinstance(h, int) or isinstance(h, bool) or h <= 0 or not facts.infos:
        return
    bad: dict[str, list[str]] = defaultdict(list)
    ends = tuple("." + k for k in table)
    mtp = facts.mtp
    for name in sorted(filter(methodcaller("endswith", ends), mtp)):  # names are unique: sorted as (name, value) pairs
        label = mtp[name][0]
        units = table.get(name[len(label) + 1:])
        info = facts.infos.get(name) if units is not None else None
        if info is None or units is None:
            continue
        want = _expected_glue_shape(units, h, info.dtype)
        if want is not None and tuple(info.shape) != want:
            bad[label].append(f"{name} {info.dtype} {list(info.shape)}, expected {list(want)}")
    where = f"{cfg.text_pointer}/hidden_size" if cfg is not None else ""
    for label, lines in sorted(bad.items()):
        first = lines[0].split(" ", 1)[0]
        yield R.MTP023.finding(
            f"{len(lines)} MTP tensor(s) of {label} do not have the shape the engine's MTP module builds from "
            f"hidden_size {h} ({CONFIG}#{where}): {lines[0]}; the loader asserts the shape, so the draft does not load",
            Location(facts.tensors.get(first) or CONFIG, symbol=first),
            evidence=[Evidence("header shapes", "; ".join(lines[:4]) + (f"; and {len(lines) - 4} more" if len(lines) > 4 else "")),
                      Evidence("config", f"{CONFIG}#{where} = {h}")],
            remediation="Use the config.json that came with these weights (hidden_size), or re-export the MTP layer "
                        "for this config.",
        )


def check_config_missing(facts: CheckpointFacts) -> Iterator[Finding]:
    """MTP022: a checkpoint folder (index or shards, not one file named alone) has no ``config.json`` and no
    ``params.json``; every engine reads one of them before any weight (vLLM 0.33.0 transformers_utils/config.py:899-908,
    SGLang 0.5.9 utils/hf_transformers_utils.py:315)."""
    if facts.config is not None or facts.mode == "single-file" or {CONFIG, "params.json"} & set(facts.files):
        return
    held = ([facts.index_file] if facts.index_file else []) + (
        [f"{len(facts.shards_present):,} shard file(s)"] if facts.shards_present else [])
    heads = f", so its {len(facts.mtp):,} MTP tensor(s) are never used" if facts.mtp else ""
    yield R.MTP022.finding(
        f"the checkpoint holds {' and '.join(held)} but no config.json: no engine loads a model folder without it"
        f"{heads}",
        Location(CONFIG),
        evidence=[Evidence("files", f"{len(facts.files):,} file(s), no config.json and no params.json")],
    )


#: Every check, in rule-id order.
CHECKS: tuple[Check, ...] = (
    check_declared_missing,
    check_undeclared,
    check_layer_count,
    check_experts,
    check_no_decoder_block,
    check_missing_glue,
    check_excluded_cost,
    check_exclude_disagrees,
    check_missing_shards,
    check_unglobbed_shards,
    check_unindexed_mtp,
    check_escaping_paths,
    check_total_size,
    check_index_vs_headers,
    check_bad_headers,
    check_misplaced,
    check_declared_disagrees,
    *checks_families.CHECKS,
    check_config_missing,
    check_glue_shapes,
)


def check(facts: CheckpointFacts) -> list[Finding]:
    """Run every rule check on ``facts``. When the user named one shard of a sharded set (``model-00001-of-00002``),
    a finding that rests on a tensor being absent (:data:`ABSENCE_RULES`) is a blocking gap instead, appended to
    ``facts.gaps``: the tensor may sit in a shard that was not read."""
    out: list[Finding] = []
    for fn in CHECKS:
        out.extend(fn(facts))
    part = _one_shard_of_many(facts)
    if part is None:
        return out
    for f in out:
        if f.rule_id in ABSENCE_RULES:
            facts.gaps.append(Gap(ANALYZER, f"{f.rule_id} not decided: {f.message}; only {part} was read, the rest "
                                  "may be in the other shards", f.location.path or None, question=f.question))
    return [f for f in out if f.rule_id not in ABSENCE_RULES]


#: Rules whose finding rests on a tensor being absent (declared MTP layers, experts, glue or decoder block not found).
ABSENCE_RULES = frozenset({"MTP001", "MTP002", "MTP004", "MTP005", "MTP020", "MTP021"})

_SHARD_OF = re.compile(r"-(\d+)-of-(\d+)\.safetensors$")


def _one_shard_of_many(facts: CheckpointFacts) -> str | None:
    """``"model-00001-of-00002.safetensors (shard 1 of 2)"`` when the user named one shard of a set of several, else
    None (a whole checkpoint, or a lone ``model.safetensors``)."""
    if facts.mode != "single-file" or len(facts.headers) != 1:
        return None
    name = next(iter(facts.headers))
    m = _SHARD_OF.search(name)
    if m is None or int(m.group(2)) < 2:
        return None
    return f"{name} (shard {int(m.group(1))} of {int(m.group(2))})"
