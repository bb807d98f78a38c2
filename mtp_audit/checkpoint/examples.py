"""Runs the examples of :mod:`mtp_audit.checkpoint.rules` through the checkpoint analyzer (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`). Kept apart from the rule declarations, so the rules
module imports no analyzer."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Audit the folder a test wrote ``example``'s files into (``example.args`` is unused here)."""
    from mtp_audit.checkpoint import audit_checkpoint

    return audit_checkpoint(root)
