"""The SARIF renderer looks each rule up among its own analyzer's rules only (``mtp_audit.report.rules.analyzer_of_id``),
not among every analyzer's: the same rules as ``all_rules()`` gives, without importing the engines' launch packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mtp_audit.formats.sarif import _KnownRules
from mtp_audit.report.rules import ANALYZER_RULE_MODULES, ID_RANGES, all_rules, analyzer_of_id, analyzer_rules

ROOT = Path(__file__).resolve().parents[1]


def test_each_analyzer_declares_only_its_own_rules_in_its_own_range():
    for analyzer in ANALYZER_RULE_MODULES:
        rules = analyzer_rules(analyzer)
        assert rules, analyzer
        assert {r.analyzer for r in rules} == {analyzer}
        assert {analyzer_of_id(r.id) for r in rules} == {analyzer}


def test_the_lookup_gives_what_all_rules_gives():
    every = {r.id: r for r in all_rules()}
    known = _KnownRules()
    assert {rid: known.get(rid) for rid in every} == every
    assert [known.get(x) for x in ("MTP999", "MTP050x", "mtp006", "", "MTP5000", "XYZ006")] == [None] * 6
    assert analyzer_of_id("MTP006") == "checkpoint" and analyzer_of_id("MTP650") is None  # between llamacpp and trtllm
    assert len({a for rng in ID_RANGES.values() for a in rng}) == sum(len(r) for r in ID_RANGES.values())  # disjoint


def test_a_checkpoint_sarif_report_imports_no_engine_launch_package(tmp_path: Path):
    """Rendering a checkpoint report as SARIF imports the checkpoint rules only (before: every analyzer's, with the
    SGLang and vLLM launch packages, the preflight and the log rules); the rule a finding names is still described."""
    fix = ROOT / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3"
    code = ("import sys, json\nfrom mtp_audit import audit_checkpoint, render\n"
            f"doc = json.loads(render(audit_checkpoint({str(fix)!r}), 'sarif'))\n"
            "print(json.dumps([sorted(m for m in sys.modules if m.startswith('mtp_audit.engines') and 'launch' in m),"
            " [r['id'] for r in doc['runs'][0]['tool']['driver']['rules']],"
            " [r.get('shortDescription', {}).get('text', '') != '' for r in doc['runs'][0]['tool']['driver']['rules']]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MTP_AUDIT_CACHE_DIR": ""})
    launch, ids, described = json.loads(out.stdout)
    assert launch == []
    assert ids and all(i.startswith("MTP0") for i in ids) and all(described)
