"""Where the settings come from: ``--config FILE``, else the nearest ``pyproject.toml`` with a
``[tool.mtp-audit]`` table found by walking up from the current directory (as ruff and black do),
else the defaults. The settings model and its rules are in :mod:`mtp_audit.report.settings`.

A discovered file may not lower the gate: its ``fail-on = "never"`` (the only value laxer than the
default ``error``) is not applied, with a warning on stderr, because the current directory is often the
audited checkout itself, and an audited tree must not choose its own verdict. Passing the same file with
``--config`` (or ``--fail-on never``) applies it.

The options every audit command shares for them: ``--config``, ``--ignore RULE`` and
``-v/--verbose`` (their values go to ``click.Context.meta``, so command signatures stay unchanged).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mtp_audit.cli.invocation import current, echo_err
from mtp_audit.errors import InputError
from mtp_audit.report.settings_file import find_pyproject, known_rules, load_settings, parse_ignore

if TYPE_CHECKING:  # the settings model is imported when a command runs, not for `mtp-audit --help`
    import click

    from mtp_audit.report.settings import Resolved, Settings

F = TypeVar("F", bound=Callable[..., Any])


class _HasMeta(Protocol):
    """What the option callbacks use of their context: ``meta``, as on :class:`click.Context` and on the fast path's
    :class:`~mtp_audit.cli.invocation.Invocation` (which calls them with no parameter)."""

    @property
    def meta(self) -> dict[str, Any]: ...


#: ``click.Context.meta`` keys.
META_SETTINGS = "mtp_audit.settings"
META_IGNORES = "mtp_audit.ignore"
META_VERBOSE = "mtp_audit.verbose"
META_CONFIG_DIR = "mtp_audit.config_dir"
META_CONFIG_FILE = "mtp_audit.config_file"
META_CONFIG_EXPLICIT = "mtp_audit.config_explicit"
META_NOTES = "mtp_audit.settings_notes"

#: ``fail-on`` values laxer than the default, which only ``--config`` or ``--fail-on`` may set.
LAXER_THAN_DEFAULT = frozenset({"never"})

def _config_callback(ctx: _HasMeta, _param: click.Parameter | None, value: Path | None) -> Path | None:
    from mtp_audit.report.settings import Settings

    if value is not None:
        if not value.is_file():
            raise InputError(str(value), "no such file" if not value.exists() else "is not a file")
        found: Path | None = value
    else:
        found = find_pyproject(Path.cwd())
    settings = load_settings(found, explicit=value is not None) if found is not None else Settings()
    ctx.meta[META_SETTINGS] = settings
    ctx.meta[META_CONFIG_DIR] = found.resolve().parent if found is not None else None
    ctx.meta[META_CONFIG_FILE] = found
    ctx.meta[META_CONFIG_EXPLICIT] = value is not None
    return value


def _ignore_callback(ctx: _HasMeta, _param: click.Parameter | None, value: tuple[str, ...]) -> tuple[str, ...]:
    known = known_rules() if value else set()
    ctx.meta[META_IGNORES] = tuple(parse_ignore(raw, known) for raw in value)
    return value


def _verbose_callback(ctx: _HasMeta, _param: click.Parameter | None, value: int) -> int:
    from mtp_audit.cli.logs import set_verbosity

    ctx.meta[META_VERBOSE] = bool(value)
    set_verbosity(int(value or 0))
    return value


def config_options(func: F) -> F:
    """Add ``--config FILE``, ``--ignore RULE[=REASON]`` (repeatable) and ``-v/--verbose``."""
    import click

    func = click.option("--verbose", "-v", count=True, expose_value=False, callback=_verbose_callback,
                        help="Also print evidence, details, fixes, ignored findings, the closing answer and the facts, and log "
                             "what is resolved and fetched on stderr; -vv: log every file and request too.")(func)
    func = click.option("--ignore", "ignore_rules", multiple=True, metavar="RULE[=REASON]", expose_value=False,
                        callback=_ignore_callback,
                        help="Ignore a rule's findings (repeatable): still listed with -v and counted, never failing.")(func)
    func = click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        expose_value=False, callback=_config_callback, is_eager=True,
                        help="Settings file (default: the nearest pyproject.toml with [tool.mtp-audit], "
                             "searched upwards from the current directory).")(func)
    return func


def _target_names(report: Any, config_dir: Path | None) -> list[str]:
    """What an override's ``target`` glob is compared with: each target's name, its first word (a
    sglang target is shown as ``"x.whl (sglang 0.5.9)"``), the command's own arguments (``--model-path
    X``, a ``--sglang`` wheel), and each of these that is a local path relative to the folder of the
    settings file and to the current directory."""
    names = [t.name for t in report.targets] + [t.name.split(" (")[0] for t in report.targets]
    ctx = current()
    if ctx is not None:
        for key, value in ctx.params.items():
            if key == "output":
                continue
            values = value if isinstance(value, (list, tuple)) else (value,)
            names += [os.fspath(v) for v in values if isinstance(v, (str, os.PathLike))]
    out: list[str] = []
    for name in names:
        out.append(name)
        try:
            if not name or name.startswith("-") or not os.path.lexists(name):
                continue
            real = Path(name).resolve()
        except (OSError, ValueError, RuntimeError):
            continue
        for base in (config_dir, Path.cwd().resolve()):
            if base is not None and (real == base or base in real.parents):
                out.append(real.relative_to(base).as_posix())
    return list(dict.fromkeys(out))


def settings_for(report: Any, cli_fail_on: str | None) -> Resolved:
    """The settings that apply to ``report`` under the running command (``--config`` / discovered
    file, ``--ignore``, ``--fail-on``), with today's date for expiries. Expired ignores are not applied
    (:func:`warn_expired` says so)."""
    from mtp_audit.report.settings import Settings, resolve

    ctx = current()
    meta = ctx.meta if ctx is not None else {}
    settings: Settings = meta.get(META_SETTINGS) or Settings()
    resolved = resolve(settings, _target_names(report, meta.get(META_CONFIG_DIR)), cli_fail_on=cli_fail_on,
                       cli_ignores=meta.get(META_IGNORES, ()))
    if cli_fail_on is None and not meta.get(META_CONFIG_EXPLICIT) and resolved.fail_on in LAXER_THAN_DEFAULT:
        import dataclasses

        found = meta.get(META_CONFIG_FILE)
        if ctx is not None:
            ctx.meta.setdefault(META_NOTES, []).append(
                f"mtp-audit: warning: {found}: fail-on = \"{resolved.fail_on}\" in a discovered settings file is not applied "
                "(an audited checkout must not lower its own gate); pass the file with --config, or --fail-on, to apply it")
        resolved = dataclasses.replace(resolved, fail_on="error")
    return resolved


def warn_expired(resolved: Resolved) -> None:
    """One stderr line per expired ignore (``mtp-audit: warning: <file>: ...``); called once the report is
    written, so a usage error still leaves a single stderr line. Also the notes of :func:`settings_for`
    (a discovered ``fail-on`` that was not applied)."""
    ctx = current()
    for note in (ctx.meta.get(META_NOTES, []) if ctx is not None else []):
        echo_err(note)
    for ig in resolved.expired:
        echo_err(f"mtp-audit: warning: {ig.source}: the ignore of {ig.rule_id} expired on {ig.expires} and no longer "
                 f"applies (reason was: {ig.reason})")


def config_files() -> list[Path]:
    """The settings file the running command read (``--config`` or the discovered ``pyproject.toml``), as a
    list for the outputs' protected set (``[]`` when none was read)."""
    ctx = current()
    found = ctx.meta.get(META_CONFIG_FILE) if ctx is not None else None
    return [found] if found is not None else []


def verbose() -> bool:
    """Whether ``-v/--verbose`` was given to the running command."""
    ctx = current()
    return bool(ctx is not None and ctx.meta.get(META_VERBOSE))
