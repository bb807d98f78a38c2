"""The ``[tool.mtp-audit]`` settings: parsed from a TOML table, resolved for one report. Pure: no file
access (the CLI finds and reads the file, :mod:`mtp_audit.cli.config`).

Shape (the way ruff and bandit configure themselves, ``../shared/research/aesthetics.md``)::

    [tool.mtp-audit]
    fail-on = "warning"                       # default of --fail-on: info | warning | error | never
    ignore = [
      { rule = "MTP105", reason = "we always pass --speculative-draft-model-path" },
      { rule = "MTP212", reason = "waiting for flashinfer 0.6.9", expires = 2027-03-01 },
    ]

    [[tool.mtp-audit.overrides]]
    target = "fixtures/checkpoint/*"          # fnmatch glob on what was audited
    fail-on = "never"
    ignore = [{ rule = "MTP001", reason = "pruned test fixtures ship no MTP weights" }]

Every ignore needs a ``reason``; ``expires`` (a TOML date or ``"YYYY-MM-DD"``) ends it: from that day on
it no longer applies and :func:`resolve` lists it as expired. Any other key is an error.

An ignore entry and an override (:class:`~mtp_audit.report.ignores.Ignore`, :class:`~mtp_audit.report.ignores.Override`)
are in :mod:`mtp_audit.report.ignores`, imported when a table is parsed; ``datetime`` (~1 ms of import) where a date is
read or today's date is needed: a run with no settings file and no ``--ignore`` (the default settings, resolved for
each report) creates neither class and reads no date.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mtp_audit.report.model import Suppression
from mtp_audit.valueclass import Value

if TYPE_CHECKING:
    import datetime as _dt

    from mtp_audit.report.ignores import Ignore, Override

#: Values of ``fail-on`` (the CLI's ``--fail-on`` choices).
FAIL_ON_VALUES = ("info", "warning", "error", "never")

_TOP_KEYS = ("fail-on", "ignore", "overrides")
_OVERRIDE_KEYS = ("target", "fail-on", "ignore")
_IGNORE_KEYS = ("rule", "reason", "expires")


class SettingsError(ValueError):
    """A settings table that cannot be used. ``key`` is the dotted key at fault
    (``"tool.mtp-audit.ignore[0].reason"``); ``str(exc)`` is one line naming it."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Settings(Value):
    """Parsed settings. ``Settings()`` is the default: ``fail-on`` error, nothing ignored.

    Attributes:
        source: the file they came from, for messages (None: defaults).
        fail_on: default of ``--fail-on``, or None (then ``error``).
        ignores: top-level ignores.
        overrides: per-target overrides, in file order (a later ``fail-on`` wins).
    """

    source: str | None = None
    fail_on: str | None = None
    ignores: tuple[Ignore, ...] = ()
    overrides: tuple[Override, ...] = field(default=())


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Resolved(Value):
    """The settings that apply to one report.

    Attributes:
        fail_on: the ``--fail-on`` value to use (``"error"`` unless set somewhere).
        suppressions: rule id -> the ignore that applies (command line first, then overrides, then
            top level), for :meth:`mtp_audit.report.Report.ignore`.
        expired: ignores that matched the report's targets but expired, so they were not applied.
    """

    fail_on: str
    suppressions: dict[str, Suppression]
    expired: tuple[Ignore, ...]


def _check_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise SettingsError(f"{where}.{key}" if where else str(key),
                                f"unknown key (expected one of: {', '.join(allowed)})")


def _fail_on(value: Any, where: str) -> str:
    if not isinstance(value, str) or value.lower() not in FAIL_ON_VALUES:
        raise SettingsError(where, f"expected one of {', '.join(FAIL_ON_VALUES)}, got {value!r}")
    return value.lower()


def _date(value: Any, where: str) -> _dt.date:
    import datetime as _dt

    if isinstance(value, _dt.datetime):
        raise SettingsError(where, "expected a date (YYYY-MM-DD), got a date and time")
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise SettingsError(where, f"expected a date YYYY-MM-DD, got {value!r}")


