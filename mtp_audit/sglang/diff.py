"""Compare two SGLang audits (``mtp-audit sglang OLD NEW`` or ``--baseline report.json``).

Items are compared by identity keys that ignore line numbers (which move with every release):
remaps and auto resolutions by (argument, from, to, shape family, logged); CLI flags by flag and
choices; env vars by name; draft overrides by (from, to); MTP classes by class name.
"""

from __future__ import annotations

from typing import Any

from mtp_audit.report import Evidence, Finding, Gap, Report
from mtp_audit.sglang.rules import BY_ID, _loc


def _facts(report: Report | dict[str, Any]) -> dict[str, Any]:
    if isinstance(report, Report):
        return dict(report.facts.get("sglang") or {})
    facts = report.get("facts", {}) if isinstance(report, dict) else {}
    return dict(facts.get("sglang") or {})


def _rkey(r: dict[str, Any]) -> tuple[str, str, tuple[str, ...], bool]:
    return (r["argument"], r["from"], tuple(r["to"]), bool(r["logged"]))


def diff_facts(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[Finding], dict[str, Any]]:
    """Findings MTP110-MTP113 and a ``changes`` dict (added/removed per category)."""
    findings: list[Finding] = []
    changes: dict[str, Any] = {}

    for cat in ("remaps", "auto_resolutions"):
        o = {_rkey(r): r for r in old.get(cat, [])}
        n = {_rkey(r): r for r in new.get(cat, [])}
        added = sorted(set(n) - set(o))
        removed = sorted(set(o) - set(n))
        changes[cat] = {"added": [n[k] for k in added], "removed": [o[k] for k in removed]}
        sev_rule = BY_ID["MTP110"]
        for k in added:
            r = n[k]
            findings.append(sev_rule.finding(
                f"new {'logged' if r['logged'] else 'silent'} rewrite: {r['argument']} {r['from']} -> {', '.join(r['to'])}",
                _loc(r["location"]), evidence=[Evidence("condition", r["condition"] or "(always)")],
                severity=None if cat == "remaps" or not r["logged"] else BY_ID["MTP110"].severity))
        for k in removed:
            r = o[k]
            findings.append(sev_rule.finding(
                f"rewrite gone in the new version: {r['argument']} {r['from']} -> {', '.join(r['to'])} (was at {r['location']})",
                None, evidence=[Evidence("condition", r["condition"] or "(always)")]))

    oc, nc = old.get("cli_arguments", {}), new.get("cli_arguments", {})
    changes["cli_arguments"] = {"added": sorted(set(nc) - set(oc)), "removed": sorted(set(oc) - set(nc)), "choices": {}}
    for flag in sorted(set(oc) - set(nc)):
        findings.append(BY_ID["MTP111"].finding(f"flag {flag} is no longer declared (was at {oc[flag]['location']})"))
    for flag in sorted(set(oc) & set(nc)):
        a, b = oc[flag].get("choices"), nc[flag].get("choices")
        if a is None or b is None:
            continue
        gone, new_ = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        if gone or new_:
            changes["cli_arguments"]["choices"][flag] = {"added": new_, "removed": gone}
        if gone:
            findings.append(BY_ID["MTP111"].finding(f"{flag} no longer accepts {', '.join(gone)}", _loc(nc[flag]["location"])))

    oe = {e["name"]: e for e in old.get("env_vars", [])}
    ne = {e["name"]: e for e in new.get("env_vars", [])}
    changes["env_vars"] = {"added": sorted(set(ne) - set(oe)), "removed": sorted(set(oe) - set(ne))}
    for name in changes["env_vars"]["added"]:
        e = ne[name]
        findings.append(BY_ID["MTP112"].finding(f"new environment variable {name}", _loc((e["defined"] or e["read"] or [None])[0])))
    for name in changes["env_vars"]["removed"]:
        findings.append(BY_ID["MTP112"].finding(f"environment variable {name} is no longer defined or read"))

    od = {(d["from"], d["to"]) for d in old.get("draft_arch_overrides", [])}
    nd = {(d["from"], d["to"]) for d in new.get("draft_arch_overrides", [])}
    changes["draft_arch_overrides"] = {"added": [list(x) for x in sorted(nd - od)], "removed": [list(x) for x in sorted(od - nd)]}
    for f, t in sorted(od - nd):
        findings.append(BY_ID["MTP113"].finding(f"draft-architecture override {f} -> {t} is gone"))
    om = {m["class"] for m in old.get("mtp_classes", [])}
    nm = {m["class"] for m in new.get("mtp_classes", [])}
    changes["mtp_classes"] = {"added": sorted(nm - om), "removed": sorted(om - nm)}
    for c in sorted(om - nm):
        findings.append(BY_ID["MTP113"].finding(f"MTP/NextN class {c} is no longer registered in EntryClass"))
    return findings, changes


def diff_sglang(old_report: Report | dict[str, Any], new_report: Report | dict[str, Any]) -> Report:
    """A report of what changed from ``old_report`` to ``new_report`` (Reports or their JSON dicts).

    The new version's own findings (MTP101-105) and gaps are kept, so ``inconclusive`` still shows.
    """
    old, new = _facts(old_report), _facts(new_report)
    findings, changes = diff_facts(old, new)
    gaps: list[Gap] = []
    base_findings: list[Finding] = []
    if isinstance(new_report, Report):
        gaps = list(new_report.gaps)
        base_findings = list(new_report.findings)
    facts = dict(new)
    facts["diff"] = {"old_version": old.get("version"), "new_version": new.get("version"), "changes": changes}
    summary = dict(new.get("summary") or {})
    summary["old_version"] = old.get("version")
    summary["changes"] = len(findings)
    facts["summary"] = summary
    name = f"{old.get('version') or 'old'} -> {new.get('version') or 'new'}"
    from mtp_audit.sglang.rules import RULES

    return Report.build("sglang", name, findings=base_findings + findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES])
