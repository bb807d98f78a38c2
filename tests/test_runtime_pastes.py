"""``mtp-audit log`` on pastes as a fresh user made them from the real SGLang and vLLM excerpts in fixtures/logs/:
folded or terminal-cut statistics lines, a later run without speculation, figures no engine prints. Each expected
value was checked by hand against the excerpt (SGLang ``metrics_reporter.py:963-1043`` @ 0.5.23 writes
``accept len: {:.2f}, accept rate: {:.2f}, `` whenever a speculative algorithm is set, line 967)."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.runtime.analyze import analyze_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
SGLANG = LOGS / "sglang_pr608_decode_batch_tp_ep.log"
#: Two Decode batch lines of the same format without the accept fields, ten minutes after the excerpt's.
NO_SPEC = ("[2026-07-21 15:10:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, npu graph: "
           "True, gen throughput (token/s): 239.06, #queue-req: 2\n"
           "[2026-07-21 15:10:17 TP0 EP0] Decode batch, #running-req: 23, #token: 227968, token usage: 0.64, npu graph: "
           "True, gen throughput (token/s): 631.96, #queue-req: 3\n")


def _log(tmp_path: Path, text: str, name: str = "x.log") -> tuple[dict, list[str], list[str]]:
    p = tmp_path / name
    p.write_text(text)
    report = analyze_log([p])
    return (report.facts["log"], [f.rule_id for f in report.findings], [g.message for g in report.gaps])


def test_a_later_run_without_speculation_is_a_new_run(tmp_path: Path) -> None:
    """Decode batch lines without 'accept len' after lines with it come from a process started without speculation:
    a second run, reported (it was ran-and-helped over the three speculative lines, the two others ignored)."""
    log, rules, _ = _log(tmp_path, SGLANG.read_text() + NO_SPEC)
    f = log["files"][0]
    assert log["verdict"] == "never-ran"
    assert rules == ["MTP501", "MTP509"]
    assert f["decode_without_speculation"] == {"lines": 2, "first_line": 8}
    assert [(r["start"], r["end"], r["intervals"], round(r["mean_len"], 2)) for r in f["runs"]["earlier"]] == [(1, 7, 3, 2.84)]
    assert f["runs"]["starts"] == [8]
