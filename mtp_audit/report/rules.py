"""Rule metadata, documentation and examples, and the registry of every analyzer's rules.

A rule is data: id, kebab-case name, default severity, a doc in fixed sections (ruff's style:
What it does / Why is this bad? / Example / How to fix, see ``../shared/research/aesthetics.md`` §6),
where its facts come from, and examples that run as tests (Fixit's VALID/INVALID idea, §2).
The checking logic lives in each analyzer; rules here only describe and build findings.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mtp_audit.report import Evidence, Finding, Location, Severity
from mtp_audit.valueclass import Value

if TYPE_CHECKING:
    from mtp_audit.report import Report

#: Analyzer name -> module(s) holding its ``RULES`` tuple (declarations only; the launch cross-checks live in each
#: engine's package); the ``examples`` module beside it (for ``launch``: :mod:`mtp_audit.launch.examples`, the
#: engine-neutral combiner) holds ``run_example(root, example)``, which runs an example through the analyzer.
#: Rule id ranges: MTP000-049 checkpoint, MTP050-059 compare, MTP1xx sglang, MTP2xx preflight, MTP3xx launch cross-checks.
ANALYZER_RULE_MODULES: dict[str, str | tuple[str, ...]] = {
    "checkpoint": "mtp_audit.checkpoint.rules",
    "compare": "mtp_audit.compare.rules",
    "sglang": "mtp_audit.engines.sglang.rules",
    "preflight": ("mtp_audit.preflight.rules", "mtp_audit.engines.sglang.preflight_rules", "mtp_audit.engines.vllm.preflight_rules"),
    "launch": ("mtp_audit.engines.sglang.launch.rules", "mtp_audit.engines.vllm.launch.rules"),
    "vllm": "mtp_audit.engines.vllm.rules",
    "llamacpp": "mtp_audit.engines.llamacpp.rules",
    "trtllm": "mtp_audit.engines.trtllm.rules",
    "log": "mtp_audit.runtime.rules",
}

ID_RANGES: dict[str, range] = {
    "checkpoint": range(0, 50),
    "compare": range(50, 60),
    "sglang": range(100, 200),
    "preflight": range(200, 300),
    "launch": range(300, 400),
    "vllm": range(400, 500),
    "llamacpp": range(600, 650),
    "trtllm": range(700, 750),
    "log": range(500, 550),
}

#: Where a rule's fact comes from. "bug report" rules say so in their doc (a reader weighs a bug report below code).
BASES = ("code", "documentation", "bug report", "real checkpoint", "format spec", "safety")

FileContent = str | bytes
ExampleFiles = Mapping[str, FileContent] | Callable[[], Mapping[str, FileContent]]

_ID_RE = re.compile(r"^MTP\d{3}$")
_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Example(Value):
    """An input that a rule must flag (``fires=True``) or must leave alone (``fires=False``).

    Attributes:
        fires: whether the rule must produce at least one finding on this input.
        files: relative path -> content (text or bytes) written into an empty folder before the
            analyzer runs, or a zero-argument callable returning that mapping (for binary files
            built on demand, such as safetensors shards).
        args: analyzer-specific extra arguments (e.g. a launch command for the preflight).
        note: one line saying what makes this input good or bad; shown by ``mtp-audit explain``.
    """

    fires: bool
    files: ExampleFiles
    args: tuple[str, ...] = ()
    note: str = ""

    def materialize(self, root: Path) -> None:
        """Write this example's files under ``root`` (which must exist)."""
        files = self.files() if callable(self.files) else self.files
        for rel, content in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")

    def shown_files(self) -> dict[str, str]:
        """Text files of the example, for documentation (binary files are summarised by size)."""
        files = self.files() if callable(self.files) else self.files
        return {
            rel: (c if isinstance(c, str) else f"<{len(c)} bytes, binary>") for rel, c in sorted(files.items())
        }


