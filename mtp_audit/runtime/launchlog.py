"""``mtp-audit launch ... --log FILE``: the launch report merged with the log's, its prediction held against
the log (:func:`mtp_audit.runtime.compare.hold_against` does the comparison)."""

from __future__ import annotations

from typing import Any

from mtp_audit.report import Gap, Report


def prediction_from_launch(report: Report) -> dict[str, Any]:
    """The prediction of an ``mtp-audit launch`` report: ``engine`` (the engine analyzer among its targets),
    ``algorithm`` (``facts["launch"]["speculative"]["runs_as"]``) and, for vLLM, ``num_speculative_tokens``."""
    launch = report.facts.get("launch") or {}
    spec = launch.get("speculative") or {}
    engine = next((t.analyzer for t in report.targets if t.analyzer in ("sglang", "vllm", "trtllm")), None)
    pred: dict[str, Any] = {"engine": {"trtllm": "tensorrt-llm"}.get(engine or "", engine), "algorithm": spec.get("runs_as")}
    if spec.get("num_speculative_tokens") is not None:
        pred["num_speculative_tokens"] = spec["num_speculative_tokens"]
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
                 tool_version=log.tool_version, gaps=tuple(Gap(g.analyzer, g.message, g.path, blocking=False) for g in log.gaps))
    return report.merge(log)
