"""The text report on real fixtures: answer first, one line per finding, what was not examined, the counts; the
rest with -v; colour and symbols only on a terminal (NO_COLOR off, FORCE_COLOR on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
REAP = ROOT / "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
H200 = ROOT / "fixtures/preflight/h200-live-facts.json"


def run(capsys, args: list[str]) -> tuple[int, list[str]]:
    rc = main(args)
    return rc, capsys.readouterr().out.splitlines()


def test_checkpoint_answer_first_then_findings_gaps_counts(capsys) -> None:
    rc, lines = run(capsys, ["checkpoint", str(REAP)])
    assert rc == 1 and len(lines) == 8
    assert lines[0] == ("FAIL: config.json declares 1 MTP layer but the checkpoint ships none; --speculative-algorithm NEXTN "
                        "will not get working MTP heads (MTP001) (exit 1)")
    assert lines[2] == ("config.json [/mtp_num_hidden_layers]: MTP001 error: config.json declares 1 MTP layer(s) "
                        "(mtp_num_hidden_layers), but none of the 22,213 tensors matches mtp.*")
    assert lines[4:6] == ["not examined:", lines[5]] and lines[5].startswith("  [checkpoint, note] model.safetensors.index.json names 10 shard")
    assert not any(ln.lstrip().startswith(("evidence:", "fix:", "facts (")) for ln in lines)


def test_verbose_adds_evidence_fix_closing_and_facts(capsys) -> None:
    rc, lines = run(capsys, ["checkpoint", str(REAP), "-v"])
    assert rc == 1 and lines[0].startswith("FAIL: config.json declares 1 MTP layer")
    assert "    evidence: config.mtp_num_hidden_layers = 1 (config.json [/mtp_num_hidden_layers])" in lines
    assert any(ln.startswith("    fix: Use a release that ships the MTP weights") for ln in lines)
    assert "  tensors: 22213" in lines and "Will SGLang use the MTP heads?:" in lines
    assert lines[-1] == "1 finding (1 error, 0 warning, 0 info); 1 not examined (0 blocking); status: findings"


def test_preflight_message_is_one_line_and_detail_is_verbose(capsys) -> None:
    rc, lines = run(capsys, ["preflight", "--facts", str(H200)])
    # the SGLang version is unknown (assumed engine): MTP200 is a warning naming both releases' behaviour
    assert rc == 0 and len(lines) == 6
    assert lines[0] == ("WARN: GPU 0 (NVIDIA H200, compute capability 9.0) cannot run native FP4: SM90 has no FP4 tensor-core "
                        "instructions (FP8 is the narrowest) (exit 0)")
    m200 = next(ln for ln in lines if " MTP200 " in ln)
    assert len(m200) == 197 and m200.endswith("only); it needs SGLang >= 0.5.13's Marlin W4A16 fallback (version unknown)")
    # MTP228 names the verdict, it does not repeat MTP200's message
    assert lines[3] == ("cuda:0: MTP228 info: GPU 0 (NVIDIA H200, compute capability 9.0): native FP4 not capable on SGLang (version "
                        "unknown) (assumed) — SM90 has no FP4 tensor-core instructions (FP8 is the narrowest)")
    rc, lines = run(capsys, ["preflight", "--facts", str(H200), "-v"])
    detail = next(ln for ln in lines if ln.startswith("    detail: "))
    assert "Marlin W4A16 (--fp4-gemm-backend marlin --moe-runner-backend marlin" in detail and "Cost: no FP4 tensor-core math" in detail


def test_json_keeps_the_detail(capsys) -> None:
    import json

    main(["preflight", "--facts", str(H200), "-f", "json"])
    doc = json.loads(capsys.readouterr().out)
    [m200] = [f for f in doc["findings"] if f["rule_id"] == "MTP200"]
    assert m200["detail"].startswith("On SGLang >= 0.5.13 the fallback is Marlin W4A16") and "Cost:" in m200["detail"]


def test_long_messages_are_never_cut_and_wrap_to_a_terminal() -> None:
    """The end of a message (often why a finding is only a warning) is never cut: one line for a file or a pipe,
    wrapped to the terminal's width with indented continuation lines on a terminal."""
    from mtp_audit.formats import render
    from mtp_audit.report import Finding, Location, Report, Severity

    msg = "word " * 60 + "END"
    r = Report.build("checkpoint", "x", findings=[Finding("MTP001", Severity.ERROR, msg.strip(), Location(path="config.json"))])
    line = render(r, "text").splitlines()[2]
    assert line == "config.json: MTP001 error: " + msg.strip()
    wrapped = render(r, "text", width=80).split("\n\n")[1].splitlines()
    assert len(wrapped) == 5 and all(len(x) <= 80 for x in wrapped) and all(x.startswith("    word") for x in wrapped[1:])
    assert wrapped[0].startswith("config.json: MTP001 error: word") and wrapped[-1].endswith("END")
    assert " ".join(x.strip() for x in wrapped) == line


@pytest.mark.parametrize("env, coloured", [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)])
def test_colour_only_when_asked_or_on_a_terminal(capsys, monkeypatch, env, coloured) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    rc, lines = run(capsys, ["checkpoint", str(REAP)])  # capsys's stdout is no terminal
    text = "\n".join(lines)
    assert rc == 1 and ("\x1b[" in text) is coloured
    assert lines[0].startswith("\x1b[31m\x1b[1m✗ FAIL\x1b[0m: config.json" if coloured else "FAIL: config.json")


def test_files_are_never_coloured(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = tmp_path / "r.txt"
    assert main(["checkpoint", str(REAP), "-o", str(out)]) == 1
    assert "\x1b[" not in out.read_text() and out.read_text().startswith("FAIL: ")
    # the first line of the report and the counts go to stderr, so a CI log shows the answer
    err = capsys.readouterr().err.splitlines()
    assert err == [out.read_text().splitlines()[0],
                   f"1 finding (1 error, 0 warning, 0 info); 1 not examined (0 blocking); status: findings (report written to {out})"]
