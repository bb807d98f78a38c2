"""Every machine fact carries how much of it was seen: the GPU count is exact only when the end of the list is seen
(nvidia-smi's Processes block, the check_env / collect_env key after the GPU lines, nvidia-smi -q's Attached GPUs,
a count written in prose); a cut list is "at least N", prose without a count is "at least" the products named.
A launch's GPU-count question needs an exact count to say "too few": on a lower bound below the need it is a
blocking "could not tell" of its own, and every other question is still answered.

Inputs are the real dumps of fixtures/preflight/envdumps (each file's first line names its public source), cut
where a paste would cut them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.known import Known, Provenance, covers
from mtp_audit.launch import audit_launch
from mtp_audit.preflight.envdump import parse_dump, parse_nvidia_smi_csv
from mtp_audit.preflight.facts import Fact, MachineFacts
from mtp_audit.preflight.visible import cuda_visible

DUMPS = FIXTURES / "preflight" / "envdumps"
B200_CUT = DUMPS / "sglang-27487.txt"          # a real nvidia-smi table cut after GPU row 1 (two B200 rows)
H200 = DUMPS / "h200-nvidia-smi.txt"           # the whole nvidia-smi output of the lent H200 (+ -q, CSV)
GB10 = DUMPS / "constructed" / "gb10-sglang-0.5.17.txt"


def _text(p: Path) -> str:
    return p.read_text(encoding="utf-8").split("\n", 1)[1]  # line 1 is the source URL


def _count(text: str) -> Known[int]:
    return parse_dump(text).gpu_count


def test_known_is_checked_and_covers_is_three_valued():
    src = Provenance("nvidia-smi", 9, "table cut")
    assert covers(Known.at_least(2, src), 8) is None
    assert covers(Known.at_least(8, src), 8) is True
    assert covers(Known.exact(2, src), 8) is False
    assert covers(Known.unknown(src), 1) is None
    assert Known.at_least(2, src).describe() == "at least 2 [nvidia-smi line 9 (table cut)]"
    with pytest.raises(ValueError):
        Known(None, "exact", src)
    with pytest.raises(ValueError):
        Known(3, "unknown", src)
    with pytest.raises(ValueError):
        Known(3, "most", src)  # type: ignore[arg-type]


def test_nvidia_smi_table_is_exact_only_with_its_processes_block():
    cut = _count(_text(B200_CUT))
    assert (cut.value, cut.extent) == (2, "at least")
    whole = parse_dump(_text(H200).split("==============NVSMI LOG")[0]).gpu_count
    assert (whole.value, whole.extent) == (1, "exact")
    # the same table cut after its closing border (before "Processes:"): a lower bound
    table = _text(H200).split("\n\n+---")[0]
    assert table.rstrip().endswith("+") and (_count(table).value, _count(table).extent) == (1, "at least")


def test_check_env_is_exact_when_a_key_follows_the_gpu_lines():
    text = _text(GB10)
    assert (_count(text).value, _count(text).extent) == (1, "exact")
    cut = text.split("CUDA_HOME")[0]  # cut after the Compute Capability line: GPU 1.. may have followed
    assert (_count(cut).value, _count(cut).extent) == (1, "at least")
    # the flattened one-line form of sglang#13198 still sees CUDA_HOME after its GPU
    flat = _count(_text(DUMPS / "sglang-13198.txt"))
    assert (flat.value, flat.extent) == (1, "exact")


def test_collect_env_is_exact_when_the_next_key_follows():
    text = _text(DUMPS / "pytorch-150733.txt")  # 'GPU models and configuration: GPU 0: ...' then 'Nvidia driver version:'
    assert (_count(text).value, _count(text).extent) == (1, "exact")
    cut = text[:text.index("Nvidia driver version")]  # the GPU line is whole, nothing after it: GPU 1 may have followed
    assert (_count(cut).value, _count(cut).extent) == (1, "at least")
    # vllm#57932's excerpt ends right after its 'GPU 0:' line
    assert _count(_text(DUMPS / "vllm-57932.txt")).extent == "at least"


def test_nvidia_smi_q_and_csv():
    q = parse_dump(_text(H200).split("==============NVSMI LOG==============")[1].split("index, name")[0]).gpu_count
    assert (q.value, q.extent) == (1, "exact")  # 'Attached GPUs : 1' and one Product Name
    rows = "index, name, compute_cap, driver_version, memory.total [MiB]\n0, NVIDIA H200, 9.0, 580.159.04, 143771 MiB\n"
    pasted = parse_nvidia_smi_csv(rows).gpu_count
    assert (pasted.value, pasted.extent) == (1, "exact")  # one row per GPU: header there, last row whole with its line end
    assert parse_nvidia_smi_csv(rows.rstrip("\n")).gpu_count.extent == "at least"  # no line end after the last row: it may be cut
    assert parse_nvidia_smi_csv(rows.split("\n", 1)[1]).gpu_count.extent == "at least"  # no header (noheader): no start seen
    assert parse_nvidia_smi_csv(rows, complete=True).gpu_count.extent == "exact"  # the whole output of a live run


@pytest.mark.parametrize("prose, count, extent", [
    ("- GPU: GB200\n- driver 580.95.05\n", 1, "at least"),
    ("- GPU: 8x NVIDIA H100 80GB HBM3\n- driver 580.95.05\n", 8, "exact"),
    ("GPU 0: NVIDIA H100 80GB HBM3\nGPU 1: NVIDIA H100 80GB HBM3\n", 2, "at least"),
])
def test_prose_counts(prose, count, extent):
    k = _count(prose)
    assert (k.value, k.extent) == (count, extent)


def test_extent_round_trips_through_the_facts_json():
    f = parse_dump(_text(B200_CUT))
    d = f.to_dict()
    assert d["gpu_list"]["extent"] == "at least"
    assert MachineFacts.from_dict(d).gpu_count.extent == "at least"
    exact = parse_dump(_text(GB10)).to_dict()
    assert "extent" not in exact["gpu_list"]  # exact facts keep their stored form
    legacy = dict(d, gpu_list={"value": 2, "source": "nvidia-smi (table cut: at least 2 GPU row(s))"})
    assert MachineFacts.from_dict(legacy).gpu_count.extent == "at least"
    with pytest.raises(ValueError):
        Fact.from_dict({"value": 2, "source": "x", "extent": "roughly"})


def test_cuda_visible_devices_beyond_a_cut_list_is_not_invalid():
    gpus = parse_dump(_text(B200_CUT)).gpus
    vis = cuda_visible(gpus, "0,1,2,3", source="command", listed="at least", listed_source="cut")
    assert (vis.count, vis.exact, vis.stopped_at, vis.covers(4)) == (2, False, None, None)
    assert cuda_visible(gpus, "0,1,2,3", source="command").stopped_at == "2"  # a whole list: CUDA stops at index 2
    assert cuda_visible(gpus, "0,1,2,3", source="command").covers(4) is False


@pytest.fixture(scope="module")
def dsv3(tmp_path_factory) -> Path:
    from mtp_audit.synth.shards import write_checkpoint

    src = FIXTURES / "checkpoint" / "deepseek-ai--DeepSeek-V3"
    folder = tmp_path_factory.mktemp("dsv3")
    write_checkpoint(folder, json.loads((src / "spec.json").read_text()), shards=True)
    shutil.copy(src / "config.json", folder)
    return folder


def _gaps(r):
    return [g.message for g in r.gaps if g.blocking and g.message.startswith("GPU count")]


SG = ["python3", "-m", "sglang.launch_server", "--speculative-algorithm", "NEXTN", "--tp", "8", "--model-path"]
VL = ["vllm", "serve", "--tensor-parallel-size", "8"]
TR = ["trtllm-serve", "--tp_size", "8"]


@pytest.mark.parametrize("argv, rule", [(SG, "MTP311"), (VL, "MTP328"), (TR, "MTP714")])
def test_eight_gpu_launch_on_a_cut_table_could_not_tell(tmp_path, dsv3, argv, rule):
    dump = tmp_path / "cut.txt"
    dump.write_text(_text(B200_CUT))
    r = audit_launch([*argv, str(dsv3)], env_dumps=[dump], environ={})
    assert [f.rule_id for f in r.findings if f.rule_id == rule] == []
    (gap,) = _gaps(r)
    assert "needs 8 GPU" in gap and "at least 2" in gap and "could not tell" in gap
    assert r.facts["launch"]["verdict"] != "fix first"
    assert any(f.rule_id != rule for f in r.findings)  # the other questions were answered
    # the same launch on a whole 1-GPU table: an exact count below the need is still an error
    whole = tmp_path / "whole.txt"
    whole.write_text(_text(H200).split("==============NVSMI LOG")[0])
    assert [f.rule_id for f in audit_launch([*argv, str(dsv3)], env_dumps=[whole], environ={}).findings
            if f.rule_id == rule] == [rule]


@pytest.mark.parametrize("argv, rule", [(SG, "MTP311"), (VL, "MTP328"), (TR, "MTP714")])
def test_prose_without_a_count_could_not_tell(tmp_path, dsv3, argv, rule):
    dump = tmp_path / "prose.txt"
    dump.write_text("Environment:\n- GPU: GB200\n- driver 580.95.05\n")
    r = audit_launch([*argv, str(dsv3)], env_dumps=[dump], environ={})
    assert [f.rule_id for f in r.findings if f.rule_id == rule] == []
    (gap,) = _gaps(r)
    assert "at least 1" in gap and "count not written" in gap


def test_a_lower_bound_that_reaches_the_need_passes(tmp_path, dsv3):
    dump = tmp_path / "cut.txt"
    dump.write_text(_text(B200_CUT))
    argv = ["python3", "-m", "sglang.launch_server", "--tp-size", "2", "--model-path", str(dsv3)]
    r = audit_launch(argv, env_dumps=[dump], environ={})
    assert _gaps(r) == [] and not [f for f in r.findings if f.rule_id == "MTP311"]
    vis = r.facts["launch"]["parallel"]["visible"]
    assert (vis["count"], vis["exact"], vis["extent"]) == (2, False, "at least")


@pytest.mark.parametrize("line, count, extent, name, cc", [
    ("Running on dgx-b300 with vllm 0.20.0", 1, "at least", "dgx-b300", (10, 3)),
    ("GPU: rtxpro6000", 1, "at least", "rtxpro6000", (12, 0)),
    ("Hardware: 8xH100", 8, "exact", "H100", (9, 0)),
    ("Hardware: H20x4", 4, "exact", "H20", (9, 0)),
    ("GPU: 4×L40S", 4, "exact", "L40S", (8, 9)),
    ("I run it on a DGX Spark", 1, "at least", "DGX Spark", (12, 1)),
    ("GPU: 8 x H100", 8, "exact", "H100", (9, 0)),
    ("Hardware: H100 ×8", 8, "exact", "H100", (9, 0)),
    ("8-way H100 node", 8, "exact", "H100", (9, 0)),
    ("GPU: 8-way B200", 8, "exact", "B200", (10, 0)),
    # torch/cuda/__init__.py's warning, wherever it sits (sglang#13198 pastes it before check_env)
    ("/x/torch/cuda/__init__.py:283: UserWarning: Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.", 1, "at least",
     "NVIDIA GB10", (12, 1)),
    ("    Found GPU1 NVIDIA GeForce RTX 5090 which is of cuda capability 12.0.", 1, "at least", "NVIDIA GeForce RTX 5090", (12, 0)),
    ("UserWarning: NVIDIA GB10 with CUDA capability sm_121 is not compatible with the current PyTorch installation.", 1,
     "at least", "NVIDIA GB10", (12, 1)),
])
def test_reading_gpus_written_in_tokens_and_warnings(line, count, extent, name, cc):
    from mtp_audit.preflight.freeform import parse_freeform

    f = parse_freeform(line + "\n")
    assert (f.gpu_count.value, f.gpu_count.extent) == (count, extent)
    assert (f.gpus[0].name.value, f.gpus[0].compute_capability.value) == (name, cc)


def test_a_count_written_as_cards_names_the_cut_table(tmp_path):
    """rocm-examples#187: 'I have a 8 cards MI300X system' above a rocm-smi table cut after its 4th row: 8 MI300X."""
    f = parse_dump(_text(DUMPS / "heldout2" / "rocm-examples-187.txt"))
    assert (len(f.gpus), f.gpus[0].name.value, f.gpu_count.extent) == (8, "MI300X", "exact")


