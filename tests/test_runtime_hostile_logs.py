"""Hostile logs: lines built to make regular expressions backtrack, a wrapped configuration of megabytes, a
read budget smaller than the log, a sparse 1 TiB file, rotated logs concatenated out of order, restarts
inside one file, standard input closed. Every run is bounded by an alarm (a hang guard, not a timing: a
linear reader takes milliseconds per input, the superlinear one took minutes or never finished)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mtp_audit.runtime import reader
from mtp_audit.runtime.analyze import analyze_log, read_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
REPO = Path(__file__).resolve().parents[1]

#: Seconds one hostile input may take before the guard calls it a hang.
GUARD = 20


@contextmanager
def guard(seconds: int = GUARD) -> Iterator[None]:
    def fire(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


#: Line starts that route a line into each parser (engine prefixes and statistics, configuration, crash lines).
HEADS = ("", "(EngineCore_DP0 pid=1) INFO 04-27 04:07:34 [core.py:97] ", "[2026-07-21 15:00:13 TP0 EP0] ",
         "SpecDecoding metrics: ", "server_args=ServerArgs(", "Initializing a V1 LLM engine (v1) with config: speculative_config=SpeculativeConfig(",
         "Decode batch, #running-req: 1, accept len: 1, ", "slot print_timing: id  0 | task 0 | draft acceptance = ",
         "[TRT-LLM] MTPDecodingConfig(", "Traceback (most recent call last):\n  ", "terminate called after throwing an instance of '",
         "python -m sglang.launch_server --speculative-algorithm EAGLE ")
#: Pieces repeated to fill a line: each one the start or the middle of a field some parser reads.
PIECES = ("(a_", "a_", "Aa", "a.", "A.", "1", "1.", " ", "'", "\\'", "=", "x=", "'k': '", "(", "{", "Load weight end.",
          "disabl speculat", "acceptance_rate_threshold ", 'File "', "build: 1 (", "common_speculative", "Error",
          "model has unused tensor blk.1.", "draft acceptance = 1 (", "sglang ", "version: ", "slot a: id 1 | ",
          "speculative_config=SpeculativeConfig(", "--speculative-", "-- ", "\\\n")


def _corpus(size: int) -> Iterator[bytes]:
    yield b"(" + b"a_" * 73 + b"a! Error\n"  # 156 bytes: nested \w+ in (?:_\w+)* backtracked exponentially
    for head in HEADS:
        for piece in PIECES:
            yield (head + piece * (size // len(piece)) + "!\n").encode()


def test_redos_corpus_finishes() -> None:
    lines = list(_corpus(32 * 1024))
    assert len(lines) == 1 + len(HEADS) * len(PIECES) and len(lines[0]) == 156
    with guard():
        for line in lines:
            read_log(io.BytesIO(line), "t")


@pytest.mark.parametrize("piece", ["a_", "Aa", "x=", "'", "speculative_config=SpeculativeConfig("])
def test_single_60k_lines_finish(piece: str) -> None:
    for head in ("server_args=ServerArgs(", "Initializing a V1 LLM engine (v1) with config: "):
        with guard():
            read_log(io.BytesIO((head + piece * (60_000 // len(piece)) + "\n").encode()), "t")


def test_wrapped_config_of_megabytes_finishes() -> None:
    """A ServerArgs line hard-wrapped over 40 lines of 64 KiB (2.6 MB joined) with no closing parenthesis (then a Decode
    batch line as SGLang prints it: its accept rate is followed by ", ", metrics_reporter.py:1005 @ 0.5.23)."""
    body = b"".join(b"a" * 65_000 + b"\n" for _ in range(40))
    for head in (b"server_args=ServerArgs(model_path=", b"Initializing a V1 LLM engine (v1) with config: speculative_config=SpeculativeConfig("):
        with guard():
            facts, stats = read_log(io.BytesIO(head + body + b"[2026-07-21 15:00:13 TP0] Decode batch, accept len: 2.00, accept rate: 0.50, "
                                             b"gen throughput (token/s): 1.00, #queue-req: 0\n"), "t")
        assert stats.lines == 41 and facts.series.intervals == 1


def test_one_search_set_whatever_the_offset() -> None:
    """llama-server's older ``draft acceptance rate = ...`` line pasted alone (its message without the slot prefix),
    at the start and after 1 MiB of other lines."""
    line = b"draft acceptance rate = 0.00000 (    0 accepted /   120 generated)\n"
    short = analyze_log([_write(line)]).facts["log"]
    filler = b"srv  log_server_r: request: POST /completion 127.0.0.1 200\n" * 20_000
    assert len(filler) > reader.CHUNK_BYTES
    late = analyze_log([_write(filler + line)]).facts["log"]
    assert short["verdict"] == late["verdict"] == "ran-but-accepted-nothing"
    assert short["engine"] == late["engine"] == "llamacpp"
    assert late["files"][0]["statistics"]["first_line"] == 20_001
    assert (late["files"][0]["statistics"]["accepted_tokens"], late["files"][0]["statistics"]["drafted_tokens"]) == (0, 120)


def test_literals_cover_every_line_the_reader_used_to_mark() -> None:
    """Each marker of the reader before (a first-MiB regex of 40 markers), as the start of the line it marks."""
    old = ("SpecDecoding metrics: Mean acceptance length: 3.28", "Speculative metrics: Draft acceptance rate: 0.062",
           "Per-position acceptance rate: 0.938", "Mean acceptance length: 5.00", "Draft acceptance rate: 61.5%",
           "Initializing a V1 LLM engine (v0.33.0) with config:", "Resolved architecture: DeepSeekMTPModel",
           "Detected MTP model. Sharing target model embedding weights with the draft model.",
           "Sharing target model lm_head weights with the draft model.", "vLLM API server version 0.33.0",
           "Decode batch, #running-req: 1", "Prefill batch, #new-seq: 1", "server_args=ServerArgs(", "Load weight end. type=X",
           "Scheduler hit an exception: Traceback", "slot print_timing: id  0 | task 0 | draft acceptance = 0.5",
           "model has unused tensor blk.48.nextn.eh_proj (size = 1 bytes) -- ignoring", "version: 1 (build 10444, commit 037f2f344)",
           "build: 6000 (abc1234) with cc", "print_info: n_layer = 48", "common_speculative_init: x", "#calls(draft): 5",
           "[TRT-LLM] [I] x", "[TensorRT-LLM][INFO] x", "MTPDecodingConfig(max_draft_len=3)", "acceptance_rate_threshold: 0.1",
           "Traceback (most recent call last):", '  File "x.py", line 1, in f', "RuntimeError: x", "torch.OutOfMemoryException",
           "EngineCore encountered a fatal error.", "WorkerProc hit an exception.", "GGML_ASSERT(x) failed",
           "Segmentation fault", "Aborted (core dumped)", "CUDA error: an illegal memory access", "Accept length: 2.31",
           "Acceptance length: 2.31", "Acceptance rate (%): 61.2", "code_python pred= 192 draft= 144 acc= 118 rate=0.819")
    assert [m for m in old if not reader.MARKERS.search(m.encode())] == []


def _write(data: bytes) -> Path:
    import tempfile

    fd, name = tempfile.mkstemp(suffix=".log")
    with open(fd, "wb") as fh:
        fh.write(data)
    return Path(name)


def test_read_budget_stops_a_sparse_terabyte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from mtp_audit.cli.main import main

    text = (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes() * 3000  # 3.4 MB of text, then a hole to 1 TiB
    p = tmp_path / "sparse.log"
    with open(p, "wb") as fh:
        fh.write(text)
        fh.truncate(1 << 40)
    monkeypatch.setenv("MTP_AUDIT_MAX_READ_BYTES", str(2 * 1024 * 1024))
    with guard():
        code = main(["log", "-f", "json", str(p)])
    import json

    doc = json.loads(capsys.readouterr().out)
    f = doc["facts"]["log"]["files"][0]
    assert code == 3 and f["bytes"] == 2 * 1024 * 1024 and f["stopped_at_bytes"] == 2 * 1024 * 1024
    assert [g["message"] for g in doc["gaps"]] == [
        f"{p}: read only its first 2097152 bytes (the run's read budget, MTP_AUDIT_MAX_READ_BYTES); the verdict is "
        "for those bytes, not for the rest of the log"]
    assert f["statistics"]["intervals"] == text[:2 * 1024 * 1024].count(b"SpecDecoding metrics: ") == 3705


def test_read_budget_larger_than_the_log_leaves_no_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    from mtp_audit.sources.bounded import run_budget

    monkeypatch.setenv("MTP_AUDIT_MAX_READ_BYTES", "1132")
    with run_budget():
        report = analyze_log([LOGS / "vllm_ascend_9803_glm5_mtp3.log"])
    assert not report.gaps and report.facts["log"]["files"][0]["stopped_at_bytes"] is None


def _retime(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert old in raw
    return raw.replace(old, new)


def test_rotated_logs_out_of_order_report_the_latest() -> None:
    """``cat server.log server.log.1``: today's healthy run first, yesterday's zero-acceptance run after it."""
    today = _retime((LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes(), b"INFO 05-30 15:", b"INFO 07-02 09:")
    yesterday = (LOGS / "speculators_613_dflash_near_zero.log").read_bytes()  # INFO 06-30 18:16:28 ...
    report = analyze_log([_write(today + yesterday)])
    log = report.facts["log"]
    assert log["verdict"] == "ran-and-helped"
    runs = log["files"][0]["runs"]
    assert runs["time_back"] == [{"line": 5, "from": "07-02 09:21:33", "to": "06-30 18:16:28"}]
    assert runs["reported"] == {"start": 1, "end": 4, "why": "latest in time (the log's time goes back)"}
    assert log["files"][0]["statistics"]["accepted_tokens"] == 892
    msg = [x.message for x in report.findings if x.rule_id == "MTP509"]
    assert msg == ["2 engine runs in this log; time goes back at line 5 (07-02 09:21:33 -> 06-30 18:16:28: a restart, "
                   "or rotated logs concatenated out of order); the verdict is for the latest in time, lines 1-4"]


def test_logs_in_order_report_the_last() -> None:
    older = (LOGS / "speculators_613_dflash_near_zero.log").read_bytes()
    newer = _retime((LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes(), b"INFO 05-30 15:", b"INFO 07-02 09:")
    log = analyze_log([_write(older + newer)]).facts["log"]
    assert log["verdict"] == "ran-and-helped" and log["files"][0]["runs"]["time_back"] == []
    assert log["files"][0]["runs"]["reported"] is None


def test_llama_restart_inside_one_file_is_a_new_run() -> None:
    """llama.cpp's stamps count from the process start: going back to 0 is a restart; the last run is reported."""
    run = (LOGS / "llama_27151_mtp_1_of_633.log").read_bytes()
    good = run.replace(b"draft acceptance = 0.00158 (    1 accepted /   633 generated), mean len =  1.00",
                       b"draft acceptance = 0.70000 (  443 accepted /   633 generated), mean len =  2.40")
    restarted = good.replace(b"1.3", b"0.0")
    report = analyze_log([_write(run + restarted)])
    log = report.facts["log"]
    assert log["verdict"] == "ran-and-helped" and log["files"][0]["statistics"]["accepted_tokens"] == 443
    # the first line read after the restart: its draft acceptance line (the other lines carry no marker)
    assert log["files"][0]["runs"]["time_back"][0]["line"] == len(run.splitlines()) + 6
    assert "MTP509" in {x.rule_id for x in report.findings}


