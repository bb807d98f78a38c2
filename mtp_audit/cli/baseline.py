"""``--baseline-findings FILE`` and ``--write-baseline FILE``: adopt the gate on a project that already has findings.

A baseline is the list of the findings known today, by their SARIF fingerprint (``partialFingerprints["mtpAudit/v1"]``
of :mod:`mtp_audit.formats.sarif`: a hash of the rule, the artifact and the logical address, no line and no number, so
it survives an engine upgrade that moves a line). With ``--baseline-findings`` a finding whose fingerprint is listed is
moved to the ignored findings (a suppression whose source names the baseline file): it stays in every report and in
the counts of ignored findings, but no longer fails the gate; a new finding still does. ``--write-baseline`` writes the
fingerprints of every finding of this run (the ones already in a baseline included), as ruff's and semgrep's baselines
do. The file read may also be a SARIF log mtp-audit wrote (its results' fingerprints are the baseline).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError

#: Key of the baseline document's format version.
FORMAT_KEY = "mtp_audit_baseline"
#: The baseline format written.
FORMAT_VERSION = 1
#: Largest baseline read (bytes).
MAX_BASELINE_BYTES = 64 * 1024 * 1024


def fingerprints(report: Any, sarif: Mapping[str, Any]) -> list[str]:
    """The fingerprint of each finding of ``report`` (``report.findings`` then ``report.ignored``, in order), read
    from ``sarif``, the SARIF log rendered from ``report`` with no display filter (one result per finding, in that
    order)."""
    from mtp_audit.formats.sarif import FINGERPRINT_KEY

    results = sarif["runs"][0]["results"]
    if len(results) != len(report.findings) + len(report.ignored):  # pragma: no cover - the renderer's contract
        raise AssertionError("SARIF results do not pair with the report's findings")
    return [str(r["partialFingerprints"][FINGERPRINT_KEY]) for r in results]


def _fingerprint(result: Mapping[str, Any], key: str) -> Any:
    """``result["partialFingerprints"][key]`` of one SARIF result, ``None`` when either is absent (or not an object)."""
    prints = result.get("partialFingerprints")
    return prints.get(key) if isinstance(prints, Mapping) else None


def read_baseline(path: Path) -> frozenset[str]:
    """The fingerprints of a baseline file (:func:`baseline_text`'s format) or of a SARIF log mtp-audit wrote.

    Raises:
        InputError: unreadable, not JSON, or neither a baseline nor a SARIF log of mtp-audit.
    """
    from mtp_audit.formats.sarif import FINGERPRINT_KEY
    from mtp_audit.sources.bounded import read_json_bounded

    doc = read_json_bounded(path, limit=MAX_BASELINE_BYTES, display=str(path))
    if isinstance(doc, dict) and doc.get(FORMAT_KEY) == FORMAT_VERSION and isinstance(doc.get("findings"), list):
        found = [f.get("fingerprint") for f in doc["findings"] if isinstance(f, dict)]
    elif isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        found = [_fingerprint(r, FINGERPRINT_KEY) for run in doc["runs"] if isinstance(run, dict)
                 for r in run.get("results") or [] if isinstance(r, dict)]
    else:
        raise InputError(str(path), f"not a baseline (expected mtp-audit --write-baseline output, with "
                                    f"\"{FORMAT_KEY}\": {FORMAT_VERSION}, or a SARIF log of mtp-audit)")
    fingerprints = [f for f in found if isinstance(f, str) and f]
    if len(fingerprints) != len(found):
        raise InputError(str(path), "a finding of the baseline has no fingerprint")
    return frozenset(fingerprints)


def apply_baseline(report: Any, prints: list[str], known: frozenset[str], source: str) -> Any:
    """``report`` with each active finding whose fingerprint (``prints``, from :func:`fingerprints`) is in ``known``
    moved to the ignored findings, with a suppression naming ``source`` (``--baseline-findings FILE``)."""
    import dataclasses

    from mtp_audit.report import IgnoredFinding, Suppression

    active = report.findings
    moved = [f for f, fp in zip(active, prints) if fp in known]
    if not moved:
        return report
    kept = tuple(f for f, fp in zip(active, prints) if fp not in known)
    why = [IgnoredFinding(f, Suppression(f.rule_id, "a known finding, listed in the baseline", source)) for f in moved]
    return dataclasses.replace(report, findings=kept,
                               ignored=tuple(sorted((*report.ignored, *why), key=lambda i: i.finding.sort_key())))


def baseline_text(report: Any, prints: list[str]) -> str:
    """The baseline of every finding of ``report`` (active and ignored, ``prints`` in that order) as JSON: the
    fingerprint, rule id and message of each, sorted by fingerprint."""
    from mtp_audit.formats.sarif import FINGERPRINT_KEY

    findings = [*report.findings, *(i.finding for i in report.ignored)]
    rows = sorted({fp: {"fingerprint": fp, "rule_id": f.rule_id, "message": f.message} for f, fp in zip(findings, prints)}.values(),
                  key=lambda r: r["fingerprint"])
    doc = {FORMAT_KEY: FORMAT_VERSION, "fingerprint_key": FINGERPRINT_KEY, "findings": rows}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