@pytest.mark.parametrize("argv, rule", [
    (["vllm", "serve", "/model", "--tensor-parallel-size", "2"], "MTP328"),
    (["python3", "-m", "sglang.launch_server", "--model-path", "/models/x", "--tp-size", "2"], "MTP311"),
    (["trtllm-serve", "/models/x", "--tp_size", "2"], "MTP714"),
])
def test_a_model_path_not_on_this_machine_is_a_gap(tmp_path, argv, rule):
    """A command written for its serving container, audited elsewhere: the checkpoint questions could not be told,
    and the others (here the GPU count against the lent H200's one GPU) are still answered."""
    whole = tmp_path / "h200.txt"
    whole.write_text(_text(H200).split("==============NVSMI LOG")[0])
    r = audit_launch(argv, env_dumps=[whole], environ={}, cwd=tmp_path)
    (gap,) = [g for g in r.gaps if "no such file or folder on this machine" in g.message]
    assert gap.blocking and f"--model-dir {gap.path}=LOCAL_FOLDER" in gap.message
    assert [f.rule_id for f in r.findings if f.rule_id == rule] == [rule]


def test_model_dir_maps_a_container_path(tmp_path, dsv3):
    from mtp_audit.launch.analyzers import map_model_dir

    assert map_model_dir("/models/x/ckpt", [("/models", "/data/m")]) == "/data/m/x/ckpt"
    assert map_model_dir("/models", [("/models/", "/data/m")]) == "/data/m"
    assert map_model_dir("/modelsx/y", [("/models", "/data/m")]) == "/modelsx/y"
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", f"/models/{dsv3.name}", "--speculative-algorithm", "NEXTN"]
    r = audit_launch(argv, env_dumps=[H200], environ={}, model_dirs=[("/models", str(dsv3.parent))])
    assert not [g for g in r.gaps if "no such file" in g.message or "is not a local folder" in g.message]
    assert r.facts["checkpoint"]["summary"]["mtp_tensors"] > 0


