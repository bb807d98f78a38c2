"""SARIF 2.1.0 output that GitHub code scanning (and GitLab, the VS Code SARIF viewer) accepts.

Shape follows the OASIS SARIF 2.1.0 spec (https://docs.oasis-open.org/sarif/sarif/v2.1.0/) and GitHub's
subset (https://docs.github.com/en/code-security/reference/code-scanning/sarif-files/sarif-support):

- every result has one physical location. A finding with a file (``sglang/srt/server_args.py:2353``,
  ``config.json``) points at that file; a finding about something that is not a file (a GPU ``cuda:0``,
  the ``machine``, a launch flag ``--tp-size``) points at the input it came from: the env dump or facts
  file, the launch file, the wheel, the checkpoint's ``config.json``, else a *stated artifact* (``machine``,
  ``launch-command``) under its own declared ``uriBaseId``. The logical address stays in ``logicalLocations``.
- every URI is relative to a declared base: ``%SRCROOT%`` (the folder mtp-audit ran in, the repository
  root in CI) for inputs inside it, so ``fixtures/ckpt/hf_quant_config.json`` names the file in the
  repository, not ``hf_quant_config.json`` of an unnamed folder; ``MTPAUDIT_<ANALYZER>`` (declared in
  ``originalUriBaseIds`` with an absolute ``file:`` URI or a description) for inputs outside it.
- ``partialFingerprints["mtpAudit/v1"]``: a hash of the rule, the artifact, the logical address and the
  finding's rank among equal keys; an artifact outside ``%SRCROOT%`` is named with its base's identity (the
  input's absolute ``file:`` URI, or a hub target's id), so checkpoints outside the working folder never collide. No line numbers and no message text, so an alert survives an engine
  upgrade that moves the line or changes a byte count.

Validated in tests against the official schema (``tests/data/sarif-schema-2.1.0.json``) and GitHub's
ingestion rules (``tests/test_sarif_github.py``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mtp_audit.formats.indented import dumps
from mtp_audit.report import Finding, Location, Report, Suppression

if TYPE_CHECKING:
    from mtp_audit.report.rules import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

#: Base of URIs inside the folder mtp-audit ran in (GitHub resolves it to the repository checkout).
SRCROOT = "%SRCROOT%"

#: ``partialFingerprints`` key; bump the suffix if the hashed fields ever change.
FINGERPRINT_KEY = "mtpAudit/v1"

#: Stated artifact for a finding that has no file and no input file to point at, per analyzer.
STATED_ARTIFACT = {"preflight": "machine", "launch": "launch-command", "checkpoint": "config.json",
                   "compare": "config.json", "sglang": "sglang", "vllm": "vllm"}


def _uri(path: str) -> str:
    """Percent-encoded relative URI of ``path``. A name that is not UTF-8 on disk reaches us with
    ``surrogateescape`` code points (``\\udcff``); it is encoded back to its original bytes, which
    ``quote`` percent-encodes (``%FF``), so the URI names the real file and never raises."""
    try:
        raw = path.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no file name decodes to
        raw = path.encode("utf-8", errors="surrogatepass")
    return quote(raw)


class _Bases:
    """Where each analyzer's relative paths live, as SARIF ``(uriBaseId, prefix)`` pairs.

    ``roots`` maps an analyzer (``checkpoint``, ``sglang``, ``vllm``, ``preflight``, ``launch``,
    ``compare``) to the local file or folder it read, as the user typed it. A root inside ``cwd``
    becomes a prefix under ``%SRCROOT%``; one outside gets its own base ``MTPAUDIT_<ANALYZER>``
    (an absolute ``file:`` URI); an analyzer without a local root (a hub checkpoint, the live
    machine) gets a base with only a description.
    """

    def __init__(self, report: Report, roots: Mapping[str, str | os.PathLike[str]], cwd: str) -> None:
        self.cwd = os.path.realpath(cwd)
        self.declared: dict[str, dict[str, Any]] = {
            SRCROOT: {"description": {"text": "The folder mtp-audit ran in (the repository root in CI)."}}}
        self.roots = {a: os.fspath(p) for a, p in roots.items()}
        self.names = {t.analyzer: t.name for t in report.targets}

    def _inside(self, root: str) -> str | None:
        """``root`` as a POSIX path relative to ``cwd`` when it is inside it, else ``None``."""
        real = os.path.realpath(root)
        try:
            rel = os.path.relpath(real, self.cwd)
        except ValueError:
            return None
        if rel == "." :
            return ""
        if rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
            return None
        return PurePosixPath(*Path(rel).parts).as_posix()

    def _own_base(self, analyzer: str, root: str | None) -> str:
        base = f"MTPAUDIT_{analyzer.upper()}"
        if base not in self.declared:
            what = f"The {analyzer} input: {self.names.get(analyzer) or root or 'not a file'}."
            entry: dict[str, Any] = {"description": {"text": what}}
            if root is not None and os.path.isdir(root):
                entry["uri"] = Path(os.path.realpath(root)).as_uri().rstrip("/") + "/"
            self.declared[base] = entry
        return base

    def identity(self, base: str) -> str:
        """What a declared base stands for: its absolute ``file:`` URI (a local input outside ``cwd``), else the
        target's name without its revision (a hub id ``org/name@sha`` is ``org/name``, so a baseline outlives a new
        revision); ``""`` for an undeclared base or a target with no name."""
        entry = self.declared.get(base)
        if entry is None:
            return ""
        if entry.get("uri"):
            return str(entry["uri"])
        name = next((n for a, n in self.names.items() if f"MTPAUDIT_{a.upper()}" == base), "") or ""
        head, at, _rev = name.rpartition("@")
        return head if at and "/" in head and " " not in head else name

    def artifact(self, analyzer: str, rel: str | None) -> dict[str, Any]:
        """``artifactLocation`` of ``rel`` (relative to the analyzer's root; ``None``: the root itself,
        or the analyzer's stated artifact when the root is a folder or absent)."""
        root = self.roots.get(analyzer)
        if root is not None and os.path.isfile(root):
            if rel is None:  # a finding about a wheel or an env dump file: the file itself
                inside = self._inside(root)
                if inside is not None:
                    return {"uri": _uri(inside), "uriBaseId": SRCROOT}
                return {"uri": _uri(os.path.basename(root)), "uriBaseId": self._own_base(analyzer, os.path.dirname(root) or ".")}
            root = None  # a member of a wheel: relative to the package, under the analyzer's own base
        name = rel if rel is not None else STATED_ARTIFACT.get(analyzer, analyzer)
        if root is not None:
            inside = self._inside(root)
            if inside is not None:
                return {"uri": _uri(f"{inside}/{name}" if inside else name), "uriBaseId": SRCROOT}
        return {"uri": _uri(name), "uriBaseId": self._own_base(analyzer, root)}


def _analyzer_of(rule_id: str, known: _KnownRules, default: str) -> str:
    rule = known.get(rule_id)
    return rule.analyzer if rule is not None else default


def _physical(loc: Location, analyzer: str, bases: _Bases, anchor: dict[str, Any] | None) -> dict[str, Any]:
    """``physicalLocation`` of ``loc``: its file, else the analyzer's input file (an env dump, a
    wheel, a checkpoint's ``config.json``), else ``anchor`` (the launch or config file), else the
    analyzer's stated artifact."""
    if loc.path:
        phys: dict[str, Any] = {"artifactLocation": bases.artifact(analyzer, loc.path)}
    elif analyzer not in bases.roots and anchor is not None:
        phys = {"artifactLocation": dict(anchor["artifactLocation"])}
        if "region" in anchor:
            phys["region"] = dict(anchor["region"])
        return phys
    else:
        phys = {"artifactLocation": bases.artifact(analyzer, None)}
    if loc.line is not None and loc.line >= 1:
        region: dict[str, Any] = {"startLine": loc.line}
        if loc.column is not None and loc.column >= 1:
            region["startColumn"] = loc.column
        if loc.end_line is not None and loc.end_line >= loc.line:
            region["endLine"] = loc.end_line
        if loc.end_column is not None and loc.end_column >= 1:
            region["endColumn"] = loc.end_column
        phys["region"] = region
    return phys


def _location(loc: Location, analyzer: str, bases: _Bases, anchor: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"physicalLocation": _physical(loc, analyzer, bases, anchor)}
    if loc.symbol:
        out["logicalLocations"] = [{"fullyQualifiedName": loc.symbol}]
    return out


def _rules(report: Report, known: _KnownRules) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rid in report.rule_ids:
        r = known.get(rid)
        if r is None:
            out.append({"id": rid})
            continue
        out.append(
            {
                "id": r.id,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.what},
                "help": {"text": r.fix, "markdown": r.doc()},
                "defaultConfiguration": {"level": r.severity.sarif_level},
                "properties": {"analyzer": r.analyzer, "basis": r.basis, "tags": ["mtp-audit", r.analyzer]},
            }
        )
    return out


