"""Engine-aware preflight (issue 10 §2): which engine the verdict is for, vLLM launch parsing, vLLM semantics
(Marlin fallback is a cost; an explicit FP4 backend that cannot run is an error; retired env vars), and no SGLang
advice on a vLLM dump or launch. Real inputs: fixtures/preflight/envdumps/vllm-*.txt (vLLM issue dumps, see
SOURCE.txt) and fixtures/preflight/h200-live-facts.json (recorded on the lent H200)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.preflight import preflight
from mtp_audit.preflight.engine import choose_engine, machine_hint
from mtp_audit.preflight.launch import parse_launch
from mtp_audit.synth.dumps import B200, GB10, PRO6000, facts_json, vllm_env

F = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"
DUMPS = F / "envdumps"
H200_FACTS = F / "h200-live-facts.json"
VL = ["vllm", "serve", "nvidia/DeepSeek-R1-NVFP4", "--quantization", "modelopt_fp4", "-tp", "8"]

#: SGLang flag names, env vars and packages that must never appear in advice for vLLM
SGLANG_WORDS = re.compile(r"sglang|sgl-kernel|sgl_kernel|--fp4-gemm-backend|--moe-runner-backend|--mem-fraction-static|"
                          r"--model-path|--attention-backend|--enable-pdmux|SGLANG_", re.I)


def texts(report) -> list[str]:
    """Every sentence a user reads: finding messages, fixes, evidence, gaps."""
    out = []
    for f in report.findings:
        out += [f.message, f.remediation or ""] + [f"{e.label} = {e.value}" for e in f.evidence]
    out += [g.message for g in report.gaps]
    return out


def assert_no_sglang_advice(report) -> None:
    bad = [t for t in texts(report) if SGLANG_WORDS.search(t)]
    assert bad == []


def ids(report, sev: str | None = None) -> list[str]:
    return sorted(f.rule_id for f in report.findings if sev is None or f.severity.name.lower() == sev)


def run_dump(tmp_path: Path, text: str, launch=None, **kw):
    p = tmp_path / "env.txt"
    p.write_text(text)
    return preflight(env_dumps=[p], launch=launch, use_engine_analyzer=False, **kw)


# --- parsing -------------------------------------------------------------------------------------


def test_vllm_serve_flags_parsed_like_vllm():
    la = parse_launch(["VLLM_USE_FLASHINFER_MOE_FP4=1", "vllm", "serve", "./ckpt", "-tp", "8", "--moe-backend", "FLASHINFER-CUTLASS",
                       "--kv-cache-dtype=fp8", "-q", "modelopt_fp4"])
    assert la.engine == "vllm" and la.to_dict()["is_sglang"] is False
    assert la.env == {"VLLM_USE_FLASHINFER_MOE_FP4": "1"}
    assert la.flags == {"--model-path": "./ckpt", "--tp": "8", "--moe-backend": "flashinfer_cutlass", "--kv-cache-dtype": "fp8",
                        "--quantization": "modelopt_fp4"}


def test_vllm_api_server_module_and_underscore_options():
    la = parse_launch(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--tensor_parallel_size=4",
                       "--linear_backend", "flashinfer_cudnn"])
    assert la.engine == "vllm"
    assert la.flags == {"--model-path": "m", "--tp": "4", "--linear-backend": "flashinfer_cudnn"}
    assert la.options == ("--model", "--tensor-parallel-size", "--linear-backend")


def test_sglang_with_env_prefix_still_sglang():
    la = parse_launch("env SGLANG_X=1 python -m sglang.launch_server --model-path m --tp 2".split())
    assert la.engine == "sglang" and la.env == {"SGLANG_X": "1"} and la.flags == {"--model-path": "m", "--tp": "2"}


def test_choose_engine_explicit_wins_and_conflict_is_kept():
    c = choose_engine("sglang", "vllm", "launch command 'vllm serve m'", ("vllm", "d.txt: vllm-collect-env format"))
    assert c.engine == "sglang" and c.how == "explicit"
    assert c.conflicts == ("launch command 'vllm serve m' says vLLM, but the verdict is for SGLang (--engine sglang)",
                           "d.txt: vllm-collect-env format says vLLM, but the verdict is for SGLang (--engine sglang)")
    assert choose_engine(None, None, "", None).how == "assumed"


def test_machine_hint_from_formats_both_engines_is_no_hint():
    class M:  # facts without an engine fact (the env-dump reader of this branch does not record one)
        pass
    assert machine_hint(M(), [("a.txt", ("vllm-collect-env",))]) == ("vllm", "a.txt: vllm-collect-env format")
    assert machine_hint(M(), [("a.txt", ("vllm-collect-env",)), ("b.txt", ("sglang-check-env",))]) is None


# --- real vLLM dumps -------------------------------------------------------------------------------


@pytest.mark.parametrize("name,version", [("vllm-21274.txt", "0.9.2"), ("vllm-40153.txt", "0.17.0")])
def test_real_vllm_collect_env_is_for_vllm(name, version):
    r = preflight(env_dumps=[DUMPS / name], use_engine_analyzer=False)
    s = r.facts["preflight"]["summary"]
    assert s["engine"] == "vllm" and s["vllm"] == version and s["sglang"] is None
    # the env-dump reader may record the engine itself (with a line number); else the preflight names the dump and format
    assert s["engine_source"].startswith("machine: env dump: ") and "vllm-collect-env format" in s["engine_source"]
    assert r.facts["preflight"]["machine"]["engine"]["value"] == "vllm"  # kept in the facts: --save-facts replays it
    assert_no_sglang_advice(r)


@pytest.mark.parametrize("name", ["vllm-21274.txt", "vllm-40153.txt", "vllm-57932.txt"])
def test_real_vllm_dumps_with_a_vllm_launch_get_no_sglang_advice(name):
    r = preflight(env_dumps=[DUMPS / name], launch=VL + ["--moe-backend", "flashinfer_trtllm"], use_engine_analyzer=False)
    assert r.facts["preflight"]["summary"]["engine"] == "vllm"
    assert_no_sglang_advice(r)


def test_vllm_0_9_2_dump_has_no_moe_backend_flag():
    r = preflight(env_dumps=[DUMPS / "vllm-21274.txt"], launch=VL + ["--moe-backend", "marlin"], use_engine_analyzer=False)
    (f,) = [f for f in r.findings if f.rule_id == "MTP226"]
    assert f.severity.name == "ERROR"
    assert f.message == "vLLM 0.9.2 has no --moe-backend option (added in vLLM 0.17.0): the server stops with 'unrecognized arguments'"


def test_torch_format_vllm_dump_without_engine_line_is_assumed_sglang_and_says_so():
    # vllm-57932 is cut before "vLLM Version": nothing in it names the engine
    r = preflight(env_dumps=[DUMPS / "vllm-57932.txt"], use_engine_analyzer=False)
    assert r.facts["preflight"]["engine"]["how"] == "assumed"
    (v,) = [f for f in r.findings if f.rule_id == "MTP228"]
    assert " native FP4 unknown on SGLang (version unknown) (assumed) — " in v.message
    assert {e.label: e.value for e in v.evidence}["engine"].endswith("pass --engine vllm for vLLM semantics)")
    assert r.facts["preflight"]["answer"][0].startswith("could not tell whether at least 1 x NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edi")  # the pasted list is cut
    r2 = preflight(env_dumps=[DUMPS / "vllm-57932.txt"], use_engine_analyzer=False, engine="vllm")
    assert r2.facts["preflight"]["summary"]["engine"] == "vllm"
    assert_no_sglang_advice(r2)


def test_saved_facts_of_a_vllm_dump_replay_as_vllm(tmp_path, capsys):
    saved = tmp_path / "facts.json"
    assert main(["preflight", "--env-dump", str(DUMPS / "vllm-40153.txt"), "--save-facts", str(saved), "-f", "json"]) == 3
    capsys.readouterr()
    r = preflight(facts_file=saved, launch=VL, use_engine_analyzer=False)
    assert r.facts["preflight"]["summary"]["engine"] == "vllm" and r.facts["preflight"]["summary"]["vllm"] == "0.17.0"


def test_cli_vllm_dump_sm120_explicit_trtllm_moe_exit_1(capsys):
    rc = main(["preflight", "--env-dump", str(DUMPS / "vllm-57932.txt"), "--engine", "vllm", "-f", "json", "--",
               *VL, "--moe-backend", "flashinfer_trtllm"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1
    f231 = [f for f in data["findings"] if f["rule_id"] == "MTP231"]
    assert len(f231) == 1 and f231[0]["severity"] == "error"
    assert f231[0]["remediation"] == "--moe-backend flashinfer_cutlass"


def test_real_free_form_gb10_report_with_the_reported_vllm_launch():
    # gh:vllm-project/vllm#30163 (free-form): 2x DGX Spark, three vLLM versions tried, VLLM_USE_FLASHINFER_MOE_FP4=1
    dump = DUMPS / "freeform" / "vllm-30163.txt"
    launch = ["VLLM_USE_FLASHINFER_MOE_FP4=1", "vllm", "serve", "lukealonso/GLM-4.6-NVFP4", "--quantization", "modelopt_fp4", "-tp", "2"]
    r = preflight(env_dumps=[dump], launch=launch, use_engine_analyzer=False)
    s = r.facts["preflight"]["summary"]
    assert s["engine"] == "vllm" and s["compute_capabilities"] == ["12.1"] and s["vllm"] is None  # three versions: a conflict
    assert ids(r, "error") == []  # FlashInfer CUTLASS NVFP4 MoE runs on the SM120 family
    assert ("vLLM version unknown: what VLLM_USE_FLASHINFER_MOE_FP4=1 does on this GPU depends on it (vLLM 0.15.0-0.23 raise when no "
            "FlashInfer NVFP4 MoE runs; 0.11 falls back to Marlin)") in [g.message for g in r.gaps]
    r2 = preflight(env_dumps=[dump], launch=launch + ["--moe-backend", "flashinfer_trtllm"], use_engine_analyzer=False)
    (f,) = [f for f in r2.findings if f.rule_id == "MTP231"]
    assert f.message.startswith("--moe-backend flashinfer_trtllm: vLLM's flashinfer_trtllm NVFP4 MoE cannot run on GPUs 0-1 (DGX Spark, SM121)")
    assert f.remediation == "--moe-backend flashinfer_cutlass"
    assert_no_sglang_advice(r)
    assert_no_sglang_advice(r2)


# --- recorded H200 facts with a vLLM launch ----------------------------------------------------------


def test_h200_vllm_launch_marlin_fallback_is_a_warning_with_the_cost(capsys):
    rc = main(["preflight", "--facts", str(H200_FACTS), "-f", "json", "--", *VL])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    sev = {f["rule_id"]: f["severity"] for f in data["findings"]}
    assert sev == {"MTP201": "warning", "MTP228": "info"}
    (w,) = [f for f in data["findings"] if f["rule_id"] == "MTP201"]
    assert "falls back on its own to Marlin W4A16" in w["message"] and "Cost: no FP4 tensor-core math" in w["message"]
    pf = data["facts"]["preflight"]
    assert pf["summary"]["engine"] == "vllm" and pf["summary"]["moe_backend"] == "auto -> marlin (below SM100)"
    (v,) = [f for f in data["findings"] if f["rule_id"] == "MTP228"]
    assert v["message"] == ("GPU 0 (NVIDIA H200, compute capability 9.0): native FP4 not capable on vLLM (version unknown) — SM90 has no "
                            "FP4 tensor-core instructions (FP8 is the narrowest)")
    assert {"label": "engine", "value": "vLLM (launch: launch command 'vllm serve nvidia/DeepSeek-R1-NVFP4')"} in v["evidence"]


def test_h200_sglang_launch_same_facts_is_a_warning_while_the_version_is_unknown(capsys):
    rc = main(["preflight", "--facts", str(H200_FACTS), "-f", "json", "--", "python", "-m", "sglang.launch_server", "--model-path", "m",
               "--quantization", "modelopt_fp4"])
    data = json.loads(capsys.readouterr().out)
    # no sglang in the facts: >= 0.5.13 falls back to Marlin, older refuses the GPU; which one is not known
    assert rc == 0 and {f["rule_id"] for f in data["findings"] if f["severity"] == "warning"} == {"MTP200"}
    assert not [f for f in data["findings"] if f["severity"] == "error"]
    assert data["facts"]["preflight"]["summary"]["engine"] == "sglang"


@pytest.mark.parametrize("extra,fix", [
    (["--moe-backend", "flashinfer_trtllm"], "--moe-backend marlin (or drop it: below SM100 vLLM picks Marlin W4A16 by itself)"),
    (["--moe-backend", "cutlass"], "--moe-backend marlin (or drop it: below SM100 vLLM picks Marlin W4A16 by itself)"),
])
def test_h200_vllm_explicit_backend_that_cannot_run_is_an_error(extra, fix):
    r = preflight(facts_file=H200_FACTS, launch=VL + extra, use_engine_analyzer=False)
    (f,) = [f for f in r.findings if f.rule_id == "MTP231"]
    assert f.severity.name == "ERROR" and f.remediation == fix
    assert "MTP201" not in ids(r)  # the load stops at the explicit backend first
    assert r.facts["preflight"]["verdicts"][0]["reasons"][1].startswith("MTP231: ")
    assert_no_sglang_advice(r)


def test_h200_vllm_moe_marlin_explicit_is_fine():
    r = preflight(facts_file=H200_FACTS, launch=VL + ["--moe-backend", "marlin"], use_engine_analyzer=False)
    assert ids(r, "error") == [] and "MTP201" in ids(r)


def test_engine_conflict_shown_as_evidence():
    r = preflight(facts_file=H200_FACTS, launch=VL, use_engine_analyzer=False, engine="sglang")
    (v,) = [f for f in r.findings if f.rule_id == "MTP228"]
    ev = {e.label: e.value for e in v.evidence}
    assert ev["engine"] == "SGLang (explicit: --engine sglang)"
    assert ev["engine conflict"] == ("launch command 'vllm serve nvidia/DeepSeek-R1-NVFP4' says vLLM, but the verdict is for SGLang "
                                     "(--engine sglang)")


# --- vLLM versions and env vars (dumps in the real collect-env format) ----------------------------------


def test_vllm_dump_env_section_read_and_cutlass_gemm_refused_below_sm100(tmp_path):
    r = run_dump(tmp_path, vllm_env(env_vars={"VLLM_NVFP4_GEMM_BACKEND": "cutlass"}), VL)
    assert r.facts["preflight"]["machine"]["env"]["VLLM_NVFP4_GEMM_BACKEND"] == "cutlass"
    (f,) = [f for f in r.findings if f.rule_id == "MTP231"]
    assert f.message.startswith("VLLM_NVFP4_GEMM_BACKEND=cutlass: vLLM's cutlass NVFP4 GEMM cannot run on GPUs 0-7 (NVIDIA H200, SM90)")
    assert f.remediation.startswith("VLLM_NVFP4_GEMM_BACKEND=marlin")
    assert_no_sglang_advice(r)


def test_vllm_flashinfer_moe_env_below_sm100_raises_from_0_15(tmp_path):
    launch = ["VLLM_USE_FLASHINFER_MOE_FP4=1"] + VL
    assert "MTP231" in ids(run_dump(tmp_path, vllm_env(vllm="0.15.0"), launch))
    r11 = run_dump(tmp_path, vllm_env(vllm="0.11.0"), launch)  # 0.11: a warning in vLLM's log, then Marlin
    assert "MTP231" not in ids(r11) and "MTP201" in ids(r11)


def test_vllm_latency_backend_falls_back_off_sm100_but_masked_gemm_does_not(tmp_path):
    base = ["VLLM_USE_FLASHINFER_MOE_FP4=1"]
    ok = run_dump(tmp_path, vllm_env(PRO6000, vllm="0.20.0"), base + ["VLLM_FLASHINFER_MOE_BACKEND=latency"] + VL)
    assert "MTP231" not in ids(ok)
    bad = run_dump(tmp_path, vllm_env(PRO6000, vllm="0.20.0"), base + ["VLLM_FLASHINFER_MOE_BACKEND=masked_gemm"] + VL)
    (f,) = [f for f in bad.findings if f.rule_id == "MTP231"]
    assert f.remediation.startswith("VLLM_FLASHINFER_MOE_BACKEND=throughput")


def test_vllm_0_24_retired_env_var_is_a_warning_and_says_which_flag(tmp_path, capsys):
    p = tmp_path / "env.txt"
    p.write_text(vllm_env(B200, vllm="0.24.0", env_vars={"VLLM_NVFP4_GEMM_BACKEND": "flashinfer-cudnn"}))
    rc = main(["preflight", "--env-dump", str(p), "-f", "json", "--fail-on", "warning", "--", *VL])
    data = json.loads(capsys.readouterr().out)
    (f,) = [f for f in data["findings"] if f["rule_id"] == "MTP232"]
    assert rc == 1 and f["severity"] == "warning"
    assert f["remediation"] == "unset VLLM_NVFP4_GEMM_BACKEND and pass --linear-backend <backend> (e.g. --linear-backend marlin)"
    assert not [x for x in data["findings"] if x["rule_id"] == "MTP231"]  # not read, so not checked as a request


def test_vllm_linear_backend_before_0_24_and_bad_moe_choice(tmp_path):
    r = run_dump(tmp_path, vllm_env(B200, vllm="0.20.0"), VL + ["--linear-backend", "cutlass", "--moe-backend", "flashinfer_b12x"])
    msgs = sorted(f.message for f in r.findings if f.rule_id == "MTP226")
    assert msgs[0] == ("--moe-backend flashinfer_b12x is not accepted by vLLM 0.20.0: argparse stops with 'invalid choice' (choices: auto, "
                       "triton, deep_gemm, deep_gemm_mega_moe, cutlass, flashinfer_trtllm, flashinfer_cutlass, flashinfer_cutedsl, marlin, aiter, emulation)")
    assert msgs[1] == "vLLM 0.20.0 has no --linear-backend option (added in vLLM 0.22.0): the server stops with 'unrecognized arguments'"
    assert r.facts["preflight"]["summary"]["verdict"] == "capable"  # command-line findings stay out of the GPU verdict


def test_gb10_vllm_trtllm_gemm_fix_is_cudnn_and_memory_advice_is_vllm(tmp_path):
    text = vllm_env(GB10, n=1, vllm="0.24.0", torch="2.10.0+cu130", torch_cuda="13.0")
    r = run_dump(tmp_path, text, VL + ["--linear-backend", "flashinfer_trtllm"])
    (f,) = [f for f in r.findings if f.rule_id == "MTP231"]
    assert f.remediation == "--linear-backend flashinfer_cudnn"
    assert_no_sglang_advice(r)


def test_gb10_unified_memory_advice_names_the_vllm_flag(tmp_path):
    p = tmp_path / "facts.json"
    p.write_text(facts_json(GB10, n=1, memory=None))  # memory 'Not Supported' (gh:NVIDIA/k8s-device-plugin#1482)
    r = preflight(facts_file=p, launch=VL, use_engine_analyzer=False)
    (m,) = [f for f in r.findings if f.rule_id == "MTP225"]
    assert m.remediation == "--gpu-memory-utilization 0.85 or less on GB10 (vLLM)"
    r2 = preflight(facts_file=p, launch=["python", "-m", "sglang.launch_server", "--model-path", "m"], use_engine_analyzer=False)
    (m2,) = [f for f in r2.findings if f.rule_id == "MTP225"]
    assert m2.remediation == "lower --mem-fraction-static (e.g. 0.7) (SGLang)"



def test_vllm_0_8_5_has_no_fallback_error(tmp_path):
    r = run_dump(tmp_path, vllm_env(vllm="0.8.5", torch="2.6.0+cu124", torch_cuda="12.4"), VL)
    (f,) = [f for f in r.findings if f.rule_id == "MTP200"]
    assert f.severity.name == "ERROR" and "vLLM 0.8.5 has no Marlin NVFP4 fallback" in f.message
    assert f.remediation.startswith("Upgrade vLLM (>= 0.9.2 falls back to Marlin W4A16 on its own below SM100)")


def test_eight_h200_vllm_one_marlin_warning_for_the_machine(tmp_path):
    r = run_dump(tmp_path, vllm_env(vllm="0.20.0"), VL)
    (w,) = [f for f in r.findings if f.rule_id == "MTP201"]
    assert w.location.symbol == "machine"
    assert w.message.startswith("GPUs 0-7 (NVIDIA H200, SM90): no FP4 tensor cores; vLLM 0.20.0 falls back on its own to Marlin W4A16")
    assert r.facts["preflight"]["summary"]["vllm"] == "0.20.0" and ids(r) == ["MTP201", "MTP228"]
    # the answer line the text report opens with names the engine and that the fallback is a cost, not a failure
    assert r.facts["preflight"]["answer"] == ["8 x NVIDIA H200 (compute capability 9.0) cannot run native FP4 on vLLM 0.20.0: SM90 has no "
                                              "FP4 tensor-core instructions (FP8 is the narrowest); it runs weight-only instead (MTP201)"]


def test_mxfp4_on_h200_vllm_is_weight_only_not_marlin_nvfp4(tmp_path):
    r = run_dump(tmp_path, vllm_env(vllm="0.20.0"), ["vllm", "serve", "openai/gpt-oss-120b", "--quantization", "mxfp4"])
    (w,) = [f for f in r.findings if f.rule_id == "MTP201"]
    assert w.severity.name == "WARNING"
    assert w.message.startswith("GPUs 0-7 (NVIDIA H200, SM90): no FP4 tensor cores; vLLM 0.20.0 runs this MXFP4 checkpoint with a weight-only "
                                "MXFP4 MoE kernel (Triton for gpt-oss, else Marlin)")
    assert "NVFP4" not in w.message
    old = run_dump(tmp_path, vllm_env(vllm="0.11.0"), ["vllm", "serve", "openai/gpt-oss-120b", "--quantization", "mxfp4"])
    assert "MTP201" not in ids(old)
    assert "vLLM 0.11.0: its MXFP4 path below SM100 is in the capability matrix for vLLM >=0.20.0 only (weight-only MXFP4 kernels there)" in [
        g.message for g in old.gaps]


@pytest.mark.parametrize("version,rejected", [("0.21.0", True), ("0.22.0", False), ("0.23.0", False)])
def test_linear_backend_exists_from_0_22(tmp_path, version, rejected):
    r = run_dump(tmp_path, vllm_env(B200, vllm=version), VL + ["--linear-backend", "flashinfer_cudnn"])
    assert ("MTP226" in ids(r)) is rejected
    assert "MTP231" not in ids(r)  # cuDNN FP4 GEMM runs on SM100


@pytest.mark.parametrize(("given", "engine_id"), [("trtllm", "trtllm"), ("tensorrt-llm", "trtllm"), ("llama.cpp", "llamacpp"),
                                                  ("llamacpp", "llamacpp"), ("VLLM", "vllm"), ("sglang", "sglang")])
def test_cli_engine_takes_every_registered_id_and_alias(given: str, engine_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``preflight --engine`` takes what the library takes (the registry's ids and aliases), as its id."""
    rc = main(["preflight", "--no-machine", "--engine", given, "-f", "json", "--", "vllm", "serve", "./nonexistent"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["facts"]["preflight"]["engine"]["engine"] == engine_id
    assert doc["facts"]["preflight"]["engine"]["how"] == "explicit"


def test_cli_engine_unknown_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--no-machine", "--engine", "foo"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'foo' is not a registered engine (ids: sglang, vllm, llamacpp, trtllm;" in err


@pytest.mark.parametrize(("argv", "label", "engine_id"), [(["trtllm-serve", "/x", "--config", "a.yaml"], "TensorRT-LLM", "trtllm"),
                                                          (["llama-server", "-m", "x.gguf"], "llama.cpp", "llamacpp")])
def test_other_engines_launch_refused_naming_what_preflight_reads(argv: list[str], label: str, engine_id: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--no-machine", "--", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"starts {label}: the preflight reads SGLang and vLLM launch commands" in err
    assert f"pass --engine {engine_id}" in err


def test_verdict_line_of_another_engine_names_no_sglang_version() -> None:
    """``--engine trtllm`` on a check_env dump of SGLang 0.5.12.dev136 (sglang-24834.txt): the verdict is for
    TensorRT-LLM, whose version the dump does not state; SGLang's version is not TensorRT-LLM's."""
    r = preflight(env_dumps=[DUMPS / "sglang-24834.txt"], engine="trtllm", use_engine_analyzer=False)
    (f,) = [f for f in r.findings if f.rule_id == "MTP228"]
    assert "native FP4 unknown on TensorRT-LLM (version unknown) — " in f.message  # no TensorRT-LLM release read: could not tell
    assert "0.5.12" not in f.message


def test_engine_facts_by_engine_id_and_the_old_keywords() -> None:
    """``engine_facts`` (engine id -> that engine's analyzer facts) replaces ``sglang_facts`` / ``vllm_version`` /
    ``use_sglang_analyzer``; the old keywords still work, with a DeprecationWarning, through the library function and
    the checked public one. Only the entry of the engine the verdict is for is used."""
    import warnings

    import mtp_audit
    from mtp_audit.engines.sglang.preflight_rules import EXAMPLE_SGLANG_FACTS

    dump = [DUMPS / "vllm-57932.txt"]
    new = preflight(env_dumps=dump, launch=VL, engine_facts={"vllm": {"version": "0.24.0"}}, use_engine_analyzer=False)
    assert new.facts["preflight"]["summary"]["vllm"] == "0.24.0"
    for call in (preflight, mtp_audit.preflight):
        with pytest.warns(DeprecationWarning, match="vllm_version"):
            old = call(env_dumps=dump, launch=VL, vllm_version="0.24.0", use_sglang_analyzer=False)
        assert old.facts["preflight"]["summary"] == new.facts["preflight"]["summary"]
        assert [(f.rule_id, f.message) for f in old.findings] == [(f.rule_id, f.message) for f in new.findings]
    sg = [DUMPS / "sglang-24834.txt"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = preflight(env_dumps=sg, engine_facts={"sglang": EXAMPLE_SGLANG_FACTS, "vllm": {"version": "0.24.0"}},
                      use_engine_analyzer=False)
    summary = r.facts["preflight"]["summary"]
    assert (summary["sglang"], summary["vllm"], summary["flag_semantics"]) == ("0.5.9", None, "sglang analyzer (sglang 0.5.9)")
    with pytest.warns(DeprecationWarning, match="sglang_facts"):
        assert preflight(env_dumps=sg, sglang_facts=EXAMPLE_SGLANG_FACTS).facts["preflight"]["summary"] == summary
    with pytest.raises(TypeError, match="sglang_facts"):
        preflight(env_dumps=sg, sglang_facts={}, engine_facts={"sglang": {}})


def test_preflight_rules_gaps_and_findings_name_their_question(tmp_path: Path) -> None:
    """Every preflight rule names the question its findings answer (MTP240, the platform and its stack: stack); a dump
    without a GPU list leaves the GPU count and the FP4 verdict open, each gap saying which."""
    from mtp_audit.preflight.rules import preflight_rules
    from mtp_audit.report import questions as Q

    assert [r.id for r in preflight_rules() if r.question is None] == []
    assert {r.id: r.question for r in preflight_rules()}.items() >= {
        "MTP240": Q.STACK, "MTP200": Q.FP4, "MTP205": Q.STACK, "MTP225": Q.MEMORY, "MTP226": Q.STARTS, "MTP231": Q.FP4, "MTP247": Q.MTP_HEADS}.items()
    r = run_dump(tmp_path, "PyTorch version: 2.9.1+cu128\nCUDA used to build PyTorch: 12.8\n")
    assert [(g.question, g.blocking, g.message.split(" (")[0].split(":")[0]) for g in r.gaps] == [
        (Q.FP4, True, "native FP4 verdict unknown"), (Q.GPU_COUNT, True, "no GPU information")]
    r = run_dump(tmp_path, vllm_env(B200, torch="2.9.1+cu124", torch_cuda="12.4"), VL)
    assert {f.rule_id: f.question for f in r.findings}["MTP203"] == Q.STACK


def test_launch_scopes_preflight_gaps_by_question_not_by_text() -> None:
    """A launch that runs no FP4 kernels turns the preflight's blocking FP4 gaps into notes, whatever their words; a
    blocking gap of another question stays blocking even when its text says FP4."""
    from mtp_audit.engines.outcome import scope_gap
    from mtp_audit.report import Gap
    from mtp_audit.report import questions as Q

    cc = Gap("preflight", "GPU 0: compute capability unknown (not in the dump)", None, True, Q.FP4)
    stack = Gap("preflight", "driver 580.65 is written without all its parts (CUDA 13.0 for the FP4 kernels)", None, True, Q.STACK)
    scoped = [scope_gap(g, fp4=False, speculative=True, spec_flag="--speculative-config") for g in (cc, stack)]
    assert [(g.blocking, g.message.endswith("(a note for this launch: it runs no FP4 kernels)")) for g in scoped] == [
        (False, True), (True, False)]
    assert scope_gap(cc, fp4=None, speculative=True, spec_flag="--speculative-config") == cc