def test_model_dir_on_the_command_line(tmp_path, capsys):
    from mtp_audit.cli.main import main

    rc = main(["launch", "--model-dir", "nonsense", "--env-dump", str(H200), "--", "vllm", "serve", "/model"])
    assert rc == 2 and "--model-dir nonsense: expected SRC=DST" in capsys.readouterr().err
    rc = main(["launch", "--env-dump", str(H200), "--", "llama-server", "-m", "/models/x.gguf", "--spec-type", "draft-mtp"])
    out = capsys.readouterr().out
    assert rc == 3 and "-m /models/x.gguf: no such file on this machine" in out and "could not be told" in out.splitlines()[0]


@pytest.mark.parametrize("name, count, extent", [
    ("heldout/fooocus-1079.txt", 1, "at least"),       # rocminfo cut inside its agent list (no '*** Done ***')
    ("amd/therock-1737.txt", 2, "at least"),           # amd-smi table cut in its second GPU row (no Processes box)
    ("heldout2/sglang-10562.txt", 8, "exact"),         # its rocm-smi rows are cut, but check_env above lists GPUs 0-7
])
def test_vendor_tables_are_exact_only_with_their_end(name, count, extent):
    k = _count(_text(DUMPS / name))
    assert (k.value, k.extent) == (count, extent)
    # rocm-examples#187 without its prose line: rocm-smi device rows without 'End of ROCm SMI Log'
    smi = _text(DUMPS / "heldout2" / "rocm-examples-187.txt").split("\n", 1)[1]
    assert (_count(smi).value, _count(smi).extent) == (4, "at least")
