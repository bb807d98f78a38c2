"""``mtp-audit compare BASE DERIVED``: the click command. Light: the analyzer and huggingface_hub are
imported when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from mtp_audit.cli.emit import emit
from mtp_audit.cli.hubopts import hub_options
from mtp_audit.cli.options import output_options


@click.command()
@click.argument("base", metavar="BASE")
@click.argument("derived", metavar="DERIVED")
@hub_options
@output_options
def compare(base: str, derived: str, offline: bool, jobs: int, fmt: str, output: Path | None, fail_on: str) -> int:
    """Compare the MTP heads of BASE with those of DERIVED, its quantized, pruned or merged export.

    BASE and DERIVED are each a checkpoint folder (or metadata-only folder) or a Hugging Face hub id
    org/name[@revision] (metadata only: config, index and safetensors headers, never tensor data).

    Reports MTP tensors dropped (MTP050), partly dropped (MTP051), renamed (MTP052), left unquantized
    while the trunk was quantized (MTP053), with the bytes involved, and MTP-relevant config keys that
    changed (MTP054).

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 input error, 3 inconclusive (a side could not
    be inspected).
    """
    from mtp_audit.compare.analyze import compare_checkpoints

    report = compare_checkpoints(base, derived, offline=offline, jobs=jobs)
    return emit(report, fmt, output, fail_on)
