"""The issue's scenarios with values checked by hand: B200 -> SM 10.0 capable; RTX PRO 6000 / RTX 5090 +
flashinfer_trtllm -> error naming capability 12.0; the incident combination on a matching SM120 stack ->
no error; GB10 with an sm_120a-only sgl-kernel -> error; the H200 live collection -> not capable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.errors import InputError
from mtp_audit.preflight import preflight
from mtp_audit.preflight.facts import MachineFacts
from mtp_audit.report import Severity
from mtp_audit.synth.dumps import (
    GB10,
    INCIDENT_ARGS,
    PRO6000,
    RTX5090,
    SG,
    SM120_KERNEL,
    env,
    facts_json,
)

F = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"


def ids(report, sev=Severity.ERROR):
    return sorted({f.rule_id for f in report.findings if f.severity >= sev})


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_b200_dump_is_sm100_and_capable():
    r = preflight(env_dumps=[F / "envdumps" / "sglang-24834.txt"], use_engine_analyzer=False)
    pf = r.facts["preflight"]
    assert pf["summary"]["compute_capabilities"] == ["10.0"]
    assert [v["native_fp4"] for v in pf["verdicts"]] == ["capable"] * 8
    assert pf["summary"]["verdict"] == "capable" and ids(r) == []


@pytest.mark.parametrize("gpu", [PRO6000, RTX5090])
def test_trtllm_gemm_on_sm120_names_capability(tmp_path, gpu):
    dump = write(tmp_path, "env.txt", env(gpu, n=1))
    r = preflight(env_dumps=[dump], launch=list(SG + ("--fp4-gemm-backend", "flashinfer_trtllm")), cwd=tmp_path, use_engine_analyzer=False)
    f = [x for x in r.findings if x.rule_id == "MTP210"]
    assert len(f) == 1 and f[0].severity == Severity.ERROR
    assert "capability 120" in f[0].message and "12.0" in f[0].message
    assert "flashinfer_cudnn" in f[0].remediation
    assert r.facts["preflight"]["summary"]["verdict"] == "not capable"


def test_incident_combination_on_matching_sm120_stack(tmp_path):
    # cu130 torch nightly with an sgl-kernel rebuilt for it (Requires-Dist matches), sm_120a FP4 cubins,
    # cuDNN 9.19 / cudnn-frontend 1.16, flashinfer 0.6.8, SGLang 0.5.9.
    doc = json.loads(facts_json(torch="2.12.0+cu130", binaries=SM120_KERNEL))
    doc["requires"] = {"sgl-kernel -> torch": {"value": "==2.12.0", "source": "rebuilt wheel METADATA"}}
    p = write(tmp_path, "facts.json", json.dumps(doc))
    r = preflight(facts_file=p, launch=list(INCIDENT_ARGS), cwd=tmp_path, use_engine_analyzer=False)
    assert ids(r, Severity.WARNING) == []
    pf = r.facts["preflight"]
    assert pf["summary"]["verdict"] == "capable"
    assert pf["resolved"]["fp4_gemm_backend"]["value"] == "flashinfer_cudnn"
    assert pf["resolved"]["moe_runner_backend"]["value"] == "flashinfer_cutlass"


def test_incident_stack_with_default_backends_warns(tmp_path):
    p = write(tmp_path, "facts.json", facts_json(torch="2.9.1+cu130", binaries=SM120_KERNEL))
    r = preflight(facts_file=p, launch=list(SG), cwd=tmp_path, use_engine_analyzer=False)
    # SGLang 0.5.9: default --fp4-gemm-backend flashinfer_cutlass (NaN reports on SM120)
    assert "MTP212" in ids(r, Severity.WARNING)
    assert r.facts["preflight"]["resolved"]["fp4_gemm_backend"] == {"value": "flashinfer_cutlass", "how": "default", "source": "wheel:sglang-0.5.9:sglang/srt/server_args.py; gh:sgl-project/sglang#17369"}


def test_stock_pinned_torch_mismatch_is_error(tmp_path):
    p = write(tmp_path, "env.txt", env(torch="2.12.0+cu130"))
    r = preflight(env_dumps=[p], launch=list(INCIDENT_ARGS), cwd=tmp_path, use_engine_analyzer=False)
    assert "MTP209" in ids(r)


def test_gb10_with_sm120a_only_kernel(tmp_path):
    p = write(tmp_path, "facts.json", facts_json(GB10, n=1, binaries=SM120_KERNEL, memory=None))
    r = preflight(facts_file=p, launch=list(SG), cwd=tmp_path, use_engine_analyzer=False)
    f = [x for x in r.findings if x.rule_id == "MTP208"]
    assert f and f[0].severity == Severity.ERROR
    assert "SM121" in f[0].message and "sm_120a cubins load only on 12.0" in f[0].message
    assert "sm_121a" in f[0].remediation
    assert "MTP225" in ids(r, Severity.INFO)  # GB10 unified memory


def test_h200_live_facts_not_capable():
    facts = MachineFacts.from_dict(json.loads((F / "h200-live-facts.json").read_text()))
    assert facts.origin == "live" and facts.gpus[0].name.value == "NVIDIA H200" and facts.gpus[0].cc == (9, 0)
    assert facts.driver_version.value == "580.159.04" and facts.torch_version.value == "2.11.0+cu130"
    r = preflight(facts=facts, use_engine_analyzer=False)
    pf = r.facts["preflight"]
    assert pf["summary"]["verdict"] == "not capable"
    v = pf["verdicts"][0]
    assert v["native_fp4"] == "not capable" and "no FP4 tensor-core instructions" in v["reasons"][0]
    f = [x for x in r.findings if x.rule_id == "MTP200"]
    assert len(f) == 1 and f[0].severity == Severity.WARNING  # the SGLang version is unknown: both cases named
    assert "compute capability 9.0" in f[0].message and "Marlin W4A16" in f[0].message and "version unknown" in f[0].message
    assert "An older SGLang has no Marlin NVFP4 fallback" in f[0].detail and "BF16" in f[0].detail
    assert r.status.value == "findings"


def test_h200_on_sglang_0_5_16_names_marlin_cost(tmp_path):
    doc = json.loads((F / "h200-live-facts.json").read_text())
    doc["packages"]["sglang"] = {"value": "0.5.16", "source": "test"}
    p = write(tmp_path, "facts.json", json.dumps(doc))
    r = preflight(facts_file=p, launch=list(SG), cwd=tmp_path, use_engine_analyzer=False)
    f = [x for x in r.findings if x.rule_id == "MTP201"]
    assert len(f) == 1 and "Marlin W4A16" in f[0].message and "Cost:" in f[0].detail  # the cost is detail, not the one-line message
    assert r.facts["preflight"]["resolved"] == {}  # SM90: no native backend resolution
    assert r.facts["preflight"]["verdicts"][0]["native_fp4"] == "not capable"


def test_h200_on_old_sglang_has_no_fallback(tmp_path):
    doc = json.loads((F / "h200-live-facts.json").read_text())
    doc["packages"]["sglang"] = {"value": "0.5.9", "source": "test"}
    p = write(tmp_path, "facts.json", json.dumps(doc))
    r = preflight(facts_file=p, launch=list(SG), cwd=tmp_path, use_engine_analyzer=False)
    f = [x for x in r.findings if x.rule_id == "MTP200"]
    assert "has no Marlin NVFP4 fallback (added in 0.5.13)" in f[0].message


def test_checkpoint_quant_from_model_path(tmp_path):
    ck = F / "checkpoints" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
    dump = write(tmp_path, "env.txt", env())
    launch = ["python", "-m", "sglang.launch_server", "--model-path", str(ck), "--attention-backend", "trtllm_mha",
              "--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn"]
    r = preflight(env_dumps=[dump], launch=launch, use_engine_analyzer=False)
    ck_facts = r.facts["preflight"]["checkpoint"]
    assert ck_facts["algo"] == "NVFP4" and ck_facts["weight_only"] is False and ck_facts["kv_cache"] == "FP8"
    assert "MTP222" in ids(r)  # FP8 KV (kv_cache_quant_algo) + trtllm_mha on SM120


def test_sglang_analyzer_facts_are_used(tmp_path, monkeypatch):
    import sys
    import types
    from importlib.machinery import ModuleSpec

    from mtp_audit.report import Report

    calls = []

    def audit_sglang(target):
        calls.append(target)
        return Report.build("sglang", "fake", facts={"version": "0.5.11", "cli_arguments": {
            "--fp4-gemm-backend": {"choices": ["auto", "flashinfer_cutlass"], "default": "auto", "location": "python/sglang/srt/server_args.py:123"}},
            "remaps": [], "auto_resolutions": []})

    mod = types.ModuleType("mtp_audit.engines.sglang")
    mod.audit_sglang = audit_sglang
    mod.__spec__ = ModuleSpec("mtp_audit.engines.sglang", None)
    monkeypatch.setitem(sys.modules, "mtp_audit.engines.sglang", mod)
    monkeypatch.setattr("mtp_audit.engines.sglang.kernels.installed_sglang_root", lambda: tmp_path)
    facts = MachineFacts.from_dict(json.loads(facts_json(torch="2.11.0+cu130", sglang="0.5.11")))
    facts = MachineFacts(**{**facts.__dict__, "origin": "live"})
    r = preflight(facts=facts, launch=list(SG + ("--fp4-gemm-backend", "flashinfer_cudnn")))
    assert calls == [tmp_path]
    f = [x for x in r.findings if x.rule_id == "MTP226"]
    assert f and "server_args.py:123" in " ".join(e.value for e in f[0].evidence)
    assert r.facts["preflight"]["summary"]["flag_semantics"] == "sglang analyzer (installed sglang)"


def test_launch_of_no_known_engine_is_an_input_error(tmp_path):
    dump = write(tmp_path, "env.txt", env())
    with pytest.raises(InputError) as exc:
        preflight(env_dumps=[dump], launch=["trtllm-serve", "m", "--backend", "pytorch"], use_engine_analyzer=False)
    assert "'trtllm-serve m --backend' starts TensorRT-LLM: the preflight reads SGLang and vLLM launch commands" in str(exc.value)
    assert "pass --engine trtllm" in str(exc.value)
    with pytest.raises(InputError) as exc:
        preflight(env_dumps=[dump], launch=["sometool", "serve", "m"], use_engine_analyzer=False)
    assert "not an SGLang or vLLM launch command: expected python -m sglang.launch_server" in str(exc.value)
    assert "(got 'sometool serve m')" in str(exc.value)


def test_vllm_launch_is_accepted_with_vllm_semantics(tmp_path):
    # a vLLM command on an SGLang check_env dump: the launch names the engine; the dump's engine is a conflict
    dump = write(tmp_path, "env.txt", env())
    r = preflight(env_dumps=[dump], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"], use_engine_analyzer=False)
    assert r.facts["preflight"]["engine"]["engine"] == "vllm"
    (c,) = r.facts["preflight"]["engine"]["conflicts"]
    assert c.startswith("env dump: ") and "sglang-check-env format" in c
    assert c.endswith(" says SGLang, but the verdict is for vLLM (launch command 'vllm serve m')")
