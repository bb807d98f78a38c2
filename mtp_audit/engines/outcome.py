"""The shared words of a launch outcome, for every engine: the verdict (``go`` / ``fix first`` / ``could not tell``)
decided from findings and gaps, its one-line sentence, and the small formatters every engine's "what will happen"
uses (bytes, ``file:line`` locations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer, as_checkpoint_answer
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


def mtp_errors_as_warnings(report: Report, engine_label: str, spec_flag: str, *, reason: str | None = None) -> Report:
    """The checkpoint report with its errors that only stop MTP (``mtp_audit.checkpoint.rules.BLOCKS_MTP``: the
    findings that make MTP unusable) turned into warnings, for a launch that requests no speculative decoding: the
    engine then skips the MTP weights, so they cannot break this launch. The finding is kept; its message says why it
    is a warning here, in the engine's words (``engine_label``, and ``spec_flag``, the flag that would turn MTP on), or
    ``reason`` when another cause keeps the weights unloaded (a draft from another checkpoint)."""
    import dataclasses

    from mtp_audit.checkpoint import rules as checkpoint_rules

    blocks = checkpoint_rules.BLOCKS_MTP
    out = []
    for f in report.findings:
        if f.rule_id in blocks and f.severity >= Severity.ERROR:
            why = reason or (f"the command requests no speculative decoding, so {engine_label} does not load the MTP "
                             f"weights; fix it before adding {spec_flag}")
            f = dataclasses.replace(f, severity=Severity.WARNING,
                                    message=f.message + f" (a warning for this launch, not an error: {why})")
        out.append(f)
    return dataclasses.replace(report, findings=tuple(out))


#: compute capabilities (major) whose GPUs have FP4 tensor cores: SM100/SM103 (B200/B300/GB200/GB300), SM110 (Thor),
#: SM120/SM121 (RTX PRO 6000 Blackwell, RTX 50xx, DGX Spark) -- the CUDA C Programming Guide's compute capability table
FP4_HARDWARE_MAJORS = (10, 11, 12)
_FP4_WORDS = ("fp4", "nvfp4", "mxfp4", "modelopt_fp4", "w4a4")


def fp4_needed(ck: CheckpointAnswer | Mapping[str, Any] | None, quantization: str | None) -> bool | None:
    """Whether this launch runs FP4 kernels: an FP4 ``--quantization`` method, or a checkpoint whose declared scheme is
    FP4 (NVFP4, MXFP4). ``False`` for a checkpoint audited as not FP4 with no FP4 method asked; ``None`` when the
    checkpoint was not audited (then the FP4 verdict may matter). ``ck``: the checkpoint's typed answer (or its
    ``facts["checkpoint"]`` document)."""
    if quantization and any(w in quantization.lower() for w in _FP4_WORDS):
        return True
    a = as_checkpoint_answer(ck)
    if a is None or (quantization and "mixed" in quantization.lower()):
        # a mixed-precision method decides per layer; the checkpoint's declared layers say whether any is FP4
        return True if a is not None and "FP4" in str(a.summary.quantization or "").upper() else None
    text = " ".join(str(x) for x in (a.summary.quantization, a.mtp.format) if x)
    return "FP4" in text.upper()


def _is_fp4_gap(g: Gap) -> bool:
    return g.analyzer == "preflight" and "FP4" in g.message


def _is_mtp_gap(g: Gap) -> bool:
    return g.analyzer == "checkpoint" and "MTP" in g.message


def scope_gap(g: Gap, *, fp4: bool | None, speculative: bool, spec_flag: str) -> Gap:
    """One gap as :func:`scope_gaps` scopes it: a note when this launch's verdict does not depend on it, or when it is
    about a machine fact ``--no-machine`` left unexamined (:func:`mtp_audit.preflight.nomachine.machine_note`)."""
    import dataclasses

    from mtp_audit.preflight.nomachine import machine_note

    g = machine_note(g)
    if g.blocking and fp4 is False and _is_fp4_gap(g):
        return dataclasses.replace(g, blocking=False, message=g.message + " (a note for this launch: it runs no FP4 kernels)")
    if g.blocking and not speculative and _is_mtp_gap(g):
        return dataclasses.replace(g, blocking=False, message=g.message + f" (a note for this launch: no {spec_flag}, so the "
                                   "MTP weights are not loaded)")
    return g


def machine_notes(gaps: Sequence[Gap]) -> list[Gap]:
    """A launch's own gaps with those about machine facts ``--no-machine`` left unexamined as notes
    (:func:`mtp_audit.preflight.nomachine.scope_gaps`), in order."""
    from mtp_audit.preflight.nomachine import scope_gaps as notes

    return notes(gaps)


def scope_gaps(reports: Sequence[Report], *, fp4: bool | None, speculative: bool, spec_flag: str) -> list[Report]:
    """The sub-reports with the blocking gaps this launch's verdict does not depend on turned into notes: the native FP4
    verdict when the launch runs no FP4 kernels (``fp4`` is ``False``: :func:`fp4_needed`), the checkpoint's MTP
    checks when the command requests no speculative decoding (``speculative`` false; ``spec_flag`` names the flag that
    would), the machine facts ``--no-machine`` did not examine. Each note says why it does not block; nothing is
    dropped (:func:`scope_gap`)."""
    import dataclasses

    out = []
    for r in reports:
        gaps = [scope_gap(g, fp4=fp4, speculative=speculative, spec_flag=spec_flag) for g in r.gaps]
        out.append(dataclasses.replace(r, gaps=tuple(gaps)) if gaps != list(r.gaps) else r)
    return out


def fp4_text(pf: Mapping[str, Any], needed: bool | None, ck: CheckpointAnswer | Mapping[str, Any] | None) -> str:
    """The "native FP4" words of "What will happen": the machine's verdict, said for this launch. A launch that runs no
    FP4 kernels reads "not needed" (with the machine's verdict after it); "not capable" on GPUs with FP4 tensor cores
    (:data:`FP4_HARDWARE_MAJORS`) says the software stack blocks it (the error rules), not the hardware."""
    summary = pf.get("summary")
    verdict = (summary.get("verdict") if isinstance(summary, Mapping) else None) or "unknown"
    vs = pf.get("verdicts") or []
    hw = sorted({str(v.get("compute_capability")) for v in vs if _fp4_hardware(v.get("compute_capability"))})
    if verdict == "not capable" and hw and all(_fp4_hardware(v.get("compute_capability")) for v in vs):
        rules = sorted({str(r).split(":", 1)[0] for v in vs for r in v.get("reasons") or [] if str(r)[:3] == "MTP"})
        verdict = (f"not capable with this software stack ({', '.join(rules) or 'see the preflight findings'}); the GPUs "
                   f"(compute capability {', '.join(hw)}) have FP4 tensor cores")
    if needed is False:
        a = as_checkpoint_answer(ck)
        q = a.summary.quantization if a is not None else None
        what = (q.split(" (")[0] + " checkpoint") if q else "unquantized checkpoint"
        return f"not needed by this launch ({what}, no FP4 quantization method); the machine: {verdict}"
    return verdict


def _fp4_hardware(cc: Any) -> bool:
    try:
        major = int(str(cc).split(".")[0]) if not isinstance(cc, (list, tuple)) else int(cc[0])
    except (ValueError, IndexError, TypeError):
        return False
    return major in FP4_HARDWARE_MAJORS
