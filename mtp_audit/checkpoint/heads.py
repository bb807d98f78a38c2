"""What a checkpoint holds for drafting with its MTP heads, as a typed answer (:class:`HeadsEvidence`), and what an
engine says it will do with them (:class:`HeadsAnswer`).

The checkpoint analyzer says what the files hold: the declaration, the MTP tensors found, their format and bytes,
the errors that stop a load, the engines whose code ignores a wrong exclusion list. Whether a given engine will
draft with those heads, and in which words, is the engine's own knowledge: its
:meth:`mtp_audit.engines.base.Engine.uses_heads` hook takes a :class:`HeadsEvidence` and returns a
:class:`HeadsAnswer` (SGLang's: :mod:`mtp_audit.engines.sglang.heads`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mtp_audit.valueclass import Value

if TYPE_CHECKING:
    from mtp_audit.checkpoint.facts import CheckpointFacts
    from mtp_audit.report import Finding


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class MtpQuantOverride(Value):
    """One engine's "build the MTP module unquantized" rule (a row of its
    :meth:`~mtp_audit.engines.base.Engine.list_overrides` hook).

    Attributes:
        engine: the engine's label (``"SGLang"``), as the findings name it.
        version: the release the lines were read in (``"0.5.23"``).
        file: path inside the wheel (``"sglang/srt/models/qwen3_5_mtp.py"``).
        lines: ``(first, last)`` line of the override in that release.
        families: :data:`mtp_audit.checkpoint.layouts.LAYOUTS` family ids it applies to.
        methods: quantization methods it applies to (:attr:`QuantScheme.method`).
        algos: weight formats it applies to (:attr:`QuantScheme.algo`).
        covers: fnmatch patterns of the MTP modules it builds unquantized (``("mtp.*",)`` = the whole
            module; ``("mtp.fc",)`` = only the fc projection).
        needle: text that the cited lines contain (checked against the wheel by the tests).
        what: one line saying what the code does.
    """

    engine: str
    version: str
    file: str
    lines: tuple[int, int]
    families: tuple[str, ...]
    methods: tuple[str, ...]
    algos: tuple[str, ...]
    covers: tuple[str, ...]
    needle: str
    what: str

    @property
    def where(self) -> str:
        """``"SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69"``."""
        a, b = self.lines
        return f"{self.engine} {self.version} {self.file}:{a}" + (f"-{b}" if b != a else "")

    def applies(self, family: str | None, method: str, algo: str) -> bool:
        """Whether the override runs for this family, quantization method and weight format."""
        return family in self.families and method in self.methods and algo in self.algos

    def covers_module(self, module: str) -> bool:
        """Whether the override builds ``module`` unquantized."""
        return any(fnmatch.fnmatchcase(module, p) for p in self.covers)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class ListOverride(Value):
    """An engine whose code builds the MTP module unquantized whatever the exclusion list says (a row of
    :func:`mtp_audit.checkpoint.overrides.quant_overrides`).

    Attributes:
        engine: the engine as the row names it (``"SGLang"``, ``"vLLM"``).
        where: release, file and lines (``"SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69"``).
        what: one line saying what the code does.
    """

    engine: str
    where: str
    what: str


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class HeadsEvidence(Value):
    """What one checkpoint holds for an engine that would draft with its MTP heads.

    Attributes:
        has_config: a ``config.json`` was read.
        declared: the config declares MTP layers (explicitly or, for a family that always ships them, implicitly).
        declared_layers: how many (``None`` without a declaration).
        implicit: the family always carries them (no key says so).
        tensors_known: an index or shard header listed the tensors (``False``: config only, or nothing readable).
        mtp_tensors: MTP tensors found (0 when none, or when ``tensors_known`` is false).
        mtp_format: the MTP linears' storage format (``"NVFP4"``, ``"BF16"``, ``"mixed"``), ``None`` when unknown.
        mtp_bytes: the MTP tensors' bytes (``None`` when unknown); ``mtp_bytes_estimated``: estimated, not summed.
        errors: rule ids of the error findings (sorted, distinct): each stops the load, computes garbage or cannot run.
        list_overrides: where the exclusion list fails to cover an unquantized MTP linear, the engines whose code
            builds it unquantized anyway (MTP007 is then a warning); ``()`` otherwise.
        blocking_gap: the first blocking "could not tell" of the checkpoint audit, or ``None``.
        has_index, shards_present: an index file was found; shard files are present.
        problems: what could not be read (sorted).
    """

    has_config: bool
    declared: bool
    declared_layers: int | None
    implicit: bool
    tensors_known: bool
    mtp_tensors: int
    mtp_format: str | None
    mtp_bytes: int | None
    mtp_bytes_estimated: bool
    errors: tuple[str, ...]
    list_overrides: tuple[ListOverride, ...]
    blocking_gap: str | None
    has_index: bool
    shards_present: bool
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class HeadsAnswer(Value):
    """One engine's answer to "will you draft with these MTP heads?".

    Attributes:
        engine: the engine's id (``"sglang"``).
        usable: ``True`` / ``False``, or ``None`` when a blocking gap leaves it open (never folded into a pass).
        blocked_by: rule ids that stop it (sorted, distinct).
        answer: the one-line answer the report opens with.
        title: the closing section's title (``"Will SGLang use the MTP heads?"``).
        lines: the engine's lines of the closing section (after what the checkpoint declares and holds).
        summary: entries for ``facts["checkpoint"]["summary"]`` (``{"sglang_mtp_usable": True}``).
        facts: the engine's entry of ``facts["checkpoint"]["engine"]``.
    """

    engine: str
    usable: bool | None
    blocked_by: tuple[str, ...]
    answer: str
    title: str
    lines: tuple[str, ...]
    summary: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)


#: What answers for an engine: a function of the evidence (an engine's ``uses_heads`` hook).
HeadsAnswerer = Callable[[HeadsEvidence], "HeadsAnswer | None"]


def heads_evidence(facts: CheckpointFacts, findings: Iterable[Finding], summary: Mapping[str, Any],
                   list_overrides: Iterable[Any]) -> HeadsEvidence:
    """The evidence of one audited checkpoint: its ``facts``, the checks' ``findings``, the report's ``summary``
    (its MTP format and bytes) and the override rows that make MTP007 a warning
    (:func:`mtp_audit.checkpoint.checks.exclusion_list_overrides`)."""
    decl = facts.config.declaration if facts.config else None
    errors = sorted({f.rule_id for f in findings if f.severity.label == "error"})
    return HeadsEvidence(
        has_config=facts.config is not None,
        declared=bool(decl and decl.declared),
        declared_layers=decl.layers if decl else None,
        implicit=bool(decl and decl.implicit),
        tensors_known=facts.tensors_known,
        mtp_tensors=len(facts.mtp),
        mtp_format=summary.get("mtp_format"),
        mtp_bytes=summary.get("mtp_bytes"),
        mtp_bytes_estimated=bool(summary.get("mtp_bytes_estimated")),
        errors=tuple(errors),
        list_overrides=tuple(ListOverride(o.engine, o.where, o.what) for o in list_overrides),
        blocking_gap=next((g.message for g in facts.gaps if g.blocking), None),
        has_index=facts.index_file is not None,
        shards_present=bool(facts.shards_present),
        problems=tuple(sorted(facts.problems)),
    )
