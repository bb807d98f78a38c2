"""``mtp-audit vllm [TARGET] [NEW]``: what vLLM will do with --speculative-config, or what an upgrade changes.

Kept light: the analyzer is imported only when the command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from mtp_audit.cli.emit import emit
from mtp_audit.cli.options import output_options
from mtp_audit.cli.targets import release_or_path


@click.command("vllm")
@click.argument("targets", nargs=-1, metavar="[TARGET] [NEW]")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A JSON report of an older audit (mtp-audit vllm -f json); report what changed since.")
@output_options
def vllm(targets: tuple[str, ...], baseline: Path | None, fmt: str, output: Path | None, fail_on: str) -> int:
    """Trace what vLLM runs for --speculative-config: method aliases and silent overrides, draft =
    target, draft-architecture chains to MTP classes, proposer per runner, num_speculative_tokens
    rules, speculators checkpoints and spec-decode / FP4 / MoE env vars.

    TARGET: a checkout, package folder, unpacked wheel or .whl file; a release version (0.33.0: only the
    wheel's .py members are fetched from the package index with range requests, then cached); none: the
    installed vllm. With two targets (OLD NEW) or --baseline, reports what changed.
    """
    from mtp_audit.engines.vllm import audit_vllm, diff_vllm
    from mtp_audit.engines.vllm._shared import InputError, read_json_bounded

    targets = tuple(str(release_or_path("vllm", t)) for t in targets)

    if len(targets) > 2:
        raise InputError("vllm", "expected at most two targets (OLD NEW)")
    if baseline is not None and len(targets) > 1:
        raise InputError("--baseline", "use either --baseline with one target, or two targets")
    if len(targets) == 2:
        report = diff_vllm(audit_vllm(targets[0]), audit_vllm(targets[1]))
    else:
        new = audit_vllm(targets[0] if targets else None)
        if baseline is not None:
            old = read_json_bounded(baseline)
            if not isinstance(old, dict) or "vllm" not in (old.get("facts") or {}):
                raise InputError(str(baseline), "not an mtp-audit vllm JSON report")
            report = diff_vllm(old, new)
        else:
            report = new
    from mtp_audit.cli.targets import installed_package_folder

    # with no TARGET the installed package is audited: its files are inputs too
    return emit(report, fmt, output, fail_on, protected=installed_package_folder("vllm") if not targets else ())
