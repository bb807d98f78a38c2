"""The checkpoint report: ``facts["checkpoint"]`` (summary, declaration, tensors, formats, bytes, the
per-engine answer) and the closing section (what the checkpoint declares and holds, then the engine's answer),
built from the facts and the findings (:func:`build_report`).

Whether an engine will draft with the MTP heads is that engine's answer (its ``uses_heads`` hook, handed in as
``answer_heads``: :mod:`mtp_audit.checkpoint.heads`); this module only says what the files hold.

The report also carries the typed answer the engines read (:class:`~mtp_audit.checkpoint.typed.CheckpointAnswer`,
``Report.answer``, never serialized); the JSON summary is written from it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from mtp_audit.checkpoint import rules as R
from mtp_audit.checkpoint.accounting import (
    expert_facts,
    linear_formats,
    mtp_attention_bytes,
    mtp_bytes,
    mtp_embed_head_bytes,
    summarize_formats,
    trunk_format_counts,
)
from mtp_audit.checkpoint.checks import check, exclusion_list_overrides
from mtp_audit.checkpoint.checks_families import is_dspark
from mtp_audit.checkpoint.facts import ANALYZER, CheckpointFacts
from mtp_audit.checkpoint.heads import HeadsAnswer, HeadsAnswerer, heads_evidence
from mtp_audit.checkpoint.layouts import hf_hallmarks
from mtp_audit.checkpoint.predict import expected_mtp_modules, predict, prediction_line
from mtp_audit.checkpoint.tensors import (
    SCALE_SUFFIXES,
    split_param,
)
from mtp_audit.checkpoint.typed import (
    RAW_CONFIG,
    CheckpointAnswer,
    CheckpointSummary,
    ConfigSummary,
    MtpAnswer,
    MtpBytes,
    QuantAnswer,
    frozen,
)
from mtp_audit.readonly import ReadOnlyMap
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


def build_facts(facts: CheckpointFacts, findings: Iterable[Finding], answer_heads: HeadsAnswerer | None = None) -> dict[str, Any]:
    """The JSON facts document for ``facts["checkpoint"]`` (schema in docs/checkpoint.md); ``answer_heads``: the
    engine that answers whether it drafts with the MTP heads (``None``: the document says what the files hold only)."""
    return build_answer(facts, findings, answer_heads)[0]


def build_answer(facts: CheckpointFacts, findings: Iterable[Finding],
                 answer_heads: HeadsAnswerer | None = None) -> tuple[dict[str, Any], CheckpointAnswer]:
    """The JSON document of :func:`build_facts` and the typed answer (:class:`~mtp_audit.checkpoint.typed.CheckpointAnswer`)
    the engines read; the document's ``summary`` is written from the answer's :class:`CheckpointSummary` (plus the
    answering engine's own keys), its ``config`` from the answer's :class:`ConfigSummary`."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    mtp_fmts = linear_formats(facts, facts.mtp_modules)
    mtp_state, mtp_counts = summarize_formats(mtp_fmts)
    trunk_counts = trunk_format_counts(facts)
    trunk_state = "none" if not trunk_counts else next(iter(trunk_counts)) if len(trunk_counts) == 1 else "mixed"
    nbytes = MtpBytes.from_doc(mtp_bytes(facts), facts.display)
    findings = list(findings)
    prediction = predict(facts)
    mtp_mods = list(facts.mtp_modules) if facts.mtp else expected_mtp_modules(facts)
    typed_summary = _summary(facts, mtp_state, trunk_state, nbytes, mtp_mods)
    config_summary = _config_summary(facts)
    mtp = _mtp_answer(facts, mtp_state, nbytes)
    summary = typed_summary.to_dict()
    heads = answer_heads(heads_evidence(facts, findings, summary, exclusion_list_overrides(facts))) if answer_heads else None
    if heads is not None:
        summary.update(heads.summary)
    doc: dict[str, Any] = {
        "summary": summary,
        "closing": _closing(summary, decl, heads, facts, mtp_counts, prediction),
        "answer": [heads.answer] if heads is not None else _holds(summary, decl),
        "prediction": prediction,
        "mode": facts.mode,
        "source": facts.source,
        "config": config_summary.to_dict() if config_summary is not None else None,
        "mtp": _mtp_fact(facts, mtp, mtp_fmts, mtp_counts),
        "trunk": {"format": trunk_state, "format_modules": trunk_counts, "tensors": len(facts.tensors) - len(facts.mtp)},
        "quantization": [_scheme_fact(s, mtp_mods, mtp_fmts, facts.tensors_known) for s in facts.schemes],
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
        "engine": {heads.engine: dict(heads.facts)} if heads is not None else {},
    }
    return doc, _typed(facts, typed_summary, config_summary, mtp)


def _typed(facts: CheckpointFacts, summary: CheckpointSummary, config: ConfigSummary | None, mtp: MtpAnswer) -> CheckpointAnswer:
    """The typed answer of one audit: the config's names and its raw mapping (read once, by the analyzer), the summary,
    the MTP section and the schemes."""
    cfg = facts.config
    raw = facts.cache.get(RAW_CONFIG)
    return CheckpointAnswer(
        target=facts.display,
        mode=facts.mode,
        config_present=cfg is not None,
        architectures=tuple(cfg.architectures) if cfg else (),
        model_type=cfg.model_type if cfg else None,
        text_model_type=(cfg.text_model_type or None) if cfg else None,
        speculators=bool(cfg and cfg.speculators),
        config=frozen(raw) if isinstance(raw, Mapping) else None,
        summary=summary,
        mtp=mtp,
        quantization=tuple(QuantAnswer(str(s.method or ""), str(s.algo or ""), str(s.source or ""),
                                       s.group_size if isinstance(s.group_size, int) else None) for s in facts.schemes),
        config_summary=config,
    )


def _scheme_fact(scheme: Any, mtp_mods: list[str], mtp_linears: Mapping[str, Any], known: bool) -> dict[str, Any]:
    """One ``facts["checkpoint"]["quantization"]`` entry: :meth:`QuantScheme.to_fact`, ``<engine id>_method`` for
    each engine that says which of its quantization methods the declaration resolves to whatever the launch's
    ``--quantization`` says (its :meth:`~mtp_audit.engines.base.Engine.quantization_method` hook; ``None``: nothing
    to say), and ``mtp_linear_excluded``, how many of the MTP linear modules found the scheme's exclusion list
    covers (None when the tensors are not listed), so a reader can tell "every MTP linear excluded on purpose" from
    "one of eight"."""
    from mtp_audit.engines.registry import checkpoint_hooks

    out = scheme.to_fact(mtp_mods)
    out.update((f"{engine}_method", hook(scheme.method, scheme.quant_algo)) for engine, hook in checkpoint_hooks("quantization_method"))
    out["mtp_linear_excluded"] = sum(1 for m in mtp_linears if scheme.excluded_by(m) is not None) if known else None
    return out


def _summary(facts: CheckpointFacts, mtp_state: str, trunk_state: str, nbytes: MtpBytes,
             mtp_mods: list[str]) -> CheckpointSummary:
    """``facts["checkpoint"]["summary"]``: the one-screen numbers (the answering engine adds its own)."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    return CheckpointSummary(
        architecture=cfg.architectures[0] if cfg else None,
        family=cfg.layout.family if cfg and cfg.layout else None,
        mode=facts.mode,
        mtp_layers_declared=decl.layers if decl else None,
        mtp_layers_found=facts.found_layers() if facts.tensors_known else None,
        mtp_tensors=len(facts.mtp) if facts.tensors_known else None,
        mtp_format=mtp_state if facts.tensors_known else None,
        trunk_format=trunk_state if facts.tensors_known else None,
        mtp_bytes=nbytes.value,
        mtp_bytes_estimated=nbytes.estimated,
        tensors=len(facts.tensors) if facts.tensors_known else None,
        quantization=_quant_headline(facts),
        mtp_exclude_patterns=", ".join(p for s in facts.schemes[:1] for p in s.mtp_patterns(mtp_mods)) or None,
    )


def _config_summary(facts: CheckpointFacts) -> ConfigSummary | None:
    """What config.json says (the typed answer's :class:`ConfigSummary`), or None without one."""
    cfg = facts.config
    if cfg is None:
        return None
    return ConfigSummary(
        architectures=tuple(cfg.architectures),
        model_type=cfg.model_type,
        text_model_type=cfg.text_model_type or None,
        speculators_config=cfg.speculators,
        text_config=bool(cfg.text_pointer),
        num_hidden_layers=cfg.num_hidden_layers,
        num_experts=cfg.num_experts,
        experts_key=cfg.experts_key or None,
        family=cfg.layout.family if cfg.layout else None,
        family_source=cfg.layout.source if cfg.layout else None,
        dspark=frozen(cfg.dspark) if cfg.dspark else None,
    )


def _mtp_answer(facts: CheckpointFacts, mtp_state: str, nbytes: MtpBytes) -> MtpAnswer:
    """The typed MTP answer: what config.json declares, what the files hold, the bytes."""
    decl = facts.config.declaration if facts.config else None
    return MtpAnswer(
        declared_layers=decl.layers if decl else None,
        declared_by=(decl.key or ("implicit" if decl.implicit else None)) if decl else None,
        found_layers=facts.found_layers(),
        tensors=len(facts.mtp),
        format=mtp_state,
        bytes=nbytes,
        attention_bytes=mtp_attention_bytes(facts),
        embed_head_bytes=mtp_embed_head_bytes(facts),
        dtypes=ReadOnlyMap(dict(sorted(Counter(info.dtype for info in facts.mtp_infos.values()).items()))),
        hallmarks=tuple(tuple(h) for h in hf_hallmarks(facts.mtp)),
        listed=True,
    )


def _mtp_fact(facts: CheckpointFacts, mtp: MtpAnswer, mtp_fmts: Mapping[str, tuple[str, bool]],
              mtp_counts: Mapping[str, int]) -> dict[str, Any]:
    """``facts["checkpoint"]["mtp"]``: MTP layers, tensors, dtypes, formats, experts and bytes (the typed answer's, and
    what only the report shows)."""
    return {
        "declared_layers": mtp.declared_layers,
        "declared_by": mtp.declared_by,
        "found_layers": mtp.found_layers,
        "tensors": mtp.tensors,
        "tensors_per_layer": facts.mtp_layer_labels(),
        "dtypes": dict(mtp.dtypes),
        "scale_tensors": sum(1 for n in facts.mtp if split_param(n)[1] in SCALE_SUFFIXES),
        "hallmarks": [list(h) for h in mtp.hallmarks],
        "format": mtp.format,
        "format_modules": dict(mtp_counts),
        "format_inferred": any(inf for _, inf in mtp_fmts.values()),
        "experts": expert_facts(facts),
        "bytes": mtp.bytes.to_dict(),
        "attention_bytes": mtp.attention_bytes,
        "embed_head_bytes": mtp.embed_head_bytes,
        "shards": sorted(set(filter(None, map(facts.tensors.get, facts.mtp)))),
        "dspark_drafter": is_dspark(facts),
    }


def _closing(summary: dict[str, Any], decl: Any, heads: HeadsAnswer | None, facts: CheckpointFacts,
             mtp_counts: Mapping[str, int], prediction: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plain-words answer printed at the end of text/Markdown reports: what the checkpoint declares and holds,
    then the answering engine's lines (whether it will use the MTP heads)."""
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
    if heads is None:
        return {"title": "What does the checkpoint hold for MTP?", "lines": lines}
    return {"title": heads.title, "lines": lines + list(heads.lines)}


def _holds(summary: dict[str, Any], decl: Any) -> list[str]:
    """The one-line answer without an engine to ask: what is declared and what ships."""
    declared = summary.get("mtp_layers_declared") or 0
    n = summary.get("mtp_tensors")
    what = f"{declared} MTP layer(s) declared" if decl is not None and decl.declared else "no MTP layers declared"
    return [f"{what}; " + (f"{n:,} MTP tensor(s) found" if n is not None else "the MTP tensors could not be listed")]


def build_report(facts: CheckpointFacts, answer_heads: HeadsAnswerer | None = None) -> Report:
    """Facts -> findings -> :class:`Report` (rules evaluated: every checkpoint rule); ``answer_heads``: the engine
    that says whether it drafts with the MTP heads (see :func:`build_facts`)."""
    findings = check(facts)
    doc, answer = build_answer(facts, findings, answer_heads)
    report = Report.build(
        ANALYZER,
        facts.display,
        findings=findings,
        gaps=facts.gaps,
        facts=doc,
        rule_ids=[r.id for r in R.RULES],
    )
    return dataclasses.replace(report, answer=answer)  # typed, never serialized (mtp_audit.checkpoint.typed)
