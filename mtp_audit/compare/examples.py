"""Runs the examples of :mod:`mtp_audit.compare.rules` through the compare analyzer (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`). Kept apart from the rule declarations, so the rules
module imports no analyzer."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Compare ``root/base`` with ``root/derived`` (the folders the test wrote ``example``'s files into)."""
    from mtp_audit.compare.analyze import compare_checkpoints

    return compare_checkpoints(root / "base", root / "derived")
