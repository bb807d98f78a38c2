"""``--write-baseline FILE`` / ``--baseline-findings FILE``: known findings, by their SARIF fingerprint, stop failing the
gate (they stay listed as ignored); a new finding still fails it; the baseline may also be an earlier SARIF log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main

REAP = str(FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
WIZARD = str(FIXTURES / "checkpoint" / "tbressers--WizardLM-2-8x22B")


def test_write_then_gate_on_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "baseline.json"
    assert main(["checkpoint", REAP, "--write-baseline", str(base), "-o", str(tmp_path / "r.sarif")]) == 1
    doc = json.loads(base.read_text())
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    fp = sarif["runs"][0]["results"][0]["partialFingerprints"]["mtpAudit/v1"]
    assert doc["mtp_audit_baseline"] == 1 and [(f["fingerprint"], f["rule_id"]) for f in doc["findings"]] == [(fp, "MTP001")]
    capsys.readouterr()
    assert main(["checkpoint", REAP, "--baseline-findings", str(base), "-f", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["findings"] == [] and [i["rule_id"] for i in out["ignored"]] == ["MTP001"]
    assert out["ignored"][0]["suppression"]["source"] == f"--baseline-findings {base}"
    # an earlier SARIF log is a baseline too
    assert main(["checkpoint", REAP, "--baseline-findings", str(tmp_path / "r.sarif"), "-q"]) == 0
    assert "[MTP001 ignored by the baseline]" in capsys.readouterr().out


def test_a_new_finding_still_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline written when a checkpoint had no finding (WizardLM: none) does not cover the REAP checkpoint's
    MTP001: the gate still fails on it, listed as before."""
    base = tmp_path / "baseline.json"
    assert main(["checkpoint", WIZARD, "--write-baseline", str(base), "-q"]) == 0
    assert json.loads(base.read_text())["findings"] == []
    capsys.readouterr()
    assert main(["checkpoint", REAP, "-f", "json"]) == 1
    before = json.loads(capsys.readouterr().out)
    assert main(["checkpoint", REAP, "--baseline-findings", str(base), "-f", "json"]) == 1
    after = json.loads(capsys.readouterr().out)
    assert [f["rule_id"] for f in after["findings"]] == ["MTP001"] and after["findings"] == before["findings"]


@pytest.mark.parametrize("text, problem", [("{}", "not a baseline"), ("[1]", "not a baseline"),
                                           ('{"mtp_audit_baseline": 1, "findings": [{"rule_id": "MTP001"}]}', "has no fingerprint")])
def test_a_bad_baseline_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str) -> None:
    base = tmp_path / "b.json"
    base.write_text(text)
    out = tmp_path / "out.json"
    assert main(["checkpoint", REAP, "--baseline-findings", str(base), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mtp-audit: error: {base}: ") and problem in err and err.count("\n") == 1
    assert not out.exists()


def test_the_baseline_file_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "b.json"
    assert main(["checkpoint", REAP, "--write-baseline", str(base), "-q"]) == 1
    before = base.read_bytes()
    assert main(["checkpoint", REAP, "--baseline-findings", str(base), "--write-baseline", str(base)]) == 2
    assert base.read_bytes() == before
