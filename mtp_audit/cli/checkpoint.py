"""``mtp-audit checkpoint PATH``. Kept light: the analyzer is imported when the command runs, so
``mtp-audit --help`` does not pay for it, and the click command (``checkpoint``) is built on first use, so a
plain invocation runs :data:`callback` without importing click (:mod:`mtp_audit.cli.fastpath`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtp_audit.cli.emit import emit
from mtp_audit.cli.hubopts import hub_options, with_hub_settings
from mtp_audit.cli.options import output_options, with_display_filter


def run(target: str, offline: bool, jobs: int, fmt: str, output: Path | None, fail_on: str) -> int:
    """Audit a checkpoint's MTP/NextN heads from its metadata (tensor data is never read).

    PATH is a checkpoint folder, a metadata-only folder (config.json + model.safetensors.index.json),
    a config-only folder, a single .safetensors file, an index file, a .gguf file (with the other parts of its split
    set) or a folder of GGUF files (headers only; mtp-*.gguf sidecars included). ORG/NAME[@REV] is a Hugging
    Face hub id: only config files, the index and each shard's header are fetched (HTTP range
    requests), files already in the HF cache are reused, and HF_TOKEN / HF_ENDPOINT /
    HF_HUB_OFFLINE / HF_HUB_CACHE are honoured.

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 input error, 3 inconclusive (MTP declared
    but the tensors could not be inspected).
    """
    from mtp_audit.cli import collector

    collector.pause()  # the analyzer loads, then audits with the collector paused (analyze): no young collection
    try:  # walks the loading modules (mtp_audit.cli.collector)
        from mtp_audit.checkpoint import audit_checkpoint

        report = audit_checkpoint(target, offline=offline, jobs=jobs)
        return emit(report, fmt, output, fail_on)
    finally:
        collector.resume()


#: What the command runs with click's parameter values (the hub options and the display filter taken out).
callback = with_hub_settings(with_display_filter(run))


def __getattr__(name: str) -> Any:
    """``checkpoint``: the click command, built on first use."""
    if name != "checkpoint":
        raise AttributeError(name)
    import click

    command = click.command("checkpoint")(click.argument("target", metavar="PATH|ORG/NAME[@REV]")(
        hub_options(output_options(run))))
    globals()["checkpoint"] = command
    return command
