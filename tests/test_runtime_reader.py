"""The one-pass reader and the extractor on pastes as people make them: colour codes in three spellings,
CRLF, lines cut at chunk boundaries or longer than the line cap, two runs in one paste, a benchmark
client's summary beside the engine's lines, garbage. Inputs are the real excerpts of fixtures/logs/."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mtp_audit.errors import InputError
from mtp_audit.runtime import reader
from mtp_audit.runtime.analyze import analyze_log, read_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _facts(data: bytes):  # type: ignore[no-untyped-def]
    facts, stats = read_log(io.BytesIO(data), "t")
    return facts, stats


def _write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "paste.log"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("esc", [b"\x1b[", b"^[[", "\ufffd[".encode()])
def test_colour_codes_in_three_spellings(esc: bytes) -> None:
    raw = (LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes()
    coloured = raw.replace(b"Decode batch", esc + b"32mDecode batch" + esc + b"0m").replace(b"accept len", esc + b"1maccept len")
    facts, _ = _facts(coloured)
    assert facts.series.intervals == 3 and round(facts.series.mean_len, 2) == 2.84
    assert facts.engine == "sglang"


def test_crlf_and_no_final_newline() -> None:
    whole = (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes().replace(b"\n", b"\r\n")
    facts, stats = _facts(whole)
    assert (facts.series.accepted, facts.series.drafted, stats.lines, stats.open_end_line) == (892, 1185, 4, None)
    assert facts.series.last.line == 4
    # without its final line end the last line may be a cut paste: it is counted, its figures are not read
    facts, stats = _facts(whole.rstrip(b"\r\n"))
    assert (facts.series.accepted, facts.series.drafted, stats.lines, stats.open_end_line) == (474, 624, 4, 4)
    assert facts.series.last.line == 2


def test_tiny_chunks_give_the_same_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b"".join(p.read_bytes() for p in sorted(LOGS.glob("*.log")))
    want, _ = _facts(raw)
    monkeypatch.setattr(reader, "CHUNK_BYTES", 37)
    got, _ = _facts(raw)
    assert (got.series.intervals, got.series.accepted, got.series.drafted) == (want.series.intervals, want.series.accepted, want.series.drafted)
    assert got.series.last.line == want.series.last.line
    assert [c.line for c in got.crashes] == [c.line for c in want.crashes]


def test_overlong_line_is_cut_and_numbers_continue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 600)
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64)
    stats_line = (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes().splitlines(keepends=True)[1]
    raw = b"x" * 1000 + b" SpecDecoding metrics tail\n" + stats_line
    facts, stats = _facts(raw)
    assert stats.cut_lines == 1
    assert facts.series.intervals == 1 and facts.series.first.line == 2 and facts.series.accepted == 474


def test_two_runs_in_one_paste() -> None:
    start = (LOGS / "vllm_intel386_config_engine_core_prefix.log").read_bytes()
    bad = (LOGS / "speculators_613_dflash_near_zero.log").read_bytes()
    good = (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes()
    # the excerpts' own dates made forward in time: start 04-27 04:07, bad 04-27 05:16, start again 04-28, good 05-30
    bad = bad.replace(b"INFO 06-30 18:", b"INFO 04-27 05:")
    # the second start configures the 3 draft tokens the good run's per-position list shows (a run configured with 2
    # cannot print a mean acceptance length of 3.28: a damaged paste)
    again = start.replace(b"INFO 04-27", b"INFO 04-28").replace(b"num_spec_tokens=2", b"num_spec_tokens=3")
    report = analyze_log([_write_tmp(start + bad + again + good)])
    log = report.facts["log"]
    assert log["verdict"] == "ran-and-helped"
    f = log["files"][0]
    assert f["runs"]["starts"] == [1, 6] and f["runs"]["earlier"][0]["intervals"] == 3
    assert f["statistics"]["accepted_tokens"] == 892
    assert "MTP509" in {x.rule_id for x in report.findings}


def _write_tmp(data: bytes) -> Path:
    import tempfile

    fd, name = tempfile.mkstemp(suffix=".log")
    with open(fd, "wb") as fh:
        fh.write(data)
    return Path(name)


def test_client_summary_beside_engine_lines_is_left_out() -> None:
    raw = (LOGS / "llama_23269_bench_client_and_preset.log").read_bytes() + (LOGS / "llama_27151_mtp_1_of_633.log").read_bytes()
    report = analyze_log([_write_tmp(raw)])
    f = report.facts["log"]["files"][0]
    assert report.facts["log"]["verdict"] == "ran-but-accepted-nothing"
    assert f["benchmark_client_lines"] == {"lines": 7, "first_line": 9}
    assert (f["statistics"]["accepted_tokens"], f["statistics"]["drafted_tokens"]) == (1, 633)


def test_an_error_line_alone_is_not_a_crash() -> None:
    raw = b"[2026-05-28 02:59:59] ERROR: request aborted by client\n" + (LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes()
    facts, _ = _facts(raw)
    assert facts.crashes == []


def test_interleaved_engines_follow_the_majority() -> None:
    raw = (LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes() + (LOGS / "vllm_ascend_12521_multi_engine.log").read_bytes()
    facts, _ = _facts(raw)
    assert dict(facts.votes) == {"sglang": 4, "vllm": 2}  # lines carrying a marker: 1 Prefill + 3 Decode; 2 SpecDecoding
    assert facts.engine == "sglang"


@example(b"\xfd7zXZ\x00")
@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4000))
def test_garbage_is_input_error_or_a_verdict(data: bytes) -> None:
    try:
        facts, _ = _facts(data)
    except InputError as exc:  # bytes that start like gzip/xz/zstd/bzip2 are named (found: b"\xfd7zXZ\x00")
        assert "binary data, not a text log" in str(exc) or "-compressed data, not a text log" in str(exc)
        return
    assert facts.series.intervals >= 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(sorted(p.name for p in LOGS.glob("*.log"))), min_size=1, max_size=4), st.integers(0, 400))
def test_cut_pastes_never_crash(names: list[str], cut: int) -> None:
    raw = b"".join((LOGS / n).read_bytes() for n in names)
    data = raw[: len(raw) - cut] if cut < len(raw) else raw[:1]
    facts, _ = _facts(data)
    facts_dict = __import__("mtp_audit.runtime.verdict", fromlist=["facts_dict"]).facts_dict(facts)
    assert facts_dict["engine"] in (None, "sglang", "vllm", "llamacpp", "trtllm")


def test_compressed_log_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    from mtp_audit.cli.main import main

    p = tmp_path / "server.log.gz"
    p.write_bytes(gzip.compress((LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes()))
    assert main(["log", str(p)]) == 2
    err = capsys.readouterr().err
    assert err == f"mtp-audit: error: {p}: gzip-compressed data, not a text log (decompress it first, e.g. zcat FILE | mtp-audit log -)\n"


def test_no_final_line_end_keeps_the_verdict_of_the_complete_lines(tmp_path: Path) -> None:
    # a capture without its last line end (``$(...)``, a clipboard paste): the README's SGLang log, 7 lines, the last an
    # HTTP access line; its three complete 'Decode batch' lines (2-6) decide, the open last line is a note
    log = tmp_path / "nonl.log"
    log.write_bytes((LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes()[:-1])
    r = analyze_log([log])
    assert (r.status, r.facts["log"]["verdict"]) == ("pass", "ran-and-helped")
    assert [(g.blocking, "ends inside line 7" in g.message) for g in r.gaps] == [(False, True)]
    # the same log cut to its one statistics line, without a line end: nothing complete to read, could not tell
    one = tmp_path / "one.log"
    one.write_bytes((LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes().splitlines()[1])
    r = analyze_log([one])
    assert (r.status, r.facts["log"]["verdict"]) == ("inconclusive", "could-not-tell")
    assert sum(g.blocking and "ends inside line 1" in g.message for g in r.gaps) == 1