@dataclass(frozen=True, eq=False, repr=False)  # equality, hash and repr: Value's
class Rule(Value):
    """One audit rule.

    Attributes:
        id: ``MTP`` + 3 digits, never reused.
        name: kebab-case name (SARIF ``name``).
        analyzer: ``checkpoint`` / ``sglang`` / ``preflight`` / ``launch``.
        severity: default severity of its findings.
        summary: one line, no trailing period.
        what: "What it does" section.
        why: "Why is this bad?" section.
        fix: "How to fix" section (generic; findings carry the specific remediation).
        sources: where the facts come from: SGLang/vLLM files, CUDA docs, issue/PR URLs, or
            ``../shared/research/*.md`` sections.
        basis: one of :data:`BASES`; ``"bug report"`` marks rules that rest on user reports, not code.
        examples: inputs that must / must not trigger it; they run as tests.
        question: the question its findings answer (:data:`mtp_audit.report.questions.QUESTIONS`), or ``None``.
    """

    id: str
    name: str
    analyzer: str
    severity: Severity
    summary: str
    what: str
    why: str
    fix: str
    sources: tuple[str, ...]
    basis: str
    examples: tuple[Example, ...] = field(default=(), compare=False)
    question: str | None = None

    def finding(
        self,
        message: str,
        location: Location | None = None,
        *,
        evidence: tuple[Evidence, ...] | list[Evidence] = (),
        remediation: str | None = None,
        severity: Severity | None = None,
        detail: str = "",
    ) -> Finding:
        """Build a :class:`Finding` of this rule; ``remediation`` defaults to the rule's ``fix``;
        ``detail`` holds what does not fit the one-line ``message`` (see :class:`Finding`)."""
        return Finding(
            rule_id=self.id,
            severity=severity or self.severity,
            message=message,
            location=location or Location(),
            evidence=tuple(evidence),
            remediation=self.fix if remediation is None else remediation,
            detail=detail,
            question=self.question,
        )

    def doc(self) -> str:
        """The full Markdown documentation (``mtp-audit explain``, SARIF ``fullDescription``)."""
        lines = [
            f"# {self.id} {self.name}",
            "",
            f"{self.summary}. Default severity: {self.severity.label}. Analyzer: {self.analyzer}.",
            "",
            "## What it does",
            self.what,
            "",
            "## Why is this bad?",
            self.why,
            "",
        ]
        bad = [e for e in self.examples if e.fires]
        good = [e for e in self.examples if not e.fires]
        if self.examples:
            lines += ["## Example", ""]
            for title, group in (("Flagged", bad[:1]), ("Not flagged", good[:1])):
                for ex in group:
                    lines.append(f"{title}: {ex.note}" if ex.note else f"{title}:")
                    shown_files = ex.shown_files()
                    for rel, text in list(shown_files.items())[:2]:
                        shown = text if len(text) <= 800 else text[:800] + "\n... (truncated)"
                        lines += ["", f"`{rel}`:", "```", shown.rstrip("\n"), "```"]
                    if len(shown_files) > 2:
                        rest = list(shown_files)[2:]
                        lines += ["", f"(and {len(rest)} more file(s): {', '.join(rest)})"]
                    if ex.args:
                        lines += ["", "arguments: `" + " ".join(ex.args) + "`"]
                    lines.append("")
        lines += ["## How to fix", self.fix, "", "## Sources"]
        lines += [f"- {s}" for s in self.sources]
        if self.basis == "bug report":
            lines += ["", "This rule is based on public bug reports, not on engine code."]
        return "\n".join(lines).rstrip() + "\n"


#: Analyzers whose examples run through another module than the one beside their rules.
EXAMPLE_MODULES: dict[str, str] = {"launch": "mtp_audit.launch.examples", "trtllm": "mtp_audit.launch.examples"}


