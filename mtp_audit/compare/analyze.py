"""``mtp-audit compare BASE DERIVED``: what a quantized, pruned or merged export did to the MTP heads
of its base checkpoint.

Each side is audited with the checkpoint analyzer's public API (:func:`mtp_audit.checkpoint.audit_checkpoint`,
local folder or hub id), and the comparison reads only the PUBLIC facts of the two reports,
``report.facts["checkpoint"]`` (the keys are listed in ``docs/hub.md`` "Facts compare reads"), never
the analyzer's internals. What it reports (rules MTP050-MTP054 in
:mod:`mtp_audit.compare.rules`):

- MTP050: every MTP tensor dropped, and whether ``config.json`` still declares them (the repack failure
  of ``../shared/research/checkpoint_formats.md`` §7.1: vLLM PR #35548, Model-Optimizer #750,
  llm-compressor PR #2482, GPTQModel PR #2109);
- MTP051: some MTP modules dropped (beyond an expert pruning that the derived config agrees with);
- MTP052: MTP tensors renamed (another layer label, or absorbed into the trunk by raising
  ``num_hidden_layers``; §7.8);
- MTP053: the trunk was quantized but the MTP linears were left unquantized, with the bytes involved
  (§5, the Qwen3.5-397B-A17B NVFP4 incident; §7.3);
- MTP054: MTP-relevant config keys that changed (declaration key or depth, ``num_hidden_layers``,
  expert count).

Blocking gaps of either audit are carried over (prefixed ``base:`` / ``derived:``), and a side whose
tensors could not be listed at all makes the comparison inconclusive: "could not tell" is never a pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity
from mtp_audit.report.questions import MTP_HEADS

if TYPE_CHECKING:
    from mtp_audit.sources.local import CheckpointSource

ANALYZER = "compare"

#: Storage formats the checkpoint analyzer reports for quantized linears (``tensors.module_format``).
QUANTIZED_FORMATS = frozenset({"NVFP4", "FP8", "INT4", "MXFP4", "FP4", "INT8", "MLX-affine"})

#: The ``facts["checkpoint"]`` keys compare needs (docs/hub.md); a missing one is a blocking gap.
REQUIRED_FACTS: tuple[tuple[str, ...], ...] = (
    ("mode",),
    ("summary", "mtp_tensors"),
    ("config",),
    ("mtp", "declared_layers"),
    ("mtp", "declared_by"),
    ("mtp", "found_layers"),
    ("mtp", "tensors"),
    ("mtp", "tensors_per_layer"),
    ("mtp", "dtypes"),
    ("mtp", "format"),
    ("mtp", "format_modules"),
    ("mtp", "experts"),
    ("mtp", "bytes"),
    ("trunk", "format"),
    ("trunk", "format_modules"),
    ("trunk", "tensors"),
    ("quantization",),
)

_MISSING = object()


def _dig(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, Mapping) or k not in doc:
            return _MISSING
        doc = doc[k]
    return doc


def _get(doc: Any, *keys: str, default: Any = None) -> Any:
    v = _dig(doc, *keys)
    return default if v is _MISSING else v


def human_bytes(n: int | None) -> str:
    """``13,190,037,504 bytes (13.19 GB)``; ``"unknown bytes"`` for None (:func:`mtp_audit.units.human_bytes`)."""
    from mtp_audit.units import human_bytes as _human

    return _human(n)


def _bytes(side: Mapping[str, Any]) -> tuple[int | None, bool]:
    b = _get(side, "mtp", "bytes", default={}) or {}
    value = b.get("value")
    return (value if isinstance(value, int) else None), bool(b.get("estimated"))


def _bytes_text(side: Mapping[str, Any]) -> str:
    value, estimated = _bytes(side)
    return human_bytes(value) + (", estimated" if estimated and value is not None else "")


def _linear_modules(side: Mapping[str, Any]) -> int:
    fm = _get(side, "mtp", "format_modules", default={}) or {}
    return sum(v for v in fm.values() if isinstance(v, int))


def _quantized(format_modules: Mapping[str, Any]) -> set[str]:
    return {f for f, n in (format_modules or {}).items() if f in QUANTIZED_FORMATS and n}


def _primary_quant(side: Mapping[str, Any]) -> Mapping[str, Any]:
    q = _get(side, "quantization", default=[]) or []
    return q[0] if isinstance(q, list) and q and isinstance(q[0], Mapping) else {}


def _config_location(side: Mapping[str, Any]) -> Location:
    ptr = _get(side, "mtp", "declared_by")
    if isinstance(ptr, str) and ptr.startswith("/"):
        return Location(path="config.json", symbol=ptr)
    return Location(path="config.json")


def _side_view(side: Mapping[str, Any]) -> dict[str, Any]:
    """The compared facts of one side, for ``facts["compare"]["base"/"derived"]``."""
    value, estimated = _bytes(side)
    return {
        "mode": _get(side, "mode"),
        "architectures": _get(side, "config", "architectures"),
        "num_hidden_layers": _get(side, "config", "num_hidden_layers"),
        "num_experts": _get(side, "config", "num_experts"),
        "mtp_declared_layers": _get(side, "mtp", "declared_layers"),
        "mtp_declared_by": _get(side, "mtp", "declared_by"),
        "mtp_found_layers": _get(side, "mtp", "found_layers"),
        "mtp_tensors": _get(side, "mtp", "tensors"),
        "mtp_tensors_per_layer": _get(side, "mtp", "tensors_per_layer"),
        "mtp_linear_modules": _linear_modules(side),
        "mtp_dtypes": _get(side, "mtp", "dtypes"),
        "mtp_format": _get(side, "mtp", "format"),
        "mtp_bytes": value,
        "mtp_bytes_estimated": estimated,
        "trunk_format": _get(side, "trunk", "format"),
        "quantization": _primary_quant(side).get("algo"),
        "mtp_exclude_patterns": _primary_quant(side).get("mtp_exclude_patterns") or [],
    }


#: Config facts compared, with whether a change matters for MTP loading (warning) or is context (info).
_CONFIG_KEYS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("mtp declared layers", ("mtp", "declared_layers"), True),
    ("mtp declaration key", ("mtp", "declared_by"), True),
    ("num_hidden_layers", ("config", "num_hidden_layers"), True),
    ("num_experts", ("config", "num_experts"), True),
    ("architectures", ("config", "architectures"), False),
    ("model_type", ("config", "model_type"), False),
    ("quantization", ("quantization",), False),
)


def _config_value(side: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    if path == ("quantization",):
        return _primary_quant(side).get("algo")
    return _get(side, *path)


class _Pair:
    """Both sides' ``facts["checkpoint"]`` and the MTP numbers every comparison step reads."""

    def __init__(self, base: Mapping[str, Any], derived: Mapping[str, Any], base_name: str, derived_name: str) -> None:
        self.base, self.derived, self.base_name, self.derived_name = base, derived, base_name, derived_name
        self.b_n = _get(base, "mtp", "tensors", default=0) or 0
        self.d_n = _get(derived, "mtp", "tensors", default=0) or 0
        self.b_labels = dict(_get(base, "mtp", "tensors_per_layer", default={}) or {})
        self.d_labels = dict(_get(derived, "mtp", "tensors_per_layer", default={}) or {})
        self.b_layers = _get(base, "config", "num_hidden_layers")
        self.d_layers = _get(derived, "config", "num_hidden_layers")
        self.b_found = _get(base, "mtp", "found_layers", default=0) or 0
        self.b_bytes, _ = _bytes(base)
        self.d_bytes, _ = _bytes(derived)
        self.label_text = ", ".join(f"{k} ({v})" for k, v in sorted(self.b_labels.items())) or "none"

    @property
    def absorbed(self) -> bool:
        """The derived config raised ``num_hidden_layers`` by the base's MTP layers and kept no MTP tensor."""
        return (self.b_n > 0 and self.d_n == 0 and isinstance(self.b_layers, int) and isinstance(self.d_layers, int)
                and self.b_found > 0 and self.d_layers == self.b_layers + self.b_found)


