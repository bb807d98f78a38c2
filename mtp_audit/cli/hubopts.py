"""Click options for commands that may audit hub ids: ``--offline`` and ``--jobs``.

Light on purpose (click only): command modules import it at start-up, so ``mtp-audit --help`` does not
pay for huggingface_hub. Use with :func:`mtp_audit.sources.hub.hub_settings`::

    @click.command()
    @click.argument("target")
    @hub_options
    @output_options
    def checkpoint(target, offline, jobs, fmt, output, fail_on):
        from mtp_audit.checkpoint import audit_checkpoint
        from mtp_audit.sources.hub import hub_settings

        with hub_settings(offline=offline, jobs=jobs):
            report = audit_checkpoint(target)
        return emit(report, fmt, output, fail_on)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: Same values as ``mtp_audit.sources.hub.DEFAULT_JOBS`` / ``MAX_JOBS`` (not imported: keeps this light).
DEFAULT_JOBS = 8
MAX_JOBS = 64


def hub_options(func: F) -> F:
    """Add ``--offline`` and ``--jobs`` to a click command (parameters ``offline: bool``, ``jobs: int``)."""
    func = click.option(
        "--jobs",
        "-j",
        type=click.IntRange(1, MAX_JOBS),
        default=DEFAULT_JOBS,
        show_default=True,
        help="Hub ids: shard headers read concurrently.",
    )(func)
    func = click.option(
        "--offline",
        is_flag=True,
        default=False,
        help="Hub ids: never touch the network; use the Hugging Face cache and the mtp-audit cache only "
        "(also when HF_HUB_OFFLINE=1). What is not cached is reported as not examined (exit 3).",
    )(func)
    return func
