"""One ignore entry and one per-target override of the ``[tool.mtp-audit]`` settings (:mod:`mtp_audit.report.settings`
parses them and resolves them for a report).

Apart from the settings model so that a run with no settings file and no ``--ignore`` does not create these two frozen
classes (~0.7 ms of start-up): :mod:`mtp_audit.report.settings` imports this module when it parses a table, and
:func:`mtp_audit.report.settings_file.parse_ignore` for an ``--ignore`` value.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mtp_audit.report.model import Suppression
from mtp_audit.valueclass import Value

if TYPE_CHECKING:
    import datetime as _dt


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Ignore(Value):
    """One ignore entry.

    Attributes:
        rule_id: the rule it silences (``"MTP105"``).
        reason: why; required in a file, ``""`` allowed for ``--ignore`` on the command line.
        source: where it was written (``"pyproject.toml"``, ``"--ignore"``, ``"pyproject.toml overrides[0]"``).
        expires: the first day on which it no longer applies, or None.
    """

    rule_id: str
    reason: str
    source: str
    expires: _dt.date | None = None

    def suppression(self) -> Suppression:
        """The report model's record of this ignore."""
        return Suppression(self.rule_id, self.reason, self.source, self.expires.isoformat() if self.expires else None)

    def expired(self, today: _dt.date) -> bool:
        """Whether ``today`` is on or after :attr:`expires`."""
        return self.expires is not None and today >= self.expires


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Override(Value):
    """A ``[[tool.mtp-audit.overrides]]`` entry: settings for the audits whose target matches ``target``.

    Attributes:
        target: fnmatch glob (``*`` also matches ``/``) compared with each target name of a report.
        fail_on: replaces the top-level ``fail-on`` when given.
        ignores: added to the top-level ignores.
    """

    target: str
    fail_on: str | None = None
    ignores: tuple[Ignore, ...] = ()

    def matches(self, names: Iterable[str]) -> bool:
        """Whether any of ``names`` (a report's target names, in the forms the CLI offers) matches."""
        return any(fnmatch.fnmatchcase(n, self.target) for n in names)
