"""The fourth vLLM oracle grid replayed from its recording (not marked ``oracle``: it needs no engine venv, only the
cached vLLM wheel): tests/data/oracle/vllm-0.34.0-grid4.json holds what the real vLLM 0.34.0 decided for
:func:`grid.grid4` (real configs new to the oracle: gpt-oss-20b MXFP4, GLM-4.7-Flash, GLM-5.1, Qwen3-Next-Instruct,
Llama-3-8B, Qwen3-8B and EAGLE / EAGLE-3 / SpecForge draft checkpoints, with 54 new ``--speculative-config`` forms).
Counted by hand from ``python tests/oracle/replay_grid.py 0.34.0 grid4`` (docs/vllm.md "Fourth grid")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "oracle"))

from replay_grid import RECORDED, compare  # noqa: E402

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_the_fourth_grid_agrees_with_real_vllm_0_34_0() -> None:
    data = json.loads((RECORDED / "vllm-0.34.0-grid4.json").read_text())
    assert (data["vllm"], len(data["cases"])) == ("0.34.0", 955)
    ok, n, lines = compare("0.34.0", "grid4")
    # the two SpecForge draft configs whose architectures vLLM does not register as a served model
    # (GptOssForCausalLMEagle3, Qwen3MoeForCausalLMMTP) are not compared: real vLLM cannot build the target
    assert [line.split(":", 1)[0] for line in lines] == ["sgl-project--SpecForge-gpt-oss-20B-eagle3",
                                                          "sgl-project--SpecForge-qwen3.5-122b-a10b-mtp"]
    assert (ok, n) == (953, 953)
