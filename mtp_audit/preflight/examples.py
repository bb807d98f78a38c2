"""Runs the examples of :mod:`mtp_audit.preflight.rules` through the preflight analyzer (``mtp_audit.report.rules.run_rule_example``
and ``mtp-audit explain`` call :func:`run_example`). Kept apart from the rule declarations, so the rules
module imports no analyzer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mtp_audit.report import Report
from mtp_audit.report.rules import Example


def run_example(root: Path, example: Example) -> Report:
    """Run the preflight on an example folder: ``env.txt`` (a dump) or ``facts.json`` (stored facts),
    optional ``<engine id>_facts.json`` files (what that engine's analyzer says, e.g. ``sglang_facts.json``), an optional ``probe.json`` (a recorded probe result), and ``example.args`` as the launch command."""
    from mtp_audit.preflight import preflight

    kwargs: dict[str, Any] = {"cwd": root, "use_engine_analyzer": False}
    if (root / "facts.json").is_file():
        kwargs["facts_file"] = root / "facts.json"
    else:
        kwargs["env_dumps"] = [root / "env.txt"]
    engine_facts = {p.name.removesuffix("_facts.json"): json.loads(p.read_text()) for p in sorted(root.glob("*_facts.json"))}
    if engine_facts:
        kwargs["engine_facts"] = engine_facts
    if (root / "probe.json").is_file():
        from mtp_audit.preflight.probe import ProbeResult

        d = json.loads((root / "probe.json").read_text())
        kwargs["probe_result"] = ProbeResult(ran=tuple(d["ran"]), gpu=d["gpu"], cc=tuple(d["cc"]), results=tuple(d["results"]))
    return preflight(launch=list(example.args) if example.args else None, **kwargs)