def compare_facts(base: Mapping[str, Any], derived: Mapping[str, Any], *, base_name: str, derived_name: str) -> tuple[list[Finding], dict[str, Any]]:
    """Compare two ``facts["checkpoint"]`` documents.

    Returns:
        ``(findings, facts)``: findings of rules MTP050-MTP054 and the ``facts["compare"]`` document.
        The caller has already checked :data:`REQUIRED_FACTS` and that both sides list tensors.
    """
    pair = _Pair(base, derived, base_name, derived_name)
    changes = _config_changes(pair)  # first: MTP050/MTP052 quote them
    findings = _lost_findings(pair)
    if pair.b_n > 0 and pair.d_n > 0:
        findings += _kept_findings(pair)
    findings += _change_findings(pair, changes)
    return findings, _compare_doc(pair, changes)


def _config_changes(pair: _Pair) -> list[dict[str, Any]]:
    """Config values that differ (``{"key", "base", "derived", "mtp_relevant"}``); a side without config.json has
    unknown values, not changed ones."""
    changes: list[dict[str, Any]] = []
    no_config = [side for side in (pair.base, pair.derived) if _get(side, "config") is None]
    for label, path, matters in _CONFIG_KEYS:
        if no_config and path[0] in ("config", "mtp"):
            continue
        bv, dv = _config_value(pair.base, path), _config_value(pair.derived, path)
        if bv != dv:
            # Different architectures: probably not a base and its export; say so as an MTP-relevant change.
            relevant = matters or (label == "architectures" and bool(bv) and bool(dv))
            changes.append({"key": label, "base": bv, "derived": dv, "mtp_relevant": relevant})
    return changes


