"""The quantization method vLLM keeps, replayed from the release's source (mtp_audit.engines.vllm.launch.quant), on real
wheels and real checkpoint configs.

Real report: https://github.com/vllm-project/vllm/issues/37854 (2026-03): vLLM rejects
nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 because its ModelOpt quant_algo is MIXED_PRECISION. Checked by hand in the
unpacked wheels: 0.24.0 vllm/transformers_utils/model_arch_config_convertor.py:228 ``raise ValueError(f"Unknown ModelOpt
quant algo: {quant_algo}")`` (FP8 / NVFP4 only); 0.33.0 :268 sets quant_method modelopt_mixed, and
vllm/model_executor/layers/quantization/modelopt.py:1663 (ModelOptMixedPrecisionConfig.override_quantization_method)
answers before modelopt_fp4 answers None (:1236, "NVFP4"/"FP4" not in "MIXED_PRECISION"), so --quantization modelopt_fp4
runs as modelopt_mixed; vllm/config/model.py:1457 raises 'does not match' for an FP8 checkpoint with --quantization
modelopt_fp4.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity, exit_code

pytestmark = pytest.mark.network

H200 = FIXTURES / "preflight" / "h200-live-facts.json"
MIXED = FIXTURES / "quant" / "nemotron-super-mixed-precision"
DSV3 = FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"


def _run(version: str, *cmd: str):
    r = audit_launch(["vllm", "serve", *cmd, "-tp", "1"], vllm=vllm_wheel(version), facts=H200, environ={})
    return r, r.facts["launch"]


def test_mixed_precision_is_refused_by_0_24_with_the_raising_line() -> None:
    r, f = _run("0.24.0", str(MIXED))
    errs = [x for x in r.findings if x.rule_id == "MTP329"]
    assert len(errs) == 1 and "ValueError: Unknown ModelOpt quant algo: MIXED_PRECISION " \
        "(vllm/transformers_utils/model_arch_config_convertor.py:228)" in errs[0].message
    assert f["verdict"] == "fix first" and exit_code(r, Severity.ERROR) == 1
    assert f["summary"]["quantization"] == "refused (MTP329)"


def test_modelopt_fp4_on_mixed_precision_runs_as_modelopt_mixed_on_0_33() -> None:
    r, f = _run("0.33.0", str(MIXED), "--quantization", "modelopt_fp4")
    warn = [x for x in r.findings if x.rule_id == "MTP330"]
    assert len(warn) == 1 and warn[0].severity == Severity.WARNING
    assert "--quantization modelopt_fp4 runs as 'modelopt_mixed' in vLLM 0.33.0, silently: " \
        "vllm/model_executor/layers/quantization/modelopt.py:1663" in warn[0].message
    assert f["summary"]["quantization"] == ("modelopt_mixed (from hf_quant_config.json; decided at "
                                            "vllm/model_executor/layers/quantization/modelopt.py:1663)")
    assert not [x for x in r.findings if x.rule_id == "MTP329"]


def test_fp8_checkpoint_with_modelopt_fp4_does_not_match() -> None:
    r, f = _run("0.33.0", str(DSV3), "--quantization", "modelopt_fp4")
    errs = [x for x in r.findings if x.rule_id == "MTP329"]
    assert len(errs) == 1 and "(vllm/config/model.py:1457)" in errs[0].message
    assert "does not match the quantization method specified in the `quantization` argument (modelopt_fp4)" in errs[0].message
    assert exit_code(r, Severity.ERROR) == 1
    r, f = _run("0.33.0", str(DSV3))
    assert f["summary"]["quantization"] == "fp8 (from config.json)" and not [x for x in r.findings if x.rule_id in ("MTP329", "MTP330")]