def _fingerprint(f: Finding, location: dict[str, Any], seen: dict[str, int], bases: _Bases) -> dict[str, str]:
    """``{FINGERPRINT_KEY: hash}`` of the rule, the artifact, the logical address and the rank among equal keys. An
    artifact under ``%SRCROOT%`` is named by its path there; one under its own base (an input outside the folder
    mtp-audit ran in, a hub repository) also by that base's identity (:meth:`_Bases.identity`), so two checkpoints
    outside the working folder never share a fingerprint (a baseline written for one never silences the other)."""
    art = location["physicalLocation"]["artifactLocation"]
    base = art.get("uriBaseId", "")
    parts = (f.rule_id, base, art["uri"], f.location.symbol or "", f.location.path or "")
    who = bases.identity(base) if base != SRCROOT else ""
    key = "\0".join((*parts, who) if who else parts)
    rank = seen.get(key, 0)
    seen[key] = rank + 1
    return {FINGERPRINT_KEY: hashlib.sha256(f"{key}\0{rank}".encode("utf-8", "surrogatepass")).hexdigest()[:32]}


def _result(f: Finding, ctx: _Context, suppression: Suppression | None = None) -> dict[str, Any]:
    """One SARIF ``result``; an ignored finding carries ``suppressions`` (SARIF 2.1.0 §3.27.23: kind
    ``external``, the configuration file or ``--ignore``, with its reason as ``justification``), which
    code-scanning UIs show as dismissed instead of open."""
    analyzer = _analyzer_of(f.rule_id, ctx.known, ctx.default)
    loc = _location(f.location, analyzer, ctx.bases, ctx.anchor)
    res: dict[str, Any] = {
        "ruleId": f.rule_id,
        "level": f.severity.sarif_level,
        "message": {"text": f.message},
        "locations": [loc],
        "partialFingerprints": _fingerprint(f, loc, ctx.seen, ctx.bases),
    }
    if f.rule_id in ctx.index:
        res["ruleIndex"] = ctx.index[f.rule_id]
    related = [
        {**_location(e.location, analyzer, ctx.bases, None), "id": i, "message": {"text": f"{e.label} = {e.value}"}}
        for i, e in enumerate(f.evidence) if e.location is not None and e.location.path
    ]
    if related:
        res["relatedLocations"] = related
    props: dict[str, Any] = {"severity": f.severity.label, "analyzer": analyzer}
    if f.evidence:
        props["evidence"] = [e.to_dict() for e in f.evidence]
    if f.remediation:
        props["remediation"] = f.remediation
    if f.detail:
        props["detail"] = f.detail
    res["properties"] = props
    if suppression is not None:
        sup: dict[str, Any] = {"kind": "external", "status": "accepted",
                               "justification": suppression.reason or f"ignored by {suppression.source}",
                               "properties": suppression.to_dict()}
        res["suppressions"] = [sup]
    return res


