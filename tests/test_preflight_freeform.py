"""Free-form environments (issue 10 §1): real excerpts in fixtures/preflight/envdumps/freeform (SOURCE.txt),
values and line numbers read by hand from those files; the GPU name table; linear parsing (issue 13)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.preflight.envdump import parse_dump, read_dump
from mtp_audit.preflight.freeform import parse_freeform
from mtp_audit.preflight.gpus import cc_from_name, lookup, table
from mtp_audit.preflight.lineindex import LineIndex

D = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"
F = D / "freeform"


def load(name: str):
    return parse_dump(read_dump(F / name), display=name)


def run_cli(capsys, *args: str):
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- GPU name table --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,cc", [
    ("NVIDIA H100 80GB HBM3", (9, 0)), ("NVIDIA H100 PCIe", (9, 0)), ("NVIDIA H100 NVL", (9, 0)), ("NVIDIA H800", (9, 0)),
    ("NVIDIA H20", (9, 0)), ("NVIDIA H200 NVL", (9, 0)), ("NVIDIA GH200 480GB", (9, 0)),
    ("NVIDIA A100-SXM4-80GB", (8, 0)), ("NVIDIA A800 80GB PCIe", (8, 0)), ("NVIDIA A30", (8, 0)), ("NVIDIA A10G", (8, 6)),
    ("NVIDIA A40", (8, 6)), ("NVIDIA A16", (8, 6)), ("NVIDIA A2", (8, 6)), ("NVIDIA RTX A6000", (8, 6)), ("Jetson AGX Orin", (8, 7)),
    ("NVIDIA L4", (8, 9)), ("NVIDIA L40S", (8, 9)), ("NVIDIA L20", (8, 9)), ("NVIDIA RTX 6000 Ada Generation", (8, 9)),
    ("NVIDIA B100", (10, 0)), ("NVIDIA B200", (10, 0)), ("GB200 NVL72", (10, 0)), ("NVIDIA B300 SXM6 AC", (10, 3)),
    ("GB300 NVL72", (10, 3)), ("DGX Station GB300", (10, 3)), ("NVIDIA Thor", (11, 0)), ("Jetson AGX Thor", (11, 0)),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", (12, 0)), ("RTX PRO 6000 Blackwell Max-Q", (12, 0)),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0)), ("NVIDIA RTX PRO 5000 Blackwell", (12, 0)),
    ("NVIDIA RTX PRO 4500 Blackwell", (12, 0)), ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", (12, 0)),
    ("NVIDIA GeForce RTX 5090 D", (12, 0)), ("RTX 5060 Ti", (12, 0)), ("NVIDIA GB10", (12, 1)), ("DGX Spark", (12, 1)),
    ("nvidia h100-sxm5-80gb", (9, 0)), ("RTX5090", (12, 0)),
])
def test_gpu_table_names(name, cc):
    assert cc_from_name(name)[0] == cc


@pytest.mark.parametrize("name", ["NVIDIA H", "NVIDIA B20", "NVIDIA RTX PRO", "NVIDIA JMJWOA-Generic-GPU", "NVIDIA RTX 6000", "B200 or H100"])
def test_gpu_table_never_matches_a_cut_or_unknown_name(name):
    assert cc_from_name(name) is None


def test_gpu_table_longest_match_and_sources():
    assert lookup("NVIDIA A100").alias == "A100" and lookup("NVIDIA A10").cc == (8, 6)
    assert lookup("RTX PRO 6000 Blackwell Max-Q Workstation Edition").alias == "RTX PRO 6000 Blackwell Max-Q Workstation Edition"
    rows = table()["rows"]
    assert all(r["source"] for r in rows)
    thor = next(r for r in rows if r["product"].startswith("Jetson Thor"))
    assert thor["cc"] == [11, 0] and thor["cc_cuda12"] == [10, 1] and "10.1" in thor["note"]


# --- real free-form samples ------------------------------------------------------------------------

def test_dgx_spark_bullets_and_three_containers_conflict():
    f = load("vllm-30163.txt")
    assert len(f.gpus) == 2 and {g.cc for g in f.gpus} == {(12, 1)}
    assert f.gpus[0].name.source == "free-form line 4"  # the heading "... on 2x DGX Spark ..." (line 6 says the same)
    assert f.driver_version.value == "580.95.05" and f.driver_version.source.startswith("free-form line 9")
    assert f.cuda_driver_version.value == "13.0"
    v = f.package("vllm")
    assert v.value is None and "0.11.0 (line 17)" in v.missing and "0.11.2.dev575 (line 21)" in v.missing and "0.12.0 (line 26)" in v.missing
    assert any(n.startswith("conflict:") for n in f.notes)
    assert f.engine.value == "vllm"


def test_generic_gpu_name_with_written_cc():
    f = load("nemoclaw-4658.txt")
    assert len(f.gpus) == 1
    g = f.gpus[0]
    assert g.name.value == "NVIDIA JMJWOA-Generic-GPU" and g.cc == (12, 1) and "written" in g.compute_capability.source
    assert g.compute_capability.source.startswith("free-form line 14")
    assert f.driver_version.value == "580.142"


def test_rtx5090_bullets_wsl2_not_sglang():
    f = load("sglang-omni-160.txt")
    assert [g.name.value for g in f.gpus] == ["NVIDIA RTX 5090"] and f.gpus[0].cc == (12, 0)
    assert "GPU name table" in f.gpus[0].compute_capability.source
    assert "GB or GiB" in f.gpus[0].memory_bytes.missing
    assert f.platform.value == "wsl2"
    assert f.engine.value is None  # sglang-omni is not SGLang
    assert "count not written" in f.gpu_list.source


def test_keyless_bullets_b200_vllm():
    f = load("semantic-router-1863.txt")
    assert len(f.gpus) == 8 and f.gpus[7].name.value == "NVIDIA B200" and f.gpus[7].cc == (10, 0)
    assert f.package("vllm").value == "0.20.0" and f.torch_version.value == "2.11.0+cu130" and f.torch_cuda.value == "13.0"
    assert f.engine.value == "vllm" and f.engine.source.startswith("free-form line 4")
    assert any("'CUDA 13.0'" in n for n in f.notes)  # which CUDA is not said: kept as a note only
    assert f.cuda_driver_version.value is None and f.toolkit.value is None


def test_markdown_table_v100():
    f = load("kthena-1101.txt")
    assert len(f.gpus) == 1 and f.gpus[0].name.value == "Tesla V100-SXM2-16GB" and f.gpus[0].cc == (7, 0)
    assert f.gpus[0].compute_capability.source == "free-form line 8 ('Compute Capability 7.0' written)"


def test_system_info_lines_and_torch_warning():
    f = load("xinference-3866.txt")
    assert f.driver_version.value == "570.133.07" and f.cuda_driver_version.value == "12.8"
    assert f.gpus[0].name.value == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition" and f.gpus[0].cc == (12, 0)


def test_prose():
    f = load("flashqla-33.txt")
    assert len(f.gpus) == 1 and f.gpus[0].cc == (12, 1) and f.torch_version.value == "2.11"
    m = load("maestro-55.txt")
    assert len(m.gpus) == 1 and m.gpus[0].cc == (12, 1) and m.driver_version.value == "580.159.03"


def test_nvidia_smi_cut_after_first_row_is_partial():
    f = load("vllm-43412.txt")
    assert len(f.gpus) == 1 and f.gpus[0].name.value == "NVIDIA RTX PRO 6000 Blac..." and f.gpus[0].cc == (12, 0)
    assert "at least 1" in f.gpu_list.source and f.driver_version.value == "580.95.05"


@pytest.mark.parametrize("name,rc", [("nemoclaw-4658.txt", 3), ("sglang-omni-160.txt", 3), ("vllm-30163.txt", 3),
                                     ("kthena-1101.txt", 1), ("maestro-55.txt", 3)])
def test_exit_codes(capsys, name, rc):
    got, out, err = run_cli(capsys, "preflight", "--env-dump", str(F / name), "--format", "json")
    assert got == rc, err


# --- engine, merging, truncation, bad input ----------------------------------------------------------

def test_engine_of_tool_dumps():
    assert parse_dump(read_dump(D / "sglang-11208.txt")).engine.value == "sglang"
    assert parse_dump(read_dump(D / "vllm-21274.txt")).engine.value == "vllm"
    assert parse_dump(read_dump(D / "k8s-device-plugin-1482.txt")).engine.value is None


def test_issue_examples_and_cut_last_line(tmp_path):
    t = ("- GPU: 8x NVIDIA RTX PRO 6000 Blackwell Server Edition, SM120\n- Driver: 595.58.03\n"
         "- Image: lmsysorg/sglang:v0.5.12-cu130\n- sglang-kernel 0.4.4+cu130\n- torch==2.12.1+cu130\n"
         "- FlashInfer 0.6.17 commit: 1a2b3c\nGPU 3: NVIDIA H")
    f = parse_dump(t)
    assert len(f.gpus) == 8 and f.gpus[0].cc == (12, 0) and f.gpus[0].compute_capability.source == "free-form line 1 ('SM120' written)"
    assert f.driver_version.value == "595.58.03" and f.package("sglang").value == "0.5.12" and f.torch_cuda.value == "13.0"
    assert f.package("sglang-kernel").value == "0.4.4+cu130" and f.package("flashinfer-python").value == "0.6.17"
    assert f.engine.value == "sglang" and any("GPU 3: NVIDIA" in n and "not counted" in n for n in f.notes)
    a = parse_dump("| GPU | NVIDIA GB10 (SM 12.1) |\n")
    assert [(g.name.value, g.cc) for g in a.gpus] == [("NVIDIA GB10", (12, 1))] and a.gpu_list.extent == "at least"
    b = parse_dump("Hardware: 8x NVIDIA B300 SXM6 AC (SM103, 267.7 GiB)\n")
    assert [(g.name.value, g.cc) for g in b.gpus][:1] == [("NVIDIA B300 SXM6 AC", (10, 3))]
    assert len(b.gpus) == 8 and b.gpus[1].memory_bytes.value == int(267.7 * 1024 ** 3) and b.gpu_list.extent == "exact"
    # two products in hand-written lines are not a device listing: which of them the machine has is not told
    ab = parse_dump("| GPU | NVIDIA GB10 (SM 12.1) |\nHardware: 8x NVIDIA B300 SXM6 AC (SM103, 267.7 GiB)\n")
    assert ab.gpus == () and ab.gpu_list.missing.startswith("conflict: the free-form text names 2 different GPU products")
    c = parse_dump("- GPU: NVIDIA B200, SM120\n")
    assert c.gpus[0].cc is None and "conflict" in c.gpus[0].compute_capability.missing


def test_collect_env_cut_gpu_line_not_counted():
    g = parse_dump("PyTorch version: 2.9.1+cu130\nGPU models and configuration:\nGPU 0: NVIDIA B200\nGPU 1: NVIDIA H")
    assert len(g.gpus) == 1 and any("cut off" in n for n in g.notes)


def test_two_files_one_machine_merge_and_conflict(tmp_path, capsys):
    a = tmp_path / "a.md"
    a.write_text("- GPU: 2x NVIDIA RTX PRO 6000 Blackwell Workstation Edition\n- Driver: 580.95.05\n- torch 2.9.1+cu130\n")
    rc, out, err = run_cli(capsys, "preflight", "--env-dump", str(a), "--env-dump", str(F / "vllm-43412.txt"), "--format", "json")
    assert rc in (0, 1, 3), err
    import json
    m = json.loads(out)["facts"]["preflight"]["machine"]
    assert len(m["gpus"]) == 2 and m["gpus"][0]["memory_bytes"]["value"] == 97887 * 1024 * 1024
    assert m["torch_version"]["value"] == "2.9.1+cu130" and m["cuda_driver_version"]["value"] == "13.0"
    rc2, out2, err2 = run_cli(capsys, "preflight", "--env-dump", str(F / "vllm-30163.txt"), "--env-dump", str(D / "k8s-device-plugin-1482.txt"))
    assert rc2 == 2 and out2 == "" and "GPU list differs" in err2 and err2.count("\n") == 1


def test_nothing_recognisable_is_input_error(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("Steps to reproduce:\n1. start the server\n2. send a request\n")
    with pytest.raises(InputError) as ei:
        parse_dump(read_dump(p), display=str(p))
    assert "nothing recognisable" in str(ei.value)


# --- linear time -----------------------------------------------------------------------------------

def test_line_index():
    idx = LineIndex("a\nbb\n\nc")
    assert [idx.line_of(i) for i in (0, 1, 2, 4, 5, 6)] == [1, 1, 2, 2, 3, 4] and idx.lines == 4


def _calls(fn, *args) -> int:
    """How many Python and C-level calls ``fn(*args)`` makes (a measure of work that does not depend on the clock)."""
    n = 0

    def count(frame, event, arg):  # noqa: ARG001 (the profiler's signature)
        nonlocal n
        n += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return n


def test_large_dump_is_linear():
    """8x the input costs about 8x the calls, not 64x (work counted, not timed: no timed tests)."""
    chunk = read_dump(D / "vllm-21274.txt") + "\n" + read_dump(F / "semantic-router-1863.txt") + "\n"
    small, big = _calls(parse_dump, chunk * 200), _calls(parse_dump, chunk * 1600)
    assert small > 10_000 and big < 8.5 * small, (small, big)


def test_several_products_in_running_text_are_a_conflict_not_a_mixed_machine(tmp_path):
    """Found by a fresh-user run: prose that names two products ("my friend has an RTX 5090 and a GB10")
    was read as one machine with two GPUs and gave an MTP202 error. Two products outside any GPU line do not
    say which the machine has: the GPU list is a conflict and the answer is 'could not tell' (exit 3)."""
    from mtp_audit.cli.main import main

    p = tmp_path / "env.txt"
    p.write_text("Driver Version: 580.95.05\nWe tried it on an RTX 5090 and then on a GB10, same result.\n")
    facts = parse_freeform(p.read_text())
    assert facts.gpus == () and "2 different GPU products and is not a device listing" in str(facts.gpu_list.missing)
    assert main(["preflight", "--env-dump", str(p), "-o", str(tmp_path / "r.txt")]) == 3
    # one product in running text is still read (the prose reports in fixtures/preflight/envdumps/freeform/)
    one = parse_freeform("Driver Version: 580.95.05\nWe run it on 2x RTX 5090 GPUs.\n")
    assert [g.name.value for g in one.gpus] == ["RTX 5090", "RTX 5090"]


@pytest.mark.parametrize("text, name, cc", [
    ("NVIDIA GeForce RTX 5090, CUDA 12.8, vllm 0.11.0\n", "NVIDIA GeForce RTX 5090", [12, 0]),
    ("DGX Spark (GB10), CUDA 13.0, torch 2.9.0+cu130\n", "DGX Spark", [12, 1]),
    ("RTX PRO 6000 Blackwell, driver 580.65, torch 2.9.1+cu130, sglang 0.5.9\n", "RTX PRO 6000 Blackwell", [12, 0]),
])
def test_a_one_line_environment_list_names_its_gpu(tmp_path, text, name, cc):
    """A one-line environment list that opens with the GPU is the machine's GPU (found by a fresh user's run: these
    gave 'no GPU listed')."""
    from mtp_audit import preflight

    f = tmp_path / "env.txt"
    f.write_text(text)
    gpus = preflight(env_dumps=[f]).facts["preflight"]["machine"]["gpus"]
    assert [(g["name"]["value"], g["compute_capability"]["value"]) for g in gpus] == [(name, cc)]


def test_a_driver_written_short_is_could_not_tell(tmp_path):
    """'driver 580.65' may be any 580.65.x: against the 580.65.06 floor of CUDA 13 it is 'could not tell', not MTP205."""
    from mtp_audit import preflight

    f = tmp_path / "env.txt"
    f.write_text("RTX PRO 6000 Blackwell, driver 580.65, torch 2.9.1+cu130, sglang 0.5.9\n")
    r = preflight(env_dumps=[f])
    assert "MTP205" not in {x.rule_id for x in r.findings}
    assert any(g.blocking and "driver 580.65 is written without all its parts" in g.message for g in r.gaps)


def test_the_cuda_torch_was_built_with_is_not_a_torch_version():
    """collect_env's ``CUDA used to build PyTorch : 13.2`` (fixture vllm-57932, line 17) is torch's CUDA build, not a
    second torch version: no conflict note (found by a fresh-user run: "2 values of torch version: 2.13.0+cu132
    (line 15), 13.2 (line 17); not used", while 2.13.0 was used)."""
    from mtp_audit.preflight.freeform import parse_freeform

    text = read_dump(D / "vllm-57932.txt")
    f = parse_freeform(text)
    assert f.torch_version.value == "2.13.0+cu132" and not [n for n in f.notes if "torch version" in n]
