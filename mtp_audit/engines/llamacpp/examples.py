"""Runs the examples of :mod:`mtp_audit.engines.llamacpp.rules` through the llama.cpp engine (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`), the way ``mtp-audit launch`` assembles its report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mtp_audit.report import Gap, Report
from mtp_audit.report.rules import Example

if TYPE_CHECKING:
    from mtp_audit.preflight.typed import MachineAnswer


def run_example(root: Path, example: Example) -> Report:
    """Evaluate ``example.args`` (``--llamacpp-build N -- llama-server ...``), model paths relative to ``root``."""
    from mtp_audit.engines.llamacpp import rules
    from mtp_audit.engines.llamacpp.command import parse_build
    from mtp_audit.engines.llamacpp.launch import evaluate_launch

    args = list(example.args)
    info = None
    if args[:1] == ["--llamacpp-build"]:
        info, args = parse_build(args[1]), args[2:]
    if args[:1] == ["--"]:
        args = args[1:]

    def checkpoint(text: str, flag: str) -> tuple[Report | None, Gap | None]:
        from mtp_audit.checkpoint import audit_checkpoint

        return audit_checkpoint(root / text), None

    def machine() -> MachineAnswer | None:
        from mtp_audit.preflight import preflight
        from mtp_audit.preflight.typed import machine_answer

        return machine_answer(preflight(env_dumps=[root / "env.txt"]))

    out = evaluate_launch(args, info, checkpoint, machine if (root / "env.txt").is_file() else None)
    launch = Report.build("launch", out.name, findings=out.findings, gaps=out.gaps, facts=out.facts,
                          rule_ids=[r.id for r in rules.RULES])
    return launch.merge(*out.reports)
