"""``mtp-audit hook --sarif FILE``: the audits of one hook run as one SARIF run.

Each audit runs as the command line runs it (:func:`mtp_audit.cli.main.main`, text to stdout and SARIF to a private
temporary file); :class:`SarifRuns` then merges their runs into one (GitHub code scanning takes one run per tool and
category in an upload): rules by id, ``originalUriBaseIds`` (a base of the same name and another value is renamed),
results (a launch's result is tied to its script: ``properties.launch`` is ``FILE:LINE``, its fingerprint folds in
the script's path, and a finding with no file of its own points at the script's line), and the tool notifications.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import click

from mtp_audit.formats.sarif import FINGERPRINT_KEY, SARIF_SCHEMA, SRCROOT, STATED_ARTIFACT, automation_id

#: ``properties.status`` of a run, from best to worst.
_STATUS_RANK = {"pass": 0, "findings": 1, "inconclusive": 2}


class SarifRuns:
    """The audits of one hook run and, when ``path`` is given, their SARIF runs to merge into ``path``."""

    def __init__(self, path: Path | None, category: str) -> None:
        from mtp_audit.cli.options import checked_category

        self.path = path
        self.category = checked_category(category)
        self.runs: list[tuple[str | None, dict[str, Any]]] = []

    def run(self, argv: list[str], tmp: str, header: str, *, where: str | None = None) -> int:
        """Print ``header``, run ``mtp-audit ARGV`` (its SARIF into ``tmp`` when merging) and return its exit code."""
        from mtp_audit.cli.main import main

        click.echo(header)
        if self.path is None:
            return main(argv)
        out = os.path.join(tmp, f"{len(self.runs)}.sarif")
        code = main([argv[0], "-f", "sarif", "-o", out, "-f", "text", "-o", "-", *argv[1:]])
        if os.path.exists(out):
            with open(out, encoding="utf-8") as fh:
                self.runs.append((where, json.load(fh)["runs"][0]))
        return code

    def write(self) -> None:
        """Write the merged run to ``path`` (atomically); nothing without ``path``."""
        if self.path is None:
            return
        from mtp_audit.cli.outputs import write_atomic

        write_atomic(self.path, json.dumps(merge(self.runs, self.category), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def merge(runs: list[tuple[str | None, dict[str, Any]]], category: str | None) -> dict[str, Any]:
    """One SARIF log with one run holding every run of ``runs`` (``(FILE:LINE of the launch or None, run)``)."""
    from mtp_audit import __version__

    rules: dict[str, Any] = {}
    bases: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    targets: list[Any] = []
    ok, status = True, "pass"
    for where, run in runs:
        run = _rebased(run, bases)
        for rule in run["tool"]["driver"].get("rules", []):
            rules.setdefault(rule["id"], rule)
        for res in run.get("results", []):
            res = _tied(res, where) if where else res
            key = (res["ruleId"], res["partialFingerprints"][FINGERPRINT_KEY])
            if key not in seen:
                seen.add(key)
                results.append(res)
        inv = (run.get("invocations") or [{}])[0]
        ok = ok and bool(inv.get("executionSuccessful", True))
        for note in inv.get("toolExecutionNotifications", []):
            if where:
                note = {**note, "message": {"text": f"{where}: {note['message']['text']}"}}
            notes.append(note)
        props = run.get("properties") or {}
        targets.extend(props.get("targets", []))
        status = max(status, props.get("status", "pass"), key=lambda s: _STATUS_RANK.get(s, 2))
    ordered = [rules[k] for k in sorted(rules)]
    index = {r["id"]: i for i, r in enumerate(ordered)}
    for res in results:
        res["ruleIndex"] = index[res["ruleId"]]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "mtp-audit", "version": __version__, "rules": ordered}},
        "automationDetails": {"id": automation_id(category, "hook")},
        "originalUriBaseIds": bases,
        "invocations": [{"executionSuccessful": ok, "toolExecutionNotifications": notes}],
        "results": results,
        "properties": {"targets": targets, "status": status},
    }]}


def _rebased(run: dict[str, Any], bases: dict[str, Any]) -> dict[str, Any]:
    """``run`` with each of its ``originalUriBaseIds`` added to ``bases``; one whose name is taken by another value
    is renamed (``NAME_2`` ...) there and in every ``uriBaseId`` of the run."""
    rename: dict[str, str] = {}
    for key, value in (run.get("originalUriBaseIds") or {}).items():
        new, n = key, 2
        while new in bases and bases[new] != value:
            new, n = f"{key}_{n}", n + 1
        bases[new] = value
        if new != key:
            rename[key] = new
    if not rename:
        return run
    text = json.dumps(run)
    for old, new in rename.items():
        text = text.replace(json.dumps({"uriBaseId": old})[1:-1], json.dumps({"uriBaseId": new})[1:-1])
    return dict(json.loads(text))


def _tied(res: dict[str, Any], where: str) -> dict[str, Any]:
    """A launch's result tied to its script ``FILE:LINE``: named in ``properties.launch``, its fingerprint folding in
    the script's path (not the line: an alert survives an edit above it), and, when it points at a stated artifact
    (the machine, the launch command), pointing at the script's line instead."""
    script, _, line = where.rpartition(":")
    out = {**res, "properties": {**res.get("properties", {}), "launch": where}}
    fp = res["partialFingerprints"][FINGERPRINT_KEY]
    out["partialFingerprints"] = {FINGERPRINT_KEY: hashlib.sha256(f"{fp}\0{script}".encode()).hexdigest()[:32]}
    loc = res["locations"][0]["physicalLocation"]
    art = loc["artifactLocation"]
    if art.get("uriBaseId") != SRCROOT and art.get("uri") in set(STATED_ARTIFACT.values()) and not os.path.isabs(script):
        physical: dict[str, Any] = {"artifactLocation": {"uri": Path(script).as_posix(), "uriBaseId": SRCROOT}}
        if line.isdigit():
            physical["region"] = {"startLine": int(line)}
        out["locations"] = [{**res["locations"][0], "physicalLocation": physical}]
    return out
