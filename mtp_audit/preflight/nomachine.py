"""``--no-machine``: audit a launch (or a preflight) off the serving machine, as in CI, pre-commit or on a laptop.

The machine running the audit is never read (no NVML, nvidia-smi, nvcc or installed kernel builds): either no
machine fact at all, or only the environment dumps given with ``--env-dump``. Every machine fact that is then
unknown is marked :attr:`~mtp_audit.preflight.facts.Fact.unexamined` (its reason in words:
:data:`NOT_SERVING_MACHINE`); a gap made from such a fact says so in its ``why_open``
(:data:`~mtp_audit.report.questions.NOT_EXAMINED`) and is a note (:func:`scope_gaps`): the machine questions are
said as "not examined", they never block the verdict on the launch's own questions (flags, checkpoint, engine
release), and they are never answered either (no finding is made from an absent fact).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts
from mtp_audit.report import Gap, Report
from mtp_audit.report.questions import NOT_EXAMINED

__all__ = ["NOT_SERVING_MACHINE", "NO_MACHINE_ORIGIN", "machine_note", "only_given", "scope_gaps", "scope_report",
           "unexamined_machine"]

#: The reason, in words, of every machine fact ``--no-machine`` leaves unknown (the fact is marked ``unexamined``).
NOT_SERVING_MACHINE = "not examined: not the serving machine"
#: ``MachineFacts.origin`` of the empty machine of ``--no-machine`` without a dump.
NO_MACHINE_ORIGIN = "none"
#: Where such a fact "comes from" (its ``source``).
_SOURCE = "--no-machine"


def unexamined_machine() -> MachineFacts:
    """A machine of which nothing was examined: no GPU, every scalar fact absent and unexamined
    (:data:`NOT_SERVING_MACHINE`)."""
    absent: dict[str, Any] = {name: _unexamined(NOT_SERVING_MACHINE, _SOURCE) for name in MachineFacts._SCALARS}
    return MachineFacts(origin=NO_MACHINE_ORIGIN, **absent)


def _unexamined(reason: str, source: str) -> Fact:
    """A missing fact not looked for (:attr:`Fact.unexamined`), its ``reason`` in words."""
    return dataclasses.replace(Fact.absent(reason, source), unexamined=True)


def _marked(fact: Fact) -> Fact:
    """``fact`` when present or already unexamined, else unexamined with :data:`NOT_SERVING_MACHINE` ahead of its
    own reason."""
    if fact.present or fact.unexamined:
        return fact
    return _unexamined(f"{NOT_SERVING_MACHINE}; {fact.missing or 'not observed'}", fact.source or _SOURCE)


def _marked_gpu(gpu: GpuFacts) -> GpuFacts:
    return dataclasses.replace(gpu, name=_marked(gpu.name), compute_capability=_marked(gpu.compute_capability),
                               memory_bytes=_marked(gpu.memory_bytes))


def only_given(machine: MachineFacts) -> MachineFacts:
    """The machine of the given dumps, with each fact they do not state marked unexamined (the machine
    running the audit is not asked for it). Present facts are unchanged; so are the GPU UUID and architecture and the
    facts added after facts files were first stored (engine, platform, ROCm and CANN versions), whose absence decides
    nothing by itself."""
    scalars: dict[str, Any] = {name: _marked(getattr(machine, name)) for name in MachineFacts._SCALARS
                               if name not in MachineFacts._LATER}
    return dataclasses.replace(machine, gpus=tuple(_marked_gpu(g) for g in machine.gpus), **scalars)


def machine_note(gap: Gap) -> Gap:
    """``gap`` as a note when it is about a machine fact ``--no-machine`` left unexamined (its ``why_open`` is
    :data:`~mtp_audit.report.questions.NOT_EXAMINED`, whatever its message says), else unchanged."""
    if gap.blocking and gap.why_open == NOT_EXAMINED:
        return dataclasses.replace(gap, blocking=False)
    return gap


def scope_gaps(gaps: Iterable[Gap]) -> list[Gap]:
    """:func:`machine_note` of each gap, in order."""
    return [machine_note(g) for g in gaps]


def scope_report(report: Report) -> Report:
    """``report`` with its machine gaps as notes (:func:`scope_gaps`); the same object when nothing changes."""
    gaps = scope_gaps(report.gaps)
    return dataclasses.replace(report, gaps=tuple(gaps)) if gaps != list(report.gaps) else report
