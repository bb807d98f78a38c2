"""The draft's memory per GPU, load-time peak and steady state, on NVIDIA's DeepSeek-V3.1-NVFP4 (config-only fixture,
fixtures/checkpoint): its MTP layer carries its own ``embed_tokens`` and ``shared_head.head`` (129,280 x 7,168 BF16
each: 2 x 1,853,358,080 = 3,706,716,160 bytes) of 26,926,853,120 MTP bytes (estimated from config). SGLang loads them
and then its EAGLE worker swaps in the target's (``set_embed_and_head``), so at --tp-size 8 the peak is 26.93 GB / 8 =
3.37 GB per GPU and the steady state (26.93 - 3.71) / 8 = 2.90 GB per GPU (numbers checked by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import sglang_wheel

from mtp_audit.launch import audit_launch

ROOT = Path(__file__).resolve().parents[1]
DSV31 = ROOT / "fixtures" / "checkpoint" / "nvidia--DeepSeek-V3.1-NVFP4"
B200 = ROOT / "fixtures" / "preflight" / "envdumps" / "sglang-24834.txt"


@pytest.fixture(scope="module")
def sglang_0523():
    from mtp_audit.engines.sglang import audit_sglang

    return audit_sglang(sglang_wheel("0.5.23"))


def test_checkpoint_counts_the_mtp_layers_own_embedding_and_head():
    from mtp_audit.checkpoint import audit_checkpoint

    mtp = audit_checkpoint(DSV31).facts["checkpoint"]["mtp"]
    assert mtp["bytes"]["value"] == 26_926_853_120 and mtp["embed_head_bytes"] == 2 * 129_280 * 7_168 * 2 == 3_706_716_160


def test_sglang_mtp307_says_peak_and_steady_state(sglang_0523):
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", str(DSV31), "--tp-size", "8",
           "--speculative-algorithm", "NEXTN"]
    r = audit_launch(cmd, sglang=sglang_0523, env_dumps=[B200], environ={})
    [f] = [f for f in r.findings if f.rule_id == "MTP307"]
    assert "3,365,856,640 bytes (3.37 GB) per GPU at load (peak)" in f.message
    assert "2,902,517,120 bytes (2.90 GB) per GPU in steady state" in f.message
    d = r.facts["launch"]["draft"]
    assert (d["mtp_bytes_per_gpu"], d["mtp_bytes_per_gpu_steady"]) == (26_926_853_120 / 8, (26_926_853_120 - 3_706_716_160) / 8)
