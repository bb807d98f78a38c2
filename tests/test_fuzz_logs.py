"""Fuzz kind: hostile engine logs for ``mtp-audit log``.

The generator builds a log from the real excerpts of fixtures/logs and from a ReDoS corpus: engine line heads
(vLLM, SGLang, llama-server, TensorRT-LLM, launch commands, crashes) followed by a piece repeated up to 64 KiB
(the starts and middles of the fields the parsers read), hard-wrapped configurations with no closing
parenthesis, stamps that go back (rotated logs out of order), runs of NUL bytes and cut lines. Invariant: the
harness's (exit 0-3, one line on exit 2, nothing written, bounded time and memory), and a verdict word in the
JSON report. Default: a few dozen examples; ``MTP_AUDIT_FUZZ_EXAMPLES=N`` for the long run (docs/fuzzing.md).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from fuzzkit import Workspace, fuzz_settings, run_cli
from hypothesis import given
from hypothesis import strategies as st
from test_runtime_hostile_logs import HEADS, PIECES

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
EXCERPTS = sorted(p for p in LOGS.rglob("*.log"))
VERDICTS = {"ran-and-helped", "ran-but-accepted-nothing", "ran-then-stopped", "never-ran", "could-not-tell"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzzlogs")


@st.composite
def hostile_line(draw: Any) -> bytes:
    """One line: an engine head and a piece repeated to a length that makes a superlinear parser take minutes."""
    head, piece = draw(st.sampled_from(HEADS)), draw(st.sampled_from(PIECES))
    size = draw(st.sampled_from([156, 4096, 32 * 1024, 60 * 1024]))
    return (head + piece * max(1, size // len(piece)) + draw(st.sampled_from(["", "!", ")", "}"])) + "\n").encode()


@st.composite
def hostile_log(draw: Any) -> bytes:
    """A log of a few parts: real excerpts (some with their stamps moved back), hostile lines, a wrapped
    configuration, NUL runs; in a drawn order."""
    parts: list[bytes] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["excerpt", "line", "wrapped", "nul", "back"]))
        if kind == "excerpt":
            parts.append(draw(st.sampled_from(EXCERPTS)).read_bytes())
        elif kind == "line":
            parts.append(draw(hostile_line()))
        elif kind == "wrapped":
            parts.append(b"server_args=ServerArgs(model_path=" + b"".join(b"a" * 60_000 + b"\n" for _ in range(draw(st.integers(1, 44)))))
        elif kind == "nul":
            parts.append(b"\0" * draw(st.integers(1, 4096)) + b"\n")
        else:  # an excerpt whose stamps go back a year or a day
            raw = draw(st.sampled_from(EXCERPTS)).read_bytes()
            parts.append(raw.replace(b"2026-", b"2025-").replace(b"INFO 0", b"INFO 01-01 00:00:00 [x.py:1] 0"))
    return b"".join(parts)


@fuzz_settings(25)
@given(data=hostile_log())
def test_fuzz_hostile_logs(base: Path, data: bytes) -> None:
    ws = Workspace(base / "log")
    (ws.inputs / "server.log").write_bytes(data)

    def fire(*_: object) -> None:
        raise TimeoutError("log run still going after 60 s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(60)
    try:
        res = run_cli(["log", "-f", "json", "in/server.log"], ws, json_stdout=True)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if res.code != 2:
        assert json.loads(res.out)["facts"]["log"]["verdict"] in VERDICTS
