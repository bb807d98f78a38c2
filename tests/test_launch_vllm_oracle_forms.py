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
    # "2.0" too (the real vLLM 0.24.0/0.33.0/0.34.0 build 2 tokens: tests/test_vllm_lax_int.py)
    two = _launch("0.34.0", {"method": "mtp", "num_speculative_tokens": "2.0"})
    assert _refusals(two) == [] and two.facts["launch"]["speculative"]["num_speculative_tokens"] == 2
    [msg] = _refusals(_launch("0.34.0", {"method": "mtp", "num_speculative_tokens": 2.5}))
    assert "ValidationError: 1 validation error for SpeculativeConfig: num_speculative_tokens: Input should be a valid " \
           "integer, got 2.5" in msg


def _on(version: str, name: str, spec: dict):
    folder = FIXTURES / "oracle-configs" / name
    return audit_launch(["vllm", "serve", str(folder), "--speculative-config", json.dumps(spec)], vllm=vllm_wheel(version),
                        environ={}, cwd=folder)


def test_the_drafts_quantization_overrides_see_the_draft_config_after_its_override() -> None:
    # DeepseekV4FP8Config.override_quantization_method answers only for model_type deepseek_v4* (0.34.0
    # vllm/models/deepseek_v41/quant_config.py:180-191); the draft's is deepseek_v4_mtp after hf_config_override, so
    # vLLM refuses modelopt_fp4 against the draft's fp8 (real 0.34.0: model.py:1477), it does not replace it
    [msg] = _refusals(_on("0.34.0", "deepseek-ai--DeepSeek-V4-Flash", {"method": "mtp", "num_speculative_tokens": 1,
                                                                      "quantization": "modelopt_fp4"}))
    assert "model config (fp8) does not match the quantization method specified in the `quantization` argument (modelopt_fp4). " \
           "(vllm/config/model.py:1477)" in msg
    # a composite config's quantization config is its text_config's (0.34.0 model_arch_config_convertor.py:285-292)
    [kimi] = _refusals(_on("0.34.0", "moonshotai--Kimi-K3", {"method": "mtp", "num_speculative_tokens": 1, "quantization": "fp8"}))
    assert "(vllm/config/model.py:1477)" in kimi


def test_mimo_v2_flash_n_predict_is_the_imported_module_constant() -> None:
    # 0.34.0 speculative.py:930-936: n_predict = _MIMO_V2_FLASH_NUM_MTP_LAYERS, 1 at mimo_v2_mtp.py:54
    r = _on("0.34.0", "XiaomiMiMo--MiMo-V2-Flash", {"method": "mtp", "num_speculative_tokens": 3})
    sp = r.facts["launch"]["speculative"]
    assert _refusals(r) == [] and (sp["runs_as"], sp["num_speculative_tokens"]) == ("mtp", 3)
    assert r.facts["launch"]["draft"]["architectures_replayed"] == ["MiMoV2MTPModel"]