class _KnownRules:
    """``get(rule_id)``: the registered rule of that id, or None; only the rule modules of the analyzer whose id range
    holds it are imported (:func:`~mtp_audit.report.rules.analyzer_of_id`), once. ``all_rules()`` imported every
    analyzer's, the engines' launch packages among them: ~30 modules and 30 ms of a checkpoint report's SARIF."""

    def __init__(self) -> None:
        self._of: dict[str, dict[str, Rule]] = {}

    def get(self, rule_id: str) -> Rule | None:
        from mtp_audit.report.rules import analyzer_of_id, analyzer_rules

        analyzer = analyzer_of_id(rule_id)
        if analyzer is None:
            return None
        rules = self._of.get(analyzer)
        if rules is None:
            rules = self._of[analyzer] = {r.id: r for r in analyzer_rules(analyzer)}
        return rules.get(rule_id)


class _Context:
    def __init__(self, report: Report, roots: Mapping[str, str | os.PathLike[str]], anchor: str | os.PathLike[str] | None,
                 anchor_line: int | None, cwd: str) -> None:
        self.known = _KnownRules()
        self.default = report.targets[0].analyzer if report.targets else "launch"
        self.bases = _Bases(report, roots, cwd)
        self.anchor: dict[str, Any] | None = None
        if anchor is not None:
            self.bases.roots["anchor"] = os.fspath(anchor)
            self.anchor = {"artifactLocation": self.bases.artifact("anchor", None)}
            del self.bases.roots["anchor"]
            if anchor_line is not None and anchor_line >= 1:
                self.anchor["region"] = {"startLine": anchor_line}
        self.index: dict[str, int] = {}
        self.seen: dict[str, int] = {}


