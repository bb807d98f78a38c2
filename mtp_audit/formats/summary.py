"""Plain-words summary lines shared by the text and Markdown renderers."""

from __future__ import annotations

from mtp_audit.report import Report, Status


def verdict_line(report: Report) -> str:
    """One line: counts per severity, gaps, and the status (``pass`` / ``findings`` / ``inconclusive``)."""
    c = report.counts()
    n = sum(c.values())
    parts = [f"{n} finding{'s' if n != 1 else ''} ({c['error']} error, {c['warning']} warning, {c['info']} info)"]
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
