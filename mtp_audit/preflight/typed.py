"""The machine analyzer's typed answer: the machine facts the engines read, each with its extent and provenance.

Built from :class:`~mtp_audit.preflight.facts.MachineFacts` (:meth:`MachineAnswer.from_facts`). How an engine gets it:
:func:`machine_answer` of the preflight report the analyzers lend it (:meth:`mtp_audit.engines.base.Analyzers.preflight`):
the answer the report carries (:attr:`mtp_audit.report.Report.answer`, never serialized, so the report's JSON is
unchanged), else the one read once from ``facts["preflight"]["machine"]`` (a report loaded back from JSON, a merged
report), so no engine reads that document itself.

Every value is a :class:`~mtp_audit.known.Known`: ``"exact"`` (seen whole), ``"at least"`` (a GPU count from a
table cut before its end) or ``"unknown"`` (not observed; the provenance's ``how`` says why: ``"Not Supported"``
memory on GB10, a dump cut before the line). The provenance's ``where`` is the machine source
(:attr:`MachineFacts.origin`: ``"live"``, ``"env-dump:nvidia-smi"``, ``"facts-file"``), its ``how`` the reader
(``"nvml"``, ``"nvidia-smi table"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.known import Known
from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts
from mtp_audit.readonly import ReadOnlyMap

#: ``"nvidia-smi line 8"``, ``"sglang-check-env line 3"``: the line a dump reader records in a fact's source.
_LINE = re.compile(r"\bline (\d+)\b")


def known(fact: Fact, origin: str) -> Known[Any]:
    """``fact`` as a :class:`Known` whose provenance names the machine source (``origin``), the line of the dump it was
    read at when its source records one (``"nvidia-smi line 8"`` -> line 8) and, as ``how``, the fact's source (or why
    it is missing)."""
    m = _LINE.search(fact.source) if fact.present else None
    return fact.known(origin, int(m.group(1)) if m else None)


@dataclass(frozen=True)
class GpuAnswer:
    """One GPU as the driver lists it.

    Attributes:
        index: NVML / nvidia-smi index, or the order in a dump.
        name: marketing name (``"NVIDIA H200"``).
        compute_capability: ``(major, minor)`` (``(12, 0)``).
        memory_bytes: total memory in bytes (``"unknown"`` on GB10's unified memory: "Not Supported").
        arch: the device architecture off NVIDIA (``"gfx942"``, ``"Ascend 910B3"``).
    """

    index: int
    name: Known[str]
    compute_capability: Known[tuple[int, int]]
    memory_bytes: Known[int]
    arch: Known[str]

    @property
    def cc(self) -> tuple[int, int] | None:
        """``(major, minor)`` or ``None``."""
        v = self.compute_capability.value
        return (int(v[0]), int(v[1])) if v is not None else None

    @classmethod
    def from_facts(cls, gpu: GpuFacts, origin: str) -> GpuAnswer:
        """From one :class:`GpuFacts` (``origin``: the machine source, the provenance's ``where``)."""
        cc = gpu.compute_capability
        if cc.present:
            cc = Fact(value=(int(cc.value[0]), int(cc.value[1])), source=cc.source, extent=cc.extent)
        return cls(gpu.index, known(gpu.name, origin), known(cc, origin), known(gpu.memory_bytes, origin), known(gpu.arch, origin))


@dataclass(frozen=True)
class MachineAnswer:
    """What the machine analyzer tells the engines.

    Attributes:
        origin: the machine source (``"live"``, ``"env-dump:<format>"``, ``"facts-file"``, ``"none"`` without one).
        gpus: the GPUs this process sees (after a ``CUDA_VISIBLE_DEVICES`` filter), in index order.
        enumerated: every GPU the driver listed when a ``CUDA_VISIBLE_DEVICES`` filter was applied, else empty.
        gpu_count: how many GPUs the driver lists (:attr:`MachineFacts.gpu_count`): exact, at least, or unknown.
        gpu_list_missing: why the GPU list is empty (``"nvidia-smi not found"``), else ``None``.
        packages: distribution name -> version (``"sglang"`` -> ``"0.5.23"``), as recorded.
        accelerator: ``"cuda"``, ``"rocm"``, ``"cann"``, ``"xpu"``, ``"hpu"`` or ``"cpu"``.
        platform: ``"linux"``, ``"wsl2"``, ``"windows"``.
        facts: the :class:`MachineFacts` it was built from (for the shared machine readers, e.g.
            :func:`mtp_audit.preflight.visible.machine_visible`); not compared.
    """

    origin: str
    gpus: tuple[GpuAnswer, ...]
    enumerated: tuple[GpuAnswer, ...]
    gpu_count: Known[int]
    gpu_list_missing: str | None
    packages: Mapping[str, Known[str]]
    accelerator: Known[str]
    platform: Known[str]
    facts: MachineFacts = field(compare=False, repr=False, default_factory=lambda: MachineFacts(origin="none"))

    @property
    def gpu_list_partial(self) -> bool:
        """Whether the GPU list is a lower bound (a table cut before its end)."""
        return self.gpu_count.extent == "at least"

    @property
    def all_gpus(self) -> tuple[GpuAnswer, ...]:
        """Every GPU the driver listed (:attr:`enumerated` when a filter was applied, else :attr:`gpus`)."""
        return self.enumerated or self.gpus

    def package(self, name: str) -> str | None:
        """The recorded version of distribution ``name``, or ``None``."""
        k = self.packages.get(name)
        return None if k is None or k.value is None else str(k.value)

    def installed(self, name: str) -> Known[bool]:
        """Whether distribution ``name`` is installed on the machine: exact ``True`` (its version was seen), exact
        ``False`` (looked for and not found: the live machine's ``importlib.metadata``, a dump that says "not
        installed", a whole pip listing without it; :data:`mtp_audit.preflight.facts.NOT_INSTALLED`), else unknown (not
        recorded, a listing that shows only some packages, a list cut before where it would be), with its provenance."""
        return known(self.facts.installed(name), self.origin)

    @classmethod
    def from_facts(cls, facts: MachineFacts) -> MachineAnswer:
        """From the collected :class:`MachineFacts`."""
        o = facts.origin
        return cls(
            origin=o,
            gpus=tuple(GpuAnswer.from_facts(g, o) for g in facts.gpus),
            enumerated=tuple(GpuAnswer.from_facts(g, o) for g in facts.enumerated),
            gpu_count=facts.gpu_count,
            gpu_list_missing=None if facts.gpu_list.present else facts.gpu_list.missing,
            packages=ReadOnlyMap({k: known(v, o) for k, v in facts.packages.items()}),
            accelerator=known(facts.accelerator, o),
            platform=known(facts.platform, o),
            facts=facts,
        )

    @classmethod
    def from_doc(cls, doc: Any) -> MachineAnswer | None:
        """From ``facts["preflight"]["machine"]`` (:meth:`MachineFacts.to_dict`); ``None`` when it is absent or not
        a facts document."""
        if not isinstance(doc, Mapping) or not doc:
            return None
        try:
            return cls.from_facts(MachineFacts.from_dict(doc))
        except ValueError:
            return None


def machine_answer(report: Any) -> MachineAnswer | None:
    """The typed machine answer of a preflight report: the one it carries (:attr:`mtp_audit.report.Report.answer`),
    else read from its ``facts["preflight"]["machine"]``; ``None`` for ``None`` or a report without machine facts."""
    if report is None:
        return None
    if isinstance(getattr(report, "answer", None), MachineAnswer):
        return report.answer  # type: ignore[no-any-return]
    pf = report.facts.get("preflight")
    return MachineAnswer.from_doc(pf.get("machine")) if isinstance(pf, Mapping) else None
