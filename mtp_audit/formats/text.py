"""Terminal output, answer first.

Without ``verbose`` (what a person reads in ten seconds, and what a CI log shows)::

    FAIL: config.json declares 1 MTP layer but the checkpoint ships none; ... (exit 1)

    config.json [/mtp_num_hidden_layers]: MTP001 error: config.json declares 1 MTP layer(s) ...

    not examined:
      [checkpoint, note] model.safetensors.index.json names 10 shard file(s), none read: ...

    1 finding (1 error, 0 warning, 0 info); 1 not examined (0 blocking); status: findings

the verdict and the answer (:func:`~mtp_audit.formats.summary.answer_lines`), one line per finding
(``location: RULE severity: message``, the whole message; wrapped to the terminal's width on a terminal), one line per gap and
the counts. ``verbose`` adds what was audited and the facts blocks, each finding's detail, evidence
and fix, the ignored findings with their reasons, and the closing sections (``facts[analyzer]["closing"]``).
Colour and symbols only when ``color`` is true (the CLI sets it for a terminal, never for a file or a
pipe, and honours ``NO_COLOR`` / ``FORCE_COLOR``).
"""

from __future__ import annotations

from typing import Any

from mtp_audit.formats.summary import (
    answer_lines,
    closing_sections,
    gap_text,
    grouped_lines,
    headline_facts,
    listed_findings,
    not_listed_line,
    secondary_findings,
    verdict_line,
    verdict_word,
)
from mtp_audit.report import Finding, Report, Severity, exit_code

#: Indent of the continuation lines when a finding line is wrapped to the terminal's width.
WRAP_INDENT = "    "

_WORD_STYLE = {"FAIL": ("red", "✗"), "ERROR": ("red", "✗"), "INCONCLUSIVE": ("magenta", "?"), "WARN": ("yellow", "!"), "PASS": ("green", "✓")}
_SEVERITY_STYLE = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _style(color: bool, text: str, **kw: Any) -> str:
    if not color:
        return text
    import click

    return click.style(text, **kw)


def _finding_line(f: Finding, color: bool, verbose: bool, suffix: str = "", width: int | None = None) -> str:
    """``location: RULE severity: message`` with the whole message: one line for a file or a pipe, wrapped to
    ``width`` columns (continuation lines indented) on a terminal. Colour codes are added after wrapping."""
    head = f"{f.location}: {f.rule_id} {f.severity.label}: "
    text = f"{head}{f.message}{suffix}"
    if width is not None and len(text) > width:
        import textwrap

        text = "\n".join(textwrap.wrap(text, width=max(width, 40), subsequent_indent=WRAP_INDENT,
                                        break_long_words=False, break_on_hyphens=False))
    if color:
        sev = _style(color, f.severity.label, fg=_SEVERITY_STYLE[f.severity], bold=f.severity is Severity.ERROR)
        text = text.replace(f"{f.rule_id} {f.severity.label}: ", f"{_style(color, f.rule_id, bold=True)} {sev}: ", 1)
    return text


def _details(f: Finding) -> list[str]:
    out = []
    if f.detail:
        out.append(f"    detail: {f.detail}")
    for e in f.evidence:
        where = f" ({e.location})" if e.location else ""
        out.append(f"    evidence: {e.label} = {e.value}{where}")
    if f.remediation:
        out.append(f"    fix: {f.remediation}")
    return out


def render(report: Report, *, verbose: bool = False, color: bool = False, fail_on: Severity | None = Severity.ERROR,
           shown: Any = None, width: int | None = None) -> str:
    """Render ``report`` for a terminal or a CI log.

    Args:
        report: the audit result.
        verbose: add targets, evidence, detail, fixes, ignored findings, closing sections and facts.
        color: ANSI colours and verdict symbols (only for a terminal).
        fail_on: the ``--fail-on`` threshold (``None``: never), for the exit code the first line names.
        shown: a display filter (``shown(finding) -> bool``, ``.quiet``, ``.describe()``; the CLI's
            ``-q`` / ``--severity`` / ``--select``): which findings are listed. The first line and the
            counts still describe every finding.
        width: the terminal's width: finding lines are wrapped to it; ``None`` (a file, a pipe, a CI log): one
            line per finding, never cut.
    """
    code = exit_code(report, fail_on)
    word = verdict_word(report, code)
    fg, symbol = _WORD_STYLE[word]
    head = _style(color, f"{symbol} {word}" if color else word, fg=fg, bold=True)
    answer = answer_lines(report)
    ignored = f"; {len(report.ignored)} ignored" if report.ignored else ""
    lines = [f"{head}: {answer[0]} (exit {code}{ignored})"] + [f"  {a}" for a in answer[1:]]
    if verbose:
        lines += [f"  audited ({t.analyzer}): {t.name}" for t in report.targets]
        for analyzer, fl in headline_facts(report):
            lines += ["", f"facts ({analyzer}):"] + [f"  {line}" for line in fl]
    listed = listed_findings(report, shown)
    grouped = {} if verbose else secondary_findings(report, listed)
    if listed:
        lines.append("")
    for f in listed:
        if (f.rule_id, f.message) in grouped:
            continue
        lines.append(_finding_line(f, color, verbose, width=width))
        if verbose:
            lines += _details(f)
    lines += grouped_lines(grouped)
    if len(listed) < len(report.findings):
        lines += ["", not_listed_line(report, listed, shown)]
    if shown is not None and getattr(shown, "quiet", False):
        return "\n".join([*lines, "", verdict_line(report)]) + "\n"
    if verbose and report.ignored:
        lines += ["", f"ignored ({len(report.ignored)}):"]
        for i in report.ignored:
            s = i.suppression
            why = f"{s.reason}; " if s.reason else ""
            until = f", until {s.expires}" if s.expires else ""
            lines.append("  " + _finding_line(i.finding, color, verbose, f" [ignored: {why}{s.source}{until}]", width=width))
    if report.gaps:
        lines += ["", "not examined:"]
        for g in report.gaps:
            tag = "blocking" if g.blocking else "note"
            lines.append(f"  [{g.analyzer}, {tag}] {gap_text(g)}")
    if verbose:
        for title, cl in closing_sections(report):
            lines += ["", f"{title}:"] + [f"  {line}" for line in cl]
    lines += ["", verdict_line(report)]
    return "\n".join(lines) + "\n"
