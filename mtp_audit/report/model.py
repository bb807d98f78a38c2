"""The one report model shared by every analyzer: findings, gaps, facts and the verdict.

No I/O here. Analyzers build a :class:`Report`; :mod:`mtp_audit.formats` renders it;
:mod:`mtp_audit.cli.main` turns it into an exit code.

Design follows ``../shared/research/aesthetics.md`` part B2 (pip-audit frozen dataclasses,
modelscan's split of findings from what could not be examined).
"""

from __future__ import annotations

import enum
import re
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.valueclass import Value

#: A device location (``cuda:10``, ``npu:0``, a range ``cuda:0-7``): its type, first index and the rest.
_DEVICE_SYMBOL = re.compile(r"([a-z]{2,8}:)(\d{1,9})([-,\d]*)")

#: Version of the JSON document produced by :meth:`Report.to_dict`; bump on breaking change.
#: The schema ships as ``mtp_audit/schema/report.schema.json``.
SCHEMA_VERSION = 1


class Severity(enum.IntEnum):
    """How bad a finding is. Ordered, so ``finding.severity >= Severity.ERROR`` works for ``--fail-on``.

    ``INFO`` is a fact worth knowing, ``WARNING`` is likely degraded or risky, ``ERROR`` will fail to
    load, silently compute wrong results, or cannot run on this GPU.
    """

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        """Lower-case name used in every output format (``"info"``, ``"warning"``, ``"error"``)."""
        return self.name.lower()

    @property
    def sarif_level(self) -> str:
        """SARIF 2.1.0 ``result.level``: ``note``, ``warning`` or ``error``."""
        return {Severity.INFO: "note", Severity.WARNING: "warning", Severity.ERROR: "error"}[self]

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse ``"info"``/``"warning"``/``"error"`` (any case).

        Raises:
            ValueError: for any other string.
        """
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected info, warning or error)") from None


class Status(str, enum.Enum):
    """Overall outcome of an audit, independent of ``--fail-on``.

    ``INCONCLUSIVE`` means the analyzer could not decide (a gap blocked the answer). It is never
    folded into ``PASS``: "could not tell" is a separate, honest answer.
    """

    PASS = "pass"
    FINDINGS = "findings"
    INCONCLUSIVE = "inconclusive"


def located_at(symbol: str | None, device: str, index: int) -> bool:
    """Whether a finding located at ``symbol`` (``"machine"``, ``"cuda:3"``, a range ``"cuda:0-3,5"``) is about the GPU
    labelled ``device`` whose index is ``index``."""
    if symbol in (device, "machine"):
        return True
    kind, _, ranges = (symbol or "").partition(":")
    if kind != device.partition(":")[0] or not re.fullmatch(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*", ranges):
        return False
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if int(lo) <= index <= int(hi or lo):
            return True
    return False


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Location(Value):
    """Where a finding points.

    Attributes:
        path: POSIX path relative to the audited root (``"python/sglang/srt/server_args.py"``,
            ``"model.safetensors.index.json"``); ``None`` for machine-level facts (a GPU).
        line: 1-based line, when known.
        column: 1-based column, when known (SARIF convention).
        end_line: 1-based last line of the region, when known.
        end_column: 1-based column after the region's end, when known.
        symbol: logical address: a tensor name, a JSON pointer (``"/text_config/mtp_num_hidden_layers"``),
            a qualified name (``"ServerArgs._handle_speculative_decoding"``) or a device (``"cuda:0"``).
    """

    path: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    symbol: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form; keys with ``None`` values are dropped."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def sort_key(self) -> tuple[Any, ...]:
        """Stable ordering key: path, line, column, symbol (``None`` sorts first); a device symbol by its number
        (``cuda:8`` before ``cuda:10``, ``cuda:0-7`` after ``cuda:0``)."""
        m = _DEVICE_SYMBOL.fullmatch(self.symbol or "")
        sym: tuple[Any, ...] = (m.group(1), int(m.group(2)), m.group(3)) if m else (self.symbol or "",)
        return (self.path or "", self.line or 0, self.column or 0, sym)

    def __str__(self) -> str:
        parts = [self.path] if self.path else []
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        text = ":".join(parts)
        if self.symbol:
            text = f"{text} [{self.symbol}]" if text else self.symbol
        return text or "-"


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Evidence(Value):
    """One observed fact behind a finding.

    Attributes:
        label: what was observed (``"config.num_nextn_predict_layers"``).
        value: the observed value, always a string so JSON output is stable.
        location: where it was observed, when that differs from the finding's location
            (rendered as a SARIF ``relatedLocation``).
    """

    label: str
    value: str
    location: Location | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        d: dict[str, Any] = {"label": self.label, "value": self.value}
        if self.location is not None:
            d["location"] = self.location.to_dict()
        return d


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Finding(Value):
    """A rule's verdict about one place.

    Attributes:
        rule_id: stable id, ``MTP0xx`` checkpoint, ``MTP1xx`` sglang, ``MTP2xx`` preflight,
            ``MTP3xx`` launch cross-checks.
        severity: normally the rule's default.
        message: one specific sentence with names and numbers.
        location: where it points.
        evidence: the facts that triggered it.
        remediation: the specific fix (exact flags, versions or files), empty when none is known.
        detail: the rest of the story when ``message`` would run past one line (about 200
            characters): the rationale, costs, fallbacks. Printed by the text report only with
            ``--verbose``; JSON (``detail``), SARIF (``properties.detail``) and Markdown always carry it.
        question: the question it answers (one of :data:`mtp_audit.report.questions.QUESTIONS`), by default its
            rule's; ``None``: the analyzer's subject as a whole.
    """

    rule_id: str
    severity: Severity
    message: str
    location: Location = field(default_factory=Location)
    evidence: tuple[Evidence, ...] = ()
    remediation: str = ""
    detail: str = ""
    question: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``detail`` only when there is one)."""
        d: dict[str, Any] = {
            "rule_id": self.rule_id,
            "severity": self.severity.label,
            "message": self.message,
            "location": self.location.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "remediation": self.remediation,
        }
        if self.detail:
            d["detail"] = self.detail
        if self.question is not None:
            d["question"] = self.question
        return d

    def sort_key(self) -> tuple[Any, ...]:
        """Deterministic order: location, then rule id, then message."""
        return (*self.location.sort_key(), self.rule_id, self.message)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Suppression(Value):
    """Why a finding is ignored: a ``[tool.mtp-audit]`` ignore or ``--ignore RULE``.

    Attributes:
        rule_id: the ignored rule.
        reason: why (required in a configuration file; ``""`` allowed on the command line).
        source: where the ignore was written: ``"--ignore"``, ``"pyproject.toml"``, or
            ``"pyproject.toml overrides[0] (target 'fixtures/*')"``.
        expires: ``YYYY-MM-DD`` after which the ignore no longer applies, or ``None``.
    """

    rule_id: str
    reason: str
    source: str
    expires: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``expires`` only when set)."""
        d: dict[str, Any] = {"rule_id": self.rule_id, "reason": self.reason, "source": self.source}
        if self.expires is not None:
            d["expires"] = self.expires
        return d


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class IgnoredFinding(Value):
    """A finding that an ignore moved out of the verdict. It is kept, counted and rendered (text with
    ``--verbose``, JSON ``ignored``, SARIF ``suppressions``), never silently dropped.

    Attributes:
        finding: the finding as the analyzer reported it.
        suppression: the ignore that matched it.
    """

    finding: Finding
    suppression: Suppression

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the finding's own keys plus ``suppression``."""
        return {**self.finding.to_dict(), "suppression": self.suppression.to_dict()}


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Gap(Value):
    """Something the audit could not look at (unreadable file, shard absent in metadata-only mode,
    source file that does not parse, a fact missing from a truncated environment dump).

    Gaps are never findings. A gap with ``blocking=True`` means the question the analyzer exists to
    answer could not be decided, and the report's status becomes ``inconclusive``.

    Attributes:
        analyzer: ``"checkpoint"``, ``"sglang"``, ``"preflight"`` or ``"launch"``.
        message: one line naming the file (or fact) and the problem.
        path: the file concerned, relative to the audited root, when there is one.
        blocking: whether this gap prevents a conclusive answer.
        question: the one question it leaves open (one of :data:`mtp_audit.report.questions.QUESTIONS`), so a
            consumer scopes it without reading ``message``; ``None``: the analyzer's subject as a whole.
        why_open: why it is open (one of :data:`mtp_audit.report.questions.WHY_OPEN`):
            :data:`~mtp_audit.report.questions.NOT_EXAMINED` when the fact behind it was not looked at by request
            (``--no-machine``); ``None`` when the evidence read did not tell.
    """

    analyzer: str
    message: str
    path: str | None = None
    blocking: bool = True
    question: str | None = None
    why_open: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``path``, ``question`` and ``why_open`` only when set)."""
        d: dict[str, Any] = {"analyzer": self.analyzer, "message": self.message, "blocking": self.blocking}
        if self.path is not None:
            d["path"] = self.path
        if self.question is not None:
            d["question"] = self.question
        if self.why_open is not None:
            d["why_open"] = self.why_open
        return d

    def fields(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this gap (``Gap(**g.fields())``), for the scan caches; ``why_open`` only
        when set, so an entry written here still loads where gaps had no ``why_open``."""
        d = dict(self.__dict__)
        if d.get("why_open") is None:
            d.pop("why_open", None)
        return d


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Target(Value):
    """What one analyzer looked at.

    Attributes:
        analyzer: which analyzer ran.
        name: what it looked at, as the user named it (a folder, a hub id ``org/name@sha``,
            ``"sglang 0.5.9 (wheel)"``, ``"local machine"``). Never an absolute path that the user did
            not type, so output stays deterministic.
    """

    analyzer: str
    name: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"analyzer": self.analyzer, "name": self.name}