def _ignores(value: Any, where: str, source: str, known_rules: Collection[str]) -> tuple[Ignore, ...]:
    from mtp_audit.report.ignores import Ignore

    if not isinstance(value, list):
        raise SettingsError(where, "expected a list of tables: [{ rule = \"MTP105\", reason = \"...\" }]")
    out = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise SettingsError(at, "expected a table { rule = \"MTP105\", reason = \"...\" }")
        _check_keys(item, _IGNORE_KEYS, at)
        rule = item.get("rule")
        if not isinstance(rule, str) or not rule.strip():
            raise SettingsError(f"{at}.rule", "missing (the rule id to ignore, e.g. \"MTP105\")")
        rule = rule.strip().upper()
        if known_rules and rule not in known_rules:
            raise SettingsError(f"{at}.rule", f"unknown rule {rule} (see 'mtp-audit rules')")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise SettingsError(f"{at}.reason", f"missing: every ignore needs a reason (why {rule} does not apply here)")
        expires = _date(item["expires"], f"{at}.expires") if "expires" in item else None
        out.append(Ignore(rule, reason.strip(), source, expires))
    return tuple(out)


def parse_settings(table: Mapping[str, Any], *, source: str, prefix: str = "tool.mtp-audit",
                   known_rules: Collection[str] = ()) -> Settings:
    """Settings from a parsed TOML table (the ``[tool.mtp-audit]`` table, or a whole ``--config`` file
    without one).

    Args:
        table: the table's keys and values, as ``tomllib`` returns them.
        source: file name for :attr:`Ignore.source` (``"pyproject.toml"``).
        prefix: dotted name of ``table`` in the file, for error messages (``""`` for a top-level table).
        known_rules: rule ids an ignore may name; empty skips the check.

    Raises:
        SettingsError: an unknown key, an ignore without ``rule`` or ``reason``, an unknown rule id, a
            ``fail-on`` outside :data:`FAIL_ON_VALUES`, a malformed date, an override without ``target``.
    """
    from mtp_audit.report.ignores import Override

    pre = f"{prefix}." if prefix else ""
    _check_keys(table, _TOP_KEYS, prefix)
    fail_on = _fail_on(table["fail-on"], f"{pre}fail-on") if "fail-on" in table else None
    ignores = _ignores(table["ignore"], f"{pre}ignore", source, known_rules) if "ignore" in table else ()
    overrides = []
    raw = table.get("overrides", [])
    if not isinstance(raw, list):
        raise SettingsError(f"{pre}overrides", "expected an array of tables: [[tool.mtp-audit.overrides]]")
    for i, item in enumerate(raw):
        at = f"{pre}overrides[{i}]"
        if not isinstance(item, dict):
            raise SettingsError(at, "expected a table with target = \"GLOB\"")
        _check_keys(item, _OVERRIDE_KEYS, at)
        target = item.get("target")
        if not isinstance(target, str) or not target:
            raise SettingsError(f"{at}.target", "missing (a glob matched against the audited target, e.g. \"fixtures/*\")")
        o_fail = _fail_on(item["fail-on"], f"{at}.fail-on") if "fail-on" in item else None
        o_ign = (_ignores(item["ignore"], f"{at}.ignore", f"{source} overrides[{i}] (target {target!r})", known_rules)
                 if "ignore" in item else ())
        if o_fail is None and not o_ign:
            raise SettingsError(at, "sets nothing (give fail-on or ignore)")
        overrides.append(Override(target, o_fail, o_ign))
    return Settings(source=source, fail_on=fail_on, ignores=ignores, overrides=tuple(overrides))


def resolve(settings: Settings, target_names: Iterable[str], *, today: _dt.date | None = None,
            cli_fail_on: str | None = None, cli_ignores: Iterable[Ignore] = ()) -> Resolved:
    """What applies to a report whose targets go by ``target_names``.

    ``fail-on``: the command line, else the last matching override that sets it, else the top level,
    else ``error``. Ignores: the command line's, then matching overrides', then the top level's; the
    first one for a rule wins; an expired one is skipped and reported in :attr:`Resolved.expired`
    (a later unexpired ignore of the same rule still applies). ``today``: the date expiries are compared with
    (``None``: the local date, ``datetime.date.today()``, read when the first ignore with an expiry is met).
    """
    names = list(target_names)
    matching = [o for o in settings.overrides if o.matches(names)]
    fail_on = cli_fail_on
    if fail_on is None:
        fail_on = next((o.fail_on for o in reversed(matching) if o.fail_on), None) or settings.fail_on or "error"
    suppressions: dict[str, Suppression] = {}
    expired: list[Ignore] = []
    for ig in [*cli_ignores, *(i for o in matching for i in o.ignores), *settings.ignores]:
        if today is None and ig.expires is not None:
            import datetime as _dt

            today = _dt.date.today()
        if today is not None and ig.expired(today):
            expired.append(ig)
        elif ig.rule_id not in suppressions:
            suppressions[ig.rule_id] = ig.suppression()
    return Resolved(fail_on=fail_on.lower(), suppressions=suppressions, expired=tuple(expired))
