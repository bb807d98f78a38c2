"""docs/launch.md's "Verdict and exit code" says what the CLI does: the bad inputs it lists are exit 2, a model path
that does not exist is "could not tell" (3) with a ``--model-dir`` hint, and ``vllm serve`` is a launch it audits
(the list once said a missing ``--model-path`` and ``vllm serve`` were exit 2)."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, REPO

from mtp_audit.cli.main import main

MIMO = str(FIXTURES / "checkpoint" / "jj8127--mimo_kor")


def _section() -> str:
    text = (REPO / "docs" / "launch.md").read_text()
    return text.split("## Verdict and exit code", 1)[1].split("\n## ", 1)[0]


def test_the_documented_exit_2_list_names_no_supported_engine() -> None:
    flat = re.sub(r"\s+", " ", _section())
    assert "not an SGLang server launch" not in flat and "(`vllm serve`" not in flat
    assert "a `--model-path` that does not exist" not in flat
    assert "a model path that does not exist here (the gap names `--model-dir SRC=DST`)" in flat


@pytest.mark.parametrize(("argv", "rc"), [
    (["--", "echo", "hi"], 2),
    (["--sglang", "0.5.9", "--", "vllm", "serve", MIMO], 2),
    (["--", "trtllm-serve", MIMO, "--config", "/nonexistent/mtp.yaml"], 2),
    (["--env", "FOO", "--", "vllm", "serve", MIMO], 2),
    (["--model-dir", "/x=/nonexistent-dir", "--", "vllm", "serve", "/x/m"], 2),
    (["--", "python", "-m", "sglang.launch_server", "--model-path", str(FIXTURES / "trtllm")], 2),  # exists, not a checkpoint
])
def test_documented_bad_inputs_exit_2(argv: list[str], rc: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launch", "--no-machine", *argv]) == rc
    assert capsys.readouterr().err.startswith("mtp-audit: error: ")


def test_a_model_path_that_does_not_exist_could_not_tell(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launch", "--no-machine", "-f", "json", "--", "vllm", "serve", "./no-such-ckpt"]) == 3
    out = capsys.readouterr().out
    assert "model ./no-such-ckpt: no such file or folder on this machine" in out and "--model-dir ./no-such-ckpt=LOCAL_FOLDER" in out
