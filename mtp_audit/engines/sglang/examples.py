"""Runs the examples of :mod:`mtp_audit.engines.sglang.rules` through the sglang analyzer (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`). Kept apart from the rule declarations, so the rules
module imports no analyzer."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Run the analyzer on an example folder; ``--diff`` examples hold ``old/`` and ``new/`` trees."""
    from mtp_audit.engines.sglang import audit_sglang, diff_sglang

    if "--diff" in example.args:
        return diff_sglang(audit_sglang(root / "old"), audit_sglang(root / "new"))
    return audit_sglang(root)
