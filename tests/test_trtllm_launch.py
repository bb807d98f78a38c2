"""TensorRT-LLM launches: ``trtllm-serve MODEL --config YAML`` on real checkpoint configs (fixtures/checkpoint) with the
YAMLs of public reports and NVIDIA's documentation (fixtures/trtllm/SOURCE.txt) and real environment dumps
(fixtures/preflight/envdumps). Expected rule ids, severities and exit codes checked by hand against the YAML, the
config's ``num_nextn_predict_layers`` and the dump's GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.engines.registry import engine_for
from mtp_audit.engines.trtllm.command import parse_trtllm_command
from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity

ROOT = Path(__file__).resolve().parents[1]
CK = ROOT / "fixtures" / "checkpoint"
YAML = ROOT / "fixtures" / "trtllm"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
B200 = ROOT / "fixtures" / "preflight" / "envdumps" / "sglang-24834.txt"


def _ids(report, severity=None):
    """The TensorRT-LLM rule ids of a report, without MTP719 (the MTP layers' memory note every MTP launch on a
    checkpoint with known MTP bytes gets; asserted on its own in test_mtp_memory_per_gpu)."""
    return sorted({f.rule_id for f in report.findings if f.rule_id.startswith("MTP7") and f.rule_id != "MTP719"
                   and (severity is None or f.severity == severity)})


def _run(model: str, yaml: str, *extra: str, dump: Path = H200):
    return audit_launch(["trtllm-serve", str(CK / model), "--config", str(YAML / yaml), *extra], env_dumps=[dump], environ={})


def test_registry_picks_tensorrt_llm():
    assert engine_for(["trtllm-serve", "m"]).name == "trtllm"
    assert engine_for(["A=1", "/opt/bin/trtllm-serve", "serve", "m"]).name == "trtllm"


def test_parse_every_spelling():
    cmd = parse_trtllm_command(["trtllm-serve", "serve", "nvidia/DeepSeek-R1-FP4", "--tp_size=8", "--ep_size", "8",
                                "--extra_llm_api_options", "x.yml", "--trust_remote_code", "--tp-size", "2"])
    assert cmd.entry == "trtllm-serve serve" and cmd.model == "nvidia/DeepSeek-R1-FP4"
    assert cmd.values["tensor_parallel_size"] == "8" and cmd.values["moe_expert_parallel_size"] == "8"
    assert cmd.yaml_path == "x.yml" and cmd.values["trust_remote_code"] == "true"
    assert cmd.unknown == ["--tp-size"]


def test_glm5_dsa_with_kv_cache_manager_v1_accepts_nothing():
    """#18662: GLM-5 (GlmMoeDsaForCausalLM, num_nextn_predict_layers 1) + use_kv_cache_manager_v2: false."""
    r = _run("zai-org--GLM-5-FP8", "glm5-dsa-kvv1.yaml")
    assert _ids(r) == ["MTP712"]
    assert r.facts["launch"]["summary"]["speculative"] == "MTP"
    assert r.facts["launch"]["summary"]["draft_mode"] == "MTP_EAGLE_ONE_MODEL"


def test_deepseek_r1_yaml_with_deprecated_nextn_key():
    """The old R1 YAML: num_nextn_predict_layers 3 becomes max_draft_len 3 over DeepSeek-V3's one MTP layer."""
    r = _run("deepseek-ai--DeepSeek-V3", "r1-nextn-3.yaml")
    assert _ids(r) == ["MTP702", "MTP704"]
    assert _ids(r, Severity.WARNING) == ["MTP702"]
    assert r.facts["launch"]["summary"]["max_draft_len"] == 3
    # a config-only fixture: whether the MTP tensors ship cannot be checked, so the honest verdict is "could not tell"
    assert r.facts["launch"]["verdict"] == "could not tell"
    assert [g.analyzer for g in r.gaps if g.blocking] == ["checkpoint"]


def test_relaxed_acceptance_without_tokenizer_is_a_note():
    """The blog's relaxed-acceptance YAML on a checkpoint folder without tokenizer files: the ids are not checked
    (a non-blocking gap), nothing is guessed."""
    r = _run("deepseek-ai--DeepSeek-V3", "r1-relaxed.yaml")
    assert "MTP706" not in _ids(r)
    assert any("think-token ids 128798/128799 were not checked" in g.message and not g.blocking for g in r.gaps)