def rule_modules(analyzer: str) -> tuple[str, ...]:
    """The modules declaring ``analyzer``'s rules (``ANALYZER_RULE_MODULES``, one or several)."""
    mods = ANALYZER_RULE_MODULES[analyzer]
    return (mods,) if isinstance(mods, str) else tuple(mods)


def analyzer_rules(analyzer: str) -> tuple[Rule, ...]:
    """The rules of ``analyzer``, in declaration order. Each module of :func:`rule_modules` declares some (``RULES``)
    and may lend examples to rules of the same analyzer declared in another (``EXAMPLES``: rule id -> examples,
    appended in module order): an engine keeps its own examples of a rule whose meaning holds for several engines.

    Raises:
        ValueError: examples lent to a rule id the analyzer does not declare (a programming error).
    """
    modules = [importlib.import_module(m) for m in rule_modules(analyzer)]
    rules = [r for m in modules for r in m.RULES]
    lent: dict[str, tuple[Example, ...]] = {}
    for m in modules:
        for rule_id, examples in getattr(m, "EXAMPLES", {}).items():
            lent[rule_id] = lent.get(rule_id, ()) + tuple(examples)
    stray = sorted(set(lent) - {r.id for r in rules})
    if stray:
        raise ValueError(f"examples lent to rules {analyzer} does not declare: {', '.join(stray)}")
    return tuple(replace(r, examples=r.examples + lent[r.id]) if r.id in lent else r for r in rules)


def all_rules() -> tuple[Rule, ...]:
    """Every registered rule, sorted by id.

    Raises:
        ValueError: a rule id is malformed, duplicated, or outside its analyzer's range
            (a programming error caught by the test suite).
    """
    rules: list[Rule] = []
    for analyzer in ANALYZER_RULE_MODULES:
        rules.extend(analyzer_rules(analyzer))
    seen: set[str] = set()
    for r in rules:
        if not _ID_RE.match(r.id) or not _NAME_RE.match(r.name):
            raise ValueError(f"malformed rule id or name: {r.id} {r.name}")
        if r.id in seen:
            raise ValueError(f"duplicate rule id {r.id}")
        if int(r.id[3:]) not in ID_RANGES[r.analyzer]:
            raise ValueError(f"{r.id} is outside the {r.analyzer} range")
        if r.basis not in BASES:
            raise ValueError(f"{r.id}: unknown basis {r.basis!r}")
        seen.add(r.id)
    return tuple(sorted(rules, key=lambda r: r.id))


def analyzer_of_id(rule_id: str) -> str | None:
    """The analyzer whose id range (:data:`ID_RANGES`) holds ``rule_id`` (``"MTP006"`` -> ``"checkpoint"``); None for an
    id outside every range or not written ``MTPnnn``. Every registered rule sits in its own analyzer's range and is
    declared by that analyzer's rule modules (:func:`all_rules` checks the first, ``tests/test_sarif_rules.py`` both),
    so a rule is found among :func:`analyzer_rules` of this analyzer alone, without importing every analyzer's."""
    if not _ID_RE.match(rule_id):
        return None
    n = int(rule_id[3:])
    return next((a for a, ids in ID_RANGES.items() if n in ids), None)


def get_rule(rule_id: str) -> Rule:
    """Look a rule up by id (case-insensitive).

    Raises:
        KeyError: no such rule.
    """
    want = rule_id.strip().upper()
    for r in all_rules():
        if r.id == want:
            return r
    raise KeyError(rule_id)


def run_rule_example(rule: Rule, example: Example, root: Path) -> Report:
    """Write ``example`` into the empty folder ``root`` and run ``rule``'s analyzer on it.

    Returns the analyzer's :class:`Report`; the caller checks whether ``rule.id`` fired.
    """
    example.materialize(root)
    name = EXAMPLE_MODULES.get(rule.analyzer) or rule_modules(rule.analyzer)[0].rpartition(".")[0] + ".examples"
    module = importlib.import_module(name)
    return module.run_example(root, example)