def _lost_findings(pair: _Pair) -> list[Finding]:
    """MTP052 (the MTP layers absorbed into the trunk's layer count) or MTP050 (every MTP tensor dropped)."""
    from mtp_audit.compare import rules as R

    if pair.absorbed:
        return [R.MTP052.finding(
            f"{pair.derived_name} raised num_hidden_layers from {pair.b_layers} to {pair.d_layers}: the {pair.b_found} MTP layer(s) of "
            f"{pair.base_name} ({pair.label_text}) are now read as ordinary decoder layers, so no engine loads them as MTP",
            Location(path="config.json", symbol="/num_hidden_layers"),
            evidence=(Evidence("base.num_hidden_layers", str(pair.b_layers)), Evidence("derived.num_hidden_layers", str(pair.d_layers)),
                      Evidence("base.mtp_tensors", str(pair.b_n))),
            remediation="Restore num_hidden_layers to the trunk depth and declare the MTP layer with the family's key "
            "(e.g. num_nextn_predict_layers), as in the base config.json.")]
    if not (pair.b_n > 0 and pair.d_n == 0):
        return []
    d_decl = _get(pair.derived, "mtp", "declared_layers") or 0
    if d_decl:
        tail = (f"its config.json still declares {d_decl} MTP layer(s) at {_get(pair.derived, 'mtp', 'declared_by')}, so engines "
                "will look for weights that are not there (load error, or a silently useless draft: acceptance length 1.0)")
    else:
        tail = "its config.json no longer declares MTP, so the export silently lost speculative decoding"
    return [R.MTP050.finding(
        f"{pair.derived_name} dropped all {pair.b_n} MTP tensors of {pair.base_name} ({pair.label_text}; {_bytes_text(pair.base)}); {tail}",
        _config_location(pair.derived),
        evidence=(Evidence("base.mtp_tensors", str(pair.b_n)), Evidence("base.mtp_bytes", str(pair.b_bytes)),
                  Evidence("derived.mtp_tensors", "0"), Evidence("derived.mtp_declared_layers", str(d_decl))),
        severity=Severity.ERROR if d_decl else Severity.WARNING)]


def _pruned_experts(pair: _Pair) -> tuple[int, list[str]]:
    """``(linear modules explained by expert pruning the derived config agrees with, one note per pruned layer)``."""
    explained, notes = 0, []
    b_exp = _get(pair.base, "mtp", "experts", default={}) or {}
    d_exp = _get(pair.derived, "mtp", "experts", default={}) or {}
    for label in sorted(set(b_exp) & set(d_exp)):
        bf, df = b_exp[label].get("found"), d_exp[label].get("found")
        if isinstance(bf, int) and isinstance(df, int) and df < bf:
            projections = len(d_exp[label].get("projections") or b_exp[label].get("projections") or [])
            consistent = df == d_exp[label].get("expected")
            if consistent:
                explained += (bf - df) * projections
            notes.append(f"{label}: {bf} -> {df} experts"
                         + (" (matches the derived config)" if consistent else f" (derived config expects {d_exp[label].get('expected')})"))
    return explained, notes


