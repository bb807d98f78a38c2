"""Plain-words summary lines shared by the text and Markdown renderers."""

from __future__ import annotations

from typing import Any

from mtp_audit.formats.escape import escape
from mtp_audit.report import Gap, Report, Severity, Status


def verdict_line(report: Report) -> str:
    """One line: counts per severity, ignored findings, gaps, and the status (``pass`` / ``findings`` /
    ``inconclusive``)."""
    c = report.counts()
    n = sum(c.values())
    parts = [f"{n} finding{'s' if n != 1 else ''} ({c['error']} error, {c['warning']} warning, {c['info']} info)"]
    if report.ignored:
        parts.append(f"{len(report.ignored)} ignored")
    if report.gaps:
        blocking = sum(1 for g in report.gaps if g.blocking)
        parts.append(f"{len(report.gaps)} not examined ({blocking} blocking)")
    status = report.status
    word = {
        Status.PASS: "pass",
        Status.FINDINGS: "findings",
        Status.INCONCLUSIVE: "inconclusive: could not tell",
    }[status]
    return "; ".join(parts) + f"; status: {word}"


def listed_findings(report: Report, shown: Any = None) -> list[Any]:
    """The findings a display filter lists (all of them when ``shown`` is ``None``; none when it is quiet)."""
    if shown is None:
        return list(report.findings)
    if getattr(shown, "quiet", False):
        return []
    return [f for f in report.findings if shown(f)]


def secondary_findings(report: Report, listed: list[Any]) -> dict[tuple[str, str], str]:
    """``{(rule id, message): why}`` of the listed findings an analyzer marked secondary
    (``facts[analyzer]["secondary"] = {"findings": [[rule id, message], ...], "why": ...}``, e.g. the rewrites of an
    SGLang upgrade that do not concern MTP): the text report counts them instead of listing them, ``-v`` lists them."""
    out: dict[tuple[str, str], str] = {}
    for facts in report.facts.values():
        sec = facts.get("secondary") if isinstance(facts, dict) else None
        if isinstance(sec, dict):
            keys = {(str(r), str(m)) for r, m in sec.get("findings") or ()}
            out.update({(f.rule_id, f.message): str(sec.get("why") or "") for f in listed if (f.rule_id, f.message) in keys})
    return out


def grouped_lines(grouped: dict[tuple[str, str], str]) -> list[str]:
    """One line per rule for the secondary findings: ``MTP110: 231 more (info): why; -v lists them``."""
    per: dict[tuple[str, str], int] = {}
    for (rule, _), why in grouped.items():
        per[(rule, why)] = per.get((rule, why), 0) + 1
    return [f"{rule}: {n} more (info): {why}; -v lists them" for (rule, why), n in sorted(per.items())]


def not_listed_line(report: Report, listed: list[Any], shown: Any) -> str:
    """``N findings not listed (--severity warning)``: says that a filter hid findings, and which."""
    n = len(report.findings) - len(listed)
    how = shown.describe() if shown is not None and hasattr(shown, "describe") else ""
    how = how or ("-q" if getattr(shown, "quiet", False) else "a filter")
    return f"{n} finding{'s' if n != 1 else ''} not listed ({how}); the verdict and the counts include them"


def printable(text: str) -> str:
    """``text`` as a person may read it: :func:`mtp_audit.formats.escape.escape` (C0, DEL, C1, line
    separators and bidi controls as visible escapes), so a value read from an audited file (an
    ``architectures`` entry, a dump's GPU name) cannot start a new report line, fake a verdict, recolour
    the terminal or read in another order than it is stored."""
    return escape(text)


