"""``run_example(root, example)`` for the rule registry (:func:`mtp_audit.report.rules.run_rule_example`)."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.engines.vllm._shared import Example, Report


def run_example(root: Path, example: Example) -> Report:
    """Run the analyzer on an example folder; ``--diff`` examples hold ``old/`` and ``new/`` trees."""
    from mtp_audit.engines.vllm.audit import audit_vllm
    from mtp_audit.engines.vllm.diff import diff_vllm

    if "--diff" in example.args:
        return diff_vllm(audit_vllm(root / "old"), audit_vllm(root / "new"))
    return audit_vllm(root)
