"""Launch cases a fresh user's run found, on the real SGLang 0.5.23 wheel and real checkpoint metadata: another
engine's option in an SGLang command, and a target checkpoint whose MTP layers a separate draft replaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import sglang_wheel

from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]
CK = ROOT / "fixtures" / "checkpoint"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
LS = ["python3", "-m", "sglang.launch_server"]


def test_vllm_speculative_config_in_an_sglang_command_gets_no_wrong_fix():
    """0.5.23 has --speculative-adaptive-config (a file of adaptive settings), one edit away from vLLM's
    --speculative-config: the corrected command must not swap one for the other."""
    r = audit_launch(LS + ["--model-path", str(CK / "jj8127--mimo_kor"), "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'],
                     sglang=sglang_wheel("0.5.23"), env_dumps=[H200], environ={})
    mtp300 = [f for f in r.findings if f.rule_id == "MTP300"]
    assert len(mtp300) == 1 and "vLLM's option; SGLang reads --speculative-algorithm NEXTN" in mtp300[0].message
    assert "--speculative-adaptive-config" not in (r.facts["launch"]["corrected_command"] or "")


def test_target_mtp_errors_are_warnings_when_a_separate_draft_drafts():
    """The REAP-pruned Qwen3.5 declares an MTP layer it does not ship (MTP001); with the draft from another checkpoint
    SGLang never loads the target's MTP weights, so MTP001 does not stop the launch."""
    r = audit_launch(LS + ["--model-path", str(CK / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"), "--speculative-algorithm", "EAGLE",
                           "--speculative-draft-model-path", str(CK / "jj8127--mimo_kor")],
                     sglang=sglang_wheel("0.5.23"), env_dumps=[H200], environ={})
    mtp001 = [f for f in r.findings if f.rule_id == "MTP001"]
    assert [f.severity for f in mtp001] == [Severity.WARNING]
    assert "the draft comes from --speculative-draft-model-path" in mtp001[0].message
    assert r.facts["launch"]["verdict"] == "go"
