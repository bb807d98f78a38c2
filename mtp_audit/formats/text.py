"""Terminal output, answer first.

Without ``verbose`` (what a person reads in ten seconds, and what a CI log shows)::

    FAIL: config.json declares 1 MTP layer but the checkpoint ships none; ... (exit 1)

    config.json [/mtp_num_hidden_layers]: MTP001 error: config.json declares 1 MTP layer(s) ...

    not examined:
      [checkpoint, note] model.safetensors.index.json names 10 shard file(s), none read: ...

    1 finding (1 error, 0 warning, 0 info); 1 not examined (0 blocking); status: findings

the verdict and the answer (:func:`~mtp_audit.formats.summary.answer_lines`), one line per finding
(``location: RULE severity: message``, the message cut at about 200 characters), one line per gap and
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
    headline_facts,
    listed_findings,
    not_listed_line,
    shorten,
    verdict_line,
    verdict_word,
)
from mtp_audit.report import Finding, Report, Severity, exit_code

#: Longest message on a finding line without ``verbose`` (characters).
MESSAGE_LIMIT = 200

_WORD_STYLE = {"FAIL": ("red", "✗"), "ERROR": ("red", "✗"), "INCONCLUSIVE": ("magenta", "?"), "WARN": ("yellow", "!"), "PASS": ("green", "✓")}
_SEVERITY_STYLE = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _style(color: bool, text: str, **kw: Any) -> str:
    if not color:
        return text
    import click

    return click.style(text, **kw)


def _finding_line(f: Finding, color: bool, verbose: bool, suffix: str = "") -> str:
    message = f.message if verbose else shorten(f.message, MESSAGE_LIMIT)
    sev = _style(color, f.severity.label, fg=_SEVERITY_STYLE[f.severity], bold=f.severity is Severity.ERROR)
    rule = _style(color, f.rule_id, bold=True)
    return f"{f.location}: {rule} {sev}: {message}{suffix}"


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
           shown: Any = None) -> str:
    """Render ``report`` for a terminal or a CI log.

    Args:
        report: the audit result.
        verbose: add targets, evidence, detail, fixes, ignored findings, closing sections and facts.
        color: ANSI colours and verdict symbols (only for a terminal).
        fail_on: the ``--fail-on`` threshold (``None``: never), for the exit code the first line names.
        shown: a display filter (``shown(finding) -> bool``, ``.quiet``, ``.describe()``; the CLI's
            ``-q`` / ``--severity`` / ``--select``): which findings are listed. The first line and the
            counts still describe every finding.
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
    if listed:
        lines.append("")
    for f in listed:
        lines.append(_finding_line(f, color, verbose))
        if verbose:
            lines += _details(f)
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
            lines.append("  " + _finding_line(i.finding, color, verbose, f" [ignored: {why}{s.source}{until}]"))
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
