"""The platform first (NVIDIA CUDA, AMD ROCm, Ascend CANN, CPU only), the AMD and Ascend checks (MTP240-MTP249), and
GPU names inside longer tokens. Real inputs: fixtures/preflight/envdumps/amd and .../ascend (SOURCE.txt names the public
report of each; line 1 of each file is its URL); values below read by hand from those files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight import preflight
from mtp_audit.preflight.collect import collect_live
from mtp_audit.preflight.envdump import parse_dump, read_dump
from mtp_audit.preflight.facts import MachineFacts
from mtp_audit.preflight.freeform import parse_freeform
from mtp_audit.report import Severity, exit_code
from mtp_audit.synth.dumps import MI355, rocm_env

D = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"
AMD, ASC = D / "amd", D / "ascend"


def facts(path: Path) -> MachineFacts:
    return pf.with_platform(parse_dump(read_dump(path), display=path.name))


def rules(rep) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in rep.findings:
        out.setdefault(f.rule_id, []).append(f.severity.label)
    return out


def rc_of(capsys, *args: str) -> tuple[int, str]:
    rc = main(list(args))
    return rc, capsys.readouterr().out


# --- AMD dumps ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,n,gpu,gfx,rocm,torch", [
    ("vllm-7951.txt", 1, "AMD Instinct MI300X", "gfx942", "6.1.40093-bd86f1708", "2.3.0a0+git2e4abc8"),
    ("vllm-10663.txt", 1, "AMD Instinct MI250X/MI250", "gfx90a", "6.2.41133-dd7f95766", "2.6.0.dev20240918+rocm6.2"),
    ("vllm-gfx906-30.txt", 1, "AMD Radeon Graphics", "gfx906", "6.3.42131-fa1d09cbd", "2.7.0+rocm6.3"),
    ("vllm-34641.txt", 1, "AMD MI300X", "gfx942", "7.1.1", None),
    ("vllm-35637.txt", 1, "MI355X", "gfx950", None, None),
    ("therock-1737.txt", 2, "AMD Radeon RX 7900 XTX", "gfx1100", "7.9.0", None),
])
def test_amd_dumps_platform_device_versions(name, n, gpu, gfx, rocm, torch):
    f = facts(AMD / name)
    assert f.accelerator.value == "rocm" and len(f.gpus) == n
    assert f.gpus[0].name.value == gpu and f.gpus[0].arch.value == gfx and f.gpus[0].cc is None
    assert f.rocm_version.value == rocm and f.torch_version.value == torch


def test_amd_provenance_and_partial_list():
    f = facts(AMD / "vllm-7951.txt")
    # torch collect_env names device 0 only: a partial list, and the gfx target is the one written on line 20
    assert "at least 1 GPU" in f.gpu_list.source and f.gpus[0].arch.source == "rocm-env line 20 ('gfx942' written)"
    assert f.accelerator.source == "rocm-env line 7"
    t = facts(AMD / "therock-1737.txt")
    assert [g.arch.value for g in t.gpus] == ["gfx1100", "gfx1031"] and t.driver_version.value == "6.12.12"
    a = facts(AMD / "vllm-34641.txt")
    assert a.packages["aiter"].value == "0.1.10.post2" and a.packages["vllm"].value == "0.16.0rc2.dev151+g4453ba8d9"
    assert a.env == {"VLLM_ROCM_USE_AITER": "1"}


def test_amd_fp4_verdicts_and_exit_codes(capsys):
    # MI300X, no launch: no native FP4 (gfx942), MXFP4 and NVFP4 are emulated by vLLM: warnings, exit 0
    rep = preflight(env_dumps=[AMD / "vllm-7951.txt"], engine="vllm")
    assert rep.facts["preflight"]["summary"]["verdict"] == "not capable" and rep.facts["preflight"]["summary"]["platform"] == "rocm"
    assert rules(rep)["MTP242"] == ["warning", "warning"] and "MTP200" not in rules(rep)
    # MI355X with the vLLM 0.16.0 image: native MXFP4
    rep = preflight(env_dumps=[AMD / "vllm-35637.txt"], launch=["vllm", "serve", "amd/MiniMax-M2.1-MXFP4", "--quantization", "mxfp4"])
    assert rep.facts["preflight"]["summary"]["verdict"] == "capable" and rules(rep)["MTP242"] == ["info"]
    # the reported crash (gh:vllm-project/vllm#34641): FP4 BMM on by default with AITER on gfx942, vLLM 0.16.0rc2
    rc, out = rc_of(capsys, "preflight", "--env-dump", str(AMD / "vllm-34641.txt"), "--", "VLLM_ROCM_USE_AITER=1", "vllm", "serve",
                    "deepseek-ai/DeepSeek-V3", "--tensor-parallel-size", "8")
    assert rc == 1 and "MTP244 error" in out and "does not check the GPU and crashes" in out
    rep = preflight(env_dumps=[AMD / "vllm-34641.txt"], launch=["VLLM_ROCM_USE_AITER=1", "vllm", "serve", "deepseek-ai/DeepSeek-V3"])
    assert "MXFP4 quantization is not supported on gfx942" in next(f.message for f in rep.findings if f.rule_id == "MTP244")


def test_amd_engine_paths_by_version():
    row, _ = pf_path("vllm", "0.20.0", "nvfp4")
    assert row["verdict"] == "emulated" and "EmulationNvFp4LinearKernel" in row["text"]
    row, _ = pf_path("vllm", "0.11.0", "nvfp4")
    assert "petit" in row["verdict"]
    row, why = pf_path("vllm", "0.15.0", "nvfp4")
    assert row is None and "between audited releases" in why
    row, _ = pf_path("sglang", "0.5.9", "mxfp4")
    assert row["elsewhere"] == "not runnable" and row["native_on"] == ["gfx950"]


def pf_path(engine: str, version: str, fmt: str):
    from packaging.version import Version

    from mtp_audit.preflight.vendors import engine_path

    return engine_path(engine, Version(version), fmt)


def test_sglang_mxfp4_on_gfx942_is_not_runnable(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text(read_dump(AMD / "vllm-7951.txt") + "sglang: 0.5.9\n")
    rep = preflight(env_dumps=[p], launch=["python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4"])
    assert rules(rep)["MTP243"] == ["error"] and rep.facts["preflight"]["summary"]["verdict"] == "not capable"


def test_an_engine_release_without_an_audited_amd_path_is_never_a_bare_pass(tmp_path):
    """An engine older than every audited release (SGLang 0.5.3rc0, vLLM 0.6.7 on MI300X: heldout2/sglang-10562.txt)
    was PASS with "native MXFP4 not capable" and a note. gfx942 has no native FP4 (the hardware decides): a warning
    (MTP242) as on NVIDIA, what the release does instead a note. On gfx950, which computes MXFP4 natively, whether
    the release uses that path is the open question: verdict unknown, a blocking FP4 gap, exit 3."""
    held = D / "heldout2" / "sglang-10562.txt"
    for launch, n in ((None, 2), (["vllm", "serve", "m", "--quantization", "mxfp4"], 1)):
        rep = preflight(env_dumps=[held], launch=launch)
        assert rules(rep).get("MTP242") == ["warning"] * n and exit_code(rep, Severity.ERROR) == 0
        assert rep.status == "findings" and rep.facts["preflight"]["summary"]["verdict"] == "not capable"
        assert not [g for g in rep.gaps if g.blocking] and all("older than every audited release" in g.message for g in rep.gaps
                                                               if "FP4 path" in g.message)
    p = tmp_path / "env.txt"
    p.write_text(rocm_env(MI355, vllm="0.6.7"))
    rep = preflight(env_dumps=[p], launch=["vllm", "serve", "m", "--quantization", "mxfp4"])
    assert rep.facts["preflight"]["summary"]["verdict"] == "unknown" and exit_code(rep, Severity.ERROR) == 3
    assert [g.message for g in rep.gaps if g.blocking] == [
        "MXFP4 on gfx950 with vLLM 0.6.7: vllm 0.6.7 is older than every audited release (from 0.11.0); the FP4 path (native or "
        "not) could not be told"]


def test_amd_fp4_path_is_the_engines_own():
    """The FP4 path on AMD is the chosen engine's (its KernelChecks.platform_checks): SGLang's rows for SGLang, none
    for an engine that declares no ROCm path (llama.cpp here), never SGLang's words under another engine's name."""
    sg = preflight(env_dumps=[AMD / "vllm-7951.txt"], engine="sglang")
    assert rules(sg)["MTP243"] == ["warning", "warning"]
    assert all("does not run on SGLang:" in f.message for f in sg.findings if f.rule_id == "MTP243")
    other = preflight(env_dumps=[AMD / "vllm-7951.txt"], engine="llamacpp")
    assert "MTP242" not in rules(other) and "MTP243" not in rules(other)
    assert not any("SGLang" in f.message for f in other.findings)
    # the machine's own answer stands: gfx942 has no native MXFP4
    assert other.facts["preflight"]["summary"]["verdict"] == "not capable"


def test_platform_findings_and_gaps_name_their_question():
    """Each finding and gap of the checks off NVIDIA names the question it answers or leaves open."""
    from mtp_audit.preflight.rules import rule_by_id

    assert {r: rule_by_id(r).question for r in ("MTP233", "MTP236", "MTP237", "MTP240", "MTP241", "MTP242", "MTP243", "MTP244",
                                                  "MTP245", "MTP246", "MTP247", "MTP248", "MTP249")} == {
        "MTP233": "fp4", "MTP236": "fp4", "MTP237": "starts", "MTP240": "stack", "MTP241": "fp4", "MTP242": "fp4",
        "MTP243": "fp4", "MTP244": "starts", "MTP245": "fp4", "MTP246": "starts", "MTP247": "mtp-heads", "MTP248": "fp4",
        "MTP249": "starts"}
    # the reported crash's machine (vLLM 0.16.0rc2, MI300X): the switch stops the start; vLLM's NVFP4 path on ROCm
    # is not audited for 0.16 (between the 0.11 and 0.20 rows): an FP4 gap
    rep = preflight(env_dumps=[AMD / "vllm-34641.txt"],
                    launch=["VLLM_ROCM_USE_AITER=1", "vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert {(f.rule_id, f.question) for f in rep.findings if f.rule_id != "MTP228"} == {
        ("MTP240", "stack"), ("MTP241", "fp4"), ("MTP242", "fp4"), ("MTP244", "starts")}
    (g,) = [g for g in rep.gaps if "FP4 path" in g.message]
    assert g.question == "fp4" and not g.blocking and g.message.startswith("NVFP4 on gfx942 with vLLM 0.16.0rc2")
    assert g.to_dict()["question"] == "fp4"
    rep = preflight(env_dumps=[ASC / "vllm-ascend-1047.txt"], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert {(f.rule_id, f.question) for f in rep.findings if f.rule_id != "MTP228"} == {
        ("MTP233", "fp4"), ("MTP240", "stack"), ("MTP241", "fp4"), ("MTP245", "fp4"), ("MTP246", "starts")}


# --- Ascend dumps -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,n,model,driver,cann", [
    ("vllm-ascend-1363.txt", 1, "Ascend 910B2", "23.0.3", None),
    ("vllm-ascend-1047.txt", 3, "Ascend 910 (first generation: 910A, 910 Pro A/B, 910 Premium A)", "24.1.0", None),
    ("vllm-ascend-834.txt", 1, "Ascend 910B3", "24.1.rc1", "8.1.RC1.alpha001"),
    ("vllm-ascend-4621.txt", 1, "Ascend 910B2", "25.0.rc1.1", "8.3.RC2"),
    ("vllm-ascend-3563.txt", 3, None, "24.1.rc3.7", None),
    ("nano-vllm-ascend-6.txt", 1, "Ascend 910B4", None, None),
])
def test_ascend_dumps_platform_device_versions(name, n, model, driver, cann):
    f = facts(ASC / name)
    assert f.accelerator.value == "cann" and len(f.gpus) == n and f.gpus[0].arch.value == model
    assert f.driver_version.value == driver and f.cann_version.value == cann


def test_ascend_memory_and_cut_table():
    f = facts(ASC / "vllm-ascend-1363.txt")
    assert f.gpus[0].memory_bytes.value == 65536 * 1024 * 1024 and f.gpu_list.source == "npu-smi"
    cut = facts(ASC / "vllm-ascend-1047.txt")  # the excerpt stops inside NPU 2's first row: three NPUs, a partial list
    assert "at least 3" in cut.gpu_list.source and not cut.gpus[2].memory_bytes.present and cut.gpus[1].memory_bytes.value == 32768 * 1024 * 1024


def test_ascend_is_not_applicable_exit_0(capsys):
    for name in ("vllm-ascend-1363.txt", "vllm-ascend-834.txt", "vllm-ascend-3563.txt"):
        rc, out = rc_of(capsys, "preflight", "--env-dump", str(ASC / name))
        assert rc == 0 and "the FP4 checks do not apply" in out and "MTP245 info" in out, name
    rep = preflight(env_dumps=[ASC / "vllm-ascend-834.txt"], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert rep.facts["preflight"]["summary"]["verdict"] == "not applicable"
    # the FP4 capability question does not apply, but NVFP4 weights cannot load on the NPU (MTP233, found by a new user)
    assert set(rules(rep)) == {"MTP228", "MTP240", "MTP241", "MTP245", "MTP233"} and rep.facts["preflight"]["verdicts"][0]["native_fp4"] == "not applicable"
    assert [f.severity.label for f in rep.findings if f.rule_id == "MTP233"] == ["error"]
    # an NPU is located as torch_npu names it (npu:N), not as a CUDA device
    assert {f.location.symbol for f in rep.findings if f.rule_id == "MTP228"} == {"npu:0"}


@pytest.mark.parametrize("launch,loads", [
    # the value says its format by name, whatever the engine: vLLM 0.33's online NVFP4 shorthand
    # (wheel:vllm-0.33.0:vllm/model_executor/layers/quantization/__init__.py:47)
    (["vllm", "serve", "m", "--quantization", "nvfp4_per_token"], "NVFP4"),
    # ModelOpt's mixed NVFP4 / FP8 checkpoints: the engine's own words (its KernelChecks.fp4_formats)
    (["vllm", "serve", "m", "--quantization", "modelopt_mixed"], "NVFP4"),
    (["python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "modelopt_mixed"], "NVFP4"),
    (["vllm", "serve", "m", "--quantization", "gpt_oss_mxfp4"], "MXFP4"),
    (["vllm", "serve", "m", "--quantization", "fp8"], None),
])
def test_the_launch_fp4_format_on_an_npu(launch, loads):
    rep = preflight(env_dumps=[ASC / "vllm-ascend-834.txt"], launch=launch)
    mtp245 = next(f.message for f in rep.findings if f.rule_id == "MTP245")
    assert (f"(the launch loads {loads})" in mtp245) if loads else "the launch loads" not in mtp245
    assert ("MTP233" in rules(rep)) == (loads == "NVFP4")


def test_first_generation_910_with_vllm_is_a_warning():
    rep = preflight(env_dumps=[ASC / "vllm-ascend-1047.txt"], engine="vllm")
    assert rules(rep)["MTP246"] == ["warning"]


# --- live collection off NVIDIA -------------------------------------------------------------------------------

AMD_SMI_STATIC = """GPU: 0
    ASIC:
        MARKET_NAME: AMD Instinct MI300X
        VENDOR_ID: 0x1002
        TARGET_GRAPHICS_VERSION: gfx942
    DRIVER:
        NAME: amdgpu
        VERSION: 6.8.5
