"""A deployment tool that gates a launch on mtp-audit's typed results (type-checked with mypy --strict)."""

from __future__ import annotations

import sys
from pathlib import Path

import mtp_audit
from mtp_audit import LaunchVerdict, Severity


def gate(checkpoint: Path, launch: list[str], env_dump: Path) -> list[str]:
    """Return the argv to start, or exit with why not."""
    ck = mtp_audit.checkpoint_facts(mtp_audit.audit_checkpoint(checkpoint, offline=True))
    if ck is None or ck.mtp_layers_declared is None:
        sys.exit("no MTP layers declared: nothing to draft with")
    if ck.mtp_present is False:
        sys.exit(f"{ck.mtp_layers_declared} MTP layer(s) declared, none shipped")
    report = mtp_audit.audit_launch(launch, env_dumps=[env_dump], sglang=None)
    errors: list[str] = [f.rule_id for f in report.findings if f.severity >= Severity.ERROR]
    result = mtp_audit.launch_result(report)
    if result is None:
        sys.exit("not a launch report")
    if result.verdict is LaunchVerdict.FIX_FIRST and result.corrected_argv is not None:
        return list(result.corrected_argv)
    if result.verdict is not LaunchVerdict.GO:
        sys.exit(f"{result.verdict.value}: {', '.join(errors)}")
    fp4 = mtp_audit.fp4_readiness(report)
    ccs: tuple[str, ...] = fp4.compute_capabilities if fp4 is not None else ()
    print(f"go on {', '.join(ccs) or 'unknown GPUs'}; drafting as {result.speculative_runs_as}")
    configured = mtp_audit.apply_config(report, fail_on="warning")
    code: int = configured.exit_code
    return launch if code == 0 else []
