"""The shared words of a launch outcome, for every engine: the verdict (``go`` / ``fix first`` / ``could not tell``)
decided from findings and gaps, its one-line sentence, and the small formatters every engine's "what will happen"
uses (bytes, ``file:line`` locations).
"""

from __future__ import annotations

from collections.abc import Sequence

from mtp_audit.report import Finding, Gap, Location, Report, Severity

GO, FIX_FIRST, COULD_NOT_TELL = "go", "fix first", "could not tell"
#: Order of verdicts from best to worst (used to tell whether an upgrade made things worse).
VERDICT_RANK = {GO: 0, COULD_NOT_TELL: 1, FIX_FIRST: 2}


def verdict(findings: Sequence[Finding], gaps: Sequence[Gap]) -> str:
    """``fix first`` when any analyzer found an error; else ``could not tell`` when a gap blocks an
    answer; else ``go`` (warnings do not stop a launch; they are listed)."""
    if any(f.severity >= Severity.ERROR for f in findings):
        return FIX_FIRST
    if any(g.blocking for g in gaps):
        return COULD_NOT_TELL
    return GO


def verdict_sentence(v: str, errors: Sequence[Finding], blocking: Sequence[Gap], findings: Sequence[Finding]) -> str:
    """The "Verdict: ..." line of "What will happen" (both engines): the error rule ids for ``fix first``, the
    first blocking gap for ``could not tell``, the warning rule ids for ``go``."""
    if v == FIX_FIRST:
        return f"Verdict: fix first ({len(errors)} error(s): " + "; ".join(sorted({f.rule_id for f in errors})) + ")."
    if v == COULD_NOT_TELL:
        return f"Verdict: could not tell ({len(blocking)} blocking gap(s): {blocking[0].message})."
    warn = sorted({f.rule_id for f in findings if f.severity == Severity.WARNING})
    return "Verdict: go" + (f" (warnings: {', '.join(warn)})." if warn else ".")


def loc_of(text: str | None) -> Location | None:
    """``"sglang/srt/x.py:12"`` -> Location(path, line)."""
    if not text:
        return None
    path, _, line = text.rpartition(":")
    if path and line.isdigit():
        return Location(path=path, line=int(line))
    return Location(path=text)


def fmt_bytes(n: int | float) -> str:
    """``13,191,136,256 bytes (13.19 GB)`` (:func:`mtp_audit.units.human_bytes`)."""
    from mtp_audit.units import human_bytes

    return human_bytes(n)


def mtp_errors_as_warnings(report: Report, engine_label: str, spec_flag: str) -> Report:
    """The checkpoint report with its errors that only stop MTP (``mtp_audit.checkpoint.rules.BLOCKS_MTP``: the
    findings that make MTP unusable) turned into warnings, for a launch that requests no speculative decoding: the
    engine then skips the MTP weights, so they cannot break this launch. The finding is kept; its message says why it
    is a warning here, in the engine's words (``engine_label``, and ``spec_flag``, the flag that would turn MTP on)."""
    import dataclasses

    from mtp_audit.checkpoint import rules as checkpoint_rules

    blocks = checkpoint_rules.BLOCKS_MTP
    out = []
    for f in report.findings:
        if f.rule_id in blocks and f.severity >= Severity.ERROR:
            f = dataclasses.replace(f, severity=Severity.WARNING,
                                    message=f.message + " (a warning for this launch, not an error: the command requests no "
                                    f"speculative decoding, so {engine_label} does not load the MTP weights; fix it before adding "
                                    f"{spec_flag})")
        out.append(f)
    return dataclasses.replace(report, findings=tuple(out))
