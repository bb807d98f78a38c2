"""Click options for commands that may audit hub ids: ``--offline``, ``--jobs``, ``--revision``,
``--token``, ``--cache-dir`` and ``--no-cache``.

Light on purpose (click only when the options are added): command modules import it at start-up, so
``mtp-audit --help`` does not pay for huggingface_hub. The command sees only ``offline`` and ``jobs``; the other options are applied
around it through :func:`mtp_audit.sources.hub.hub_settings` (``--revision`` is appended to the one hub
id the command takes)::

    @click.command()
    @click.argument("target")
    @hub_options
    @output_options
    def checkpoint(target, offline, jobs, fmt, output, fail_on):
        from mtp_audit.checkpoint import audit_checkpoint

        report = audit_checkpoint(target, offline=offline, jobs=jobs)
        return emit(report, fmt, output, fail_on)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

#: Same values as ``mtp_audit.sources.hub.DEFAULT_JOBS`` / ``MAX_JOBS`` (not imported: keeps this light).
DEFAULT_JOBS = 8
MAX_JOBS = 64


def _with_revision(kwargs: dict[str, Any], revision: str | None) -> None:
    """Append ``--revision`` to the command's one hub id (``target``).

    Raises:
        InputError: the command takes two ids (compare: write BASE@REV / DERIVED@REV), the target is a local
            path, or it already names a revision.
    """
    from mtp_audit.errors import InputError

    if revision is None:
        return
    target = kwargs.get("target")
    if not isinstance(target, str):
        raise InputError("--revision", "this command takes two checkpoints: write ORG/NAME@REV for each")
    if os.path.lexists(target):
        raise InputError("--revision", f"{target} is a local path; --revision is for a hub id ORG/NAME")
    if "@" in target:
        raise InputError("--revision", f"{target} already names a revision")
    kwargs["target"] = f"{target}@{revision}"


def hub_options(func: F) -> F:
    """Add the hub options to a click command (parameters ``offline: bool``, ``jobs: int``; the others are
    applied around the call, see the module docstring, by :func:`with_hub_settings`)."""
    import click

    out: Any = with_hub_settings(func)
    out = click.option("--no-cache", "no_cache", is_flag=True, default=False,
                       help="Hub ids: neither read nor write the mtp-audit cache (the Hugging Face cache is still read).")(out)
    out = click.option("--cache-dir", "hf_cache_dir", metavar="DIR", default=None,
                       help="Hub ids: the Hugging Face cache folder to read and fill [default: HF_HUB_CACHE].")(out)
    out = click.option("--token", metavar="TOKEN", default=None, envvar=None,
                       help="Hub ids: the hub token for gated or private repos [default: HF_TOKEN or the stored token].")(out)
    out = click.option("--revision", metavar="REV", default=None,
                       help="Hub id: branch, tag or commit (the same as ORG/NAME@REV).")(out)
    out = click.option(
        "--jobs",
        "-j",
        type=click.IntRange(1, MAX_JOBS),
        default=DEFAULT_JOBS,
        show_default=True,
        help="Hub ids: shard headers read concurrently.",
    )(out)
    out = click.option(
        "--offline",
        is_flag=True,
        default=False,
        help="Hub ids: never touch the network; use the Hugging Face cache and the mtp-audit cache only "
        "(also when HF_HUB_OFFLINE=1). What is not cached is reported as not examined (exit 3).",
    )(out)
    return out


def with_hub_settings(func: F) -> F:
    """``func`` taking the hub options' values: ``revision``, ``token``, ``hf_cache_dir`` and ``no_cache`` are taken
    out of its keyword arguments and applied around the call (:func:`mtp_audit.sources.hub.hub_settings`;
    ``--revision`` is appended to the one hub id).

    Raises:
        InputError: see :func:`_with_revision`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        revision, token = kwargs.pop("revision", None), kwargs.pop("token", None)
        hf_cache_dir, no_cache = kwargs.pop("hf_cache_dir", None), kwargs.pop("no_cache", False)
        _with_revision(kwargs, revision)
        if token is None and hf_cache_dir is None and not no_cache:
            return func(*args, **kwargs)
        from mtp_audit.sources.hub import hub_settings

        with hub_settings(token=token, hf_cache_dir=hf_cache_dir, use_cache=not no_cache):
            return func(*args, **kwargs)

    return cast(F, wrapper)  # the wrapper takes func's arguments plus the options it pops
