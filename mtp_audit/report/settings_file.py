"""Reading mtp-audit settings from files: the nearest ``pyproject.toml`` with a ``[tool.mtp-audit]`` table (found by
walking up, as ruff and black do), a settings file given explicitly, and ``RULE[=reason]`` ignore values. The
settings model and its rules are in :mod:`mtp_audit.report.settings`; the command-line options that use these
readers are in :mod:`mtp_audit.cli.config`. Nothing here imports the CLI, so the library surface
(:func:`mtp_audit.results.apply_config`) reads settings exactly as the CLI does.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtp_audit.errors import InputError

if TYPE_CHECKING:
    from mtp_audit.report.settings import Settings

#: The table name in pyproject.toml.
TABLE = "mtp-audit"


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


def _read_toml(path: Path) -> dict[str, Any]:
    """Parse ``path``.

    Raises:
        InputError: unreadable, not UTF-8 or not TOML.
    """
    toml = _toml()
    try:
        with open(path, "rb") as fh:
            return toml.load(fh)
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "is not UTF-8 text") from None
    except toml.TOMLDecodeError as exc:
        raise InputError(str(path), f"invalid TOML: {exc}") from None


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.mtp-audit]`` table
    (files without one are passed over, as ruff does), or None.

    Raises:
        InputError: a pyproject.toml that names ``tool.mtp-audit`` but is not valid TOML.
    """
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        try:
            if not candidate.is_file() or TABLE.encode() not in candidate.read_bytes():
                continue
        except OSError:
            continue
        if TABLE in (_read_toml(candidate).get("tool") or {}):
            return candidate
    return None


def known_rules() -> set[str]:
    from mtp_audit.report.rules import all_rules

    return {r.id for r in all_rules()}


def load_settings(path: Path, *, explicit: bool) -> Settings:
    """Settings from ``path``: its ``[tool.mtp-audit]`` table; a ``--config`` file (``explicit``) that
    is not a pyproject.toml may instead hold the keys at its top level.

    Raises:
        InputError: unreadable or invalid TOML, a pyproject.toml without the table, or any
            :class:`~mtp_audit.report.settings.SettingsError` (one line naming the file and the key).
    """
    from mtp_audit.report.settings import SettingsError, parse_settings

    doc = _read_toml(path)
    tool = doc.get("tool")
    if isinstance(tool, dict) and TABLE in tool:
        table, prefix = tool[TABLE], f"tool.{TABLE}"
        if not isinstance(table, dict):
            raise InputError(str(path), f"tool.{TABLE}: expected a table")
    elif explicit and path.name != "pyproject.toml":
        table, prefix = doc, ""
    else:
        raise InputError(str(path), f"has no [tool.{TABLE}] table")
    try:
        return parse_settings(table, source=path.name, prefix=prefix, known_rules=known_rules())
    except SettingsError as exc:
        raise InputError(str(path), str(exc)) from None


def parse_ignore(raw: str, known: set[str] | None = None) -> Any:
    """An ``--ignore`` value ``RULE`` or ``RULE=reason`` as an :class:`~mtp_audit.report.ignores.Ignore`.

    Raises:
        InputError: not a known rule id.
    """
    from mtp_audit.report.ignores import Ignore

    rule, _, reason = raw.partition("=")
    rule = rule.strip().upper()
    if rule not in (known if known is not None else known_rules()):
        raise InputError(f"--ignore {raw}", f"unknown rule {rule or '(empty)'} (see 'mtp-audit rules')")
    return Ignore(rule, reason.strip(), "--ignore")
