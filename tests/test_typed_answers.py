"""The typed answers analyzers hand the engines (mtp_audit.checkpoint.typed, mtp_audit.preflight.typed): what they
hold, with extents, read from real fixtures; and that they never reach the report's JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.typed import CheckpointAnswer, checkpoint_answer
from mtp_audit.preflight import preflight
from mtp_audit.preflight.typed import MachineAnswer, machine_answer
from mtp_audit.report import Report

ROOT = Path(__file__).resolve().parent.parent
CK = ROOT / "fixtures" / "checkpoint" / "nvidia--DeepSeek-V3.1-NVFP4"
DUMPS = ROOT / "fixtures" / "preflight" / "envdumps" / "constructed"


def test_checkpoint_answer_holds_the_config_read_once_and_the_declared_mtp():
    report = audit_checkpoint(str(CK))
    a = report.answer
    assert isinstance(a, CheckpointAnswer) and checkpoint_answer(report) is a
    assert (a.mode, a.architectures, a.model_type, a.architecture) == ("config-only", ("DeepseekV3ForCausalLM",), "deepseek_v3",
                                                                       "DeepseekV3ForCausalLM")
    # config.json as the analyzer read it: 42 keys, num_nextn_predict_layers 1; read-only
    assert a.config == json.loads((CK / "config.json").read_text())
    assert len(a.config) == 42
    with pytest.raises(TypeError):
        a.config["num_nextn_predict_layers"] = 2  # type: ignore[index]
    assert (a.mtp.declared_layers, a.mtp.declared_by) == (1, "/num_nextn_predict_layers")
    assert [(q.method, q.algo, q.group_size) for q in a.quantization] == [("modelopt", "NVFP4", 16)]
    assert a.fp4 == "NVFP4"
    # config-only: the bytes are an estimate, so as a Known they are unknown, the estimate in the provenance
    assert (a.mtp.bytes.value, a.mtp.bytes.estimated) == (26_926_853_120, True)
    assert a.mtp.bytes.known.extent == "unknown" and "26,926,853,120" in a.mtp.bytes.known.source.how
    assert a.summary.mtp_layers_declared == 1 and a.summary.mtp_tensors is None


@pytest.mark.parametrize("name", ["nvidia--DeepSeek-V3.1-NVFP4", "zai-org--GLM-5-FP8", "nvidia--Qwen3.5-397B-A17B-NVFP4"])
def test_the_json_config_and_summary_are_written_from_the_typed_answer(name):
    report = audit_checkpoint(str(ROOT / "fixtures" / "checkpoint" / name))
    doc, a = report.facts["checkpoint"], report.answer
    assert a.config_summary is not None and doc["config"] == a.config_summary.to_dict()
    assert {k: doc["summary"][k] for k in a.summary.to_dict()} == a.summary.to_dict()
    assert a.architectures == a.config_summary.architectures and a.model_type == a.config_summary.model_type


def test_checkpoint_answer_read_back_from_the_json_is_the_same_but_the_config():
    report = audit_checkpoint(str(CK))
    loaded = Report(targets=report.targets, facts=json.loads(json.dumps(report.facts)))
    assert loaded.answer is None
    assert checkpoint_answer(loaded) == dataclasses.replace(report.answer, config=None)


def test_the_answer_is_never_serialized_nor_compared():
    report = audit_checkpoint(str(CK))
    bare = dataclasses.replace(report, answer=None)
    assert report == bare
    assert json.dumps(report.to_dict(), sort_keys=True) == json.dumps(bare.to_dict(), sort_keys=True)
    assert "answer" not in report.to_dict()


def test_machine_answer_of_a_cut_table_is_at_least_its_rows():
    # 8 x B200 pasted cut inside GPU 3's row: 4 rows seen, 183359 MiB each (fixtures' SOURCE.txt)
    m = machine_answer(preflight(env_dumps=[DUMPS / "b200-nvidia-smi-cut.txt"]))
    assert isinstance(m, MachineAnswer)
    assert (m.gpu_count.value, m.gpu_count.extent, m.gpu_list_partial) == (4, "at least", True)
    g = m.gpus[0]
    assert (g.index, g.name.value, g.cc, g.memory_bytes.value) == (0, "NVIDIA B200", (10, 0), 183359 * 2**20)
    assert g.memory_bytes.extent == "exact" and g.memory_bytes.source.where == "env-dump:nvidia-smi"
    # which line of the dump: the B200 rows' name on line 8, memory on line 9 (the table's second row line)
    assert (g.name.source.line, g.memory_bytes.source.line) == (8, 9)
    assert m.accelerator.value == "cuda"


def test_machine_answer_keeps_what_is_missing_and_why():
    m = machine_answer(preflight(env_dumps=[DUMPS / "gb10-sglang-0.5.17.txt"]))
    assert m is not None
    assert (m.gpu_count.value, m.gpu_count.extent) == (1, "exact")
    g = m.gpus[0]
    assert (g.name.value, g.cc) == ("NVIDIA GB10", (12, 1))
    assert g.memory_bytes.extent == "unknown" and g.memory_bytes.source.how == "sglang check_env does not print GPU memory"
    assert m.package("sglang") == "0.5.17" and m.package("vllm") is None


# --- config.json read once: the engines use the mapping the checkpoint audit read ----------------------------------


def _engine_reads_of_config(monkeypatch) -> list[str]:
    """Spy on :func:`mtp_audit.sources.bounded.read_json_bounded` as an engine imports it (the checkpoint source binds
    its own copy at import): every call on a ``config.json`` is an engine reading the file again."""
    import mtp_audit.sources.bounded as bounded

    reads: list[str] = []
    real = bounded.read_json_bounded

    def spy(path, *args, **kwargs):
        if Path(path).name == "config.json":
            reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(bounded, "read_json_bounded", spy)
    return reads


def test_sglang_reads_the_linear_attention_kind_from_the_audited_config(capsys, monkeypatch):
    from conftest import FIXTURES, sglang_wheel

    from mtp_audit.cli.main import main

    reads = _engine_reads_of_config(monkeypatch)
    ck = FIXTURES / "oracle-configs" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
    rc = main(["launch", "-v", "--sglang", str(sglang_wheel("0.5.20")), "--env-dump",
               str(FIXTURES / "launch" / "reports" / "sglang-35080-env.txt"), "--", "python", "-m", "sglang.launch_server",
               "--model-path", str(ck), "--tp-size", "1", "--attention-backend", "flashinfer"])
    out = capsys.readouterr().out
    assert rc == 1 and "linear attention = gdn (config.json of" in out  # Qwen3.5's Gated DeltaNet layers
    assert reads == []


def test_trtllm_names_a_dspark_drafter_from_the_audited_config(tmp_path, monkeypatch):
    from mtp_audit.launch import audit_launch

    # DeepSeek-V4-Flash's config.json with the DSpark keys public tests quote for DeepSeek-V4-Flash-0731
    cfg = json.loads((ROOT / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V4-Flash" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "dspark_block_size": 5, "dspark_target_layer_ids": [40, 41, 42]}))
    reads = _engine_reads_of_config(monkeypatch)
    r = audit_launch(["trtllm-serve", str(tmp_path), "--config", str(ROOT / "fixtures" / "trtllm" / "r1-nextn-3.yaml")],
                     env_dumps=[ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"], environ={})
    f = next(f for f in r.findings if f.rule_id == "MTP709")
    assert f.message.startswith("the checkpoint's config has DSpark keys (dspark_block_size, dspark_target_layer_ids): ")
    assert reads == []


# --- SGLang's release facts through the typed Release view ------------------------------------------------------------


def test_sglang_release_view_of_0523():
    from conftest import sglang_wheel

    from mtp_audit.engines.sglang import audit_sglang
    from mtp_audit.engines.sglang.release import Release

    r = Release.of(audit_sglang(sglang_wheel("0.5.23")).facts["sglang"])
    assert (r.known, r.version, r.cli_read) == (True, "0.5.23", True)
    # --tp-size is the first option string (alias --tensor-parallel-size): records are keyed by it
    assert (r.dest("--tp-size"), r.dest("--tensor-parallel-size"), r.dest("--no-such-flag")) == ("tp_size", None, None)
    # 0.5.23 declares --speculative-algorithm without choices= (arg_groups/fields/spec.py:31)
    assert r.choices("--speculative-algorithm") is None
    assert r.option("--speculative-algorithm")["location"] == "sglang/srt/arg_groups/fields/spec.py:31"
    assert r.parser["location"] == "sglang/srt/server_args.py:679" and r.parser["allow_abbrev"] is True
    assert r.entry_points is not None and r.entry_points["sglang serve"] == "sglang/cli/main.py:28"


def test_sglang_release_view_without_a_release():
    from mtp_audit.engines.sglang.release import Release

    r = Release.of(None)
    assert (r.known, r.version, dict(r.cli), r.cli_read, r.entry_points, r.entry_classes) == (False, None, {}, False, None, ())
    assert r.dest("--tp-size") is None and r.choices("--quantization") is None
