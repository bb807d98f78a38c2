"""Shared CLI plumbing for every analyzer command: output options, rendering, atomic writes and
the exit code. Analyzer command modules import this; it imports no analyzer."""

from __future__ import annotations

import os
import sys
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
    """Add ``--format``, ``--output``, ``--fail-on`` and the settings options (``--config``,
    ``--ignore``, ``-v/--verbose``: :func:`mtp_audit.cli.config.config_options`) to a click command.
    ``--fail-on`` is None when not given, so the settings file's ``fail-on`` can apply."""
    from mtp_audit.cli.config import config_options

    func = config_options(func)
    func = click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON_CHOICES, case_sensitive=False),
        default=None,
        help="Lowest severity that makes the exit code 1 ('never': only 2 and 3 remain possible) "
             "[default: fail-on of [tool.mtp-audit], else error].",
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a failure never leaves a half-written or truncated
    report: a regular file (or a new one) is replaced through a temporary file in the same folder and
    ``os.replace``, with the permissions a plain ``open`` would give (0666 & ~umask); a symlink is
    followed and its target replaced; a device or FIFO (``/dev/stdout``, ``/dev/null``) is written
    through, never replaced. Characters that cannot be encoded (file names that are not UTF-8) are
    written as ``\\udcxx`` escapes, which JSON and SARIF readers decode.

    Raises:
        InputError: the folder does not exist or is not writable, ``path`` is a directory, or the
            write fails (disk full).
    """
    data = text.encode("utf-8", errors="backslashreplace")
    target = path.resolve() if path.is_symlink() else path
    if target.is_dir():
        raise InputError(str(path), "is a directory, cannot write the report there")
    if target.exists() and not target.is_file():  # a device or FIFO: write through
        try:
            with open(target, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
        return
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(str(path), f"folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mtp-audit-", dir=folder)
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None


def _input_paths(report: Any) -> list[str]:
    """Every existing local path the command was given: audited targets, and each parameter value
    of the running click command (``--env-dump``, ``--sglang``, ``--facts``, the tokens of a launch
    command such as ``--model-path X``), except ``--output`` itself."""
    names = [t.name for t in report.targets]
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        for key, value in ctx.params.items():
            if key == "output":
                continue
            values = value if isinstance(value, (list, tuple)) else (value,)
            names += [os.fspath(v) for v in values if isinstance(v, (str, os.PathLike))]
    out = []
    for name in names:
        try:
            if name and not name.startswith("-") and os.path.lexists(name):
                out.append(name)
        except (OSError, ValueError):
            continue
    return out


def _overwrites_input(report: Any, output: Path) -> str | None:
    """The input that writing ``output`` would destroy: an input file itself, or an existing file
    inside an input folder (a new file beside a checkpoint's files is allowed)."""
    try:
        out = output.resolve()
    except (OSError, RuntimeError):
        return None
    for name in _input_paths(report):
        try:
            real = Path(name).resolve()
        except (OSError, RuntimeError):
            continue
        if out == real or (real in out.parents and out.exists()):
            return name
    return None


def use_color(stream: Any) -> bool:
    """Colour and symbols for ``stream``: only a terminal, never with ``NO_COLOR`` set (https://no-color.org);
    ``FORCE_COLOR`` (non-empty) forces them on, ``NO_COLOR`` wins over it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream is not None and stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def emit(report: Any, fmt: str, output: Path | None, fail_on: str | None) -> int:
    """Apply the settings (ignores, ``fail-on``: :func:`mtp_audit.cli.config.settings_for`), render
    ``report``, write it to ``output`` or stdout, and return the exit code.

    ``fail_on`` is the ``--fail-on`` value, None when not given. When the report goes to a file, its
    first line (verdict and answer) and the counts go to stderr, so CI logs still show them. Expired
    ignores are reported on stderr after the report is written. Exit codes: see :func:`mtp_audit.report.exit_code`.
    """
    from mtp_audit.cli.config import settings_for, verbose, warn_expired
    from mtp_audit.formats import render
    from mtp_audit.formats.summary import verdict_line
    from mtp_audit.report import Severity, exit_code

    resolved = settings_for(report, fail_on.lower() if fail_on else None)
    report = report.ignore(resolved.suppressions)
    fail_on = resolved.fail_on
    threshold = None if fail_on == "never" else Severity.parse(fail_on)
    # colour and the verdict symbols (UTF-8) only on a terminal that can show them
    color = (output is None and fmt.lower() == "text" and use_color(sys.stdout)
             and (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") == "utf8")
    text = render(report, fmt.lower(), verbose=verbose(), color=color, fail_on=threshold)
    if output is not None:
        audited = _overwrites_input(report, output)
        if audited is not None:
            what = "is" if Path(audited).resolve() == output.resolve() else "would overwrite a file of"
            raise InputError(str(output), f"{what} the audited input {audited}; refusing to write the report there")
        write_atomic(output, text)
        head = text if fmt.lower() == "text" else render(report, "text", fail_on=threshold)
        click.echo(head.split("\n", 1)[0], err=True)
        click.echo(f"{verdict_line(report)} (report written to {output})", err=True)
    else:
        stream = sys.stdout
        try:
            if stream is None:
                raise ValueError("stdout is closed")
            buffer = getattr(stream, "buffer", None)
            if buffer is not None:
                stream.flush()
                buffer.write(text.encode(stream.encoding or "utf-8", errors="backslashreplace"))
            else:
                stream.write(text)
            stream.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError, AttributeError) as exc:
            raise InputError("stdout", f"cannot write the report: {getattr(exc, 'strerror', None) or exc}") from None
    warn_expired(resolved)
    return exit_code(report, threshold)
