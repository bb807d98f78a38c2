"""Issue 14: every GPU enumerated live (NVML and the nvidia-smi fallback), CUDA_VISIBLE_DEVICES applied as CUDA
applies it, and the launch's parallel sizes checked against the GPUs it gets (MTP311, MTP312, MTP307's split).

Fakes replay REAL recorded output: fixtures/preflight/h200/live-20261201/ (the lent H200, 2026-12-01, see its
SOURCE.txt) and the two-B200 nvidia-smi table of fixtures/preflight/envdumps/sglang-27487.txt. No multi-GPU machine
was lent, so the multi-GPU NVML cases combine recorded per-GPU records (named in each test).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.engines.sglang.launch.parallel import SGLANG_SOURCES, plan_sglang
from mtp_audit.engines.vllm.launch.parallel import plan_vllm
from mtp_audit.preflight import preflight
from mtp_audit.preflight.collect import collect_gpus, collect_live
from mtp_audit.preflight.envdump import parse_nvidia_smi
from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts
from mtp_audit.preflight.visible import cuda_visible, nvidia_visible_note

LIVE = FIXTURES / "preflight" / "h200" / "live-20261201"
B200_TABLE = FIXTURES / "preflight" / "envdumps" / "sglang-27487.txt"
H200_UUID = "GPU-9af514ac-e2f4-1a57-f176-159e4a23c58a"
H200_BYTES = 150_754_820_096  # NVML total; nvidia-smi's 143771 MiB is the same number of bytes


def _json(name: str):
    return json.loads((LIVE / name).read_text())


class ReplayNvml:
    """pynvml stand-in answering each call with what the real pynvml answered (nvml-raw.json records)."""

    def __init__(self, *records: dict, driver: str, cuda: int):
        self.devices = [d for r in records for d in r]
        self.driver, self.cuda = driver, cuda

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return self.cuda

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.devices[i]

    def nvmlDeviceGetName(self, h):
        return h["nvmlDeviceGetName"]

    def nvmlDeviceGetUUID(self, h):
        if "nvmlDeviceGetUUID" not in h:
            raise RuntimeError("not recorded")  # collect_gpus turns any NVML error into a missing fact
        return h["nvmlDeviceGetUUID"]

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return tuple(h["nvmlDeviceGetCudaComputeCapability"])

    def nvmlDeviceGetMemoryInfo(self, h):
        class M:
            total = h["nvmlDeviceGetMemoryInfo.total"]
        return M()


def _h200_nvml() -> ReplayNvml:
    raw = _json("nvml-raw.json")
    return ReplayNvml(raw["devices"], driver=raw["nvmlSystemGetDriverVersion"], cuda=raw["nvmlSystemGetCudaDriverVersion_v2"])


def _smi_table() -> str:
    """The plain ``nvidia-smi`` output of the H200 (nvidia-smi.txt up to its ``nvidia-smi -L`` part)."""
    return (LIVE / "nvidia-smi.txt").read_text().split("=== nvidia-smi -L")[0]


def _runner(query: str | None, table: str | None, query_error: str = ""):
    """Replays nvidia-smi: the --query-gpu call prints ``query`` (or fails with ``query_error``), a plain call
    prints ``table``; nvcc is absent."""
    def run(cmd, timeout):
        if cmd[0] != "nvidia-smi":
            raise FileNotFoundError(cmd[0])
        if len(cmd) > 1 and cmd[1].startswith("--query-gpu"):
            if query is None:
                return subprocess.CompletedProcess(cmd, 2, "", query_error)
            return subprocess.CompletedProcess(cmd, 0, query, "")
        if table is None:
            raise FileNotFoundError("nvidia-smi")
        return subprocess.CompletedProcess(cmd, 0, table, "")
    return run


# --- the live records themselves ------------------------------------------------------------------


def test_recorded_live_facts_of_the_h200():
    for name, source in (("facts-nvml.json", "nvml"), ("facts-smi.json", "nvidia-smi --query-gpu")):
        f = MachineFacts.from_dict(_json(name))
        assert f.gpu_list.value == 1 and f.gpu_list.source == source
        (g,) = f.gpus
        assert (g.index, g.name.value, g.cc, g.memory_bytes.value, g.uuid.value) == (0, "NVIDIA H200", (9, 0), H200_BYTES, H200_UUID)
        assert f.driver_version.value == "580.159.04" and f.cuda_driver_version.value == "13.0"
        assert f.env["NVIDIA_VISIBLE_DEVICES"] == "0"
        assert any("NVIDIA_VISIBLE_DEVICES=0 (environment)" in n and "not applied again" in n for n in f.notes)
    smi = MachineFacts.from_dict(_json("facts-smi.json"))
    assert smi.notes[0].startswith("NVML skipped (MTP_AUDIT_NO_NVML=1")
    r = preflight(facts=MachineFacts.from_dict(_json("facts-nvml.json")))
    assert r.facts["preflight"]["summary"]["verdict"] == "not capable"
    assert r.facts["preflight"]["summary"]["gpus"] == 1


def test_recorded_cuda_visible_devices_runs():
    empty = MachineFacts.from_dict(_json("facts-cvd-empty.json"))
    assert empty.gpus == () and [g.uuid.value for g in empty.enumerated] == [H200_UUID]
    assert "CUDA_VISIBLE_DEVICES is empty (environment): CUDA sees no GPU" in empty.notes
    gap = [g.message for g in preflight(facts=empty).gaps if g.blocking]
    assert "CUDA_VISIBLE_DEVICES= hides all 1 GPU(s) the driver lists: CUDA sees none, so no GPU was checked" in gap
    beyond = MachineFacts.from_dict(_json("facts-cvd-1.json"))
    assert beyond.gpus == () and len(beyond.enumerated) == 1
    assert any("index 1 is beyond the 1 GPU(s) listed (0-0)" in n for n in beyond.notes)
    by_uuid = MachineFacts.from_dict(_json("facts-cvd-uuid.json"))
    assert [g.uuid.value for g in by_uuid.gpus] == [H200_UUID] and by_uuid.enumerated == ()
    assert by_uuid.gpu_list.source == "nvidia-smi --query-gpu"


def test_visibility_rules_agree_with_cuda_on_the_h200():
    """cuda_visible() gives the device count torch.cuda.device_count() gave on the real driver for every value tried."""
    gpus = MachineFacts.from_dict(_json("facts-nvml.json")).gpus
    rows = [json.loads(line) for line in (LIVE / "torch-visible.jsonl").read_text().splitlines()]
    assert len(rows) == 14
    for row in rows:
        v = cuda_visible(gpus, row["CUDA_VISIBLE_DEVICES"])
        assert v.count == row["count"], row
        assert [g.name.value for g in v.gpus] == row["names"], row
    seen = {r["CUDA_VISIBLE_DEVICES"]: r["count"] for r in rows}
    assert seen["1,0"] == 0 and seen["0,1"] == 1 and seen["0,-1"] == 1 and seen["GPU-9af514ac"] == 1
    mig = cuda_visible(gpus, f"MIG-{H200_UUID}/0/0")
    assert mig.mig == (f"MIG-{H200_UUID}/0/0",) and not mig.exact


# --- both collection paths from recorded output ---------------------------------------------------


def test_nvml_and_nvidia_smi_paths_give_the_same_facts():
    no_smi = _runner(None, None)
    via_nvml = collect_live(nvml_loader=_h200_nvml, run=no_smi, environ={})
    via_smi = collect_live(nvml_loader=lambda: pytest.fail("NVML must not be loaded"), use_nvml=False,
                           run=_runner((LIVE / "nvidia-smi-query.csv").read_text(), _smi_table()), environ={})
    forced_by_env = collect_live(nvml_loader=lambda: pytest.fail("NVML must not be loaded"),
                                 run=_runner((LIVE / "nvidia-smi-query.csv").read_text(), _smi_table()),
                                 environ={"MTP_AUDIT_NO_NVML": "1"})
    for f in (via_nvml, via_smi, forced_by_env):
        (g,) = f.gpus
        assert (g.name.value, g.cc, g.memory_bytes.value, g.uuid.value) == ("NVIDIA H200", (9, 0), H200_BYTES, H200_UUID)
        assert (f.driver_version.value, f.cuda_driver_version.value) == ("580.159.04", "13.0")
    assert via_nvml.gpus[0].name.source == "nvml" and via_smi.gpus[0].name.source == "nvidia-smi --query-gpu line 1"
    assert forced_by_env.gpu_list.source == "nvidia-smi --query-gpu"
    # the replay gives what the live collection wrote on the H200
    live = MachineFacts.from_dict(_json("facts-nvml.json"))
    assert [g.to_dict() for g in via_nvml.gpus] == [g.to_dict() for g in live.gpus]
    live_smi = MachineFacts.from_dict(_json("facts-smi.json"))
    assert [g.to_dict() for g in via_smi.gpus] == [g.to_dict() for g in live_smi.gpus]


def test_old_nvidia_smi_without_query_fields_falls_back_to_the_table():
    """Two B200s, as the nvidia-smi table of sglang#27487 prints them; the query call fails as a pre-R510
    nvidia-smi does for compute_cap."""
    run = _runner(None, B200_TABLE.read_text(), 'Field "compute_cap" is not a valid field to query.')
    gpus, gl, drv, cuda, notes = collect_gpus(run=run, use_nvml=False)
    assert [(g.index, g.name.value, g.cc, g.memory_bytes.value) for g in gpus] == [
        (0, "NVIDIA B200", (10, 0), 183359 * 2**20), (1, "NVIDIA B200", (10, 0), 183359 * 2**20)]
    assert gl.value == 2 and gl.source == "nvidia-smi table"
    assert (drv.value, cuda.value) == ("610.43.02", "13.3")
    assert any("GPUs read from the nvidia-smi table" in n and "compute_cap" in n for n in notes)
    assert all(not g.uuid.present for g in gpus)


def _b200_record(index: int) -> dict:
    """One B200 as NVML would answer, from its nvidia-smi table row in sglang#27487 (name, memory) and the
    capability the parser derives from the name (10.0). That dump prints no UUID, so the record has none."""
    t = parse_nvidia_smi(B200_TABLE.read_text()).gpus[index]
    return {"nvmlDeviceGetName": t.name.value, "nvmlDeviceGetCudaComputeCapability": list(t.cc),
            "nvmlDeviceGetMemoryInfo.total": t.memory_bytes.value}


def test_mixed_capability_rule_on_recorded_gpus_and_cuda_visible_devices():
    """An H200 (its recorded NVML answers) beside a B200 (its recorded nvidia-smi row): MTP202 fires; restricting
    CUDA_VISIBLE_DEVICES to one kind clears it, and a UUID prefix picks the GPU by UUID, not by position."""
    raw = _json("nvml-raw.json")
    nvml = ReplayNvml(raw["devices"], [_b200_record(0)], driver=raw["nvmlSystemGetDriverVersion"], cuda=raw["nvmlSystemGetCudaDriverVersion_v2"])
    both = collect_live(nvml_loader=lambda: nvml, run=_runner(None, None), environ={})
    assert [g.cc for g in both.gpus] == [(9, 0), (10, 0)]
    r = preflight(facts=both)
    mixed = [f for f in r.findings if f.rule_id == "MTP202"]
    assert len(mixed) == 1 and "9.0, 10.0" in mixed[0].message
    assert both.gpus[1].uuid.missing == "NVML error: not recorded"
    one = collect_live(nvml_loader=lambda: nvml, run=_runner(None, None), environ={"CUDA_VISIBLE_DEVICES": "GPU-9af5"})
    assert [g.name.value for g in one.gpus] == ["NVIDIA H200"] and len(one.enumerated) == 2
    b200 = collect_live(nvml_loader=lambda: nvml, run=_runner(None, None), environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert [g.name.value for g in b200.gpus] == ["NVIDIA B200"]
    assert not [f for f in preflight(facts=one).findings if f.rule_id == "MTP202"]
    order = cuda_visible(both.gpus, "1,0")
    assert [g.index for g in order.gpus] == [1, 0]
    assert any("CUDA_DEVICE_ORDER is not PCI_BUS_ID" in n for n in order.notes)
    assert not any("CUDA_DEVICE_ORDER" in n for n in cuda_visible(both.gpus, "1,0", device_order="PCI_BUS_ID").notes)


def test_cuda_visible_devices_edge_cases():
    gpus = parse_nvidia_smi(B200_TABLE.read_text()).gpus + (
        GpuFacts(2, Fact.of("NVIDIA B200", "t"), Fact.of((10, 0), "t"), Fact.of(1, "t"), Fact.of("GPU-abc12-1", "t")),
        GpuFacts(3, Fact.of("NVIDIA B200", "t"), Fact.of((10, 0), "t"), Fact.of(1, "t"), Fact.of("GPU-abc12-2", "t")))
    assert cuda_visible(gpus, None).count == 4
    assert cuda_visible(gpus, " ").count == 0
    v = cuda_visible(gpus, "0,2,7,1")
    assert [g.index for g in v.gpus] == [0, 2] and v.stopped_at == "7"
    assert "index 7 is beyond the 4 GPU(s) listed (0-3)" in v.notes[1]
    dup = cuda_visible(gpus, "1,1,0")
    assert [g.index for g in dup.gpus] == [1, 0] and any("named twice" in n for n in dup.notes)
    amb = cuda_visible(gpus, "GPU-abc12")
    assert amb.count == 0 and "prefix of 2 GPU UUIDs" in amb.notes[1]
    assert [g.index for g in cuda_visible(gpus, "GPU-ABC12-2").gpus] == [3]
    unmatched = cuda_visible(gpus, "GPU-0f")  # GPUs 0 and 1 (from the table) have no UUID
    assert unmatched.count == 0 and not unmatched.exact
    for word in ("none", "void", "all"):
        assert cuda_visible(gpus, word).count == 0  # not CUDA syntax: an invalid first entry hides everything
    assert "changes nothing" in nvidia_visible_note("none", "command")
    assert "already that selection" in nvidia_visible_note("void", "environment")
    assert nvidia_visible_note(None, "command") is None


# --- parallel sizes -----------------------------------------------------------------------------------


def _get(**opts):
    def get(*names):
        for n in names:
            if n in opts:
                return opts[n]
        return None
    return get


@pytest.mark.parametrize(("opts", "gpus", "needed", "problems"), [
    ({}, 1, 1, []),
    ({"--tp-size": "8"}, 8, 8, []),
    ({"--tensor-parallel-size": "4", "--pipeline-parallel-size": "2"}, 8, 8, []),
    ({"--tp-size": "4", "--dp-size": "2"}, 8, 8, []),
    ({"--tp-size": "8", "--dp-size": "4", "--enable-dp-attention": "true"}, 8, 8, []),
    ({"--tp-size": "8", "--dp-size": "3", "--enable-dp-attention": "true"}, 8, 8, ["dp_attention"]),
    ({"--tp-size": "8", "--attn-dp-size": "4", "--dp-size": "2"}, 16, 16, []),  # 0.5.23: dp counts replicas again
    ({"--tp-size": "16", "--nnodes": "2"}, 8, 8, []),
    ({"--tp-size": "6", "--nnodes": "4"}, 1, 1, ["nnodes"]),
    ({"--tp-size": "4", "--dp-size": "2", "--nnodes": "2"}, 4, 6, ["multinode_dp"]),  # refused; ids 0,1 and 4,5
    ({"--tp-size": "8", "--ep-size": "8"}, 8, 8, []),
    ({"--tp-size": "8", "--ep": "3"}, 8, 8, ["ep"]),
    ({"--tp-size": "2", "--expert-parallel-size": "4"}, 2, 2, ["ep"]),
    ({"--tp-size": "2", "--base-gpu-id": "4"}, 2, 6, []),
    ({"--tp-size": "2", "--gpu-id-step": "2"}, 2, 3, []),
])
def test_sglang_gpus_needed(opts, gpus, needed, problems):
    p = plan_sglang(_get(**opts))
    assert (p.gpus, p.needed, [k for k, _ in p.problems]) == (gpus, needed, problems)


def test_sglang_plan_words_and_invalid_values():
    p = plan_sglang(_get(**{"--tp-size": "8", "--dp-size": "4", "--enable-dp-attention": "true"}))
    assert p.formula == "tp 8 x pp 1 = 8; --enable-dp-attention: the 4 DP groups live inside tp, so dp adds no GPU"
    assert (p.attn_dp, p.replicas) == (4, 1)
    assert plan_sglang(_get(**{"--tp-size": "two"})).invalid == ("--tp-size",)
    ep = plan_sglang(_get(**{"--tp-size": "8", "--ep": "3"}))
    assert "moe_tp_size = tp_size // ep_size = 2" in ep.problems[0][1]


@pytest.mark.parametrize(("opts", "gpus", "ep"), [
    ({"-tp": "8"}, 8, 1),
    ({"--tensor-parallel-size": "4", "-pp": "2"}, 8, 1),
    ({"-tp": "2", "-dp": "4", "--enable-expert-parallel": "true"}, 8, 8),
    ({"-tp": "8", "--nnodes": "2"}, 4, 1),
    ({"-tp": "4", "-dp": "4", "-dpl": "2", "-n": "2"}, 8, 1),
])
def test_vllm_gpus_needed(opts, gpus, ep):
    p = plan_vllm(_get(**opts))
    assert (p.gpus, p.ep) == (gpus, ep)


# --- launch on the recorded H200 ------------------------------------------------------------------------


def test_recorded_launch_runs_on_the_h200():
    s = _json("launch-summary.json")
    tp2 = [f for f in s["launch-tp2"]["findings"] if f["rule_id"] == "MTP311"]
    assert tp2 == [{"rule_id": "MTP311", "severity": "error", "message":
                    "the command needs 2 GPU(s) on this node (tp 2 x pp 1 = 2) but 1 is visible: SGLang starts one process per GPU "
                    "and process 1 fails with 'invalid device ordinal'"}]
    for ok in ("launch-tp1", "launch-cvd-0-prefix", "launch-cvd-uuid-prefix"):
        assert not [f for f in s[ok]["findings"] if f["rule_id"] in ("MTP311", "MTP312")], ok
    assert [f["message"].split(":")[0] for f in s["launch-cvd-empty-prefix"]["findings"] if f["rule_id"] == "MTP311"] == [
        "the command needs 1 GPU(s) on this node (tp 1 x pp 1 = 1) but 0 are visible"]
    assert [f["severity"] for f in s["launch-cvd-0-env-tp2"]["findings"] if f["rule_id"] == "MTP311"] == ["error"]
    assert [f["severity"] for f in s["launch-smi-tp2"]["findings"] if f["rule_id"] == "MTP311"] == ["error"]
    assert s["launch-tp1"]["summary_gpus"] == "1 x NVIDIA H200 (compute capability 9.0); the command needs 1 (tp 1 x pp 1 = 1)"
    text = (LIVE / "launch-dpattn.txt").read_text()
    assert "7,805,691,360 bytes (7.81 GB) per GPU under --tp-size 2" in text  # attention whole on each DP group


@pytest.fixture(scope="module")
def dsv3(tmp_path_factory) -> Path:
    from mtp_audit.synth.shards import write_checkpoint

    src = FIXTURES / "checkpoint" / "deepseek-ai--DeepSeek-V3"
    folder = tmp_path_factory.mktemp("dsv3")
    write_checkpoint(folder, json.loads((src / "spec.json").read_text()), shards=True)
    shutil.copy(src / "config.json", folder)
    return folder


@pytest.fixture(scope="module")
def sg059(tmp_path_factory):
    import os

    from mtp_audit.engines.sglang import audit_sglang

    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "mtp-audit-cache")
    return audit_sglang(sglang_wheel("0.5.9"))


def _launch(dsv3: Path, sg, *argv: str, facts: str = "facts-nvml.json", env=None):
    from mtp_audit.launch import audit_launch

    cmd = [a if a != "CKPT" else str(dsv3) for a in argv]
    return audit_launch(cmd, sglang=sg, facts=LIVE / facts, environ={}, env=env)


def _rule(r, rid):
    return [f for f in r.findings if f.rule_id == rid]


@pytest.mark.network
def test_launch_against_the_recorded_h200_facts(dsv3, sg059):
    """The same commands as on the device, replayed from its live facts with the real SGLang 0.5.9 wheel."""
    ls = ("python", "-m", "sglang.launch_server", "--model-path", "CKPT", "--speculative-algorithm", "NEXTN")
    r1 = _launch(dsv3, sg059, *ls, "--tp-size", "1")
    assert not _rule(r1, "MTP311") and r1.facts["launch"]["parallel"]["needed_visible"] == 1
    assert r1.facts["launch"]["parallel"]["visible"]["count"] == 1
    r2 = _launch(dsv3, sg059, *ls, "--tp-size", "2")
    (f,) = _rule(r2, "MTP311")
    assert f.severity.label == "error" and "needs 2 GPU(s) on this node (tp 2 x pp 1 = 2) but 1 is visible" in f.message
    assert f.remediation == "lower --tp-size to 1, or run on a node with at least 2 GPUs"
    assert r2.facts["launch"]["verdict"] == "fix first"
    # the same from the nvidia-smi path's facts
    assert _rule(_launch(dsv3, sg059, *ls, "--tp-size", "2", facts="facts-smi.json"), "MTP311")[0].severity.label == "error"
    # a launch prefix restricts the set the driver listed
    (e,) = _rule(_launch(dsv3, sg059, "CUDA_VISIBLE_DEVICES=", *ls, "--tp-size", "1"), "MTP311")
    assert "but 0 are visible" in e.message
    assert not _rule(_launch(dsv3, sg059, "CUDA_VISIBLE_DEVICES=GPU-9af5", *ls, "--tp-size", "1"), "MTP311")
    (b,) = _rule(_launch(dsv3, sg059, *ls, "--tp-size", "1", env={"CUDA_VISIBLE_DEVICES": "1"}), "MTP311")
    assert any("index 1 is beyond the 1 GPU(s) listed" in ev.value for ev in b.evidence)
    # DP attention: 2 GPUs, not 4; without it: 4
    (a,) = _rule(_launch(dsv3, sg059, *ls, "--tp-size", "2", "--dp-size", "2", "--enable-dp-attention"), "MTP311")
    assert "needs 2 GPU(s)" in a.message
    (n,) = _rule(_launch(dsv3, sg059, *ls, "--tp-size", "2", "--dp-size", "2"), "MTP311")
    assert "needs 4 GPU(s) on this node (tp 2 x pp 1 x dp 2 = 4)" in n.message
    # MTP312: ep that does not divide tp
    (p,) = _rule(_launch(dsv3, sg059, *ls, "--tp-size", "1", "--ep-size", "2"), "MTP312")
    assert "--ep-size 2 does not divide --tp-size 1" in p.message
    # NVIDIA_VISIBLE_DEVICES before the program restricts nothing
    nv = [f for f in _rule(_launch(dsv3, sg059, "NVIDIA_VISIBLE_DEVICES=none", *ls, "--tp-size", "1"), "MTP309")
          if "NVIDIA_VISIBLE_DEVICES" in f.message]
    assert nv and nv[0].severity.label == "warning" and "changes nothing" in nv[0].message


@pytest.mark.network
def test_mtp307_split_with_dp_attention(dsv3, sg059):
    """DeepSeek-V3's MTP layer as recorded: 187,155,168 attention bytes of 15,424,227,552. Under TP 2 the attention
    is halved; with DP attention 2 each DP group (one GPU) holds it whole."""
    ls = ("python", "-m", "sglang.launch_server", "--model-path", "CKPT", "--speculative-algorithm", "NEXTN", "--tp-size", "2")
    plain = _launch(dsv3, sg059, *ls).facts["launch"]["draft"]
    dpa = _launch(dsv3, sg059, *ls, "--dp-size", "2", "--enable-dp-attention").facts["launch"]["draft"]
    assert plain["mtp_attention_bytes"] == 187_155_168 and plain["mtp_bytes"] == 15_424_227_552
    assert plain["mtp_bytes_per_gpu"] == 15_424_227_552 / 2
    assert dpa["mtp_bytes_per_gpu"] == 187_155_168 + (15_424_227_552 - 187_155_168) / 2


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_cited_sglang_lines(version):
    """Every file:line SGLANG_SOURCES cites for this version holds the statement it names."""
    import zipfile

    whl = zipfile.ZipFile(sglang_wheel(version))
    expect = {
        "0.5.9": {"srt/managers/data_parallel_controller.py:246": "base_gpu_id += (",
                  "srt/entrypoints/engine.py:942": "gpu_id = (",
                  "srt/server_args.py:5132": "assert (",
                  "srt/server_args.py:2116": "assert self.tp_size % self.dp_size == 0",
                  "srt/server_args.py:5143": "assert not (",
                  "srt/distributed/parallel_state.py:1775": "moe_tp_size = tensor_model_parallel_size // moe_ep_size // moe_dp_size"},
        "0.5.23": {"srt/managers/data_parallel_controller.py:445": "base_gpu_id += (",
                   "srt/entrypoints/engine.py:938": "+ (tp_rank % tp_size_per_node)",
                   "srt/arg_groups/validation_hook.py:179": "assert (cfg.tp_size * cfg.pp_size) % cfg.nnodes == 0",
                   "srt/arg_groups/parallel_hook.py:326": "assert cfg.tp_size % cfg.attn_dp_size == 0",
                   "srt/arg_groups/validation_hook.py:199": "assert not (cfg.dp_size > 1 and cfg.nnodes != 1)",
                   "srt/model_executor/model_runner_components/moe_ep_setup.py:150": "if tp_size % moe_ep_size != 0:"},
    }[version]
    cited = " ".join(SGLANG_SOURCES.values())
    for ref, text in expect.items():
        path, line = ref.rsplit(":", 1)
        assert f":{line}" in cited and path.rsplit("/", 1)[-1].split(":")[0] in cited, ref
        src = whl.read(f"sglang/{path}").decode().splitlines()
        assert text in src[int(line) - 1], (ref, src[int(line) - 1])


def test_recorded_nvidia_smi_q_and_csv_give_the_uuid():
    from mtp_audit.preflight.envdump import parse_nvidia_smi_csv, parse_nvidia_smi_q

    q = parse_nvidia_smi_q((LIVE / "nvidia-smi-q.txt").read_text())
    assert [(g.name.value, g.memory_bytes.value, g.uuid.value) for g in q.gpus] == [("NVIDIA H200", 143771 * 2**20, H200_UUID)]
    csv = parse_nvidia_smi_csv((LIVE / "nvidia-smi-query-header.csv").read_text())
    assert [(g.index, g.cc, g.uuid.value) for g in csv.gpus] == [(0, (9, 0), H200_UUID)]
    old = parse_nvidia_smi_csv((FIXTURES / "preflight" / "h200" / "nvidia-smi.txt").read_text().split("index, name")[1])
    assert old.gpus[0].uuid.missing == "the nvidia-smi CSV has no uuid column"


def test_final_code_run_on_the_h200():
    """The second device call (final code): what each launch got on the live one-GPU H200."""
    s = _json("final-launch-summary.json")

    def rules(key, sev=None):
        return [f["rule_id"] for f in s[key]["findings"] if sev is None or f["severity"] == sev]

    assert "MTP311" not in rules("launch-tp1") and s["launch-tp1"]["parallel"]["visible"]["gpus"] == [0]
    assert rules("launch-tp2", "error") == ["MTP311"]
    assert (s["launch-dp2"]["parallel"]["needed_visible"], s["launch-dp2"]["parallel"]["formula"]) == (2, "tp 1 x pp 1 x dp 2 = 2")
    assert (s["launch-dpattn"]["parallel"]["needed_visible"], s["launch-dpattn"]["parallel"]["attn_dp"]) == (2, 2)
    assert rules("launch-ep2", "error") == ["MTP312"]
    assert rules("launch-nvd-none", "warning")[-1] == "MTP309" and s["launch-nvd-none"]["parallel"]["visible"]["count"] == 1
    cvd1 = s["launch-cvd-1"]
    assert "but 0 are visible" in next(f["message"] for f in cvd1["findings"] if f["rule_id"] == "MTP311")
    assert cvd1["parallel"]["visible"]["source"] == "command"
    mig = s["launch-cvd-mig"]
    assert "MTP311" not in rules("launch-cvd-mig") and mig["parallel"]["visible"]["exact"] is False
    assert mig["blocking_gaps"][0].startswith("the command needs 1 GPU(s) on this node (tp 1 x pp 1 = 1); 0 whole GPU(s) are surely visible")
    for name in ("final-facts-nvml.json", "final-facts-smi.json"):
        (g,) = MachineFacts.from_dict(_json(name)).gpus
        assert (g.name.value, g.cc, g.memory_bytes.value, g.uuid.value) == ("NVIDIA H200", (9, 0), H200_BYTES, "GPU-48dcc871-de84-3b71-d952-a789e10e7786")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_size_below_one_is_a_problem_not_silently_one(value):
    """--tp-size -3 was reported as 'per GPU under --tp-size 1' with no finding."""
    plan = plan_sglang(lambda *names: value if "--tp-size" in names else None)
    assert [k for k, _ in plan.problems] == ["sizes"]
    assert f"--tp-size {value} is not a positive size" in plan.problems[0][1]
