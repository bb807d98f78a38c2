"""``mtp-audit launch ... --log FILE``: the launch report merged with the log's, its prediction held against
the log (:func:`mtp_audit.runtime.compare.hold_against` does the comparison)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mtp_audit.report import Report


def prediction_from_launch(report: Report) -> dict[str, Any]:
    """The prediction of an ``mtp-audit launch`` report, from its typed answer (:func:`mtp_audit.results.launch_result`):
    ``engine`` (the registry's id of the engine the command starts), ``algorithm`` (what the engine runs after its
    rewrites, None for no speculation; left out when the launch asks for a method and could not tell whether it runs)
    and, where the engine states it, ``num_speculative_tokens`` (the draft tokens per step)."""
    from mtp_audit.results import LaunchVerdict, launch_result

    launch = report.facts.get("launch") or {}
    result = launch_result(report)
    pred: dict[str, Any] = {"engine": launch.get("engine")}
    if result is None:
        return pred
    undecided = (result.speculative_requested is not None and result.speculative_runs_as is None
                 and result.verdict is LaunchVerdict.COULD_NOT_TELL)
    if not undecided:
        pred["algorithm"] = result.speculative_runs_as
    if result.draft_tokens is not None:
        pred["num_speculative_tokens"] = result.draft_tokens
    return pred


def with_log(report: Report, log_path: str) -> Report:
    """``report`` (of ``mtp-audit launch``) merged with ``mtp-audit log`` of ``log_path``, the prediction held
    against the log (MTP530/MTP531). A log that cannot tell adds a note, never a blocking gap: it does not
    change what the launch audit could decide.

    Raises:
        InputError: the log cannot be read (see :func:`mtp_audit.runtime.analyze.analyze_log`).
    """
    from mtp_audit.runtime.analyze import analyze_log

    log = analyze_log([log_path], prediction=prediction_from_launch(report))
    log = Report(targets=log.targets, findings=log.findings, facts=log.facts, rule_ids=log.rule_ids,
                 tool_version=log.tool_version, gaps=tuple(replace(g, blocking=False) for g in log.gaps))
    merged = report.merge(log)
    launch = merged.facts.get("launch")
    if isinstance(launch, dict):
        merged.facts["launch"] = {**launch, **_log_answer(launch, log)}
    return merged


def _log_answer(launch: dict[str, Any], log: Report) -> dict[str, Any]:
    """``log_check`` (``contradicts``; ``agrees``: the log shows the predicted configuration or statistics; ``no
    contradiction``: it shows neither) and the launch's answer with the log's word first when the log contradicts the
    prediction: what ran outranks what was predicted (MTP531's message leads)."""
    against = [f for f in log.findings if f.rule_id == "MTP531"]
    agree = [f for f in log.findings if f.rule_id == "MTP530"]
    seen = next((e.value for f in agree for e in f.evidence if e.label == "seen"), None)
    check = "contradicts" if against else "agrees" if seen not in (None, "no contradiction") else "no contradiction"
    answer = [str(a) for a in launch.get("answer") or []]
    if against:
        lead = f"the log contradicts the prediction: {against[0].message} (MTP531"
        lead += f", +{len(against) - 1} more)" if len(against) > 1 else ")"
        answer = [lead, *(f"prediction: {a}" for a in answer[:1]), *answer[1:]]
    elif answer and (logged := _log_errors_lead(launch, log)):
        answer = [logged, *(f"prediction: {a}" for a in answer[:1]), *answer[1:]]
    return {"log_check": check, "answer": answer} if answer else {"log_check": check}


def _log_errors_lead(launch: dict[str, Any], log: Report) -> str | None:
    """The answer's first line when the log's own errors (MTP500: drafts all rejected, ...) fail a launch the audit
    found no error in: the headline's verdict word (FAIL) then comes from the log, so the answer says so first rather
    than lead with the prediction's "go" / "could not tell". ``None`` when the launch already says "fix first" or the
    log found no error."""
    from mtp_audit.report import Severity

    errors = [f for f in log.findings if f.severity >= Severity.ERROR]
    if not errors or (launch.get("summary") or {}).get("verdict") == "fix first":
        return None
    ids = ", ".join(sorted({f.rule_id for f in errors}))
    return f"the log shows {len(errors)} error(s) ({ids}): {errors[0].message}"
