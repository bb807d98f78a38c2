"""Runs the examples of the engines' launch rules (:mod:`mtp_audit.engines.sglang.launch.rules` and the others)
through the launch analyzer (``mtp_audit.report.rules.run_rule_example`` and ``mtp-audit explain`` call
:func:`run_example`). Kept apart from the rule declarations, so the rules module imports no analyzer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Run ``mtp-audit launch`` on an example folder: ``example.args`` is the command (run from ``root``); an
    engine's release tree is the folder its :attr:`~mtp_audit.engines.base.Engine.example_tree` names (SGLang's
    ``sg/``, vLLM's ``vl/``; with ``-new``, ``sg-new/``: a second one to compare with); ``env.txt`` the machine. An
    engine read from knowledge tables (TensorRT-LLM) needs no tree."""
    from mtp_audit.engines.registry import engines
    from mtp_audit.launch import COMPARE_PREFIX, audit_launch

    kwargs: dict[str, Any] = {"cwd": root, "environ": {}}
    for engine in engines():
        tree = engine.example_tree
        if tree and (root / tree).is_dir():
            kwargs[engine.name] = root / tree
        if tree and (root / f"{tree}-new").is_dir():
            kwargs[COMPARE_PREFIX + engine.name] = root / f"{tree}-new"
    if (root / "env.txt").is_file():
        kwargs["env_dumps"] = [root / "env.txt"]
    return audit_launch(list(example.args), **kwargs)