def _kept_findings(pair: _Pair) -> list[Finding]:
    """Both sides carry MTP tensors: MTP051 (linear modules dropped), MTP052 (renamed layout), MTP053 (trunk
    quantized, MTP left in high precision)."""
    from mtp_audit.compare import rules as R

    out: list[Finding] = []
    b_lin, d_lin = _linear_modules(pair.base), _linear_modules(pair.derived)
    explained, expert_notes = _pruned_experts(pair)
    if d_lin < b_lin - explained or _get(pair.derived, "mtp", "found_layers", default=0) < pair.b_found:
        notes = f"; {'; '.join(expert_notes)}" if expert_notes else ""
        out.append(R.MTP051.finding(
            f"{pair.derived_name} keeps {d_lin} of the {b_lin} MTP linear modules of {pair.base_name} ({b_lin - d_lin} dropped"
            f"{', ' + str(explained) + ' of them by the expert pruning' if explained else ''}){notes}; MTP bytes "
            f"{human_bytes(pair.b_bytes)} -> {human_bytes(pair.d_bytes)}",
            Location(path="config.json"),
            evidence=(Evidence("base.mtp_linear_modules", str(b_lin)), Evidence("derived.mtp_linear_modules", str(d_lin)),
                      Evidence("base.mtp_found_layers", str(pair.b_found)),
                      Evidence("derived.mtp_found_layers", str(_get(pair.derived, "mtp", "found_layers"))))))
    if set(pair.b_labels) != set(pair.d_labels):
        out.append(R.MTP052.finding(
            f"{pair.derived_name} stores its MTP tensors as {', '.join(sorted(pair.d_labels))} where {pair.base_name} has "
            f"{', '.join(sorted(pair.b_labels))}: engine loaders match the base layout's names",
            Location(path="config.json"),
            evidence=(Evidence("base.mtp_layers", ", ".join(f"{k}={v}" for k, v in sorted(pair.b_labels.items()))),
                      Evidence("derived.mtp_layers", ", ".join(f"{k}={v}" for k, v in sorted(pair.d_labels.items()))))))
    out += _left_unquantized(pair)
    return out


def _left_unquantized(pair: _Pair) -> list[Finding]:
    """MTP053: the derived trunk gained quantized formats while its MTP modules stayed in high precision (info only
    when the quantization config excludes every one of them: ``quantization[0].mtp_linear_excluded`` equals the
    MTP linear module count)."""
    from mtp_audit.compare import rules as R

    base, derived = pair.base, pair.derived
    new_q = _quantized(_get(derived, "trunk", "format_modules", default={})) - _quantized(_get(base, "trunk", "format_modules", default={}))
    if not new_q or _quantized(_get(derived, "mtp", "format_modules", default={})):
        return []
    excludes = _primary_quant(derived).get("mtp_exclude_patterns") or []
    n_lin = _linear_modules(derived)
    covered = _primary_quant(derived).get("mtp_linear_excluded")
    on_purpose = bool(excludes) and covered == n_lin
    if on_purpose:
        why = f"on purpose: the quantization config excludes {', '.join(excludes)}"
    elif excludes and isinstance(covered, int):
        why = f"and the quantization config excludes only {covered} of them ({', '.join(excludes)})"
    elif excludes:
        why = f"and how many of them the quantization config's {', '.join(excludes)} excludes is unknown"
    else:
        why = "and the quantization config does not exclude them"
    return [R.MTP053.finding(
        f"{pair.derived_name} quantized the trunk to {'/'.join(sorted(new_q))} but left its {_linear_modules(derived)} MTP "
        f"linear modules {_get(derived, 'mtp', 'format')} ({_bytes_text(derived)}), {why}",
        Location(path="config.json"),
        evidence=(Evidence("derived.trunk_format", str(_get(derived, "trunk", "format"))),
                  Evidence("derived.mtp_format", str(_get(derived, "mtp", "format"))),
                  Evidence("derived.mtp_bytes", str(pair.d_bytes)), Evidence("base.mtp_format", str(_get(base, "mtp", "format")))),
        severity=Severity.INFO if on_purpose else None)]


