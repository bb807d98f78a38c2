"""What a pasted environment dump is evidence of (fresh-user findings on ``mtp-audit preflight --env-dump``).

- Hand-written text is not a device listing: a GPU product named in it is evidence that such a GPU is in question
  (the count written, else at least one); two products named in it do not say which GPUs the machine has together,
  so "could not tell" (exit 3), never a mixed-machine error (MTP202). English ("previously", "cancelled") is not parsed.
- A product name is evidence wherever it stands (alone, in prose, after a key); the short names that are also ordinary
  tokens (a letter and one or two digits: A2, T4, L40) only in a GPU context.
- A dump that is recognisably a known tool's output, cut before its facts, is an environment with nothing answered:
  exit 3, not the input error (exit 2) kept for text that is no environment at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.preflight.envdump import parse_dump

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"


def _exit(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    p = tmp_path / "dump.txt"
    p.write_text(text, encoding="utf-8")
    rc = main(["preflight", "--env-dump", str(p), "-q"])
    out = capsys.readouterr()
    return rc, (out.out.splitlines() or [""])[0] + out.err


@pytest.mark.parametrize("text", [
    "GPU: 8x B200, previously 8x H100\n",
    "GPUs: 8x H100 (the B200 order was cancelled)\n",
    "GPU: B200 (we replaced the old H100s)\n",
    "GPU: H100 vs B200 comparison pending\n",
    "2x B200 and 1x H100\n",
    "| GPU | NVIDIA GB10 (SM 12.1) |\nHardware: 8x NVIDIA B300 SXM6 AC (SM103)\n",
])
def test_two_products_in_prose_are_could_not_tell_never_mtp202(tmp_path, capsys, text):
    rc, first = _exit(tmp_path, text, capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether this machine can run native FP4: no GPU listed "
                                        "(conflict: the free-form text names 2 different GPU products") and "MTP202" not in first
    f = parse_dump(text)
    assert f.gpus == () and f.gpu_list.missing.startswith("conflict: the free-form text names 2 different GPU products")


def test_one_product_in_prose_keeps_its_verdict(tmp_path, capsys):
    rc, first = _exit(tmp_path, "GPU: 8x B200\n", capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether 8 x B200 (compute capability 10.0)")
    # a device listing (torch's 'GPU N:' lines) of two products is a mixed machine: MTP202 stays
    rc, first = _exit(tmp_path, "GPU models and configuration:\nGPU 0: NVIDIA B200\nGPU 1: NVIDIA H100 80GB HBM3\nPyTorch version: 2.9.1+cu128\n"
                      "Nvidia driver version: 580.95.05\n", capsys)
    assert rc == 1 and "MTP202" in first


@pytest.mark.parametrize("text", ["H200\n", "we rent an h200 box\n", "device tool, nvidia-h200\n", "nvidia-h200, 2026-11-29\n",
                                  "GPU: H200\n", "the machine has no GPU, planning to buy a H200\n"])
def test_a_bare_product_name_is_evidence_everywhere(tmp_path, capsys, text):
    rc, first = _exit(tmp_path, text, capsys)
    assert rc == 0 and first.startswith("WARN: at least 1 x ") and "h200 (compute capability 9.0) cannot run native fp4" in first.lower()
    f = parse_dump(text)
    assert len(f.gpus) == 1 and f.gpus[0].cc == (9, 0) and f.gpu_list.extent == "at least"


@pytest.mark.parametrize("text,n,arch", [("MI300X\n", 1, "gfx942"), ("we rent an MI300X box\n", 1, "gfx942"), ("GPU: MI300X\n", 1, "gfx942"),
                                         ("8x MI300X\n", 8, "gfx942"), ("910B\n", 0, None), ("Gaudi\n", 0, None)])
def test_amd_ascend_gaudi_names_follow_the_same_rule(text, n, arch):
    from mtp_audit.preflight.freeform import parse_freeform

    f = parse_freeform(text)
    assert len(f.gpus) == n and {g.arch.value for g in f.gpus} <= {arch}


def test_an_nvidia_and_an_amd_product_in_prose_say_neither_the_gpus_nor_the_platform(tmp_path, capsys):
    f = parse_dump("GPU: 8x MI300X, previously H100\n")
    assert f.gpus == () and f.gpu_list.missing.startswith("conflict: the free-form text names 2 different GPU products")
    assert not f.accelerator.present and "conflict" in f.accelerator.missing
    rc, first = _exit(tmp_path, "GPU: 8x MI300X, previously H100\n", capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether this machine can run native FP4: no GPU listed (conflict:")


@pytest.mark.parametrize("text,n", [("step A2 then step B3\n", 0), ("T4 tier pricing\n", 0), ("GPU: A2\n", 1), ("NVIDIA T4\n", 1),
                                    ("2x L40S\n", 2), ("L40S\n", 1)])
def test_short_names_that_are_ordinary_tokens_need_a_gpu_context(text, n):
    from mtp_audit.preflight.freeform import parse_freeform

    assert len(parse_freeform(text).gpus) == n


def test_text_that_is_no_environment_stays_an_input_error(tmp_path, capsys):
    for text in ("hello world\n", "step A2 then step B3\n", "INFO 04-18 server started on port 8000\n"):
        rc, first = _exit(tmp_path, text, capsys)
        assert rc == 2 and "nothing recognisable as an environment" in first


def _head(name: str, n: int) -> str:
    return (FIX / name).read_bytes()[:n].decode()


@pytest.mark.parametrize("text,tool", [
    (_head("vllm-57932.txt", 426), "collect_env (line 4: 'System Info')"),  # collect_env banner and OS/GCC lines, no fact
    (_head("heldout2/vllm-16840.txt", 880), "collect_env (line 2: 'Collecting environment information')"),
    ("INFO 04-18 11:18:18 [__init__.py:239] Automatically detected platform rocm.\n", "vLLM (line 1: 'Automatically detected platform r')"),
    ("Collecting environment information...\nuv is set\n", "collect_env (line 1: 'Collecting environment information')"),
    ("Python: 3.12.3 (main, Nov  6 2025, 13:44:16) [GCC 13.2.0]\nCUDA available: True\n", "sglang check_env (line 1: 'Python: 3.12.3 (')"),
    ("+-----+\n| NVIDIA-SMI \n", "nvidia-smi (line 2: 'NVIDIA-SMI')"),
    ("what I found with the rocminfo command:\n\n```\nAgent 2                  \n*******                \n", "rocminfo (line 4: 'Agent 2                  \\n*******')"),
    ("  Platform Name                                   Intel(R) OpenCL HD Graphics\n", "clinfo (line 1: 'Platform Name                           ')"),
    ("XPU Discovery: \n+-----------+------+\n", "xpu-smi (line 1: 'XPU Discovery:')"),
    ("Collecting environment \n", "collect_env (line 1: 'Collecting environment')"),
])
def test_a_recognised_tool_cut_before_its_facts_is_could_not_tell(tmp_path, capsys, text, tool):
    rc, first = _exit(tmp_path, text, capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether this machine can run native FP4: no GPU listed")
    assert any(n == f"the text is the output of {tool} but holds none of its facts (cut before them?)" for n in parse_dump(text).notes)


def test_check_env_cut_in_torch_warning_reads_the_gpu(tmp_path, capsys):
    rc, first = _exit(tmp_path, _head("sglang-13198.txt", 248), capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether at least 1 x NVIDIA GB10 (compute capability 12.1)")


_SMI = ("+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
        "+-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
        "|=========================================+========================+======================|\n"
        + "".join(f"|   {i}  NVIDIA B200                    On  |   00000000:0{i + 1}:00.0 Off |                    0 |\n"
                  f"| N/A   40C    P0            123W / 1000W |       0MiB / 183359MiB |      0%      Default |\n"
                  "+-----------------------------------------+------------------------+----------------------+\n" for i in range(8))
        + "\n| Processes:                                                                              |\n")


def test_nvidia_smi_table_without_its_banner_reads_the_gpus(tmp_path, capsys):
    whole = parse_dump(_SMI)
    assert len(whole.gpus) == 8 and whole.gpu_list.extent == "exact" and whole.driver_version.value == "550.54.15"
    body = _SMI.split("\n", 3)[3]  # from the column header on: every GPU row, no banner
    f = parse_dump(body)
    assert len(f.gpus) == 8 and f.gpu_list.extent == "exact" and not f.driver_version.present
    rows = _SMI.split("\n", 6)[6]  # the rows only: the first GPUs may be lost with the top lines
    f = parse_dump(rows)
    assert len(f.gpus) == 8 and f.gpu_list.extent == "at least"
    rc, first = _exit(tmp_path, body, capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether 8 x NVIDIA B200 (compute capability 10.0)")


@pytest.mark.parametrize("text,n,cc,driver,extent", [
    ("name, compute_cap\nNVIDIA B200, 10.0\n", 1, (10, 0), None, "exact"),
    ("name, compute_cap, driver_version\nNVIDIA B200, 10.0, 580.95.05\n", 1, (10, 0), "580.95.05", "exact"),
    ("index, name, driver_version, compute_cap\n0, NVIDIA B200, 580.95.05, 10.0\n1, NVIDIA B200, 580.95.05, 10.0\n", 2, (10, 0), "580.95.05", "exact"),
    ("compute_cap, name, memory.total [MiB]\n9.0, NVIDIA H200, 143771\n", 1, (9, 0), None, "exact"),  # nounits: the unit is in the header
    ("pci.bus_id, name\n00000000:01:00.0, NVIDIA B200\n00000000:02:00.0, NVIDIA B200\n00000000:03:00.0, NVIDIA B", 2, (10, 0), None, "at least"),
    ("name, compute_cap\nNVIDIA B200, 10.0\nNVIDIA B200, 10", 2, (10, 0), None, "at least"),  # the last row cut: its name is whole
])
def test_nvidia_smi_query_csv_is_read_by_its_header(text, n, cc, driver, extent):
    f = parse_dump(text)
    assert len(f.gpus) == n and {g.cc for g in f.gpus} == {cc} and f.gpu_list.extent == extent
    assert f.driver_version.value == driver
    if n == 1 and "memory.total" in text:
        assert f.gpus[0].memory_bytes.value == 143771 * 2 ** 20


def test_nvidia_smi_query_csv_cli(tmp_path, capsys):
    rc, first = _exit(tmp_path, "index, name, driver_version, compute_cap\n0, NVIDIA B200, 580.95.05, 10.0\n", capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether GPU 0 (NVIDIA B200, compute capability 10.0)")


def _sglang_24834() -> list[str]:
    return (FIX / "sglang-24834.txt").read_text().split("\n")  # check_env: 8 x B200, 'PyTorch: 2.11.0+cu130' on line 9: PASS


@pytest.mark.parametrize("at", [9, 1])  # the second torch line after the first one, or before it
def test_two_torch_values_in_one_dump_are_could_not_tell_in_either_order(tmp_path, capsys, at):
    lines = _sglang_24834()
    rc, first = _exit(tmp_path, "\n".join(lines), capsys)
    assert rc == 0 and first.startswith("PASS: 8 x NVIDIA B200")
    text = "\n".join(lines[:at] + ["PyTorch: 2.5.1+cu124"] + lines[at:])
    rc, first = _exit(tmp_path, text, capsys)
    assert rc == 3 and first.startswith("INCONCLUSIVE: could not tell whether 8 x NVIDIA B200")
    assert "conflict: the dump gives 2 values of 'PyTorch': " in first and "2.11.0+cu130" in first and "2.5.1+cu124" in first
    assert "MTP203" not in first and "MTP209" not in first  # no error from either value


def test_one_value_printed_twice_is_no_conflict(tmp_path, capsys):
    lines = _sglang_24834()
    rc, first = _exit(tmp_path, "\n".join(lines[:10] + ["PyTorch: 2.11.0+cu130"] + lines[10:]), capsys)
    assert rc == 0 and first.startswith("PASS: 8 x NVIDIA B200")
    # collect_env's 'PyTorch version' next to check_env's 'PyTorch': one release, one spelt without its +cu tag
    f = parse_dump("\n".join(lines[1:]) + "\nPyTorch version: 2.11.0\nIs debug build: False\n")
    assert f.torch_version.value == "2.11.0+cu130"
    g = parse_dump("\n".join(lines[1:]) + "\nPyTorch version: 2.9.1+cu128\nIs debug build: False\n")
    assert not g.torch_version.present and g.torch_version.missing.startswith("conflict: the dump gives two values of the torch version: 2.11.0+cu130")


@pytest.mark.parametrize("line,fact", [("CUDA Driver Version: 550.54.15", "driver_version"), ("sglang: 0.5.9", "sglang")])
def test_driver_and_engine_version_twice_are_a_conflict(line, fact):
    lines = _sglang_24834()
    f = parse_dump("\n".join(lines[1:] + [line, ""]))
    got = f.driver_version if fact == "driver_version" else f.package("sglang")
    assert not got.present and got.missing.startswith("conflict: the dump gives")


def test_a_machine_wide_driver_blocks_every_gpu_in_one_finding(tmp_path, capsys):
    """An nvidia-smi table of 8 B200s on driver 550.54.15 (CUDA 12.4): the driver is one per machine."""
    from mtp_audit.preflight import preflight

    old = _SMI  # the table above: driver 550.54.15, CUDA 12.4
    p = tmp_path / "b200old.txt"
    p.write_text(old)
    r = preflight(env_dumps=[p], use_engine_analyzer=False)
    mtp206 = [f for f in r.findings if f.rule_id == "MTP206"]
    assert [f.location.symbol for f in mtp206] == ["cuda:0-7"] and "Blackwell GPUs 0-7 (NVIDIA B200)" in mtp206[0].message
    per_gpu = r.facts["preflight"]["verdicts"]
    assert {v["native_fp4"] for v in per_gpu} == {"not capable"} and len(per_gpu) == 8
    assert [f.location.symbol for f in r.findings if f.rule_id == "MTP228"] == ["cuda:0-7"]
    rc, first = _exit(tmp_path, old, capsys)
    assert rc == 1 and first.startswith("FAIL: 8 x NVIDIA B200 (compute capability 10.0) cannot run native FP4 (MTP206)")


def test_torch_build_blocks_every_gpu_of_its_compute_capability(tmp_path):
    from mtp_audit.preflight import preflight

    p = tmp_path / "d.txt"
    p.write_text(_SMI.replace("550.54.15", "580.95.05").replace("12.4", "13.0") + "PyTorch version: 2.5.1+cu124\nIs debug build: False\n")
    r = preflight(env_dumps=[p], use_engine_analyzer=False)
    assert [(f.rule_id, f.location.symbol) for f in r.findings if f.rule_id == "MTP203"] == [("MTP203", "cuda:0-7")]
    assert [f.location.symbol for f in r.findings if f.rule_id == "MTP228"] == ["cuda:0-7"]


def _collect_env(names: list[str]) -> str:
    return "\n".join(["GPU models and configuration:", *(f"GPU {i}: {n}" for i, n in enumerate(names)),
                      "Nvidia driver version: 580.95.05", "PyTorch version: 2.9.1+cu128", "Is debug build: False", ""])


def test_findings_sorted_by_device_number_and_mtp200_grouped(tmp_path):
    from mtp_audit.preflight import preflight

    p = tmp_path / "d.txt"
    p.write_text(_collect_env(["NVIDIA H100 80GB HBM3"] * 9 + ["NVIDIA B200"] * 3))
    r = preflight(env_dumps=[p], use_engine_analyzer=False)
    mtp200 = [f for f in r.findings if f.rule_id == "MTP200"]
    assert [f.location.symbol for f in mtp200] == ["cuda:0-8"] and mtp200[0].message.startswith("GPUs 0-8 (NVIDIA H100 80GB HBM3, compute capability 9.0) have no")
    devices = [f.location.symbol for f in r.findings if f.location.symbol and f.location.symbol.startswith("cuda:")]
    assert devices.index("cuda:0-8") < devices.index("cuda:9-11")  # by number: 9 before 10 and 11
    from mtp_audit.report.model import Location

    assert sorted(["cuda:10", "cuda:8", "cuda:0-7", "cuda:0", "machine", "cuda:9"], key=lambda s: Location(symbol=s).sort_key()) == \
        ["cuda:0", "cuda:0-7", "cuda:8", "cuda:9", "cuda:10", "machine"]


def test_one_h100_keeps_its_single_gpu_message(tmp_path):
    from mtp_audit.preflight import preflight

    p = tmp_path / "d.txt"
    p.write_text(_collect_env(["NVIDIA H100 80GB HBM3"]))
    r = preflight(env_dumps=[p], use_engine_analyzer=False)
    assert [(f.location.symbol, f.message.split(" FP4")[0]) for f in r.findings if f.rule_id == "MTP200"] == [
        ("cuda:0", "GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0) has no")]


@pytest.mark.parametrize("line,rc,start", [
    ("- torch==2.5.1+cu124", 3, "INCONCLUSIVE: could not tell whether 8 x NVIDIA B200"),  # a hand-written torch that is not check_env's
    ("- torch==2.11.0+cu130", 0, "PASS: 8 x NVIDIA B200"),  # the same torch written again
    ("- Driver: 550.54.15", 3, "INCONCLUSIVE: could not tell whether 8 x NVIDIA B200"),
    ("- GPU: H100 (old cluster)", 0, "PASS: 8 x NVIDIA B200"),  # check_env's GPU lines are a device listing: prose does not override it
])
def test_a_hand_written_line_against_the_tool_dump_of_the_same_file(tmp_path, capsys, line, rc, start):
    lines = _sglang_24834()
    got, first = _exit(tmp_path, "\n".join([line, *lines[1:]]), capsys)
    assert got == rc and first.startswith(start)
    if rc == 3:
        assert "conflict: the tool dump and the free-form lines of this file give several values of the " in first


def test_free_form_one_version_spelt_two_ways_is_one_value():
    from mtp_audit.preflight.freeform import parse_freeform

    f = parse_freeform("- torch 2.9.1\n- torch==2.9.1+cu128\n")
    assert f.torch_version.value == "2.9.1+cu128" and not any("conflict" in n for n in f.notes)
    g = parse_freeform("- torch 2.9.1+cu126\n- torch==2.9.1+cu128\n")
    assert not g.torch_version.present and g.torch_version.missing.startswith("conflict: 2.9.1+cu126 (line 1), 2.9.1+cu128 (line 2)")
