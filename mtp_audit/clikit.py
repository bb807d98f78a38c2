"""Shared CLI plumbing for every analyzer command: output options, rendering, atomic writes and
the exit code. Analyzer command modules import this; it imports no analyzer."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mtp_audit.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

FORMAT_CHOICES = ("text", "json", "markdown", "sarif")
FAIL_ON_CHOICES = ("info", "warning", "error", "never")


def output_options(func: F) -> F:
    """Add ``--format``, ``--output`` and ``--fail-on`` to a click command."""
    func = click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON_CHOICES, case_sensitive=False),
        default="error",
        show_default=True,
        help="Lowest severity that makes the exit code 1 ('never': only 2 and 3 remain possible).",
    )(func)
    func = click.option(
        "--output",
        "-o",
        type=click.Path(dir_okay=False, writable=False, path_type=Path),
        default=None,
        help="Write the report to FILE (atomically, only once it is complete) instead of stdout.",
    )(func)
    func = click.option(
        "--format",
        "-f",
        "fmt",
        type=click.Choice(FORMAT_CHOICES, case_sensitive=False),
        default="text",
        show_default=True,
        help="Report format.",
    )(func)
    return func


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``, so a
    failure never leaves a half-written or truncated report.

    Raises:
        InputError: the folder does not exist or is not writable, or ``path`` is a directory.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputError(str(path), "is a directory, cannot write the report there")
    if not folder.is_dir():
        raise InputError(str(path), f"folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mtp-audit-", dir=folder)
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None


def emit(report: Any, fmt: str, output: Path | None, fail_on: str) -> int:
    """Render ``report``, write it to ``output`` or stdout, and return the exit code.

    The verdict line goes to stderr when the report goes to a file, so CI logs still show it.
    Exit codes: see :func:`mtp_audit.report.exit_code`.
    """
    from mtp_audit.formats import render
    from mtp_audit.formats.summary import verdict_line
    from mtp_audit.report import Severity, exit_code

    text = render(report, fmt.lower())
    if output is not None:
        write_atomic(output, text)
        click.echo(f"{verdict_line(report)} (report written to {output})", err=True)
    else:
        click.echo(text, nl=False)
    threshold = None if fail_on.lower() == "never" else Severity.parse(fail_on)
    return exit_code(report, threshold)
