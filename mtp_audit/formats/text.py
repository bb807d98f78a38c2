"""Terminal output: compiler-style ``location: RULE severity: message`` lines, evidence, fix,
then what was not examined, the headline facts and a one-line verdict."""

from __future__ import annotations

from typing import Any

from mtp_audit.formats.summary import verdict_line
from mtp_audit.report import Report


def _facts_lines(facts: Any, indent: str = "  ", depth: int = 0) -> list[str]:
    """Flatten the headline facts: scalars and short scalar lists, two levels deep at most."""
    out: list[str] = []
    if not isinstance(facts, dict):
        return out
    for k in sorted(facts):
        v = facts[k]
        if isinstance(v, dict):
            if depth < 1:
                sub = _facts_lines(v, indent + "  ", depth + 1)
                if sub:
                    out.append(f"{indent}{k}:")
                    out += sub
        elif isinstance(v, list):
            if all(not isinstance(x, (dict, list)) for x in v) and len(v) <= 8:
                out.append(f"{indent}{k}: {', '.join(map(str, v)) if v else '(none)'}")
            else:
                out.append(f"{indent}{k}: {len(v)} items (see --format json)")
        else:
            out.append(f"{indent}{k}: {v}")
    return out


def render(report: Report) -> str:
    """Render ``report`` for a terminal (no colour codes; the CLI adds none to files)."""
    lines: list[str] = []
    for t in report.targets:
        lines.append(f"mtp-audit {t.analyzer}: {t.name}")
    for analyzer in sorted(report.facts):
        facts = report.facts[analyzer]
        summary = facts.get("summary") if isinstance(facts, dict) else None
        shown = summary if isinstance(summary, dict) else facts
        fl = _facts_lines(shown)
        if fl:
            lines.append(f"facts ({analyzer}):")
            lines += fl
    if report.findings:
        lines.append("")
    for f in report.findings:
        lines.append(f"{f.location}: {f.rule_id} {f.severity.label}: {f.message}")
        for e in f.evidence:
            where = f" ({e.location})" if e.location else ""
            lines.append(f"    evidence: {e.label} = {e.value}{where}")
        if f.remediation:
            lines.append(f"    fix: {f.remediation}")
    if report.gaps:
        lines.append("")
        lines.append("not examined:")
        for g in report.gaps:
            tag = "blocking" if g.blocking else "note"
            lines.append(f"  [{g.analyzer}, {tag}] {g.message}")
    lines.append("")
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"
