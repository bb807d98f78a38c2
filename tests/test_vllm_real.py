"""Real vLLM wheels from PyPI (cached); every asserted file:line was checked by hand with sed in the
unpacked wheel (``sed -n 216p vllm/config/speculative.py`` etc.)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from conftest import vllm_wheel

from mtp_audit.engines.vllm import audit_vllm, diff_vllm
from mtp_audit.engines.vllm.target import WANTED

VERSIONS = ["0.8.5", "0.9.2", "0.11.0", "0.20.0", "0.33.0"]

pytestmark = pytest.mark.network


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("vllm-cache"))
    return {v: audit_vllm(vllm_wheel(v)) for v in VERSIONS}


def _f(reports: dict, v: str) -> dict:
    return reports[v].facts["vllm"]


def _rw(f: dict, field: str, kind: str) -> list[dict]:
    return [r for r in f["rewrites"] if r["field"] == field and r["kind"] == kind]


def _ids(reports: dict, v: str) -> set[str]:
    return {x.rule_id for x in reports[v].findings}


def test_versions_and_no_gaps(reports):
    for v in VERSIONS:
        assert _f(reports, v)["version"] == v
        assert not reports[v].inconclusive, reports[v].gaps


def test_085_autodetect_and_v0_only(reports):
    f = _f(reports, "0.8.5")
    assert f["spec_config"]["location"] == "vllm/config.py:2145"
    assert f["spec_config"]["validated"] is False  # stdlib dataclass
    assert f["spec_config"]["method_literal"]["values"] == ["ngram", "eagle", "medusa", "mlp_speculator", "draft_model"]
    assert f["mtp_alias"] is None
    auto = {r["location"]: r["value"] for r in _rw(f, "method", "auto-detect")}
    assert auto["vllm/config.py:2388"] == "'draft_model'"
    assert [r["location"] for r in _rw(f, "model", "draft-target")] == ["vllm/config.py:2299"]
    assert "deepseek_v3" in _rw(f, "model", "draft-target")[0]["condition"]
    assert f["n_predict_rules"]["default"] == "vllm/config.py:2418"
    assert f["n_predict_rules"]["divisible_error"] == "vllm/config.py:2422"
    assert f["v1_oracle"] == {"accepted": ["[ngram]", "eagle", "eagle3", "ngram"], "location": "vllm/engine/arg_utils.py:1430"}
    assert f["v0_spec_decode"] == "vllm/spec_decode/spec_decode_worker.py:202"
    assert [c["architectures"] for c in f["draft_chains"] if c["value"] == "deepseek_v3"] == [["DeepSeekMTPModel"]]
    assert [m["location"] for m in f["mtp_classes"]] == ["vllm/model_executor/models/registry.py:219"]
    assert {"MTP401", "MTP403", "MTP404", "MTP406", "MTP409"} <= _ids(reports, "0.8.5")
    assert "MTP400" not in _ids(reports, "0.8.5")


def test_092_reverse_alias_deepseek_mtp(reports):
    f = _f(reports, "0.9.2")
    assert f["spec_config"]["validated"] is True
    assert "deepseek_mtp" in f["spec_config"]["method_literal"]["values"]
    auto = {r["location"]: r["value"] for r in _rw(f, "method", "auto-detect")}
    assert auto["vllm/config.py:2697"] == "'deepseek_mtp'"
    assert f["proposers"]["v1"]["deepseek_mtp"][-1]["class"] == "EagleProposer"
    chains = {c["value"]: c["architectures"] for c in f["draft_chains"]}
    assert chains["MiMoForCausalLM"] == ["MiMoMTPModel"]
    assert "MTP409" not in _ids(reports, "0.9.2")  # the V1 oracle accepts deepseek_mtp


def test_0110_alias_rejected_by_validator(reports):
    f = _f(reports, "0.11.0")
    a = f["mtp_alias"]
    assert a["location"] == "vllm/config/speculative.py:216" and a["logged"] is True
    assert a["set"] == "MTP_MODEL_TYPES" and a["set_location"] == "vllm/config/speculative.py:36" and a["set_kind"] == "tuple"
    assert f["lints"]["aliases_not_in_literal"] == ["glm4_moe_mtp"]
    err = [x for x in reports["0.11.0"].findings if x.rule_id == "MTP402"]
    assert len(err) == 1 and err[0].severity.label == "error" and "glm4_moe_mtp" in err[0].message
    assert str(err[0].location) == "vllm/config/speculative.py:32"
    assert [r["location"] for r in _rw(f, "enforce_eager", "forced")] == ["vllm/config/speculative.py:227"]
    assert [r["location"] for r in _rw(f, "quantization", "inherited-quantization")] == ["vllm/config/speculative.py:233"]
    assert f["lints"]["paren_string_in"][0]["location"] == "vllm/config/speculative.py:339"
    assert f["n_predict_rules"]["reuse_warning"] == "vllm/config/speculative.py:333"
    assert f["proposers"]["v1"]["mtp"] == [{"class": "EagleProposer", "location": "vllm/v1/worker/gpu_model_runner.py:284", "when": "always"}]
    assert f["speculators"]["location"] == "vllm/transformers_utils/config.py:470"
    assert f["speculators"]["merges_user_config"] is False
    assert f["speculators"]["call_location"] == "vllm/engine/arg_utils.py:1135"
    assert len(f["draft_chains"]) == 10


def test_0200_literal_alias_and_v2_runner(reports):
    f = _f(reports, "0.20.0")
    assert f["mtp_alias"]["set"] == "MTPModelTypes" and f["mtp_alias"]["set_kind"] == "Literal"
    assert f["mtp_alias"]["location"] == "vllm/config/speculative.py:459"
    assert f["lints"]["aliases_not_in_literal"] == []
    assert "MTP402" not in _ids(reports, "0.20.0")
    assert f["runner"]["env_default"] == '"0"'
    assert f["proposers"]["v2"]["mtp"][-1]["class"] == "EagleSpeculator"
    assert f["lints"]["paren_string_in"][0]["location"] == "vllm/config/speculative.py:307"
    assert {e["name"] for e in f["env_vars"]} >= {"VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_V2_MODEL_RUNNER"}


def test_0330_chains_proposers_and_shapes(reports):
    f = _f(reports, "0.33.0")
    assert f["mtp_alias"]["location"] == "vllm/config/speculative.py:1250"
    assert f["override"]["link"]["how"] == "composed"
    assert f["override"]["link"]["location"] == "vllm/config/speculative.py:1428"
    chains = {(c["key"], c["value"]): c for c in f["draft_chains"]}
    assert chains[("model_type", "deepseek_v3")]["architectures"] == ["DeepSeekMTPModel"]
    assert chains[("model_type", "deepseek_v32")]["architectures"] == ["DeepseekV32MTPModel"]  # IfExp on use_v32_mtp
    assert chains[("arch", "MiMoV2OmniForCausalLM")]["architectures"] == ["MiMoV2OmniMTPModel"]  # walrus + local dict
    assert chains[("model_type", "qwen3_5_moe")]["architectures"] == ["Qwen3_5MoeMTP"]
    assert chains[("model_type", "interns2_mobius")]["architectures"] == ["InternS2MobiusMTP"]  # nested IfExp local
    assert chains[("model_type", "deepseek_v4")]["architectures"] == ["DeepSeekV4MTPModel"]  # overrides dict
    assert chains[("model_type", "deepseek_v41")]["architectures"] is None
    assert chains[("model_type", "step5")]["text_config_location"] == "vllm/config/speculative.py:1060"
    assert all(v is not None for c in f["draft_chains"] for v in (c["registered"] or {}).values())
    assert "MTP405" not in _ids(reports, "0.33.0")
    tf = [w for w in f["post_init_arch_writes"] if w["dynamic"]]
    assert tf[0]["to"] == ["Transformers{moe}ForMTP"] and tf[0]["location"] == "vllm/config/speculative.py:1397"
    assert tf[0]["registered"]["Transformers{moe}ForMTP"] == ["vllm/model_executor/models/registry.py:789",
                                                               "vllm/model_executor/models/registry.py:790"]
    v1 = [p["class"] for p in f["proposers"]["v1"]["mtp"]]
    assert v1 == ["Gemma4Proposer", "Step3p5MTPProposer", "EagleProposer"]
    assert f["proposers"]["v1"]["mtp"][-1]["location"] == "vllm/v1/worker/gpu_model_runner.py:651"
    v2 = f["proposers"]["v2"]["mtp"]
    assert [p["class"] for p in v2] == ["Gemma4Speculator", "MultiModuleMTPSpeculator", "MTPSpeculator"]
    assert v2[-1]["location"] == "vllm/v1/worker/gpu/spec_decode/__init__.py:74"
    assert f["runner"]["default"].startswith("auto")
    assert f["n_predict_rules"]["reuse_warning_skips"] == ["step3p5_mtp", "step5_mtp", "inkling_mtp"]
    assert f["speculators"]["merges_user_config"] is True
    assert [x["flag"] for x in f["spec_flags"]] == ["--spec-method", "--spec-model", "--spec-tokens"]
    assert "medusa" not in f["spec_config"]["method_literal"]["values"]
    assert f["lints"]["paren_string_in"][0]["location"] == "vllm/config/speculative.py:777"


def test_diff_0200_to_0330(reports):
    d = diff_vllm(reports["0.20.0"], reports["0.33.0"])
    ch = d.facts["vllm"]["diff"]["changes"]
    assert set(ch["method_literal"]["removed"]) == {"medusa", "mlp_speculator"}
    assert {"VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_FLASHINFER_MOE_BACKEND", "VLLM_NVFP4_GEMM_BACKEND", "VLLM_MXFP4_USE_MARLIN"} <= set(ch["env_vars"]["removed"])
    ids = {x.rule_id for x in d.findings}
    assert {"MTP420", "MTP421", "MTP422"} <= ids
    changed = {(k, v): (a, b) for k, v, a, b in ch["draft_chains"]["changed"]}
    assert changed[("model_type", "deepseek_v32")] == (["DeepSeekMTPModel"], ["DeepseekV32MTPModel"])


def test_unpacked_matches_wheel(reports, tmp_path: Path):
    """An unpacked wheel (only the files the rules read) gives the same facts as the .whl."""
    whl = vllm_wheel("0.33.0")
    with zipfile.ZipFile(whl) as zf:
        names = set(zf.namelist())
        for cands in WANTED.values():
            for rel in cands:
                if rel in names:
                    zf.extract(rel, tmp_path)
        dist = next(n for n in names if n.endswith(".dist-info/METADATA"))
        zf.extract(dist, tmp_path)
    folder = audit_vllm(tmp_path).facts["vllm"]
    wheel = _f(reports, "0.33.0")
    for key in ("rewrites", "draft_chains", "proposers", "mtp_alias", "env_vars", "mtp_classes", "lints"):
        assert folder[key] == wheel[key], key
    assert folder["version"] == "0.33.0"
