"""Markdown output for pull-request comments and CI job summaries (GitHub-flavoured tables).

Every value goes through :func:`_cell` (prose: HTML, link and table syntax escaped) or :func:`_code` (a code span the
value cannot close), and fact lines sit in a fence no line can close (:mod:`mtp_audit.formats.escape`), so a value
from an audited file renders on GitHub as the text it is: no tag, no image, no link, no cell or table of its own."""

from __future__ import annotations

from typing import Any

from mtp_audit.formats.escape import markdown_code, markdown_fence, markdown_text
from mtp_audit.formats.summary import (
    answer_lines,
    closing_sections,
    gap_text,
    headline_facts,
    listed_findings,
    not_listed_line,
    printable,
    verdict_line,
    verdict_word,
)
from mtp_audit.report import Report, Severity, exit_code


def _cell(text: str) -> str:
    """A value as Markdown prose (also inside a table cell): see :func:`~mtp_audit.formats.escape.markdown_text`."""
    return markdown_text(printable(text.replace("\n", " ")))


def _code(text: str, *, table: bool = True) -> str:
    """A value as a code span: see :func:`~mtp_audit.formats.escape.markdown_code`."""
    return markdown_code(printable(text.replace("\n", " ")), table=table)


def render(report: Report, *, fail_on: Severity | None = Severity.ERROR, shown: Any = None) -> str:
    """Render ``report`` as a Markdown document: the verdict and answer first, then facts, findings
    (with detail and evidence folded), ignored findings, gaps and closing sections. ``fail_on``
    (``None``: never) gives the exit code the first line names; ``shown`` (see
    :func:`mtp_audit.formats.text.render`) filters the findings listed."""
    code = exit_code(report, fail_on)
    answer = answer_lines(report)
    out: list[str] = ["# mtp-audit report", "", f"**{verdict_word(report, code)}**: {_cell(answer[0])} (exit {code}"
                              + (f"; {len(report.ignored)} ignored" if report.ignored else "") + ")"]
    out += [f"{_cell(a)}" for a in answer[1:]]
    out.append("")
    for t in report.targets:
        out.append(f"- **{t.analyzer}**: {_code(t.name, table=False)}")
    out += ["", f"**{verdict_line(report)}**", ""]
    for analyzer, lines in headline_facts(report):
        fence = markdown_fence(lines)
        out += [f"## Facts: {_cell(analyzer)}", "", fence, *lines, fence, ""]
    listed = listed_findings(report, shown)
    if len(listed) < len(report.findings):
        out += [f"_{not_listed_line(report, listed, shown)}_", ""]
    if listed:
        out += ["## Findings", "", "| rule | severity | location | message | fix |", "|---|---|---|---|---|"]
        for f in listed:
            out.append(
                f"| {f.rule_id} | {f.severity.label} | {_code(str(f.location))} | {_cell(f.message)} "
                f"| {_cell(f.remediation)} |"
            )
        out.append("")
        detailed = [f for f in listed if f.evidence or f.detail]
        if detailed:
            out += ["<details><summary>Evidence</summary>", ""]
            for f in detailed:
                out.append(f"- **{f.rule_id}** {_cell(f.message)}")
                if f.detail:
                    out.append(f"  - detail: {_cell(f.detail)}")
                for e in f.evidence:
                    out.append(f"  - {_cell(e.label)}: {_code(e.value, table=False)}")
            out += ["", "</details>", ""]
    if report.ignored:
        out += ["## Ignored", "", "| rule | severity | location | message | reason | source |", "|---|---|---|---|---|---|"]
        for i in report.ignored:
            f, s = i.finding, i.suppression
            until = f" (until {s.expires})" if s.expires else ""
            out.append(f"| {f.rule_id} | {f.severity.label} | {_code(str(f.location))} | {_cell(f.message)} "
                       f"| {_cell(s.reason)} | {_cell(s.source)}{until} |")
        out.append("")
    if report.gaps:
        out += ["## Not examined", ""]
        for g in report.gaps:
            out.append(f"- [{g.analyzer}{', blocking' if g.blocking else ''}] {_cell(gap_text(g))}")
        out.append("")
    for title, cl in closing_sections(report):
        out += [f"## {_cell(title)}", ""]
        out += [f"- {_cell(line)}" for line in cl]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