def _notifications(report: Report, ctx: _Context) -> list[dict[str, Any]]:
    out = []
    for g in report.gaps:
        note: dict[str, Any] = {"level": "warning" if g.blocking else "note", "message": {"text": f"[{g.analyzer}] {g.message}"}}
        if g.path:
            note["locations"] = [{"physicalLocation": {"artifactLocation": ctx.bases.artifact(g.analyzer, g.path)}}]
        out.append(note)
    return out


def automation_id(category: str | None, analyzer: str) -> str:
    """``runs[].automationDetails.id``: ``"<category>/"`` (GitHub code scanning keeps the alerts of each category
    apart: everything before the last ``/`` is the category), by default ``"mtp-audit/<analyzer>/"``.

    Raises:
        ValueError: an empty category, or one with a control character.
    """
    if category is None:
        return f"mtp-audit/{analyzer}/"
    text = category.strip()
    if not text.strip("/") or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError(f"not a usable category: {category!r} (expected a non-empty name such as mtp-audit/my-export)")
    return text if text.endswith("/") else text + "/"


def render(report: Report, *, roots: Mapping[str, str | os.PathLike[str]] | None = None,
           anchor: str | os.PathLike[str] | None = None, anchor_line: int | None = None,
           cwd: str | os.PathLike[str] | None = None, shown: Any = None, category: str | None = None) -> str:
    """Render ``report`` as a SARIF 2.1.0 log (one run) that GitHub code scanning accepts.

    Args:
        report: the audit result.
        roots: analyzer name -> the local file or folder it read (a checkpoint folder, an sglang wheel,
            an env dump), as typed; finding paths are relative to these. Defaults to the report's
            targets whose names are existing local paths.
        anchor: a file to point findings without a file at (the launch script, the pyproject.toml
            that configures mtp-audit); ``anchor_line`` its 1-based line.
        cwd: the base of ``%SRCROOT%`` (default: the current directory).
        shown: a display filter (see :func:`mtp_audit.formats.render`): only the findings it lists
            become results (their fingerprints do not change).
        category: the code-scanning category (``--sarif-category``): ``runs[].automationDetails.id`` is
            ``"<category>/"`` instead of ``"mtp-audit/<analyzer>/"`` (:func:`automation_id`), so that several
            audits of one repository keep their alerts apart.

    Gaps become tool execution notifications, and ``executionSuccessful`` is false when the report is
    inconclusive. Ignored findings follow the active ones, each with ``suppressions``.

    Raises:
        ValueError: an unusable ``category``.
    """
    if roots is None:
        roots = {t.analyzer: t.name for t in report.targets if _exists(t.name)}
    ctx = _Context(report, roots, anchor, anchor_line, os.fspath(cwd) if cwd is not None else os.getcwd())
    rules = _rules(report, ctx.known)
    ctx.index = {r["id"]: i for i, r in enumerate(rules)}
    results = [r for f, r in ((f, _result(f, ctx)) for f in report.findings) if shown is None or shown(f)]
    results += [r for f, r in ((i.finding, _result(i.finding, ctx, i.suppression)) for i in report.ignored)
                if shown is None or shown(f)]
    notifications = _notifications(report, ctx)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "mtp-audit", "version": report.tool_version, "rules": rules}},
        "automationDetails": {"id": automation_id(category, ctx.default)},
        "originalUriBaseIds": ctx.bases.declared,
        "invocations": [{"executionSuccessful": not report.inconclusive, "toolExecutionNotifications": notifications}],
        "results": results,
        "properties": {"targets": [t.to_dict() for t in report.targets], "status": report.status.value},
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return dumps(log) + "\n"  # = json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False), faster


def _exists(name: str) -> bool:
    try:
        return os.path.exists(name)
    except (OSError, ValueError):
        return False
