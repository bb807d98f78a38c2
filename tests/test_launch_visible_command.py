"""A launch's own ``CUDA_VISIBLE_DEVICES`` bounds the GPUs it sees on any machine: ``CUDA_VISIBLE_DEVICES=0,1`` before a
tp-4 command is the GPU-count error of its engine (MTP311 SGLang, MTP328 vLLM, MTP714 TensorRT-LLM) even with
``--no-machine``, where nothing else about the GPUs is known. A value that does not read as indices (``$X``, UUIDs)
stays "could not tell"."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, sglang_wheel, vllm_wheel

from mtp_audit.cli.main import main
from mtp_audit.preflight.visible import visible_at_most

MIMO = str(FIXTURES / "checkpoint" / "jj8127--mimo_kor")
YAML = str(FIXTURES / "trtllm" / "r1-nextn-3.yaml")
B200X8 = str(FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt")  # 8 x NVIDIA B200


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    rc = main([*argv[:1], "-f", "json", *argv[1:]])
    return rc, json.loads(capsys.readouterr().out)


def _errors(doc: dict) -> list[tuple[str, str]]:
    return [(f["rule_id"], f["message"]) for f in doc["findings"] if f["severity"] == "error"]


def test_visible_at_most_reads_only_index_lists() -> None:
    """Indices count once each up to the first negative one; anything else could stand for any list."""
    assert [visible_at_most(v) for v in ("0,1", " 3 ", "0,0,1", "0,2,-1,1,5", "", "7,6,5,4")] == [2, 1, 2, 2, 0, 4]
    assert [visible_at_most(v) for v in ("$X", "GPU-aaa,GPU-bbb", "MIG-GPU-1/0/0", "0,$X", "none")] == [None] * 5


def _sglang(cvd: str, *extra: str) -> list[str]:
    return ["launch", *extra, "--sglang", str(sglang_wheel("0.5.9")), "--", f"CUDA_VISIBLE_DEVICES={cvd}", "python", "-m",
            "sglang.launch_server", "--model-path", MIMO, "--speculative-algorithm", "NEXTN", "--tp-size", "4"]


@pytest.mark.network
def test_sglang_two_visible_gpus_cannot_run_tp4_off_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: go (exit 0) with "CUDA_VISIBLE_DEVICES: not checked"; now MTP311, exit 1, as with the 8-GPU dump."""
    rc, doc = _run(capsys, _sglang("0,1", "--no-machine"))
    assert rc == 1 and doc["facts"]["launch"]["summary"]["verdict"] == "fix first"
    assert _errors(doc) == [("MTP311", "the command needs 4 GPU(s) on this node (tp 4 x pp 1 = 4) but CUDA_VISIBLE_DEVICES=0,1 "
                                       "(command) leaves at most 2 visible on any machine: SGLang starts one process per GPU "
                                       "and process 2 fails with 'invalid device ordinal'")]
    assert not [g for g in doc["gaps"] if g["message"].startswith("CUDA_VISIBLE_DEVICES: not checked")]
    rc, doc = _run(capsys, _sglang("0,1", "--env-dump", B200X8))
    assert rc == 1 and [r for r, _ in _errors(doc)] == ["MTP311"]


@pytest.mark.network
@pytest.mark.parametrize("cvd", ["0,1,2,3", "$X", "GPU-aaa,GPU-bbb,GPU-ccc"])
def test_sglang_enough_or_unreadable_visible_gpus_stay_unknown(capsys: pytest.CaptureFixture[str], cvd: str) -> None:
    """Four indices, a shell variable or a UUID list: the count is not known to be short; the note stays, exit 0."""
    rc, doc = _run(capsys, _sglang(cvd, "--no-machine"))
    assert rc == 0 and _errors(doc) == []
    assert any(g["message"].startswith("the command needs 4 GPUs on this node (tp 4 x pp 1 = 4) but the GPUs are unknown")
               for g in doc["gaps"])


@pytest.mark.network
def test_vllm_two_visible_gpus_cannot_run_tp4_off_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _run(capsys, ["launch", "--no-machine", "--vllm", str(vllm_wheel("0.33.0")), "--", "CUDA_VISIBLE_DEVICES=0,1",
                            "vllm", "serve", MIMO, "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
                            "--tensor-parallel-size", "4"])
    assert rc == 1 and _errors(doc) == [
        ("MTP328", "the command needs 4 GPU(s) on this node (tp 4 x pp 1 = 4) but CUDA_VISIBLE_DEVICES=0,1 (command) leaves at "
                   "most 2 visible on any machine: vLLM 0.33.0 cannot place its 4 workers and stops before loading the model")]


@pytest.mark.parametrize("machine", [["--no-machine"], ["--env-dump", B200X8]])
def test_trtllm_two_visible_gpus_cannot_run_tp4(capsys: pytest.CaptureFixture[str], machine: list[str]) -> None:
    """TensorRT-LLM's count never applied the command's variable: on the 8-GPU dump tp 4 raised nothing, off the machine it was a
    note; both are MTP714 now."""
    rc, doc = _run(capsys, ["launch", *machine, "--", "CUDA_VISIBLE_DEVICES=0,1", "trtllm-serve", MIMO, "--tp_size", "4",
                            "--config", YAML])
    assert rc == 1 and _errors(doc) == [
        ("MTP714", "the command needs 4 GPUs (tp x pp x cp) but CUDA_VISIBLE_DEVICES=0,1 (command) leaves at most 2 visible: "
                   "TensorRT-LLM starts one rank per GPU and fails to place the rest")]
