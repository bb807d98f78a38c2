"""The checkpoint report: ``facts["checkpoint"]`` (summary, declaration, tensors, formats, bytes, the
per-engine answer) and the closing "Will SGLang use the MTP heads?" section, built from the facts and the
findings (:func:`build_report`).

Source for the answer: SGLang ``python/sglang/srt/server_args.py`` ("NEXTN shares the same implementation of
EAGLE"; the target model path doubles as the draft model path).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from mtp_audit.checkpoint import rules as R
from mtp_audit.checkpoint.accounting import (
    expert_facts,
    linear_formats,
    mtp_attention_bytes,
    mtp_embed_head_bytes,
    mtp_bytes,
    summarize_formats,
    trunk_format_counts,
)
from mtp_audit.checkpoint.checks import check
from mtp_audit.checkpoint.checks_families import is_dspark
from mtp_audit.checkpoint.facts import ANALYZER, SGLANG_SOURCE, CheckpointFacts
from mtp_audit.checkpoint.layouts import hf_hallmarks
from mtp_audit.checkpoint.predict import expected_mtp_modules, predict, prediction_line
from mtp_audit.checkpoint.tensors import (
    SCALE_SUFFIXES,
    split_param,
)
from mtp_audit.report import Finding, Report


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
    if s.algo == "MIXED_PRECISION" and s.layer_formats:
        per = Counter(f.label() for f in s.layer_formats.values())
        bits.append(" + ".join(f"{n:,} {lab}" for lab, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])))
                    + " quantized_layers entries")
    elif s.nominal is not None and s.nominal.format in ("INT4", "INT8"):
        bits.append(s.nominal.label())  # weight-only or not, zero points or not: not in the algorithm's name
    if s.identified_by == "parameters":
        bits.append(f"{s.scale_format} scales, identified from the weight parameters" if s.scale_format
                    else "identified from the weight parameters")
    return f"{s.algo} ({', '.join(bits)})"


def build_facts(facts: CheckpointFacts, findings: Iterable[Finding]) -> dict[str, Any]:
    """The JSON facts document for ``facts["checkpoint"]`` (schema in docs/checkpoint.md)."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    mtp_fmts = linear_formats(facts, facts.mtp_modules)
    mtp_state, mtp_counts = summarize_formats(mtp_fmts)
    trunk_counts = trunk_format_counts(facts)
    trunk_state = "none" if not trunk_counts else next(iter(trunk_counts)) if len(trunk_counts) == 1 else "mixed"
    nbytes = mtp_bytes(facts)
    findings = list(findings)
    usable, blocking, overridden = _usability(facts, findings)
    prediction = predict(facts)
    mtp_mods = list(facts.mtp_modules) if facts.mtp else expected_mtp_modules(facts)
    summary = _summary(facts, mtp_state, trunk_state, nbytes, usable, mtp_mods)
    return {
        "summary": summary,
        "closing": _closing(summary, decl, usable, blocking, facts, mtp_counts, overridden, prediction),
        "answer": _answer(summary, decl, usable, blocking, facts),
        "prediction": prediction,
        "mode": facts.mode,
        "source": facts.source,
        "config": _config_fact(facts),
        "mtp": _mtp_fact(facts, mtp_fmts, mtp_state, mtp_counts, nbytes),
        "trunk": {"format": trunk_state, "format_modules": trunk_counts, "tensors": len(facts.tensors) - len(facts.mtp)},
        "quantization": [s.to_fact(mtp_mods) for s in facts.schemes],
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
            "bytes": sum(h.data_bytes for h in facts.headers.values()) if facts.headers else None,
        },
        "engine": {
            "sglang": {
                "flags": "--speculative-algorithm NEXTN",
                "runs_as": "EAGLE",
                "draft_model": "the target checkpoint itself (no separate draft model)",
                "usable": usable,
                "blocked_by": blocking,
                "source": SGLANG_SOURCE,
            }
        },
    }