class _combiner:
    """Descriptor for a function of ``*reports``: on the class it is that function
    (``Report.merge(a, b)``), on an instance the instance comes first (``a.merge(b)``)."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__wrapped__ = func

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self.func
        return types.MethodType(self.func, obj)


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Report(Value):
    """The result of one or more analyzers, the only thing formatters and the CLI see.

    Attributes:
        targets: what was audited, one entry per analyzer run.
        findings: sorted by location then rule id (see :meth:`build`).
        gaps: what could not be examined, sorted.
        facts: structured facts per analyzer, e.g. ``facts["checkpoint"]["mtp"]["tensors"]``; values
            must be JSON-serialisable (str, int, float, bool, None, lists, dicts with str keys).
        rule_ids: ids of the rules that were evaluated, sorted (for SARIF ``driver.rules``).
        tool_version: ``mtp_audit.__version__``.
        ignored: findings moved out of ``findings`` by :meth:`ignore` (they no longer count for the
            status, the counts or the exit code, but every renderer shows or marks them).
        answer: the analyzer's typed answer, for the engines that read it (a
            :class:`~mtp_audit.checkpoint.typed.CheckpointAnswer`, a :class:`~mtp_audit.preflight.typed.MachineAnswer`),
            or ``None``. Never serialized and not compared: the JSON, equality and every renderer are the same with or
            without it; a merged report carries none (:func:`mtp_audit.checkpoint.typed.checkpoint_answer` and
            :func:`mtp_audit.preflight.typed.machine_answer` read such a report's facts instead).
    """

    targets: tuple[Target, ...]
    findings: tuple[Finding, ...] = ()
    gaps: tuple[Gap, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    rule_ids: tuple[str, ...] = ()
    tool_version: str = ""
    ignored: tuple[IgnoredFinding, ...] = ()
    answer: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        analyzer: str,
        target: str,
        *,
        findings: Iterable[Finding] = (),
        gaps: Iterable[Gap] = (),
        facts: Mapping[str, Any] | None = None,
        rule_ids: Iterable[str] = (),
    ) -> Report:
        """Make a single-analyzer report with sorted, de-duplicated findings and gaps.

        Args:
            analyzer: analyzer name; ``facts`` are stored under this key.
            target: display name of what was audited.
            findings: in any order.
            gaps: in any order.
            facts: this analyzer's structured facts.
            rule_ids: rules evaluated; rule ids of ``findings`` are added automatically.
        """
        from mtp_audit import __version__

        fs = tuple(sorted(set(findings), key=Finding.sort_key))
        gs = tuple(sorted(set(gaps), key=lambda g: (g.path or "", g.message)))
        ids = tuple(sorted(set(rule_ids) | {f.rule_id for f in fs}))
        return cls(
            targets=(Target(analyzer, target),),
            findings=fs,
            gaps=gs,
            facts={analyzer: dict(facts or {})},
            rule_ids=ids,
            tool_version=__version__,
        )

    @_combiner
    def merge(*reports: Report) -> Report:
        """Combine reports from several analyzers (``mtp-audit launch``) into one; each finding keeps
        its rule id.

        A combiner, callable on the class or on a report: ``Report.merge(a, b, c)`` and
        ``a.merge(b, c)`` give the same report. Targets keep their order; findings and gaps are
        de-duplicated and sorted; facts are merged by analyzer key (a later report's key replaces an
        earlier one's); ``tool_version`` is the first report's.

        Raises:
            ValueError: no report given.
            TypeError: an argument is not a :class:`Report`.
        """
        if not reports:
            raise ValueError("Report.merge needs at least one report")
        for r in reports:
            if not isinstance(r, Report):
                raise TypeError(f"Report.merge combines Report objects, not {type(r).__name__}")
        targets: list[Target] = []
        findings: list[Finding] = []
        gaps: list[Gap] = []
        facts: dict[str, Any] = {}
        ids: set[str] = set()
        ignored: list[IgnoredFinding] = []
        for o in reports:
            targets += o.targets
            findings += o.findings
            gaps += o.gaps
            facts.update(o.facts)
            ids |= set(o.rule_ids)
            ignored += o.ignored
        return Report(
            targets=tuple(targets),
            findings=tuple(sorted(set(findings), key=Finding.sort_key)),
            gaps=tuple(sorted(set(gaps), key=lambda g: (g.analyzer, g.path or "", g.message))),
            facts=facts,
            rule_ids=tuple(sorted(ids)),
            tool_version=reports[0].tool_version,
            ignored=tuple(sorted(set(ignored), key=lambda i: i.finding.sort_key())),
        )

    def ignore(self, suppressions: Mapping[str, Suppression]) -> Report:
        """A copy in which every finding whose rule id is a key of ``suppressions`` is moved to
        :attr:`ignored` with that suppression (findings already ignored stay ignored). Facts, gaps
        and rule ids are unchanged: an ignore changes the verdict, not what was observed."""
        if not suppressions:
            return self
        kept = tuple(f for f in self.findings if f.rule_id not in suppressions)
        moved = [IgnoredFinding(f, suppressions[f.rule_id]) for f in self.findings if f.rule_id in suppressions]
        return Report(
            targets=self.targets,
            findings=kept,
            gaps=self.gaps,
            facts=self.facts,
            rule_ids=self.rule_ids,
            tool_version=self.tool_version,
            ignored=tuple(sorted((*self.ignored, *moved), key=lambda i: i.finding.sort_key())),
            answer=self.answer,
        )

    @property
    def inconclusive(self) -> bool:
        """True when any gap blocks a conclusive answer."""
        return any(g.blocking for g in self.gaps)

    @property
    def status(self) -> Status:
        """``findings`` if any finding is an error; else ``inconclusive`` if a blocking gap exists;
        else ``findings`` if any finding is a warning; else ``pass``. The same precedence as
        :func:`exit_code` with the default ``--fail-on error``: a definite error outranks "could
        not tell", which outranks warnings. Info findings alone never make a report fail."""
        if any(f.severity >= Severity.ERROR for f in self.findings):
            return Status.FINDINGS
        if self.inconclusive:
            return Status.INCONCLUSIVE
        if any(f.severity >= Severity.WARNING for f in self.findings):
            return Status.FINDINGS
        return Status.PASS

    def at_least(self, severity: Severity) -> tuple[Finding, ...]:
        """Findings with ``finding.severity >= severity``."""
        return tuple(f for f in self.findings if f.severity >= severity)

    def counts(self) -> dict[str, int]:
        """Number of findings per severity label, every label present (``{"error": 0, ...}``)."""
        out = {s.label: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.label] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (validated by ``mtp_audit/schema/report.schema.json``)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "mtp-audit", "version": self.tool_version},
            "targets": [t.to_dict() for t in self.targets],
            "status": self.status.value,
            "summary": {"findings": self.counts(), "gaps": len(self.gaps), "inconclusive": self.inconclusive,
                        "ignored": len(self.ignored)},
            "findings": [f.to_dict() for f in self.findings],
            "ignored": [i.to_dict() for i in self.ignored],
            "gaps": [g.to_dict() for g in self.gaps],
            "facts": dict(self.facts),
            "rules": list(self.rule_ids),
        }


#: Exit codes, documented in README.md ("Exit codes").
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3


def fail_on_severity(fail_on: Severity | str | None) -> Severity | None:
    """``fail_on`` as a :class:`Severity` (``None``: never): a Severity or ``None`` as given, a word as the CLI's
    ``--fail-on`` spells it (``"info"``, ``"warning"``, ``"error"``, ``"never"``, any case).

    Raises:
        ValueError: another word.
    """
    if not isinstance(fail_on, str):
        return fail_on
    if fail_on.strip().lower() == "never":
        return None
    return Severity.parse(fail_on)


def exit_code(report: Report, fail_on: Severity | str | None) -> int:
    """CI exit code for ``report``.

    Args:
        report: the audit result.
        fail_on: lowest severity that fails the run; ``None`` means ``--fail-on never``; the CLI's words
            (:func:`fail_on_severity`) are accepted too.

    Returns:
        1 if a finding is at or above ``fail_on``; else 3 if the report is inconclusive; else 0.
        A definite failure outranks "could not tell", because it is what the user must fix first.
    """
    fail_on = fail_on_severity(fail_on)
    if fail_on is not None and report.at_least(fail_on):
        return EXIT_FINDINGS
    if report.inconclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_OK
