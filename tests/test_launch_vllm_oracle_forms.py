"""Forms the third oracle grid (tests/oracle/grid.py ``FORMS_NEW``) found the launch replay getting wrong or not
deciding, each checked against what real vLLM recorded (tests/data/oracle/vllm-X-grid3.json):

- the speculative ``quantization`` against the draft checkpoint's own: the draft ``ModelConfig`` runs
  ``_verify_quantization`` (0.34.0 ``vllm/config/model.py:1477``, 0.33.0 ``:1457``: "Quantization method specified in the
  model config (fp8) does not match the quantization method specified in the `quantization` argument (modelopt_fp4).");
- ``"num_speculative_tokens": "2"``: pydantic's lax mode makes it 2 (real vLLM runs 2 tokens), not a refusal.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network

V3 = FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"


def _launch(version: str, spec: dict):
    return audit_launch(["vllm", "serve", str(V3), "--speculative-config", json.dumps(spec)], vllm=vllm_wheel(version),
                        environ={}, cwd=V3)


def _refusals(r) -> list[str]:
    return [f.message for f in r.findings if f.rule_id == "MTP320"]


@pytest.mark.parametrize(("version", "line"), [("0.33.0", 1457), ("0.34.0", 1477)])
def test_speculative_quantization_against_the_drafts_own(version: str, line: int) -> None:
    [msg] = _refusals(_launch(version, {"method": "mtp", "num_speculative_tokens": 1, "quantization": "modelopt_fp4"}))
    assert ("Quantization method specified in the model config (fp8) does not match the quantization method specified in "
            f"the `quantization` argument (modelopt_fp4). (vllm/config/model.py:{line})") in msg
    ok = _launch(version, {"method": "mtp", "num_speculative_tokens": 1, "quantization": "fp8"})
    assert _refusals(ok) == [] and ok.facts["launch"]["speculative"]["runs_as"] == "mtp"
    # ngram builds no draft ModelConfig: nothing verifies its quantization
    ng = _launch(version, {"method": "ngram", "num_speculative_tokens": 3, "quantization": "modelopt_fp4"})
    assert _refusals(ng) == [] and ng.facts["launch"]["speculative"]["runs_as"] == "ngram"


def test_token_count_as_a_string_is_coerced_by_pydantic() -> None:
    r = _launch("0.34.0", {"method": "mtp", "num_speculative_tokens": "2"})
    assert _refusals(r) == [] and r.facts["launch"]["speculative"]["num_speculative_tokens"] == 2
    undecided = _launch("0.34.0", {"method": "mtp", "num_speculative_tokens": "2.0"})
    assert _refusals(undecided) == []
    assert any("pydantic's lax parsing of the string '2.0' as an integer is not replayed" in g.message for g in undecided.gaps)
    [msg] = _refusals(_launch("0.34.0", {"method": "mtp", "num_speculative_tokens": 2.5}))
    assert "num_speculative_tokens=2.5 is not an integer" in msg
