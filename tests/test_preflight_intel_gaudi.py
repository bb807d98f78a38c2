"""Intel GPUs (XPU) and Intel Gaudi (HPU) recognised from their tools' output and from prose, as AMD and Ascend are:
the platform first, each device with its table row, "not applicable" for the NVIDIA FP4 checks (MTP236) and the
quantization the engine refuses there (MTP237). Real inputs: fixtures/preflight/envdumps/intel and .../gaudi (SOURCE.txt
names the public report of each; line 1 of each file is its URL); values below read by hand from those files."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight import preflight
from mtp_audit.preflight.envdump import parse_dump, read_dump
from mtp_audit.preflight.facts import MachineFacts
from mtp_audit.report import Severity, exit_code
from mtp_audit.synth.dumps import xpu_env

D = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"
INTEL, GAUDI = D / "intel", D / "gaudi"
NVFP4_CKPT = D.parent / "checkpoints" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
GIB = 1024 ** 3


def facts(path: Path) -> MachineFacts:
    return pf.with_platform(parse_dump(read_dump(path), display=path.name))


def rules(rep) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in rep.findings:
        out.setdefault(f.rule_id, []).append(f.severity.label)
    return out


@pytest.mark.parametrize("name,n,extent,device,product,driver", [
    # torch collect_env: 4 onboard, device 0 detected (the excerpt is cut inside its line, so torch's indexed list is
    # not seen whole and the unindexed onboard list is a lower bound)
    ("pytorch-137846.txt", 4, "xpu-env (4 onboard, 1 detected by torch, at least 4: the list's end is not seen)",
     "Intel(R) Data Center GPU Max 1550", "Intel Data Center GPU Max 1550", "24.39.31294.21-1032~22.04"),
    ("torch-xpu-ops-2055.txt", 8, "xpu-env (8 onboard, 1 detected by torch, at least 8: the list's end is not seen)",
     "Intel(R) Data Center GPU Max 1100",
     "Intel Data Center GPU Max 1100", "25.18.33578.15-1146~22.04"),
    # xpu-smi discovery tables cut after the first device: at least one
    ("xpumanager-69.txt", 1, "xpu-smi (table cut: at least 1 GPU(s))", "Intel(R) Data Center GPU Flex 170",
     "Intel Data Center GPU Flex 170", None),
    ("sglang-38873.txt", 1, "xpu-smi (table cut: at least 1 GPU(s))", "Intel(R) Arc(TM) Pro B60 Graphics", "Intel Arc Pro B60", None),
    # sycl-ls: the Level Zero line (the OpenCL line names the same GPU); without Level Zero, the OpenCL GPU
    ("compute-runtime-970.txt", 1, "sycl-ls", "Intel(R) Arc(TM) B390 GPU", None, "1.15.38308+4"),
    ("compute-runtime-764.txt", 1, "sycl-ls (OpenCL GPUs: Level Zero lists none)", "Intel(R) Arc(TM) A770 Graphics",
     "Intel Arc A770", "23.17.26241.33"),
    # clinfo printing the PCI id of an A750 in place of its name
    ("compute-runtime-590.txt", 1, "clinfo", "Intel(R) Graphics [0x56a1]", "Intel Arc A750", None),
])
def test_intel_dumps_platform_devices_extent(name, n, extent, device, product, driver):
    f = facts(INTEL / name)
    assert f.accelerator.value == "xpu" and len(f.gpus) == n and f.gpu_list.value == n and f.gpu_list.source == extent
    assert f.gpus[0].name.value == device and f.gpus[0].arch.value == product and f.driver_version.value == driver
    assert not any(g.cc for g in f.gpus)


def test_xpu_torch_build_alone_names_the_platform(capsys):
    """vllm collect-env cut before its XPU lines: torch 2.10.0+xpu says Intel XPU; no device is listed and none is
    invented; the answer is still "not applicable" (exit 0)."""
    f = facts(INTEL / "vllm-35638.txt")
    assert (f.accelerator.value, f.accelerator.source) == ("xpu", "torch 2.10.0+xpu (+xpu build; torch-collect-env line 16)")
    assert f.gpus == () and not f.gpu_list.present
    rc = main(["preflight", "--env-dump", str(INTEL / "vllm-35638.txt")])
    assert rc == 0 and capsys.readouterr().out.startswith("PASS: Intel GPU machine (no device listed): the FP4 checks do not apply")


def test_intel_memory_only_where_the_tool_prints_it():
    f = facts(INTEL / "torch-xpu-ops-2055.txt")
    assert f.gpus[0].memory_bytes.value == 49136 * 1024 * 1024  # total_memory=49136MB of the detected device 0
    assert not f.gpus[1].memory_bytes.present  # onboard only: no memory printed
    b390 = facts(INTEL / "compute-runtime-970.txt")  # Panther Lake's Arc B390: not in the table, said so
    assert b390.gpus[0].arch.missing == "'Intel(R) Arc(TM) B390 GPU' is not in the Intel GPU table"


def test_gaudi_hl_smi_devices_memory_driver():
    f = facts(GAUDI / "ray-intel-gaudi-inference.txt")
    assert f.accelerator.value == "hpu" and f.accelerator.source == "hl-smi header line 3"
    assert [g.name.value for g in f.gpus] == ["HL-225"] * 8 and {g.arch.value for g in f.gpus} == {"Gaudi 2"}
    assert f.gpus[7].memory_bytes.value == 98304 * 1024 * 1024 and f.gpu_list.source == "hl-smi"
    assert f.driver_version.value == "1.19.1-6f47ddd"
    cut = pf.with_platform(parse_dump(read_dump(GAUDI / "ray-intel-gaudi-inference.txt").split("|   2  HL-225")[0]))
    assert len(cut.gpus) == 2 and cut.gpu_list.source == "hl-smi (table cut: at least 2 AIP row(s))"


@pytest.mark.parametrize("path,label", [(INTEL / "pytorch-137846.txt", "Intel GPU"), (GAUDI / "ray-intel-gaudi-inference.txt", "Intel Gaudi")])
def test_not_applicable_exit_0(capsys, path, label):
    rc = main(["preflight", "--env-dump", str(path)])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith(f"PASS: {label} machine (") and "the FP4 checks do not apply" in out
    rep = preflight(env_dumps=[path])
    assert set(rules(rep)) == {"MTP228", "MTP236", "MTP240", "MTP241"}
    assert {v["native_fp4"] for v in rep.facts["preflight"]["verdicts"]} == {"not applicable"}
    assert rep.facts["preflight"]["summary"]["verdict"] == "not applicable"


@pytest.mark.parametrize("path,where", [(INTEL / "sglang-38873.txt", {"MTP228": "xpu:0"}),
                                        (GAUDI / "ray-intel-gaudi-inference.txt", {"MTP228": "hpu:0-7"})])
def test_findings_are_located_at_the_platforms_own_device_label(path, where):
    # torch names an Intel GPU xpu:N and a Gaudi hpu:N (cuda:N is NVIDIA's, and ROCm's through HIP)
    rep = preflight(env_dumps=[path])
    per_device = {f.rule_id: f.location.symbol for f in rep.findings if f.location.symbol != "machine"}
    assert per_device == where


def test_a_per_device_finding_on_xpu_is_located_at_xpu(tmp_path):
    dump = tmp_path / "env.txt"
    dump.write_text(xpu_env(vllm="0.33.0"))
    rep = preflight(env_dumps=[dump], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert sorted({f.location.symbol for f in rep.findings}) == ["machine", "xpu:0-3"]  # MTP228 for the 4 GPUs


def test_the_launch_says_why_the_compute_capability_is_unknown_on_xpu():
    from conftest import FIXTURES, vllm_wheel

    from mtp_audit.launch import audit_launch

    cmd = ["vllm", "serve", str(FIXTURES / "checkpoint" / "jj8127--mimo_kor"), "--speculative-config",
           '{"method":"mtp","num_speculative_tokens":1}']
    r = audit_launch(cmd, vllm=vllm_wheel("0.33.0"), env_dumps=[INTEL / "sglang-38873.txt"], environ={})
    gaps = sorted(g.message for g in r.gaps if "compute capability" in g.message)
    # was "(no machine declared or seen)" although the dump was given, and "the draft model's model"
    assert gaps == [f"the attention backend vLLM selects for {who} is not decided (the GPU's compute capability is not known "
                    "(env-dump:xpu-smi: Intel XPU: no NVIDIA compute capability))" for who in ("the draft model", "the model")]


def test_nvfp4_on_xpu_is_refused_by_vllm_033(tmp_path):
    """vLLM 0.33.0's XPU platform lists no modelopt_fp4: verify_quantization raises at start-up (an error); mxfp4 is in
    the list (nothing); a version the table does not cover is a note, not a guess."""
    dump = tmp_path / "env.txt"
    dump.write_text(xpu_env(vllm="0.33.0"))
    rep = preflight(env_dumps=[dump], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert rules(rep)["MTP237"] == ["error"]
    (f,) = [x for x in rep.findings if x.rule_id == "MTP237"]
    assert "vLLM 0.33.0 refuses it at start-up, ValueError: 'modelopt_fp4 quantization is currently not supported in xpu.'" in f.message
    assert f.question == "starts"
    ok = preflight(env_dumps=[dump], launch=["vllm", "serve", "m", "--quantization", "mxfp4"])
    assert "MTP237" not in rules(ok)
    dump.write_text(xpu_env(vllm="0.24.0"))
    old = preflight(env_dumps=[dump], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert "MTP237" not in rules(old)
    # whether the release accepts modelopt_fp4 is the launch's question: open (exit 3), never a pass
    assert any("vLLM's XPU quantization list is read from releases 0.33.0 on" in g.message and g.blocking
               and g.question == "starts" for g in old.gaps)
    assert exit_code(old, Severity.ERROR) == 3


def test_fp4_weights_on_gaudi_are_a_warning():
    rep = preflight(env_dumps=[GAUDI / "ray-intel-gaudi-inference.txt"], launch=["vllm", "serve", "m", "--quantization", "modelopt_fp4"])
    assert rules(rep)["MTP237"] == ["warning"]
    (f,) = [x for x in rep.findings if x.rule_id == "MTP237"]
    # a warning: the evidence is the plugin's documentation, not its code (an error needs exact evidence)
    assert ("the launch loads NVFP4 weights on Intel Gaudi: the vLLM Hardware Plugin for Intel Gaudi documents no "
            "quantization backend that reads NVFP4 or MXFP4 weights") in f.message
    assert exit_code(rep, Severity.ERROR) == 0 and not [g for g in rep.gaps if g.blocking]
    # what the vLLM plugin documents is vLLM's: another engine on Gaudi gets the note (MTP236) and the FP4 question
    # stays open (was: PASS on "the FP4 checks do not apply")
    other = preflight(env_dumps=[GAUDI / "ray-intel-gaudi-inference.txt"],
                      launch=["python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "modelopt_fp4"])
    assert set(rules(other)) == {"MTP228", "MTP236", "MTP240", "MTP241"}
    opened = [g for g in other.gaps if g.blocking]
    assert [g.question for g in opened] == ["fp4"] and exit_code(other, Severity.ERROR) == 3
    assert opened[0].message.startswith("the launch loads NVFP4 weights on Intel Gaudi HPU: SGLang (version unknown) has no "
                                            "audited check")


def test_an_fp4_launch_on_xpu_is_not_a_pass_without_an_engine_check(capsys):
    """SGLang has no XPU check (``engines/sglang/platforms.py``): an NVFP4 launch there is could-not-tell (exit 3),
    was PASS exit 0; without an FP4 launch the machine-only answer is unchanged."""
    args = ["preflight", "--env-dump", str(INTEL / "sglang-38873.txt"), "--", "python", "-m", "sglang.launch_server",
            "--model-path", str(NVFP4_CKPT), "--quantization", "modelopt_fp4"]
    assert main(args) == 3
    out = capsys.readouterr().out
    assert out.startswith("INCONCLUSIVE: ") and "[preflight, blocking] the launch loads NVFP4 weights on Intel XPU" in out
    assert main(args[:4] + ["python", "-m", "sglang.launch_server", "--model-path", "m"]) == 0
    capsys.readouterr()
    # vLLM of unknown version: its XPU list cannot be chosen, so whether it accepts modelopt_fp4 is open
    assert main(args[:4] + ["vllm", "serve", str(NVFP4_CKPT), "--quantization", "modelopt_fp4"]) == 3


@pytest.mark.parametrize("text,plat,n,product", [
    ("Hardware: 8x Intel Data Center GPU Max 1550\n", "xpu", 8, "Intel Data Center GPU Max 1550"),
    ("Running on 2x Arc Pro B60 with vllm 0.33.0\n", "xpu", 2, "Intel Arc Pro B60"),
    ("GPU: 8 x Gaudi 3 (HL-325L)\n", "hpu", 8, "Gaudi 3"),  # the product named again in brackets is not a ninth device
    ("python -m sglang.launch_server --model-path m --device xpu\n", "xpu", 0, None),
    ("vllm serve m --device hpu\n", "hpu", 0, None),
])
def test_prose_names_the_platform(tmp_path, text, plat, n, product):
    p = tmp_path / "prose.txt"
    p.write_text(text)
    f = facts(p)
    assert f.accelerator.value == plat and len(f.gpus) == n
    assert (f.gpus[0].arch.value if f.gpus else None) == product


def test_device_flag_against_an_xpu_machine(capsys):
    rc = main(["preflight", "--env-dump", str(INTEL / "pytorch-137846.txt"), "--", "python", "-m", "sglang.launch_server",
               "--model-path", "m", "--device", "hpu"])
    out = capsys.readouterr().out
    assert rc == 1 and "MTP249 error: the launch asks for --device hpu (Intel Gaudi HPU) but the machine is Intel XPU" in out


def test_live_xpu_smi_and_hl_smi():
    """No NVIDIA, AMD or Ascend tool answers: xpu-smi discovery, then hl-smi, parsed as their dumps are."""
    import subprocess

    from mtp_audit.preflight.collect import collect_live

    def runner(outputs):
        def run(cmd, timeout):  # type: ignore[no-untyped-def]
            key = next((k for k in outputs if " ".join(cmd).startswith(k)), None)
            if key is None:
                raise FileNotFoundError(cmd[0])
            return subprocess.CompletedProcess(cmd, 0, outputs[key], "")
        return run

    xpu = read_dump(INTEL / "sglang-38873.txt").split("\n", 1)[1]
    m = pf.with_platform(collect_live(run=runner({"xpu-smi discovery": xpu}), nvml_loader=lambda: None, environ={}))
    assert m.accelerator.value == "xpu" and [g.arch.value for g in m.gpus] == ["Intel Arc Pro B60"]
    assert "npu-smi: npu-smi not found" in m.notes
    hl = read_dump(GAUDI / "ray-intel-gaudi-inference.txt").split("\n", 1)[1]
    m = pf.with_platform(collect_live(run=runner({"hl-smi": hl}), nvml_loader=lambda: None, environ={}))
    assert m.accelerator.value == "hpu" and len(m.gpus) == 8 and "xpu-smi: xpu-smi not found" in m.notes


def test_no_vendor_pattern_lets_a_line_start_span_blank_lines():
    """``^\\s*`` under re.M matches from every line start across the newlines after it: on a dump of 20,000 blank lines
    the rocminfo and amd-smi signatures took 3.7 s, quadratic in the blank run (two million newlines: hours). Line
    starts in the vendor patterns skip blanks within the line only (``^[ \\t]*``)."""
    import re

    from mtp_audit.preflight import vendor_dumps

    patterns = [v for v in vars(vendor_dumps).values() if isinstance(v, re.Pattern)] + list(vendor_dumps.SIGNATURES.values())
    assert len(patterns) > 30
    assert [p.pattern for p in patterns if "^\\s*" in p.pattern or "\\n\\s*" in p.pattern] == []


def test_saved_facts_keep_the_platform_and_the_generation(tmp_path, capsys):
    saved = tmp_path / "facts.json"
    assert main(["preflight", "--env-dump", str(GAUDI / "ray-intel-gaudi-inference.txt"), "--save-facts", str(saved)]) == 0
    capsys.readouterr()
    rep = preflight(facts_file=saved)
    machine = rep.facts["preflight"]["machine"]
    assert machine["accelerator"]["value"] == "hpu" and [g["arch"]["value"] for g in machine["gpus"]] == ["Gaudi 2"] * 8
    assert rep.facts["preflight"]["summary"]["verdict"] == "not applicable"


#: ray-intel-gaudi-inference.txt with lines 22-28 dropped (AIPs 5 and 6, and AIP 7's first row line): the table
#: still runs 0..4 with its end and the Compute Processes section seen
_HL_SMI_ROWS_DROPPED = """\
| HL-SMI Version:                              hl-1.20.0-fw-58.1.1.1          |
| Driver Version:                                     1.19.1-6f47ddd          |
|-------------------------------+----------------------+----------------------+
| AIP  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncor-Events|
|===============================+======================+======================|
|   3  HL-225              N/A  | 0000:b4:00.0     N/A |                   0  |
| N/A   22C   N/A  92W /  600W  | 96565MiB /  98304MiB |     0%           98% |
|-------------------------------+----------------------+----------------------+
|   4  HL-225              N/A  | 0000:33:00.0     N/A |                   0  |
| N/A   22C   N/A  83W /  600W  |   768MiB /  98304MiB |     0%            0% |
| N/A   30C   N/A 100W /  600W  | 17538MiB /  98304MiB |     0%           17% |
|-------------------------------+----------------------+----------------------+
| Compute Processes:                                               AIP Memory |
|  AIP       PID   Type   Process name                             Usage      |
|=============================================================================|
|   7       107684     C   ray::_RayTrainW                         16770MiB    |
+=============================================================================+
"""


@pytest.mark.parametrize("keep", [(0, 1, 2), (0, 1, 2, 3, 4)])
def test_hl_smi_rows_dropped_from_the_middle_count_at_least(keep):
    """AIP rows 0..N-1, the table's end seen: still a lower bound when a Memory-Usage line is left without its AIP row
    or the Compute Processes section names an AIP past the last row."""
    head, body = _HL_SMI_ROWS_DROPPED.split("|   3  HL-225", 1)
    rows = "".join(f"|   {i}  HL-225              N/A  | 0000:9a:00.0     N/A |                   0  |\n"
                   f"| N/A   22C   N/A  96W /  600W  |   768MiB /  98304MiB |     0%            0% |\n"
                   "|-------------------------------+----------------------+----------------------+\n" for i in keep[:-1])
    text = head + rows + f"|   {keep[-1]}  HL-225" + body.split("|   4  HL-225", 1)[1]
    f = parse_dump(text)
    assert (f.gpu_list.value, f.gpu_list.extent) == (len(keep), "at least")


def test_xpu_detected_list_cut_inside_its_next_entry_is_a_lower_bound():
    """torch-xpu-ops-2055.txt with lines 8-14 dropped (the onboard list's heading gone): torch's detected list shows
    entry [0] whole and entry [1] cut short; the cut entry is not the list's end, so one GPU is a lower bound."""
    text = ("Is XPU available: True\nIntel GPU driver version:\n* intel-opencl-icd:\t25.18.33578.15-1146~22.04\n"
            "* Intel(R) Data Center GPU Max 1100\nIntel GPU models detected:\n"
            "* [0] _XpuDeviceProperties(name='Intel(R) Data Center GPU Max 1100', platform_name='Intel(R) oneAPI Unified "
            "Runtime over Level-Zero', type='gpu', total_memory=49152MB)\n* [1] _XpuDeviceProperties(name='I")
    f = parse_dump(text)
    assert (f.gpu_list.value, f.gpu_list.extent) == (1, "at least")