def test_closed_stdin_is_one_line_exit_2() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "mtp_audit", "log", "-"], preexec_fn=lambda: os.close(0),  # noqa: PLW1509
                       capture_output=True, text=True, env=env, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (
        2, "", "mtp-audit: error: -: standard input is closed (pipe a log in, or name a file)\n")


@pytest.mark.parametrize("name", ["llama_27151_mtp_1_of_633.log", "sglang_pr608_decode_batch_tp_ep.log",
                                  "vllm_intel386_config_engine_core_prefix.log", "beellama4_dflash_draft_unknown_arch.log",
                                  "trtllm_600_terminate_what.log", "llama_gsq11_command_zero_acceptance.log"])
def test_same_verdict_wherever_the_log_sits(name: str) -> None:
    """The excerpt alone, and after filler that puts it across the first chunk boundary and past it."""
    raw = (LOGS / name).read_bytes()
    filler = b"INFO:     127.0.0.1:45678 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
    want = analyze_log([_write(raw)]).facts["log"]
    for n in (reader.CHUNK_BYTES // len(filler) - 1, reader.CHUNK_BYTES // len(filler) + 3, 40_000):
        got = analyze_log([_write(filler * n + raw)]).facts["log"]
        assert (got["verdict"], got["engine"]) == (want["verdict"], want["engine"]), n
        ws, gs = want["files"][0]["statistics"], got["files"][0]["statistics"]
        assert (gs["intervals"], gs["accepted_tokens"], gs["drafted_tokens"]) == (ws["intervals"], ws["accepted_tokens"], ws["drafted_tokens"])
