"""First lines that said something else than the status: a log's error failing a launch the audit found fine ("FAIL:
go"/"FAIL: ... drafts with the MTP head"), "MTP226 stop this launch", and "3 blocking gap(s): <the first only>"."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main

GGUF = str(FIXTURES / "gguf" / "Qwen3.6-35B-A3B-MTP-layout.gguf")
DUMPS = FIXTURES / "preflight" / "envdumps"


def _first_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    rc = main(argv)
    return rc, capsys.readouterr().out.splitlines()[0]


def test_a_log_error_leads_the_answer_when_the_launch_was_fine(capsys: pytest.CaptureFixture[str]) -> None:
    """llama.cpp#27151's log: 1 of 633 drafted tokens accepted (MTP500) on a launch the audit finds fine (b10444,
    draft-mtp, a qwen35moe head): FAIL comes from the log, so the log leads and the prediction follows."""
    argv = ["launch", "--no-machine", "--llamacpp-build", "10444", "--log", str(FIXTURES / "logs" / "llama_27151_mtp_1_of_633.log"),
            "--", "llama-server", "-m", GGUF, "--spec-type", "draft-mtp"]
    rc, first = _first_line(capsys, argv)
    assert rc == 1 and first.startswith("FAIL: the log shows 1 error(s) (MTP500): mean acceptance length 1.00, acceptance 0.2 % "
                                        "(1 of 633 drafted tokens)")
    main([*argv[:1], "-f", "json", *argv[1:]])
    answer = json.loads(capsys.readouterr().out)["facts"]["launch"]["answer"]
    assert answer[1] == ("prediction: llama.cpp (b10444) drafts with the MTP head of Qwen3.6-35B-A3B-MTP-layout.gguf (-m) "
                         "(--spec-type draft-mtp)")


def test_one_error_stops_the_launch(capsys: pytest.CaptureFixture[str]) -> None:
    # sglang-11208.txt: SGLang 0.5.2 (no --fp4-gemm-backend before 0.5.8), 4x GB200
    rc, first = _first_line(capsys, ["preflight", "--env-dump", str(DUMPS / "sglang-11208.txt"), "--", "python", "-m",
                                     "sglang.launch_server", "--fp4-gemm-backend", "flashinfer_trtllm"])
    assert rc == 1 and first == ("FAIL: 4 x NVIDIA GB200 (compute capability 10.0) can run native FP4 on SGLang 0.5.2; but "
                                 "MTP226 stops this launch (exit 1)")


def test_the_verdict_says_how_many_blocking_gaps_it_does_not_list(capsys: pytest.CaptureFixture[str]) -> None:
    """flashinfer-4549.txt shows no GPU: the GPU count, the compute capability and the MiMo architecture are 3 blocking gaps."""
    argv = ["launch", "--env-dump", str(DUMPS / "flashinfer-4549.txt"), "--", "trtllm-serve",
            str(FIXTURES / "checkpoint" / "jj8127--mimo_kor"), "--tp_size", "4", "--config", str(FIXTURES / "trtllm" / "r1-nextn-3.yaml")]
    rc, first = _first_line(capsys, argv)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell: GPU count: the command needs 4 GPUs")
    assert first.endswith(" (+2 more blocking gap(s)); TensorRT-LLM would run MTP (MTP_EAGLE_ONE_MODEL, max_draft_len 3) (exit 3)")


def test_a_trtllm_launch_that_cannot_start_does_not_say_it_runs_mtp(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """The SGLang / vLLM headline shape: the verdict first, what would run "if it started" (it said "TensorRT-LLM runs
    MTP (...); Verdict: fix first" for a server that raises at start-up)."""
    y = tmp_path / "y0.yaml"
    y.write_text("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 0\n")
    rc, first = _first_line(capsys, ["launch", "--no-machine", "--", "trtllm-serve", str(FIXTURES / "checkpoint" / "jj8127--mimo_kor"),
                                     "--config", str(y)])
    assert rc == 1 and first == ("FAIL: fix first: 1 error(s) (MTP701); TensorRT-LLM would run MTP (MTP_EAGLE_ONE_MODEL, "
                                 "max_draft_len 0) if it started (exit 1)")
