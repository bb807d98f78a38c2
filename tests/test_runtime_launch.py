"""``mtp-audit launch ... --log FILE``: the launch prediction held against a real log (SGLang 0.5.9 wheel;
NEXTN runs as EAGLE; logs from fixtures/logs/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import sglang_wheel

from mtp_audit.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "logs"
CKPT = ROOT / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3"


def _launch(log: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    out = tmp_path / "r.json"
    main(["launch", "--sglang", str(sglang_wheel("0.5.9")), "--log", str(LOGS / log), "-f", "json", "-o", str(out), "--",
          "python", "-m", "sglang.launch_server", "--model-path", str(CKPT), "--speculative-algorithm", "NEXTN", "--tp", "8"])
    capsys.readouterr()
    return json.loads(out.read_text())


@pytest.mark.network
def test_agreement_is_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _launch("sglang_pr608_decode_batch_tp_ep.log", tmp_path, capsys)
    assert doc["facts"]["launch"]["speculative"]["runs_as"] == "EAGLE"
    mine = [(f["rule_id"], f["severity"]) for f in doc["findings"] if f["rule_id"] in ("MTP530", "MTP531")]
    assert mine == [("MTP530", "info")]
    assert doc["targets"][0]["analyzer"] == "launch" and doc["targets"][-1]["analyzer"] == "log"
    assert doc["facts"]["launch"]["log_check"] == "agrees"
    assert not doc["facts"]["launch"]["answer"][0].startswith("the log contradicts")


@pytest.mark.network
def test_each_disagreement_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _launch("sglang_4305_decode_batch_dot_no_spec.log", tmp_path, capsys)
    mine = [(f["rule_id"], f["message"]) for f in doc["findings"] if f["rule_id"] == "MTP531"]
    assert mine == [("MTP531", "predicted EAGLE, but the log shows decoding without speculation")]
    assert doc["facts"]["log"]["verdict"] == "never-ran"
    # what ran outranks what was predicted: the contradiction leads the answer, the prediction follows
    assert doc["facts"]["launch"]["log_check"] == "contradicts"
    answer = doc["facts"]["launch"]["answer"]
    assert answer[0] == "the log contradicts the prediction: predicted EAGLE, but the log shows decoding without speculation (MTP531)"
    assert answer[1].startswith("prediction: could not tell: config.json declares 1 MTP layer(s)")


@pytest.mark.network
def test_a_log_that_cannot_tell_does_not_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (the mtp-bench client log used here before now decides by the client's figures: an engine-less crash log instead)
    doc = _launch("holdout/tabbyapi_exllamav3_223_other_program.log", tmp_path, capsys)
    log_gaps = [g for g in doc["gaps"] if g["analyzer"] == "log"]
    assert log_gaps and not any(g["blocking"] for g in log_gaps)
    assert doc["facts"]["launch"]["log_check"] == "no contradiction"


def test_the_prediction_names_the_engine_the_launch_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The prediction's engine is ``facts.launch.engine`` (the registry's id), for every engine: a TensorRT-LLM launch
    held against a TensorRT-LLM log agrees on TensorRT-LLM (it said "on the engine" when only SGLang's and vLLM's
    sub-reports named their engine)."""
    out = tmp_path / "r.json"
    main(["launch", "--env-dump", str(ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"),
          "--log", str(LOGS / "trtllm_600_terminate_what.log"), "-f", "json", "-o", str(out), "--",
          "trtllm-serve", str(ROOT / "fixtures" / "checkpoint" / "zai-org--GLM-5-FP8")])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["facts"]["launch"]["engine"] == doc["facts"]["log"]["engine"] == "trtllm"
    assert [(f["rule_id"], f["message"]) for f in doc["findings"] if f["rule_id"] in ("MTP530", "MTP531")] == [
        ("MTP530", "predicted no speculation on TensorRT-LLM; the log shows the same (no contradiction)")]
    # the log's gap is made a note, and keeps the question it leaves open
    assert [(g["blocking"], g.get("question")) for g in doc["gaps"] if g["analyzer"] == "log"] == [(False, "runtime")]


def _launch_doc(argv: list[str], log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    out = tmp_path / "r.json"
    main(["launch", "--env-dump", str(ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"),
          "--log", str(log), "-f", "json", "-o", str(out), "--", *argv])
    capsys.readouterr()
    return json.loads(out.read_text())


def _mtp53x(doc: dict) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(f["rule_id"], f["message"]) for f in doc["findings"] if f["rule_id"] in ("MTP530", "MTP531")]


def test_a_tensorrt_llm_mtp_launch_predicts_mtp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The prediction comes from the launch's typed answer: a ``trtllm-serve`` whose YAML asks for MTP with 3 layers
    predicts MTP and 3 draft tokens (it predicted no speculation, and a log printing ``MTPDecodingConfig`` contradicted
    it). The log line is the dialect's ``config`` format (``MTPDecodingConfig(``) with ``max_draft_len=3``."""
    log = tmp_path / "trt.log"
    log.write_text("[TRT-LLM] [I] speculative_config=MTPDecodingConfig(max_draft_len=3, num_nextn_predict_layers=3)\n")
    argv = ["trtllm-serve", str(ROOT / "fixtures" / "checkpoint" / "zai-org--GLM-5-FP8"),
            "--config", str(ROOT / "fixtures" / "trtllm" / "r1-nextn-3.yaml")]
    doc = _launch_doc(argv, log, tmp_path, capsys)
    assert doc["facts"]["launch"]["speculative"]["method"] == "MTP"
    assert _mtp53x(doc) == [("MTP530", "predicted MTP on TensorRT-LLM; the log shows the same (its configuration)")]
    log.write_text("[TRT-LLM] [I] speculative_config=MTPDecodingConfig(max_draft_len=1, num_nextn_predict_layers=1)\n")
    assert _mtp53x(_launch_doc(argv, log, tmp_path, capsys)) == [
        ("MTP531", "predicted 3 draft token(s), the engine printed 1 (line 1)")]


def test_an_undecided_launch_is_contradicted_by_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """llama-server with ``--spec-type draft-mtp`` and no build known: the launch could not tell whether the MTP head
    drafts, so its log's statistics (llama.cpp#27151) contradict nothing (it said "predicted no speculative decoding,
    but the log has speculative statistics")."""
    argv = ["llama-server", "-m", str(ROOT / "fixtures" / "gguf" / "Qwen3.6-35B-A3B-MTP-layout.gguf"), "--spec-type", "draft-mtp"]
    doc = _launch_doc(argv, LOGS / "llama_27151_mtp_1_of_633.log", tmp_path, capsys)
    assert doc["facts"]["launch"]["verdict"] == "could not tell" and doc["facts"]["launch"]["summary"]["mtp_runs"] is None
    assert _mtp53x(doc) == [
        ("MTP530", "the launch audit could not tell what runs on llama.cpp; the log contradicts nothing it predicted")]
    assert doc["facts"]["launch"]["log_check"] == "no contradiction"