def _change_findings(pair: _Pair, changes: list[dict[str, Any]]) -> list[Finding]:
    """MTP054 for each MTP-relevant config change (the layer count MTP052 already explained is left out)."""
    from mtp_audit.compare import rules as R

    return [R.MTP054.finding(
        f"{ch['key']} changed from {ch['base']!r} in {pair.base_name} to {ch['derived']!r} in {pair.derived_name}",
        Location(path="config.json"),
        evidence=(Evidence(f"base.{ch['key']}", repr(ch["base"])), Evidence(f"derived.{ch['key']}", repr(ch["derived"]))))
        for ch in changes if ch["mtp_relevant"] and not (pair.absorbed and ch["key"] == "num_hidden_layers")]


def _compare_doc(pair: _Pair, changes: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``facts["compare"]`` document: summary, both sides, MTP tensors, bytes, layers, dtypes, experts, changes."""
    b_exp = _get(pair.base, "mtp", "experts", default={}) or {}
    d_exp = _get(pair.derived, "mtp", "experts", default={}) or {}
    experts = {label: {"base": {"found": b_exp.get(label, {}).get("found"), "expected": b_exp.get(label, {}).get("expected")},
                       "derived": {"found": d_exp.get(label, {}).get("found"), "expected": d_exp.get(label, {}).get("expected")}}
               for label in sorted(set(b_exp) | set(d_exp))}
    b_view, d_view = _side_view(pair.base), _side_view(pair.derived)
    b_bytes, d_bytes = pair.b_bytes, pair.d_bytes
    return {
        "summary": {
            "base": pair.base_name,
            "derived": pair.derived_name,
            "mtp_tensors": f"{pair.b_n} -> {pair.d_n}",
            "mtp_bytes": f"{human_bytes(b_bytes)} -> {human_bytes(d_bytes)}",
            "mtp_format": f"{b_view['mtp_format']} -> {d_view['mtp_format']}",
            "trunk_format": f"{b_view['trunk_format']} -> {d_view['trunk_format']}",
            "config_changes": len(changes),
        },
        "base": b_view,
        "derived": d_view,
        "mtp": {
            "tensors": {"base": pair.b_n, "derived": pair.d_n},
            "bytes": {"base": b_bytes, "derived": d_bytes,
                      "delta": (d_bytes - b_bytes) if b_bytes is not None and d_bytes is not None else None},
            "layers": {"base": pair.b_labels, "derived": pair.d_labels},
            "dtypes": {"base": b_view["mtp_dtypes"], "derived": d_view["mtp_dtypes"]},
            "experts": experts,
        },
        "config_changes": changes,
    }


def compare_reports(base: Report, derived: Report) -> Report:
    """The compare :class:`Report` of two checkpoint reports (see the module docstring).

    Gaps: each side's blocking gaps, prefixed; a missing fact (an analyzer version whose facts lack a
    key of :data:`REQUIRED_FACTS`) or a side whose tensors are unknown blocks the comparison.
    """
    from mtp_audit.compare import rules as R

    base_name = base.targets[0].name if base.targets else "base"
    derived_name = derived.targets[0].name if derived.targets else "derived"
    from mtp_audit.compare.gguf import compare_gguf, is_gguf_side, nothing_mapped

    if is_gguf_side(derived.facts.get("checkpoint")) and not is_gguf_side(base.facts.get("checkpoint")):
        gguf_findings, gguf_doc = compare_gguf(base.facts["checkpoint"], derived.facts["checkpoint"], base_name=base_name,
                                               derived_name=derived_name)
        side_gaps = [Gap(ANALYZER, f"{label} ({r.targets[0].name if r.targets else label}): {g.message}", g.path, g.blocking,
                         question=g.question)
                     for label, r in (("base", base), ("derived", derived)) for g in r.gaps]
        unmapped = nothing_mapped(base.facts["checkpoint"], derived.facts["checkpoint"], base_name=base_name,
                                  derived_name=derived_name)
        if unmapped is not None:
            side_gaps.append(unmapped)
            gguf_doc["summary"]["compared"] = False
            gguf_doc["answer"] = [f"could not compare the MTP heads: {unmapped.message}"]
        return Report.build(ANALYZER, f"{base_name} -> {derived_name}", findings=gguf_findings + _side_errors(base, derived),
                            gaps=side_gaps,
                            facts=gguf_doc, rule_ids=[r.id for r in R.GGUF_RULES])
    gaps: list[Gap] = []
    sides = {"base": base.facts.get("checkpoint"), "derived": derived.facts.get("checkpoint")}
    for label, report, name in (("base", base, base_name), ("derived", derived, derived_name)):
        for g in report.gaps:
            gaps.append(Gap(ANALYZER, f"{label} ({name}): {g.message}", g.path, g.blocking, question=g.question))
    usable = True
    for label, facts in sides.items():
        missing = [".".join(k) for k in REQUIRED_FACTS if _dig(facts, *k) is _MISSING]
        if missing:
            gaps.append(Gap(ANALYZER, f"{label}: the checkpoint report lacks facts {', '.join(missing)}; cannot compare"))
            usable = False
        elif _get(facts, "summary", "mtp_tensors") is None:
            gaps.append(
                Gap(ANALYZER, f"{label}: no index and no shard header was read (mode {_get(facts, 'mode')}), so its MTP tensors are unknown",
                    question=MTP_HEADS)
            )
            usable = False
    findings: list[Finding] = []
    doc: dict[str, Any] = {"summary": {"base": base_name, "derived": derived_name, "compared": False}}
    if usable:
        findings, doc = compare_facts(sides["base"] or {}, sides["derived"] or {}, base_name=base_name,
                                      derived_name=derived_name)
        doc["summary"]["compared"] = True
        s = doc["summary"]
        doc["answer"] = [f"MTP tensors {s['mtp_tensors']} ({s['mtp_bytes']}), stored {s['mtp_format']}; "
                         f"{s['config_changes']} MTP config key(s) changed"]
    else:
        why = next((g.message for g in gaps if g.blocking), "see 'not examined'")
        doc["answer"] = [f"could not compare the MTP heads: {why}"]
    return Report.build(
        ANALYZER,
        f"{base_name} -> {derived_name}",
        findings=findings + _side_errors(base, derived),
        gaps=gaps,
        facts=doc,
        rule_ids=[r.id for r in R.RULES if r not in R.GGUF_RULES],
    )


def _side_errors(base: Report, derived: Report) -> list[Finding]:
    """Each side's own error findings (a missing shard, a malformed header, an exclusion list that misses MTP
    modules), carried into the compare report with their rule ids, the message prefixed ``base (NAME):`` or
    ``derived (NAME):``: a derived checkpoint that cannot load is never a passing comparison."""
    out: list[Finding] = []
    for label, report in (("base", base), ("derived", derived)):
        name = report.targets[0].name if report.targets else label
        out += [replace(f, message=f"{label} ({name}): {f.message}") for f in report.findings
                if f.severity is Severity.ERROR]
    return out


def compare_checkpoints(
    base: str | os.PathLike[str] | CheckpointSource,
    derived: str | os.PathLike[str] | CheckpointSource,
    *,
    offline: bool = False,
    jobs: int | None = None,
    token: str | None = None,
    hf_cache_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
) -> Report:
    """Audit ``base`` and ``derived`` (each a local path, a hub id ``org/name[@rev]`` or a
    :class:`~mtp_audit.sources.local.CheckpointSource`) with :func:`mtp_audit.checkpoint.audit_checkpoint`
    and compare their facts. The hub options are those of ``audit_checkpoint``, for both sides.

    Raises:
        InputError: either side cannot be audited at all (see ``audit_checkpoint`` and
            :func:`mtp_audit.sources.hub.audit_source_for`).
    """
    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.sources.hub import hub_settings

    with hub_settings(offline=offline, jobs=jobs, token=token, use_cache=use_cache,
                      hf_cache_dir=Path(hf_cache_dir) if hf_cache_dir is not None else None,
                      cache_dir=Path(cache_dir) if cache_dir is not None else None):
        base_report = audit_checkpoint(base)
        derived_report = audit_checkpoint(derived)
    return compare_reports(base_report, derived_report)
