"""Terminal output: compiler-style ``location: RULE severity: message`` lines, evidence, fix,
then what was not examined, any closing section (``facts[analyzer]["closing"]``) and a one-line verdict."""

from __future__ import annotations

from mtp_audit.formats.summary import (
    closing_sections,
    gap_text,
    headline_facts,
    verdict_line,
)
from mtp_audit.report import Report


def render(report: Report) -> str:
    """Render ``report`` for a terminal (no colour codes; the CLI adds none to files)."""
    lines: list[str] = []
    for t in report.targets:
        lines.append(f"mtp-audit {t.analyzer}: {t.name}")
    for analyzer, fl in headline_facts(report):
        lines.append(f"facts ({analyzer}):")
        lines += [f"  {line}" for line in fl]
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
            lines.append(f"  [{g.analyzer}, {tag}] {gap_text(g)}")
    for title, cl in closing_sections(report):
        lines.append("")
        lines.append(f"{title}:")
        lines += [f"  {line}" for line in cl]
    lines.append("")
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"
