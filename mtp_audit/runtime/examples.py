"""Runs the examples of :mod:`mtp_audit.runtime.rules` through :func:`mtp_audit.runtime.analyze.analyze_log`
(``mtp_audit.report.rules.run_rule_example`` and ``mtp-audit explain`` call :func:`run_example`)."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Analyse ``root/server.log``; ``--predict ENGINE ALGORITHM`` holds a prediction against it and
    ``--metrics-fixture`` adds a metrics window read from the real vLLM metric texts shipped with the rule."""
    from mtp_audit.runtime.analyze import analyze_log

    args = list(example.args)
    prediction = None
    metrics = None
    if "--predict" in args:
        i = args.index("--predict")
        prediction = {"engine": args[i + 1], "algorithm": args[i + 2]}
    if "--metrics-fixture" in args:
        from mtp_audit.runtime.metrics import window_from_texts
        from mtp_audit.runtime.rules import METRICS_AFTER, METRICS_BEFORE

        metrics = window_from_texts(METRICS_BEFORE, METRICS_AFTER, 10.0, "example")
    return analyze_log([root / "server.log"], prediction=prediction, metrics=metrics)
