"""vLLM launches answered with the depth of SGLang ones, each read from the real wheel: the torch pin of its METADATA
(MTP339), the MTP draft's bytes per GPU (MTP338) and the pipeline-parallel refusal of a draft without SupportsPP
(MTP337, 0.24.0 only). Machine: the 4x GB200 dump of sglang #11208 (torch 2.8.0+cu129, no vLLM recorded); checkpoint:
NVIDIA's DeepSeek-V3.1-NVFP4 config (MTP bytes estimated from config: 26,926,853,120)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import vllm_wheel

from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity

ROOT = Path(__file__).resolve().parents[1]
DSV31 = ROOT / "fixtures" / "checkpoint" / "nvidia--DeepSeek-V3.1-NVFP4"
GB200 = ROOT / "fixtures" / "preflight" / "envdumps" / "sglang-11208.txt"
MTP = json.dumps({"method": "mtp", "num_speculative_tokens": 1})


def _run(version: str, *extra: str):
    return audit_launch(["vllm", "serve", str(DSV31), "-tp", "2", *extra, "--speculative-config", MTP],
                        vllm=vllm_wheel(version), env_dumps=[GB200], environ={})


def _one(report, rule_id):
    [f] = [f for f in report.findings if f.rule_id == rule_id]
    return f


@pytest.mark.parametrize("version, pin", [("0.24.0", "==2.11.0"), ("0.33.0", "==2.14.0")])
def test_torch_pin_of_the_wheel_against_the_machine(version, pin):
    f = _one(_run(version), "MTP339")
    assert f.severity == Severity.WARNING
    assert f.message.startswith(f"vLLM {version} requires torch{pin} but the machine has torch 2.8.0+cu129 (no vLLM recorded)")


def test_draft_bytes_per_gpu_is_the_load_time_peak():
    r = _run("0.33.0")
    f = _one(r, "MTP338")
    assert "13,463,426,560 bytes (13.46 GB) per GPU at load (peak) under --tensor-parallel-size 2" in f.message
    assert r.facts["launch"]["draft"]["mtp_bytes_per_gpu"] == 26_926_853_120 / 2


def test_pipeline_parallel_with_the_mtp_draft_is_refused_before_0_33():
    r = _run("0.24.0", "-pp", "2")
    f = _one(r, "MTP337")
    assert f.severity == Severity.ERROR and "(vllm/config/speculative.py:994)" in f.message
    assert "DeepSeekMTP (vllm/model_executor/models/deepseek_mtp.py) does not implement SupportsPP" in f.message
    assert r.facts["launch"]["verdict"] == "fix first"
    assert not any(f.rule_id == "MTP337" for f in _run("0.33.0", "-pp", "2").findings)
    assert not any(f.rule_id == "MTP337" for f in _run("0.24.0").findings)
