"""Runs the examples of :mod:`mtp_audit.engines.sglang.launch.rules` through the launch analyzer (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`). Kept apart from the rule declarations, so the rules
module imports no analyzer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Run ``mtp-audit launch`` on an example folder: ``example.args`` is the command (run from ``root``),
    ``sg/`` the SGLang tree (``sg-new/``: a second one to compare with), ``vl/`` a vLLM tree (a vLLM
    command), ``env.txt`` the machine. An engine read from knowledge tables (TensorRT-LLM) needs no tree."""
    from mtp_audit.launch import audit_launch

    kwargs: dict[str, Any] = {"cwd": root, "environ": {}}
    if (root / "sg").is_dir():
        kwargs["sglang"] = root / "sg"
    if (root / "vl").is_dir():
        kwargs["vllm"] = root / "vl"
    if (root / "sg-new").is_dir():
        kwargs["compare_sglang"] = root / "sg-new"
    if (root / "env.txt").is_file():
        kwargs["env_dumps"] = [root / "env.txt"]
    return audit_launch(list(example.args), **kwargs)
