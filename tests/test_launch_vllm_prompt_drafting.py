"""A vLLM launch whose method drafts from the prompt (ngram, suffix) builds no draft model: vLLM 0.34.0 fills
``draft_model_config`` with the target's (vllm/config/speculative.py, "Unused fields") but the NgramGPUSpeculator
matches n-grams of the prompt. The outcome says so, and that the checkpoint's MTP layers are not used."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.cli.main import main

pytestmark = pytest.mark.network

QWEN = FIXTURES / "preflight" / "checkpoints" / "nvidia--Qwen3.5-397B-A17B-NVFP4"  # config.json: 1 MTP layer


def _launch(capsys, method: str, *fmt: str) -> str:
    main(["launch", "--no-machine", *fmt, "--vllm", str(vllm_wheel("0.34.0")), "--", "vllm", "serve", str(QWEN),
          "--speculative-config", json.dumps({"method": method, "num_speculative_tokens": 3, "prompt_lookup_max": 4})])
    return capsys.readouterr().out


def test_ngram_on_an_mtp_checkpoint_says_the_heads_go_unused(capsys) -> None:
    out = _launch(capsys, "ngram", "-v")
    assert out.splitlines()[0].endswith("vLLM 0.34.0: method ngram, 3 token(s), NgramGPUSpeculator; drafts from the prompt "
                                        "(n-gram matching), not with a draft model: the checkpoint's 1 MTP layer(s) are not used (exit 3)")
    assert ("  Draft model: none: ngram drafts from the prompt (n-gram matching), not with a draft model: the checkpoint's "
            "1 MTP layer(s) are not used.") in out
    assert "  Draft architecture: n/a (no draft model is built)." in out
    assert "draft the target" not in out
    assert "attention backend vLLM selects for the draft model" not in out


def test_an_mtp_method_still_drafts_with_the_target(capsys) -> None:
    out = _launch(capsys, "mtp")
    assert "draft the target (" in out.splitlines()[0] and "not with a draft model" not in out
