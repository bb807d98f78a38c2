"""The checkpoint and machine analyzers a launch audit lends its engine (:class:`mtp_audit.engines.base.Analyzers`):
model paths are resolved as the engines resolve them (a local path relative to the launch's folder, else a Hugging
Face repo id) and audited once per path text across the releases compared; the preflight reads the one machine
source of the launch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtp_audit.engines.base import Machine
from mtp_audit.errors import InputError
from mtp_audit.report import Gap, Report

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")


def is_hub_id(text: str) -> bool:
    """Whether a model path reads as ``ORG/NAME`` (optionally ``@REVISION``), not as a local path."""
    return bool(_HUB_ID.match(text)) and not text.startswith((".", "/", "~"))


def audit_model(path_text: str, cwd: Path, flag: str) -> tuple[Report | None, Gap | None]:
    """Checkpoint audit of a model path as the engine resolves it: a local path (relative to ``cwd``), else a
    Hugging Face repo id (metadata over HTTP range reads, or the HF cache; an unreachable hub gives an
    inconclusive checkpoint report).

    Raises:
        InputError: a path that does not exist and is not a repo id, or that is not a checkpoint.
    """
    from mtp_audit.checkpoint import audit_checkpoint

    p = Path(path_text).expanduser()
    full = p if p.is_absolute() else cwd / p
    if os.path.lexists(full):
        return audit_checkpoint(full), None
    if is_hub_id(path_text):
        return audit_checkpoint(path_text), None
    raise InputError(f"{flag} {path_text}", "no such file or folder")


class LaunchAnalyzers:
    """:class:`~mtp_audit.engines.base.Analyzers` for one launch audit: checkpoint reports cached by path text (a
    compare of two releases audits each checkpoint once), the preflight on ``machine``."""

    def __init__(self, machine: Machine, cwd: Path) -> None:
        self.machine = machine
        self.cwd = cwd
        self._checkpoints: dict[str, tuple[Report | None, Gap | None]] = {}

    def checkpoint(self, path_text: str, flag: str) -> tuple[Report | None, Gap | None]:
        """See :meth:`mtp_audit.engines.base.Analyzers.checkpoint`."""
        if path_text not in self._checkpoints:
            self._checkpoints[path_text] = audit_model(path_text, self.cwd, flag)
        return self._checkpoints[path_text]

    def preflight(self, launch: Sequence[str] | None, *, engine: str | None, **engine_facts: Any) -> Report:
        """See :meth:`mtp_audit.engines.base.Analyzers.preflight`; ``--engine`` (``machine.engine``) wins over ``engine``."""
        from mtp_audit.preflight import preflight

        m = self.machine
        return preflight(env_dumps=list(m.env_dumps), facts_file=m.facts_file, machine_facts=m.facts, cwd=self.cwd,
                         launch=list(launch) if launch is not None else None, engine=m.engine or engine,
                         no_machine=m.no_machine, **engine_facts)
