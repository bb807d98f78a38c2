"""Fresh-user findings on ``mtp-audit preflight``: dumps of different machines, launch-flag findings
kept out of the per-GPU verdict, flag choices, the facts summary, non-SGLang launch commands, grouped
MTP228 verdicts, known-bad messages and user-facing sources. Values checked by hand against the
fixture dumps in fixtures/preflight/envdumps (their SOURCE.txt names the issues they come from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.preflight import preflight
from mtp_audit.synth.dumps import B200, env

F = Path(__file__).resolve().parent.parent / "fixtures" / "preflight"
E = F / "envdumps"


def run_cli(args, capsys):
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- 1. dumps of different machines are the user's mistake -------------------------------------


@pytest.mark.parametrize("a,b,fact", [
    # h200-nvidia-smi.txt: 1x NVIDIA H200 (9.0), driver 580.159.04; sglang-11208.txt: 4x NVIDIA GB200 (10.0), driver 570.172.08
    ("h200-nvidia-smi.txt", "sglang-11208.txt", "GPU list differs: 1x NVIDIA H200 (9.0) vs 4x NVIDIA GB200 (10.0)"),
    # pytorch-150733.txt: 1x RTX 5090 D (12.0); sglang-24834.txt: 8x B200 (10.0)
    ("pytorch-150733.txt", "sglang-24834.txt", "GPU list differs: 1x NVIDIA GeForce RTX 5090 D (12.0) vs 8x NVIDIA B200 (10.0)"),
])
def test_dumps_of_two_machines_are_an_input_error(capsys, a, b, fact):
    rc, out, err = run_cli(["preflight", "--env-dump", str(E / a), "--env-dump", str(E / b)], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: ")
    assert a in err and b in err and fact in err


def test_same_gpus_different_driver_is_a_conflict(tmp_path):
    one = tmp_path / "one.txt"
    two = tmp_path / "two.txt"
    one.write_text(env(B200, n=2, driver="580.95.05"))
    two.write_text(env(B200, n=2, driver="570.172.08"))
    with pytest.raises(InputError) as exc:
        preflight(env_dumps=[one, two], use_engine_analyzer=False)
    assert "one.txt" in str(exc.value) and "two.txt" in str(exc.value)
    assert "driver version differs: 580.95.05 vs 570.172.08" in str(exc.value)


def test_dumps_of_one_machine_still_merge():
    # both GB10 (12.1), driver 580.95.05: sglang-13198.txt has torch 2.9.1+cu130, the nvidia-smi dump the driver's CUDA 13.0
    r = preflight(env_dumps=[E / "sglang-13198.txt", E / "k8s-device-plugin-1482.txt"], use_engine_analyzer=False)
    m = r.facts["preflight"]["machine"]
    assert [g["name"]["value"] for g in m["gpus"]] == ["NVIDIA GB10"]
    assert m["driver_version"]["value"] == "580.95.05"
    assert m["torch_version"]["value"] == "2.9.1+cu130"
    assert m["cuda_driver_version"]["value"] == "13.0"
    assert r.facts["preflight"]["summary"]["origin"] == "env-dump:sglang-check-env+nvidia-smi"


# --- 5. a launch command that is not SGLang ------------------------------------------------------


def test_non_sglang_launch_is_one_line_exit_2(capsys):
    rc, out, err = run_cli(["preflight", "--env-dump", str(E / "sglang-24834.txt"), "--", "ls", "-la"], capsys)
    assert rc == 2 and out == ""
    assert err == ("mtp-audit: error: launch command: not an SGLang or vLLM launch command: expected python -m sglang.launch_server …, "
                   "sglang serve …, vllm serve … or python -m vllm.entrypoints.openai.api_server … (got 'ls -la')\n")


# --- 2. a flag the installed SGLang lacks is not "not capable" ------------------------------------


def test_unknown_flag_of_old_sglang_keeps_gb200_capable(capsys):
    # sglang-11208.txt: SGLang 0.5.2 (no --fp4-gemm-backend before 0.5.8), 4x GB200 (10.0), torch 2.8.0+cu129, driver 570.172.08
    rc, out, _ = run_cli(["preflight", "--env-dump", str(E / "sglang-11208.txt"), "-f", "json", "--",
                          "python", "-m", "sglang.launch_server", "--fp4-gemm-backend", "flashinfer_trtllm"], capsys)
    d = json.loads(out)
    pf = d["facts"]["preflight"]
    assert [v["native_fp4"] for v in pf["verdicts"]] == ["capable"] * 4
    assert pf["summary"]["verdict"] == "capable"
    errors = [f for f in d["findings"] if f["severity"] == "error"]
    assert [f["rule_id"] for f in errors] == ["MTP226"]
    assert "SGLang 0.5.2 has no --fp4-gemm-backend option" in errors[0]["message"]
    assert rc == 1  # the launch still fails at argparse


# --- 3. values outside the choices, unknown options ----------------------------------------------

LS = ["python", "-m", "sglang.launch_server", "--model-path", "m"]


@pytest.mark.parametrize("flag,choice", [
    # choices of wheel:sglang-0.5.9 server_args.py (FP4_GEMM_RUNNER_BACKEND_CHOICES, MOE_RUNNER_BACKEND_CHOICES)
    ("--fp4-gemm-backend", "auto, flashinfer_cudnn, flashinfer_cutlass, flashinfer_trtllm"),
    ("--moe-runner-backend", "auto, deep_gemm, triton, triton_kernel, flashinfer_trtllm, flashinfer_cutlass, flashinfer_mxfp4, flashinfer_cutedsl, cutlass"),
])
def test_value_outside_choices_is_an_error_naming_them(tmp_path, capsys, flag, choice):
    p = tmp_path / "env.txt"
    p.write_text(env(B200, n=8, torch="2.9.1+cu128"))  # SGLang 0.5.9, 8x B200
    rc, out, _ = run_cli(["preflight", "--env-dump", str(p), "-f", "json", "--", *LS, flag, "nonsense"], capsys)
    d = json.loads(out)
    f = [x for x in d["findings"] if x["rule_id"] == "MTP226"]
    assert len(f) == 1 and f[0]["severity"] == "error" and rc == 1
    assert f[0]["message"] == f"{flag} nonsense is not accepted by SGLang 0.5.9: argparse stops with 'invalid choice' (choices: {choice})"
    assert [v["native_fp4"] for v in d["facts"]["preflight"]["verdicts"]] == ["capable"] * 8


def test_value_of_a_version_outside_the_matrix_is_named_in_a_gap():
    # sglang-24834.txt: 0.5.12.dev136 sorts before 0.5.12 and after 0.5.11 (PEP 440): no matrix row holds it
    r = preflight(env_dumps=[E / "sglang-24834.txt"], launch=LS + ["--fp4-gemm-backend", "nonsense"], use_engine_analyzer=False)
    assert [x for x in r.findings if x.rule_id == "MTP226"] == []
    gaps = [g.message for g in r.gaps if g.message.startswith("--fp4-gemm-backend nonsense not checked")]
    assert gaps == ["--fp4-gemm-backend nonsense not checked: the choices of SGLang 0.5.12.dev136+g9dfb1d2eb are not in the capability matrix; "
                    "the full argparse check of the command (prefixes, types, every value) is `mtp-audit launch --sglang <wheel|checkout>`"]


def test_quantization_outside_choices_of_0_5_9(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text(env(B200, n=1, torch="2.9.1+cu128"))  # SGLang 0.5.9
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "nvfp4_online"], use_engine_analyzer=False)
    f = [x for x in r.findings if x.rule_id == "MTP226"]
    # nvfp4_online first appears in QUANTIZATION_CHOICES of 0.5.15 (absent in 0.5.9 and 0.5.12)
    assert len(f) == 1 and "--quantization nvfp4_online is not accepted by SGLang 0.5.9" in f[0].message
    assert "modelopt_fp4" in f[0].message and "quark_int4fp8_moe" in f[0].message
    assert "wheel:sglang-0.5.9:sglang/srt/server_args.py:94 QUANTIZATION_CHOICES" in [e.value for e in f[0].evidence]
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "modelopt_fp4"], use_engine_analyzer=False)
    assert [x for x in r.findings if x.rule_id == "MTP226"] == []


def test_unknown_option_is_a_warning_with_the_option_table():
    from mtp_audit.engines.sglang.preflight_rules import EXAMPLE_SGLANG_FACTS

    r = preflight(env_dumps=[E / "sglang-24834.txt"], launch=LS + ["--bogus-flag", "x", "--fp4-gemm", "flashinfer_cudnn"],
                  engine_facts={"sglang": EXAMPLE_SGLANG_FACTS})
    f = [x for x in r.findings if x.rule_id == "MTP230"]
    assert len(f) == 1 and f[0].severity.name == "WARNING"  # --fp4-gemm is a prefix argparse accepts
    assert f[0].message.startswith("SGLang 0.5.9 has no option --bogus-flag: the launch would stop with 'unrecognized arguments'")
    assert "mtp-audit launch" in f[0].message


def test_unknown_option_without_table_is_named_in_a_gap(capsys):
    rc, out, _ = run_cli(["preflight", "--env-dump", str(E / "sglang-24834.txt"), "--", *LS, "--bogus-flag", "x"], capsys)
    assert "options not checked (no SGLang option table at hand): --bogus-flag; the full argparse check" in out
    assert "mtp-audit launch --sglang" in out
    assert rc == 0  # a non-blocking gap: the machine itself passes


# --- 6. one MTP228 per (name, compute capability, verdict) ---------------------------------------


def test_one_verdict_line_for_eight_identical_b200(capsys):
    rc, out, _ = run_cli(["preflight", "--env-dump", str(E / "sglang-18943.txt")], capsys)
    lines = [ln for ln in out.splitlines() if "MTP228" in ln]
    # SGLang 0.0.0.dev1+gd3bae71e3 is a source checkout: its torch pin cannot be checked, so the verdict is undecided
    assert lines == ["cuda:0-7: MTP228 info: GPUs 0-7 (NVIDIA B200, compute capability 10.0): native FP4 unknown on SGLang "
                     "(version unknown) — SM100 has FP4 tensor cores, but SGLang 0.0.0.dev1+gd3bae71e3 is not a release, so "
                     "its torch pin (MTP209) was not checked"]
    assert rc == 3


def test_taking_sglangs_version_away_is_could_not_tell_not_a_pass(tmp_path, capsys):
    """Found by a fresh-user run: sglang-13198 (GB10, SGLang 0.5.5.post1, torch 2.9.1) fails on MTP209 (SGLang's torch
    pin); the same check_env with its 'sglang: 0.5.5.post1' cut said PASS ("no blocking problem found in the stack").
    Without the release the pin is not checked: could not tell (exit 3), never a new pass."""
    full = (E / "sglang-13198.txt").read_text()
    assert " sglang: 0.5.5.post1" in full
    cut = tmp_path / "cut.txt"
    cut.write_text(full.replace(" sglang: 0.5.5.post1", ""))
    assert run_cli(["preflight", "--env-dump", str(E / "sglang-13198.txt")], capsys)[0] == 1
    rc, out, _ = run_cli(["preflight", "--env-dump", str(cut)], capsys)
    assert rc == 3 and out.startswith("INCONCLUSIVE: could not tell whether GPU 0 (NVIDIA GB10, compute capability 12.1)")
    assert "SGLang's version is not shown, so its torch pin (MTP209) was not checked" in out


def test_not_capable_verdict_names_the_errors_to_fix():
    r = preflight(env_dumps=[E / "pytorch-150733.txt"], use_engine_analyzer=False)
    [v] = [f for f in r.findings if f.rule_id == "MTP228"]
    assert v.location.symbol == "cuda:0"
    assert v.message == ("GPU 0 (NVIDIA GeForce RTX 5090 D, compute capability 12.0): native FP4 not capable on SGLang (version unknown) "
                         "(assumed) — blocked by MTP203 (see those findings)")
    assert v.remediation == "resolve MTP203 (error findings above); see the gaps below"


def test_mixed_gpus_get_one_group_each(tmp_path):
    from mtp_audit.preflight.analyze import index_ranges

    assert index_ranges([5, 0, 1, 2, 3]) == "0-3,5"
    p = tmp_path / "env.txt"
    p.write_text(env(B200, n=1).replace("GPU 0: NVIDIA B200\nGPU 0 Compute Capability: 10.0",
                                        "GPU 0,1: NVIDIA B200\nGPU 2: NVIDIA H200\nGPU 0,1 Compute Capability: 10.0\nGPU 2 Compute Capability: 9.0"))
    r = preflight(env_dumps=[p], use_engine_analyzer=False)
    msgs = sorted(f.message.split(" — ")[0] for f in r.findings if f.rule_id == "MTP228")
    assert msgs == ["GPU 2 (NVIDIA H200, compute capability 9.0): native FP4 not capable on SGLang 0.5.9",
                    "GPUs 0-1 (NVIDIA B200, compute capability 10.0): native FP4 not capable on SGLang 0.5.9"]


# --- 4. the facts summary shows the requested backend --------------------------------------------


def test_summary_shows_requested_backend_on_h200(capsys):
    # the stored H200 facts: compute capability 9.0, no sglang installed -> nothing resolves, the request is still shown
    rc, out, _ = run_cli(["preflight", "--facts", str(F / "h200-live-facts.json"), "-f", "json", "--", *LS,
                          "--quantization", "modelopt_fp4", "--fp4-gemm-backend", "flashinfer_cutlass"], capsys)
    s = json.loads(out)["facts"]["preflight"]["summary"]
    assert s["fp4_gemm_backend"] == "flashinfer_cutlass" and s["moe_runner_backend"] is None
    assert rc == 0  # MTP200 warning: H200 has no FP4 tensor cores; the SGLang version (fallback or not) is unknown


def test_summary_shows_auto_and_what_it_resolves_to(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text(env(B200, n=1, torch="2.9.1+cu128"))  # SGLang 0.5.9: --fp4-gemm-backend auto -> flashinfer_cutlass on SM100 (matrix row 0.5.9)
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "modelopt_fp4", "--fp4-gemm-backend", "auto"], use_engine_analyzer=False)
    s = r.facts["preflight"]["summary"]
    assert s["fp4_gemm_backend"] == "auto -> flashinfer_cutlass"
    assert s["moe_runner_backend"] == "cutlass (auto)"  # < 0.5.10: auto -> sgl-kernel cutlass_moe_fp4 (matrix moe row)


# --- 7. a known-bad message names the matching row's range and reason only ----------------------


@pytest.mark.parametrize("fi,tail", [
    ("0.5.0", "flashinfer 0.5.0 is in the known-bad range <=0.6.3: mm_fp4 with the cutlass backend returns all zeros on SM120 "
              "(reported on flashinfer 0.6.3) (gh:flashinfer-ai/flashinfer#2577)"),
    ("0.6.12", "flashinfer 0.6.12 is in the known-bad range ==0.6.12: mm_fp4 with the cutlass backend returns M-dependent zero rows on SM120 "
               "(gh:flashinfer-ai/flashinfer#3398)"),
])
def test_mtp212_names_range_and_reason_of_matching_row(tmp_path, fi, tail):
    from mtp_audit.synth.dumps import PRO6000

    p = tmp_path / "env.txt"
    p.write_text(env(PRO6000, n=1, flashinfer=fi))
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "modelopt_fp4", "--fp4-gemm-backend", "flashinfer_cutlass"], use_engine_analyzer=False)
    [f] = [x for x in r.findings if x.rule_id == "MTP212"]
    assert f.message.endswith("; " + tail) and f.severity.name == "ERROR"
    assert f.message.count("known-bad") == 1


def test_mtp212_without_known_bad_row_is_a_warning(tmp_path):
    from mtp_audit.synth.dumps import PRO6000

    p = tmp_path / "env.txt"
    p.write_text(env(PRO6000, n=1, flashinfer="0.6.8"))
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "modelopt_fp4", "--fp4-gemm-backend", "flashinfer_cutlass"], use_engine_analyzer=False)
    [f] = [x for x in r.findings if x.rule_id == "MTP212"]
    assert "known-bad" not in f.message and f.severity.name == "WARNING"


# --- 8. user-facing text cites primary sources, not the research file ----------------------------


def _walk_sources(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, str) and (k == "source" or k.endswith("_source")):
                yield f"{path}.{k}", v
            else:
                yield from _walk_sources(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, x in enumerate(node):
            yield from _walk_sources(x, f"{path}[{i}]")


def test_matrix_sources_are_primary():
    from mtp_audit.preflight import matrix as mx

    m = mx.load()
    srcs = dict(_walk_sources(m))
    assert len(srcs) > 40
    assert [p for p, s in srcs.items() if "blackwell_fp4" in s or "§" in s] == []
    tf = {tuple(r["target_for"]): r for r in m["toolkit_floors"]}
    assert tf[(11, 0)] == {"target_for": [11, 0], "suffix": "a", "min_nvcc": "13.0",
                           "source": "sgl-kernel/CMakeLists.txt (sm_110a only with CUDA >= 13.0)", "research": "blackwell_fp4.md §1.3"}


@pytest.mark.parametrize("dump", sorted(p.name for p in E.glob("*.txt") if p.name != "SOURCE.txt"))
def test_user_visible_text_has_no_research_citation(dump):
    for launch in (None, LS + ["--quantization", "modelopt_fp4"], LS + ["--quantization", "modelopt_fp4", "--fp4-gemm-backend", "auto",
                                                                       "--moe-runner-backend", "auto"]):
        r = preflight(env_dumps=[E / dump], launch=launch, use_engine_analyzer=False)
        texts = [f.message for f in r.findings] + [f.remediation for f in r.findings] + [e.value for f in r.findings for e in f.evidence]
        texts += [g.message for g in r.gaps] + [json.dumps(r.facts["preflight"]["resolved"]), json.dumps(r.facts["preflight"]["summary"])]
        assert [t for t in texts if "blackwell_fp4" in t or "§" in t] == []


def test_auto_resolution_evidence_cites_the_wheel(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text(env(B200, n=1, torch="2.9.1+cu128", sglang="0.5.8"))
    r = preflight(env_dumps=[p], launch=LS + ["--quantization", "modelopt_fp4"], use_engine_analyzer=False)
    assert r.facts["preflight"]["resolved"]["fp4_gemm_backend"] == {
        "value": "flashinfer_cutlass", "how": "auto", "source": "wheel:sglang-0.5.8:sglang/srt/server_args.py, fp4_utils.py"}


@pytest.mark.parametrize(("gpu", "said"), [(("NVIDIA A100-SXM4-80GB", "8.0"), "no FP8 either: FP8 tensor-core instructions start at SM89"),
                                           (("Tesla T4", "7.5"), "no FP8 either: FP8 tensor-core instructions start at SM89"),
                                           (("NVIDIA H200", "9.0"), "FP8 is the narrowest")])
def test_what_a_gpu_without_fp4_has_instead(tmp_path, gpu, said):
    """Found by a fresh-user run: A100 (SM80) and T4 (SM75) were said to have FP8 as their narrowest tensor-core type;
    FP8 tensor-core mma needs sm_89 (PTX ISA)."""
    from mtp_audit.preflight import preflight
    from mtp_audit.synth.dumps import env

    p = tmp_path / "env.txt"
    p.write_text(env(gpu, n=1))
    rep = preflight(env_dumps=[p])
    (v,) = rep.facts["preflight"]["verdicts"]
    assert v["native_fp4"] == "not capable" and said in v["reasons"][0], v["reasons"]


def test_a_cut_that_removes_what_names_sglang_is_not_a_pass(tmp_path, capsys):
    """Found by the truncation property at 200 examples: fixtures/launch/reports/sglang-35080-env.txt (a B300 check_env
    without SGLang's version) is could not tell; its first lines alone no longer read as a check_env, so SGLang was only
    assumed and the torch pin was not owed: PASS. An assumed SGLang's pin is still unchecked: could not tell."""
    cut = tmp_path / "cut.txt"
    cut.write_text("CUDA available: True\nGPU 0: NVIDIA B300 SXM6\nCUDA Driver Version: 580.126.09\nPyTorch: 2.13.0+cu130\n"
                   "flashinfer_python: 0.6.17\n")
    rc, out, _ = run_cli(["preflight", "--env-dump", str(cut)], capsys)
    assert rc == 3 and "SGLang's version is not shown, so its torch pin (MTP209) was not checked" in out


def test_a_version_cut_at_the_end_of_a_paste_is_not_read(tmp_path, capsys):
    """Found by the truncation property at 200 examples: sglang-13198's one-line check_env cut inside its last value
    ('sglang: 0.5' of 'sglang: 0.5.5.post1') read SGLang 0.5, which pins nothing: PASS where the whole dump fails
    (MTP209). A dump that stops inside a word does not read that word: could not tell, with a note."""
    whole = (E / "sglang-13198.txt").read_text().split("\n", 1)[1]
    at = whole.index("sglang: 0.5.5.post1") + len("sglang: 0.5")
    cut = tmp_path / "cut.txt"
    cut.write_text(whole[:at])
    rc, out, _ = run_cli(["preflight", "--env-dump", str(cut), "-f", "json"], capsys)
    doc = json.loads(out)
    assert rc == 3 and doc["facts"]["preflight"]["summary"]["verdict"] == "unknown"
    assert doc["facts"]["preflight"]["machine"]["notes"][-1] == (
        "the dump ends inside a line (no line end after '0.5'): that last word is not read (it may be cut short)")


def test_sglang_shown_as_not_installed_is_could_not_tell(tmp_path, capsys):
    """A check_env that says 'sglang: Module Not Found' shows SGLang is not installed: no SGLang FP4 kernel is on the
    machine, so the verdict is could-not-tell (exit 3) saying so, never "capable" (the same dump with the sglang line
    simply absent is could-not-tell too: showing the engine absent must not turn that into a pass)."""
    body = (E / "sglang-13198.txt").read_text().split("\n", 1)[1].replace("sglang: 0.5.5.post1", "sglang: Module Not Found")
    p = tmp_path / "env.txt"
    p.write_text(body + "\n")
    rc, out, _ = run_cli(["preflight", "--env-dump", str(p), "-f", "json"], capsys)
    doc = json.loads(out)
    assert doc["facts"]["preflight"]["machine"]["packages"]["sglang"]["missing"].startswith("not installed")
    assert rc == 3 and doc["facts"]["preflight"]["summary"]["verdict"] == "unknown", doc["facts"]["preflight"]["verdicts"]
    (v,) = doc["facts"]["preflight"]["verdicts"]
    assert "SGLang is not installed (check_env: Module Not Found), so no FP4 kernel of it is on this machine" in v["reasons"][0]
    notes = [g["message"] for g in doc["gaps"] if not g["blocking"]]
    assert any(n.startswith("SGLang is shown as not installed (check_env: Module Not Found): a launch of it") for n in notes), notes
    absent = tmp_path / "absent.txt"
    absent.write_text("\n".join(x for x in body.splitlines() if not x.startswith("sglang:")) + "\n")
    rc2, _, _ = run_cli(["preflight", "--env-dump", str(absent), "-q"], capsys)
    assert rc2 == 3
