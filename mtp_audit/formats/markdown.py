"""Markdown output for pull-request comments and CI job summaries (GitHub-flavoured tables)."""

from __future__ import annotations

from mtp_audit.formats.summary import (
    closing_sections,
    gap_text,
    headline_facts,
    verdict_line,
)
from mtp_audit.report import Report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report) -> str:
    """Render ``report`` as a Markdown document."""
    out: list[str] = ["# mtp-audit report", ""]
    for t in report.targets:
        out.append(f"- **{t.analyzer}**: `{t.name}`")
    out += ["", f"**{verdict_line(report)}**", ""]
    for analyzer, lines in headline_facts(report):
        out += [f"## Facts: {analyzer}", "", "```", *lines, "```", ""]
    if report.findings:
        out += ["## Findings", "", "| rule | severity | location | message | fix |", "|---|---|---|---|---|"]
        for f in report.findings:
            out.append(
                f"| {f.rule_id} | {f.severity.label} | `{_cell(str(f.location))}` | {_cell(f.message)} "
                f"| {_cell(f.remediation)} |"
            )
        out.append("")
        detailed = [f for f in report.findings if f.evidence]
        if detailed:
            out += ["<details><summary>Evidence</summary>", ""]
            for f in detailed:
                out.append(f"- **{f.rule_id}** {_cell(f.message)}")
                for e in f.evidence:
                    out.append(f"  - {_cell(e.label)}: `{_cell(e.value)}`")
            out += ["", "</details>", ""]
    if report.gaps:
        out += ["## Not examined", ""]
        for g in report.gaps:
            out.append(f"- [{g.analyzer}{', blocking' if g.blocking else ''}] {_cell(gap_text(g))}")
        out.append("")
    for title, cl in closing_sections(report):
        out += [f"## {title}", ""]
        out += [f"- {_cell(line)}" for line in cl]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