GPU: 1
    ASIC:
        MARKET_NAME: AMD Instinct MI300X
        TARGET_GRAPHICS_VERSION: gfx942
"""


def _runner(outputs: dict[str, str | Exception]):
    def run(cmd, timeout):
        out = outputs.get(" ".join(cmd[:2])) or outputs.get(cmd[0])
        if out is None:
            raise FileNotFoundError(cmd[0])
        if isinstance(out, Exception):
            raise out
        return subprocess.CompletedProcess(cmd, 0, out, "")
    return run


def test_live_amd_smi():
    run = _runner({"amd-smi static": AMD_SMI_STATIC, "amd-smi version": "AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0\n"})
    m = pf.with_platform(collect_live(run=run, nvml_loader=lambda: None, environ={}))
    assert m.accelerator.value == "rocm" and [g.arch.value for g in m.gpus] == ["gfx942", "gfx942"]
    assert m.rocm_version.value == "6.2.0" and m.driver_version.value == "6.8.5"


def test_live_npu_smi_and_timeouts():
    table = read_dump(ASC / "vllm-ascend-1363.txt").split("\n", 2)[2]
    run = _runner({"amd-smi": subprocess.TimeoutExpired("amd-smi", 10), "npu-smi": table})
    m = pf.with_platform(collect_live(run=run, nvml_loader=lambda: None, environ={}, timeout=10))
    assert m.accelerator.value == "cann" and m.gpus[0].arch.value == "Ascend 910B2"
    assert "amd-smi: amd-smi did not answer within 10 s" in m.notes and "rocm-smi: rocm-smi not found" in m.notes
    none = collect_live(run=_runner({}), nvml_loader=lambda: None, environ={})
    assert none.gpus == () and "npu-smi: npu-smi not found" in none.notes


# --- free-form: platform sources, names in longer tokens ---------------------------------------------------

@pytest.mark.parametrize("text,plat,extra", [
    ("image: rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521\n", "rocm", {}),
    ("docker pull lmsysorg/sglang:v0.5.4-rocm630-mi30x\n", "rocm", {"sglang": "0.5.4"}),
    ("image: quay.io/ascend/vllm-ascend:v0.9.1\n", "cann", {"vllm-ascend": "0.9.1"}),
    ("docker run vllm/vllm-openai-rocm:v0.16.0\n", "rocm", {"vllm": "0.16.0"}),
    ("python -m sglang.launch_server --model-path m --device npu\n", "cann", {}),
    ("CANN 8.1.RC1, torch_npu 2.5.1\n", "cann", {"torch-npu": "2.5.1"}),
])
def test_freeform_platform_sources(text, plat, extra):
    f = parse_freeform(text)
    assert f.accelerator.value == plat
    assert {k: f.packages[k].value for k in extra} == extra


@pytest.mark.parametrize("text,n,name,cc", [
    ("We use 8xH100 for this.\n", 8, "H100", (9, 0)),
    ("root@b200-node-07:~# vllm serve m\n", 1, "b200", (10, 0)),
    ("Hardware: 2xB200 (SM100)\n", 2, "B200", (10, 0)),
])
def test_gpu_names_inside_longer_tokens(text, n, name, cc):
    f = parse_freeform(text)
    assert len(f.gpus) == n and f.gpus[0].name.value == name and f.gpus[0].cc == cc


@pytest.mark.parametrize("text", [
    "Model: Qwen3-30B-A3B-Instruct\n",
    "step A2 then step B3\n",
    "see llama-3.1-70b and deepseek-v3 results\n",
    "GPU: 8x AMD Instinct MI300",  # cut last line: the name touches the cut
    "Running on Ascend 910B",  # cut last line
])
def test_no_gpu_from_lookalikes_or_cut_lines(text):
    assert parse_freeform(text).gpus == ()


def test_amd_and_ascend_prose_counts_and_gfx():
    f = pf.with_platform(parse_freeform("GPU: 8x AMD Instinct MI355X (gfx950)\nROCm 7.0.2\n"))
    assert len(f.gpus) == 8 and f.gpus[0].arch.value == "gfx950" and f.rocm_version.value == "7.0.2"
    bad = parse_freeform("GPU: MI355X (gfx942)\n")  # written target and product disagree: a conflict, not a guess
    assert not bad.gpus[0].arch.present and "conflict" in bad.gpus[0].arch.missing
    a = parse_freeform("Running vllm-ascend 0.9.1 on 8*910B3 NPUs, CANN 8.1.RC1\n")
    assert len(a.gpus) == 8 and a.cann_version.value == "8.1.RC1" and a.engine.value == "vllm"


def test_facts_round_trip_keeps_platform_and_arch():
    f = facts(AMD / "vllm-7951.txt")
    d = f.to_dict()
    assert d["accelerator"]["value"] == "rocm" and d["gpus"][0]["arch"]["value"] == "gfx942"
    assert MachineFacts.from_dict(d).to_dict() == d


def test_cpu_only_collect_env_is_not_applicable(tmp_path, capsys):
    p = tmp_path / "env.txt"
    p.write_text("PyTorch version: 2.9.1+cpu\nIs debug build: False\nCUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n"
                 "Is CUDA available: False\nCUDA runtime version: No CUDA\nGPU models and configuration: No CUDA\n")
    rc, out = rc_of(capsys, "preflight", "--env-dump", str(p))
    assert rc == 0 and out.startswith("PASS: CPU only (no GPU or NPU)")
    # an FP4 launch there: no engine check covers a CPU backend's FP4 support, so could not tell (was PASS, exit 0)
    rc, out = rc_of(capsys, "preflight", "--env-dump", str(p), "--", "vllm", "serve", "m", "--quantization", "modelopt_fp4")
    assert rc == 3 and out.startswith("INCONCLUSIVE: CPU only (no GPU or NPU): could not tell whether the launch's NVFP4 weights "
                                      "run on vLLM (version unknown)")
    assert ("[preflight, blocking] the launch loads NVFP4 weights on CPU only (no accelerator): vLLM (version unknown) has no "
            "audited check of "
            "what it does with them there") in out and "native FP4 verdict unknown" not in out
    rc, out = rc_of(capsys, "preflight", "--env-dump", str(p), "--", "vllm", "serve", "m")
    assert rc == 0 and out.startswith("PASS: CPU only (no GPU or NPU)")


def test_device_flag_against_machine(capsys):
    rc, out = rc_of(capsys, "preflight", "--env-dump", str(AMD / "vllm-7951.txt"), "--", "python", "-m", "sglang.launch_server",
                    "--model-path", "m", "--device", "npu")
    assert rc == 1 and "MTP249 error" in out


def test_launch_device_names_the_platform_when_the_machine_does_not(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text("sglang 0.5.16\ntorch 2.10.0\n")
    rep = preflight(env_dumps=[p], launch=["python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu"])
    m = rep.facts["preflight"]["machine"]
    assert m["accelerator"] == {"value": "cann", "source": "launch command --device npu"}
    assert rep.facts["preflight"]["summary"]["verdict"] == "not applicable" and "MTP249" not in rules(rep)


def test_mxfp4_on_an_npu_that_no_engine_check_answers_is_could_not_tell(tmp_path):
    """vLLM (vllm-ascend) has no audited MXFP4 check on Ascend: an MXFP4 launch there was PASS on "the FP4 checks do
    not apply"; it is now could-not-tell (exit 3). SGLang's NPU --quantization mxfp4 is answered (MTP248): no gap."""
    rep = preflight(env_dumps=[ASC / "vllm-ascend-834.txt"], launch=["vllm", "serve", "m", "--quantization", "gpt_oss_mxfp4"])
    assert exit_code(rep, Severity.ERROR) == 3 and rep.facts["preflight"]["summary"]["verdict"] == "unknown"
    assert [g.message for g in rep.gaps if g.blocking] == [
        "the launch loads MXFP4 weights on Ascend CANN: vLLM (version unknown) has no audited check of what it does with "
        "them there (the NVIDIA FP4 checks do not apply); whether they load and run could not be told"]
    p = tmp_path / "env.txt"
    p.write_text(read_dump(ASC / "vllm-ascend-834.txt") + "sglang: 0.5.23\n")
    sg = preflight(env_dumps=[p], launch=["python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4"])
    assert "MTP248" in rules(sg) and not [g for g in sg.gaps if g.blocking]
    # no FP4 launch: the answer stays "not applicable" (exit 0)
    plain = preflight(env_dumps=[ASC / "vllm-ascend-834.txt"], launch=["vllm", "serve", "m"])
    assert exit_code(plain, Severity.ERROR) == 0 and plain.facts["preflight"]["summary"]["verdict"] == "not applicable"