def _usability(facts: CheckpointFacts, findings: list[Finding]) -> tuple[bool | None, list[str], list[Finding]]:
    """``(usable, blocking rule ids (sorted, distinct), MTP007 warnings SGLang overrides)``: whether SGLang gets
    working MTP heads, None when a blocking gap leaves it open."""
    decl = facts.config.declaration if facts.config else None
    errors = [f for f in findings if f.severity.label == "error"]
    # Any error means the load fails, computes garbage or cannot run (README "How severity is decided"), so
    # the closing answer never says "yes" after one; R.BLOCKS_MTP lists the rules that stop MTP only.
    blocking = [f.rule_id for f in errors]
    # An MTP007 warning means *some* engine builds the module right despite the list; the answer is about SGLang,
    # so it blocks unless one of the overriding engines is SGLang.
    overridden = [f for f in findings if f.rule_id == "MTP007" and f.severity.label == "warning"]
    for f in overridden:
        if not any(e.label == "engine override (all of them)" and e.value.startswith("SGLang ") for e in f.evidence):
            blocking.append(f.rule_id)
    overridden = [f for f in overridden if f.rule_id not in blocking]
    usable: bool | None
    if not (decl and decl.declared) and not facts.mtp:
        usable = False
    elif not facts.tensors_known or any(g.blocking for g in facts.gaps):
        usable = None
    else:
        usable = bool(facts.mtp) and bool(decl and decl.declared) and not blocking
    return usable, sorted(set(blocking)), overridden