def test_acceptance_threshold_is_a_warning():
    r = _run("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "threshold.yaml", dump=B200)
    assert _ids(r) == ["MTP705"]


def test_nvfp4_checkpoint_on_sm90_gets_an_fp4_verdict():
    """NVIDIA's NVFP4 Nemotron-3-Super on an H200 (SM90): TensorRT-LLM's own FP4 verdict, not the dropped preflight's.
    Before: no FP4 finding, a note that the capability matrix had no TensorRT-LLM rows."""
    r = _run("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "threshold.yaml")
    assert _ids(r) == ["MTP705", "MTP718"] and _ids(r, Severity.WARNING) == ["MTP705", "MTP718"]
    fp4 = r.facts["launch"]["fp4"]
    assert (fp4["engine"], fp4["needed"], fp4["native_fp4"]) == ("trtllm", True, "not capable")
    assert [(v["gpu"], v["compute_capability"], v["native_fp4"]) for v in fp4["verdicts"]] == [(0, "9.0", "not capable")]
    assert "fp4Gemm.cpp:59-79" in fp4["verdicts"][0]["reasons"][0]
    assert r.facts["launch"]["summary"]["native_fp4"] == "not capable"
    assert sum(g.blocking and "dequantizes NVFP4 to W4A16 or fails" in g.message for g in r.gaps) == 1
    assert not any("capability matrix has SGLang and vLLM rows only" in g.message for g in r.gaps)


def test_nvfp4_checkpoint_on_b200_is_capable_and_bf16_needs_none():
    """The same checkpoint on B200s (SM100): capable, no MTP718; a BF16 checkpoint (DeepSeek-V3 FP8) on the H200: the
    verdict is not applicable (no FP4 kernels run)."""
    r = _run("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "threshold.yaml", dump=B200)
    fp4 = r.facts["launch"]["fp4"]
    assert fp4["native_fp4"] == "capable" and {v["compute_capability"] for v in fp4["verdicts"]} == {"10.0"}
    r = _run("deepseek-ai--DeepSeek-V3", "r1-nextn-3.yaml")
    assert r.facts["launch"]["fp4"]["native_fp4"] == "not applicable" and "MTP718" not in _ids(r)


def test_marlin_moe_backend_is_named_on_hopper(tmp_path):
    """moe_config.backend MARLIN on SM90: the finding says the MoE layers run Marlin W4A16 (SM89-SM99)."""
    cfg = tmp_path / "m.yaml"
    cfg.write_text((YAML / "threshold.yaml").read_text() + "\nmoe_config:\n  backend: MARLIN\n")
    r = audit_launch(["trtllm-serve", str(CK / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"), "--config", str(cfg)],
                     env_dumps=[H200], environ={})
    [f] = [f for f in r.findings if f.rule_id == "MTP718"]
    assert "moe_config.backend MARLIN runs the MoE layers as Marlin W4A16" in f.message


def test_mtp_on_a_checkpoint_without_mtp_layers_fails(tmp_path):
    """Qwen3-Next's config declares no num_nextn_predict_layers and the metadata-only fixture has no MTP tensors."""
    r = _run("MiniMaxAI--MiniMax-M2.5", "r1-relaxed.yaml", dump=B200)
    ids = _ids(r, Severity.ERROR)
    # MiniMax-M2.5 declares 3 MTP modules (num_mtp_modules) but ships none; its architecture is not in the MTP table
    assert ids == [] and any(g.blocking and "MiniMaxM2ForCausalLM" in g.message for g in r.gaps)


def test_cli_exit_codes(tmp_path, capsys):
    args = ["launch", "--env-dump", str(H200), "--", "trtllm-serve", str(CK / "zai-org--GLM-5-FP8"), "--config"]
    assert main(args + [str(YAML / "glm5-dsa-kvv1.yaml")]) == 3  # config-only checkpoint: could not tell
    assert main(args + [str(YAML / "glm5-dsa-kvv1.yaml"), "--tp-size", "8"]) == 1  # MTP711 error
    bad = tmp_path / "bad.yaml"
    bad.write_text("speculative_config: [\n")
    capsys.readouterr()
    assert main(args + [str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid YAML at line 2" in err


@pytest.mark.parametrize("body, problem", [
    ("- a\n- b\n", "expected a mapping"),
    ("a: &x [1]\n" + "".join(f"b{i}: *x\n" for i in range(101)), "over the bounds"),
    ("!!python/object/apply:os.system ['true']\n", "invalid YAML"),
    ("a: 1\n---\nb: 2\n", "2 YAML documents"),
])
def test_hostile_yaml_is_one_line_exit_2(tmp_path, capsys, body, problem):
    y = tmp_path / "x.yaml"
    y.write_text(body)
    rc = main(["launch", "--env-dump", str(H200), "--", "trtllm-serve", str(CK / "zai-org--GLM-5-FP8"), "--config", str(y)])
    err = capsys.readouterr().err
    assert rc == 2 and problem in err and err.count("\n") == 1


def test_reap_checkpoint_without_mtp_tensors():
    """The REAP-pruned Qwen3.5 declares one MTP layer, its 22,213-tensor index has none: with decoding_type MTP the
    checkpoint's MTP001 stays an error (exit 1); without speculative_config it is a warning and MTP700 does not claim
    unused heads that are not there."""
    reap = "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
    r = _run(reap, "r1-relaxed.yaml")
    assert sorted(f.rule_id for f in r.findings if f.severity == Severity.ERROR) == ["MTP001", "MTP703"]
    assert r.facts["launch"]["verdict"] == "fix first"
    nospec = audit_launch(["trtllm-serve", str(CK / reap)], env_dumps=[H200], environ={})
    assert [(f.rule_id, f.severity) for f in nospec.findings if f.rule_id in ("MTP001", "MTP700")] == [("MTP001", Severity.WARNING)]
    assert nospec.facts["launch"]["verdict"] == "go"


def test_amd_machine_and_too_few_gpus_and_the_corrected_command():
    """A ROCm report's environment (vllm#34641, MI300X gfx942) is not a TensorRT-LLM machine (MTP713); on the H200 a
    --tp_size 4 needs 4 GPUs (MTP714); --max-batch-size is spelt --max_batch_size and --backend trt is dropped."""
    amd = ROOT / "fixtures" / "preflight" / "envdumps" / "amd" / "vllm-34641.txt"
    r = _run("zai-org--GLM-5-FP8", "threshold.yaml", dump=amd)
    assert "MTP713" in _ids(r, Severity.ERROR)
    r = _run("zai-org--GLM-5-FP8", "threshold.yaml", "--max-batch-size", "8", "--tp_size", "4", "--backend", "trt")
    assert _ids(r, Severity.ERROR) == ["MTP710", "MTP711", "MTP714"]
    assert r.facts["launch"]["corrected_argv"][-4:] == ["--max_batch_size", "8", "--tp_size", "4"]
    assert "--backend" not in r.facts["launch"]["corrected_argv"]


def test_minimax_m3_runs_no_mtp_in_tensorrt_llm(tmp_path):
    """MiniMax-AI/MiniMax-M3 #13 (2026-06-22): the maintainers answer "Don't support MTP now" for TensorRT-LLM. A
    MiniMax-M3-shaped metadata checkpoint with the R1 relaxed-acceptance YAML is MTP707, an error (exit 1)."""
    from mtp_audit.synth.launch import checkpoint_files

    for rel, text in checkpoint_files("ck", arch="MiniMaxM3ForCausalLM").items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    r = audit_launch(["trtllm-serve", str(tmp_path / "ck"), "--config", str(YAML / "r1-relaxed.yaml")], env_dumps=[H200], environ={})
    assert "MTP707" in _ids(r, Severity.ERROR)
    assert r.facts["launch"]["verdict"] == "fix first"


@pytest.fixture(scope="module")
def dsv3_indexed(tmp_path_factory):
    """DeepSeek-V3's real config.json beside its complete (metadata-only) index: 91,991 tensors, one MTP layer."""
    import json
    import shutil

    from mtp_audit.synth.shards import write_checkpoint

    root = tmp_path_factory.mktemp("dsv3") / "ds"
    write_checkpoint(root, json.loads((CK / "deepseek-ai--DeepSeek-V3" / "spec.json").read_text()), shards=False)
    shutil.copy(CK / "deepseek-ai--DeepSeek-V3" / "config.json", root / "config.json")
    return root


def _cli(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["launch", "--env-dump", str(H200), "--", *argv])
    return rc, capsys.readouterr().out


def test_decoding_type_typo_does_not_start(dsv3_indexed, tmp_path, capsys):
    """``decoding_type: MPT`` is none of the SpeculativeConfig union's literals: pydantic refuses the LLM args, the
    server does not start (MTP715, exit 1), the accepted values are named. Before: 'runs MPT', go, exit 0."""
    y = tmp_path / "mpt.yaml"
    y.write_text("speculative_config:\n  decoding_type: MPT\n")
    rc, out = _cli(capsys, "trtllm-serve", str(dsv3_indexed), "--config", str(y))
    assert rc == 1 and "MTP715 error" in out and "'MPT' is not one TensorRT-LLM accepts" in out
    assert "accepted: AUTO, DFlash, DSpark, Draft_Target, Eagle, Eagle3, Lookahead, MTP, Medusa, NGram" in out
    assert "did you mean MTP?" in out and out.startswith("FAIL: fix first: 1 error(s) (MTP715); TensorRT-LLM does not start")
    r = audit_launch(["trtllm-serve", str(dsv3_indexed), "--config", str(y)], env_dumps=[H200], environ={})
    assert _ids(r, Severity.ERROR) == ["MTP715"] and r.facts["launch"]["verdict"] == "fix first"
    y.write_text("speculative_config:\n  max_draft_len: 1\n")  # no decoding_type: no tag for the union
    r = audit_launch(["trtllm-serve", str(dsv3_indexed), "--config", str(y)], env_dumps=[H200], environ={})
    assert _ids(r, Severity.ERROR) == ["MTP715"]
    y.write_text("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 1\n")
    r = audit_launch(["trtllm-serve", str(dsv3_indexed), "--config", str(y)], env_dumps=[H200], environ={})
    assert _ids(r) == [] and r.facts["launch"]["verdict"] == "go"


def test_absurd_max_draft_len_is_not_go(dsv3_indexed, tmp_path, capsys):
    """max_draft_len 99999999999999999999999: TensorRT-LLM bounds it only below (NonNegativeInt), so no invented
    bound: one request's step (N + 1 tokens) is above the 8,192-token batch budget -> MTP716 warning and a blocking
    gap, 'could not tell' (exit 3). Before: go, exit 0. A --max_num_tokens large enough makes 5,000 fine."""
    y = tmp_path / "big.yaml"
    y.write_text("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 99999999999999999999999\n")
    rc, out = _cli(capsys, "trtllm-serve", str(dsv3_indexed), "--config", str(y))
    assert rc == 3 and "MTP716 warning: max_draft_len 99,999,999,999,999,999,999,999" in out
    assert "above the default max_num_tokens (8,192)" in out and "no upper bound on max_draft_len" in out
    assert out.startswith("INCONCLUSIVE: could not tell: ") and "MTP704" not in out
    y.write_text("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 5000\n")
    r = audit_launch(["trtllm-serve", str(dsv3_indexed), "--config", str(y), "--max_num_tokens", "4096"],
                     env_dumps=[H200], environ={})
    assert _ids(r) == ["MTP716"] and r.facts["launch"]["verdict"] == "could not tell"
    r = audit_launch(["trtllm-serve", str(dsv3_indexed), "--config", str(y), "--max_num_tokens=16384"],
                     env_dumps=[H200], environ={})
    assert _ids(r) == ["MTP704"] and r.facts["launch"]["verdict"] == "go"


def test_missing_model_is_an_error(tmp_path, capsys):
    """No MODEL: click exits with 'Missing argument MODEL' (MTP717, exit 1). Before: a blocking gap, exit 3."""
    y = tmp_path / "y.yaml"
    y.write_text("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 1\n")
    for entry in (["trtllm-serve"], ["trtllm-serve", "serve"]):
        rc, out = _cli(capsys, *entry, "--config", str(y))
        assert rc == 1 and "MTP717 error" in out and "click exits with 'Missing argument MODEL'" in out
        assert out.startswith("FAIL: fix first: 1 error(s) (MTP717); TensorRT-LLM would run")


def test_mtp_memory_per_gpu():
    """DeepSeek-V3.1-NVFP4's MTP layer (26,926,853,120 bytes estimated from config) at --tp_size 4 on the H200 dump
    (150,754,820,096 bytes per GPU): 6.73 GB per GPU, 4.5% of a GPU: info."""
    r = _run("nvidia--DeepSeek-V3.1-NVFP4", "r1-nextn-3.yaml", "--tp_size", "4")
    [f] = [f for f in r.findings if f.rule_id == "MTP719"]
    assert f.severity == Severity.INFO
    assert f.message.startswith("the MTP layers' weights take about 6,731,713,280 bytes (6.73 GB) per GPU at load (peak) "
                                "under tensor_parallel_size 4")
    assert "4.5% of the 150,754,820,096 bytes (150.75 GB) GPU" in f.message


def test_a_linux_collect_env_is_an_nvidia_machine_for_the_gpu_count(tmp_path):
    """pytorch-150733.txt (torch collect_env, one RTX 5090 D, ``Python platform: Linux-...``): its ``platform`` fact is
    the operating system, not a non-NVIDIA device, so an 8-GPU launch gets MTP714 on the whole dump just as on the dump
    with its OS lines (lines 13-20, ``Python platform`` among them) dropped, which already got it."""
    dump = ROOT / "fixtures" / "preflight" / "envdumps" / "pytorch-150733.txt"
    lines = dump.read_text(encoding="utf-8").split("\n", 1)[1].splitlines(keepends=True)
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(lines[:12] + lines[20:]), encoding="utf-8")
    for d in (dump, cut):
        r = audit_launch(["trtllm-serve", str(CK / "deepseek-ai--DeepSeek-V3"), "--tp_size", "8"], env_dumps=[d], environ={})
        assert _ids(r, Severity.ERROR) == ["MTP714"], d.name
