"""SARIF 2.1.0 output for code-scanning UIs (GitHub, GitLab, VS Code SARIF viewer).

Shape follows the OASIS SARIF 2.1.0 spec (https://docs.oasis-open.org/sarif/sarif/v2.1.0/) and ruff's
driver.rules layout (``../shared/research/aesthetics.md`` §6). Validated in tests against the
official schema (``tests/data/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from mtp_audit.report import Finding, Location, Report, Suppression

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    """Percent-encoded relative URI of ``path``. A name that is not UTF-8 on disk reaches us with
    ``surrogateescape`` code points (``\\udcff``); it is encoded back to its original bytes, which
    ``quote`` percent-encodes (``%FF``), so the URI names the real file and never raises."""
    try:
        raw = path.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no file name decodes to
        raw = path.encode("utf-8", errors="surrogatepass")
    return quote(raw)


def _physical(loc: Location) -> dict[str, Any] | None:
    if not loc.path:
        return None
    phys: dict[str, Any] = {"artifactLocation": {"uri": _uri(loc.path), "uriBaseId": "%SRCROOT%"}}
    if loc.line is not None:
        region: dict[str, Any] = {"startLine": loc.line}
        if loc.column is not None:
            region["startColumn"] = loc.column
        if loc.end_line is not None:
            region["endLine"] = loc.end_line
        if loc.end_column is not None:
            region["endColumn"] = loc.end_column
        phys["region"] = region
    return phys


def _location(loc: Location) -> dict[str, Any]:
    out: dict[str, Any] = {}
    phys = _physical(loc)
    if phys:
        out["physicalLocation"] = phys
    if loc.symbol:
        out["logicalLocations"] = [{"fullyQualifiedName": loc.symbol}]
    return out


def _rules(report: Report) -> list[dict[str, Any]]:
    from mtp_audit.report.rules import all_rules

    known = {r.id: r for r in all_rules()}
    out = []
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
                "properties": {"analyzer": r.analyzer, "basis": r.basis},
            }
        )
    return out


def _result(f: Finding, index: dict[str, int], suppression: Suppression | None = None) -> dict[str, Any]:
    """One SARIF ``result``; an ignored finding carries ``suppressions`` (SARIF 2.1.0 §3.27.23: kind
    ``external``, the configuration file or ``--ignore``, with its reason as ``justification``), which
    code-scanning UIs show as dismissed instead of open."""
    res: dict[str, Any] = {
        "ruleId": f.rule_id,
        "level": f.severity.sarif_level,
        "message": {"text": f.message},
    }
    if f.rule_id in index:
        res["ruleIndex"] = index[f.rule_id]
    loc = _location(f.location)
    if loc:
        res["locations"] = [loc]
    related = []
    for i, e in enumerate(f.evidence):
        if e.location is not None:
            rl = _location(e.location)
            if rl:
                rl["id"] = i
                rl["message"] = {"text": f"{e.label} = {e.value}"}
                related.append(rl)
    if related:
        res["relatedLocations"] = related
    props: dict[str, Any] = {"severity": f.severity.label}
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


def render(report: Report) -> str:
    """Render ``report`` as a SARIF 2.1.0 log (one run). Gaps become tool execution notifications,
    and ``executionSuccessful`` is false when the report is inconclusive. Ignored findings follow the
    active ones, each with ``suppressions``."""
    rules = _rules(report)
    index = {r["id"]: i for i, r in enumerate(rules)}
    notifications = [
        {
            "level": "warning" if g.blocking else "note",
            "message": {"text": f"[{g.analyzer}] {g.message}"},
            **({"locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(g.path)}}}]} if g.path else {}),
        }
        for g in report.gaps
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mtp-audit",
                        "version": report.tool_version,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not report.inconclusive,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_result(f, index) for f in report.findings]
                + [_result(i.finding, index, i.suppression) for i in report.ignored],
                "properties": {
                    "targets": [t.to_dict() for t in report.targets],
                    "status": report.status.value,
                },
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