def _summary(facts: CheckpointFacts, mtp_state: str, trunk_state: str, nbytes: Mapping[str, Any],
             usable: bool | None, mtp_mods: list[str]) -> dict[str, Any]:
    """``facts["checkpoint"]["summary"]``: the one-screen numbers."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    return {
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
        "mtp_exclude_patterns": ", ".join(p for s in facts.schemes[:1] for p in s.mtp_patterns(mtp_mods)) or None,
        "sglang_mtp_usable": usable,
    }


def _config_fact(facts: CheckpointFacts) -> dict[str, Any] | None:
    """``facts["checkpoint"]["config"]``: what config.json says, or None without one."""
    cfg = facts.config
    if cfg is None:
        return None
    return {
        "architectures": list(cfg.architectures),
        "model_type": cfg.model_type,
        "text_model_type": cfg.text_model_type or None,
        "speculators_config": cfg.speculators,
        "text_config": bool(cfg.text_pointer),
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_experts": cfg.num_experts,
        "experts_key": cfg.experts_key or None,
        "family": cfg.layout.family if cfg.layout else None,
        "family_source": cfg.layout.source if cfg.layout else None,
        "dspark": dict(cfg.dspark) or None,
    }


def _mtp_fact(facts: CheckpointFacts, mtp_fmts: Mapping[str, tuple[str, bool]], mtp_state: str,
              mtp_counts: Mapping[str, int], nbytes: Mapping[str, Any]) -> dict[str, Any]:
    """``facts["checkpoint"]["mtp"]``: MTP layers, tensors, dtypes, formats, experts and bytes."""
    decl = facts.config.declaration if facts.config else None
    return {
        "declared_layers": decl.layers if decl else None,
        "declared_by": (decl.key or ("implicit" if decl.implicit else None)) if decl else None,
        "found_layers": facts.found_layers(),
        "tensors": len(facts.mtp),
        "tensors_per_layer": facts.mtp_layer_labels(),
        "dtypes": dict(sorted(Counter(facts.infos[n].dtype for n in facts.mtp if n in facts.infos).items())),
        "scale_tensors": sum(1 for n in facts.mtp if split_param(n)[1] in SCALE_SUFFIXES),
        "hallmarks": hf_hallmarks(facts.mtp),
        "format": mtp_state,
        "format_modules": dict(mtp_counts),
        "format_inferred": any(inf for _, inf in mtp_fmts.values()),
        "experts": expert_facts(facts),
        "bytes": dict(nbytes),
        "attention_bytes": mtp_attention_bytes(facts),
        "embed_head_bytes": mtp_embed_head_bytes(facts),
        "shards": sorted({s for n in facts.mtp if (s := facts.tensors.get(n))}),
        "dspark_drafter": is_dspark(facts),
    }


def _closing(summary: dict[str, Any], decl: Any, usable: bool | None, blocking: list[str], facts: CheckpointFacts,
             mtp_counts: Mapping[str, int], overridden: list[Finding] | None = None,
             prediction: dict[str, Any] | None = None) -> dict[str, Any]:
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
        pl = prediction_line(prediction) if prediction else None
        if pl:
            lines.append(pl)
    if usable is True:
        lines.append(
            "SGLang: yes, with --speculative-algorithm NEXTN (an alias: SGLang runs its EAGLE worker with this "
            "checkpoint as its own draft model and loads these MTP weights as the draft)."
        )
        for f in overridden or []:
            who = [e.value.split(":", 1)[0] for e in f.evidence if e.label == "engine override (all of them)"]
            lines.append(f"  Only because {' and '.join(who)} ignore(s) the wrong exclusion list (MTP007); an engine that "
                         "trusts the list fails to load these MTP weights.")
    elif usable is False and blocking:
        lines.append(f"SGLang: no, --speculative-algorithm NEXTN would not get working MTP heads ({', '.join(blocking)}).")
    elif usable is False:
        lines.append("SGLang: no MTP heads to use; speculative decoding would need a separate draft model.")
    else:
        lines.append("SGLang: could not tell (see 'not examined').")
    return {"title": "Will SGLang use the MTP heads?", "lines": lines}


def _answer(summary: dict[str, Any], decl: Any, usable: bool | None, blocking: list[str], facts: CheckpointFacts) -> list[str]:
    """The one-line answer the text report opens with (``facts["checkpoint"]["answer"]``): what is
    declared, what ships, and whether ``--speculative-algorithm NEXTN`` gets working MTP heads."""
    declared = summary.get("mtp_layers_declared") or 0
    n = summary.get("mtp_tensors") or 0
    what = f"config.json declares {declared} MTP layer{'s' if declared != 1 else ''}" if decl is not None and decl.declared else ""
    if decl is not None and decl.declared and decl.implicit:
        what = f"this family always carries {declared} MTP layer{'s' if declared != 1 else ''}"
    if usable is True:
        nbytes = summary.get("mtp_bytes")
        size = f", {nbytes:,} bytes" if isinstance(nbytes, int) else ""
        return [f"{what} and the checkpoint ships {n:,} MTP tensor{'s' if n != 1 else ''} ({summary.get('mtp_format')}{size}); "
                "--speculative-algorithm NEXTN will use them as the draft"]
    if usable is False and blocking:
        ships = "the checkpoint ships none" if not n else f"its {n:,} MTP tensors are not usable"
        if not what:  # no declaration (no config.json, or none that declares MTP): say what ships
            ships = f"{n:,} MTP tensor{'s ship' if n != 1 else ' ships'} but {'they are' if n != 1 else 'it is'} not usable"
            return [f"{ships}; --speculative-algorithm NEXTN will not get working MTP heads ({', '.join(blocking)})"]
        return [f"{what} but {ships}; --speculative-algorithm NEXTN will not get working MTP heads ({', '.join(blocking)})"]
    if usable is False and n:
        why = "there is no config.json to declare them" if facts.config is None else "config.json declares no MTP layer"
        return [f"{n:,} MTP tensor{'s ship' if n != 1 else ' ships'} but {why}; --speculative-algorithm NEXTN will not load "
                "them as a draft"]
    if usable is False:
        return ["no MTP layers declared and no MTP tensors: speculative decoding would need a separate draft model"]
    if not facts.tensors_known:
        if facts.index_file is None and not facts.shards_present:
            return [f"{what or 'MTP'}, but there is no index and no shard to check that the MTP tensors ship: could not tell"]
        if blocking:
            return [f"{what or 'the checkpoint'}, but no shard header could be read ({', '.join(sorted(facts.problems)[:2]) or 'see not examined'}): "
                    f"the load fails before the MTP heads matter ({', '.join(blocking)})"]
        return [f"{what or 'MTP'}, but no readable index or shard header lists the tensors "
                f"({', '.join(sorted(facts.problems)[:2]) or 'see not examined'}), so whether the MTP tensors ship could not be checked: could not tell"]
    gap = next((g.message for g in facts.gaps if g.blocking), "see 'not examined'")
    return [f"could not tell whether --speculative-algorithm NEXTN gets working MTP heads: {gap}"]


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
