"""``mtp-audit launch --sglang VERSION`` / ``--vllm VERSION`` with the package index unreachable and the release not
cached: the release's questions are a blocking gap, the checkpoint and machine analyzers still run and the report is
written; a definite failure (1) still outranks "could not tell" (3). Before, the whole launch was one stderr line, exit
3, and ``-o u.sarif`` was not written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main
from mtp_audit.launch import audit_launch
from mtp_audit.sources.pypi import IndexUnavailable

REAP = str(FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")  # declares an MTP layer it does not ship
DOWN = ("cannot reach the package index: the connection failed (Connection refused); the release is not cached: run once "
        "online, or give a .whl or a source folder")
SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", REAP, "--speculative-algorithm", "NEXTN"]


@pytest.fixture()
def index_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTP_AUDIT_INDEX_URL", "http://127.0.0.1:9/pypi")  # discard port: nothing listens


def test_sglang_release_unreachable_still_writes_the_failing_report(index_down: None, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "u.sarif"
    rc = main(["launch", "--no-machine", "--sglang", "0.5.12", "-f", "sarif", "-o", str(out), "--", *SGLANG])
    assert rc == 1 and "INCONCLUSIVE" not in capsys.readouterr().err
    run = json.loads(out.read_text())["runs"][0]
    assert sorted({r["ruleId"] for r in run["results"] if r["level"] == "error"}) == ["MTP001", "MTP304"]
    report = audit_launch(SGLANG, sglang="0.5.12", no_machine=True)
    assert [(g.message, g.blocking) for g in report.gaps if g.message.startswith("no SGLang")] == [
        (f"no SGLang to check the command against (--sglang 0.5.12: {DOWN})", True)]


def test_vllm_release_unreachable_is_a_gap_not_the_whole_answer(index_down: None, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["launch", "--no-machine", "--vllm", "0.40.0", "-f", "json", "--", "vllm", "serve", REAP,
               "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and [f["rule_id"] for f in doc["findings"] if f["severity"] == "error"] == ["MTP001"]
    assert [g["message"] for g in doc["gaps"] if g["blocking"]] == [f"no vLLM to check the command against (--vllm 0.40.0: {DOWN})"]


def test_a_correct_launch_with_the_release_unreachable_could_not_tell(index_down: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing definite found: the blocking gap makes it "could not tell" (exit 3), now with the report on stdout."""
    rc = main(["launch", "--no-machine", "--sglang", "0.5.12", "-f", "json", "--", "python", "-m", "sglang.launch_server",
               "--model-path", str(FIXTURES / "checkpoint" / "jj8127--mimo_kor"), "--speculative-algorithm", "NEXTN"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 3 and doc["status"] == "inconclusive" and doc["findings"] and not [
        f for f in doc["findings"] if f["severity"] == "error"]


def test_comparing_needs_both_releases(index_down: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Two releases to compare and one cannot be fetched: nothing to compare, still the one line, exit 3."""
    assert main(["launch", "--no-machine", "--sglang", "0.5.12", "--compare-sglang", "0.5.13", "--", *SGLANG]) == 3
    assert capsys.readouterr().err.startswith("INCONCLUSIVE: could not tell: cannot reach the package index")
    with pytest.raises(IndexUnavailable):
        audit_launch(SGLANG, sglang="0.5.12", compare_sglang="0.5.13", no_machine=True)
