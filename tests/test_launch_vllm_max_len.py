"""The draft's ``max_model_len`` and the EAGLE-style wrapping of a composite config, each checked against what real
vLLM recorded (tests/data/oracle/vllm-X-grid3.json) or built in the oracle venvs (/work/oracle-venvs/vllm-X, values
written down by hand below with the command that gave them).

- Kimi-K3 with itself as an ``eagle`` / ``eagle3`` / ``dflash`` draft: ``EAGLEConfig`` reads ``vocab_size`` through the
  release's own ``KimiK3Config.vocab_size`` property, copies the composite's ``to_dict()`` (its ``text_config`` a
  dict) and ``update_arch_`` then refuses it in ``get_hf_text_config`` (0.34.0 ``vllm/transformers_utils/config.py:1310``,
  0.33.0 ``:1265``).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network


def _on(version: str, name: str, spec: dict, *extra: str):
    folder = FIXTURES / "oracle-configs" / name
    return audit_launch(["vllm", "serve", str(folder), *extra, "--speculative-config", json.dumps(spec)],
                        vllm=vllm_wheel(version), environ={}, cwd=folder)


def _refusals(r) -> list[str]:
    return [f.message for f in r.findings if f.rule_id == "MTP320"]


@pytest.mark.parametrize(("version", "line"), [("0.33.0", 1265), ("0.34.0", 1310)])
@pytest.mark.parametrize("method", ["eagle", "eagle3", "dflash"])
def test_kimi_k3_self_draft_is_refused_by_get_hf_text_config(version: str, line: int, method: str) -> None:
    r = _on(version, "moonshotai--Kimi-K3", {"method": method, "model": str(FIXTURES / "oracle-configs" / "moonshotai--Kimi-K3"),
                                              "num_speculative_tokens": 1})
    [msg] = _refusals(r)
    assert "ValueError: The text_config extracted from the model config does not have `num_attention_heads` attribute" in msg
    assert f"(vllm/transformers_utils/config.py:{line})" in msg
    assert "vocab_size" not in msg
