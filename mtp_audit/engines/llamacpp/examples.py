"""Runs the examples of :mod:`mtp_audit.engines.llamacpp.rules` through the llama.cpp launch audit
(``mtp_audit.report.rules.run_rule_example`` and ``mtp-audit explain`` call :func:`run_example`)."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Audit ``example.args`` (``--llamacpp-build N -- llama-server ...``) with relative paths under ``root``."""
    from mtp_audit.engines.llamacpp.launch import audit_llamacpp_launch

    args = list(example.args)
    build = None
    if args[:1] == ["--llamacpp-build"]:
        build, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    return audit_llamacpp_launch(args, build=build, cwd=root)