def _show(value: Any) -> str:
    """A fact value as a person reads it: ``yes``/``no`` for booleans, ``-`` for null."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return printable(str(value))


def _flatten(facts: Any, depth: int = 0) -> list[str]:
    out: list[str] = []
    if not isinstance(facts, dict):
        return out
    pad = "  " * depth
    for k in sorted(facts):
        v = facts[k]
        if isinstance(v, dict):
            if depth < 1:
                sub = _flatten(v, depth + 1)
                if sub:
                    out.append(f"{pad}{k}:")
                    out += sub
        elif isinstance(v, list):
            if len(v) <= 8 and all(not isinstance(x, (dict, list)) for x in v):
                out.append(f"{pad}{k}: {', '.join(map(_show, v)) if v else '(none)'}")
            else:
                out.append(f"{pad}{k}: {len(v)} items (see --format json)")
        else:
            out.append(f"{pad}{k}: {_show(v)}")
    return out


def headline_facts(report: Report) -> list[tuple[str, list[str]]]:
    """Per analyzer, the lines of its headline facts: ``facts[analyzer]["summary"]`` when the analyzer
    provides one, else its scalar facts; nested two levels at most, long lists summarised by length."""
    out = []
    for analyzer in sorted(report.facts):
        facts = report.facts[analyzer]
        summary = facts.get("summary") if isinstance(facts, dict) else None
        lines = _flatten(summary if isinstance(summary, dict) else facts)
        if lines:
            out.append((analyzer, lines))
    return out


def closing_sections(report: Report) -> list[tuple[str, list[str]]]:
    """Per analyzer (sorted), its optional closing section ``(title, lines)``, printed at the END of the
    text and Markdown reports: ``facts[analyzer]["closing"] = {"title": str, "lines": [str, ...]}``
    (plain-words sentences, e.g. the launch audit's "What will happen"). Malformed entries are skipped."""
    out = []
    for analyzer in sorted(report.facts):
        facts = report.facts[analyzer]
        closing = facts.get("closing") if isinstance(facts, dict) else None
        if not isinstance(closing, dict):
            continue
        lines = [printable(str(x)) for x in closing.get("lines") or [] if isinstance(x, (str, int, float))]
        if lines:
            out.append((printable(str(closing.get("title") or analyzer)), lines))
    return out


def gap_text(gap: Gap) -> str:
    """A gap's message, prefixed with its file when the message does not already name it."""
    if gap.path and not gap.message.startswith(gap.path) and gap.path not in gap.message:
        return printable(f"{gap.path}: {gap.message}")
    return printable(gap.message)


#: Exit code -> the word the text report opens with (exit 0 is ``PASS``, or ``WARN`` when findings remain).
VERDICT_WORDS = {1: "FAIL", 3: "INCONCLUSIVE"}


def verdict_word(report: Report, code: int) -> str:
    """``FAIL`` (exit 1), ``INCONCLUSIVE`` (exit 3), else ``ERROR`` when an error remains below ``--fail-on``
    (``--fail-on never``: the consequence is the same, only the exit code differs), ``WARN`` when a warning
    remains, else ``PASS``."""
    if code in VERDICT_WORDS:
        return VERDICT_WORDS[code]
    if report.at_least(Severity.ERROR):
        return "ERROR"
    return "WARN" if report.status is Status.FINDINGS else "PASS"


def answer_lines(report: Report) -> list[str]:
    """The answer in a few lines (at most 12): ``facts[analyzer]["answer"]`` of the first target's analyzer (the
    one the user ran; ``launch`` puts itself first), else a sentence from the counts and the first
    blocking gap."""
    analyzer = report.targets[0].analyzer if report.targets else None
    facts = report.facts.get(analyzer) if analyzer else None
    given = facts.get("answer") if isinstance(facts, dict) else None
    if isinstance(given, list) and given and all(isinstance(x, str) for x in given):
        lines = [printable(str(x)) for x in given[:12]]
        # the answer is built from the facts; an ignored finding it names is still true, so say it is ignored
        named = [i for i in report.ignored if i.finding.rule_id in lines[0]]
        ignored = sorted({i.finding.rule_id for i in named})
        if ignored:
            baseline = all(i.suppression.source.startswith("--baseline-findings") for i in named)
            lines[0] += f" [{', '.join(ignored)} ignored by {'the baseline' if baseline else 'configuration'}]"
        return lines
    errors = sorted({f.rule_id for f in report.findings if f.severity.label == "error"})
    if errors:
        return [f"{len(report.at_least(Severity.ERROR))} error finding(s): {', '.join(errors)}"]
    blocking = [g for g in report.gaps if g.blocking]
    if blocking:
        return [f"could not tell: {gap_text(blocking[0])}"]
    warnings = sorted({f.rule_id for f in report.findings if f.severity.label == "warning"})
    if warnings:
        return [f"no error; warnings: {', '.join(warnings)}"]
    return ["no problem found"]


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, ending in `` ...`` when cut
    (the full text stays in JSON, SARIF, Markdown and ``--verbose``)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 4)
    return text[: cut if cut > limit // 2 else limit - 4].rstrip(" ,;:") + " ..."
