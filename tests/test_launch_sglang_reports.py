"""Start-up crashes of real 2026 reports, replayed on the real SGLang wheels: the attention registry's hybrid GDN gate
(MTP313), read from each release's own source.

- https://github.com/sgl-project/sglang/issues/35080 (description of 2026-08-17: sglang 0.5.17, torch 2.11.0+cu130,
  B300, "... Got attention_backend=flashinfer."; machine: fixtures/launch/reports/sglang-35080-description-env.txt)
  and its comment of 2026-08-25: Qwen/Qwen3.5-35B-A3B, TP 1, on one
  NVIDIA B300 (SM103), ``--attention-backend flashinfer``: "AssertionError: Only {'trtllm_mha', 'triton', 'fa4'}
  backends are supported on Blackwell GPUs for hybrid GDN models. Got prefill=flashinfer, decode=flashinfer." That set
  is SGLang 0.5.18-0.5.20's SM100 set (attention_registry.py:395 / :437); 0.5.21 added flashinfer (:441).
  Machine: fixtures/launch/reports/sglang-35080-env.txt (transcribed from the report's environment list).
- https://github.com/sgl-project/sglang/pull/18758 (comment of 2026-02-24): Qwen3.5-35B-A3B on a DGX Spark (GB10,
  SM121) with attention_backend=flashinfer: "AssertionError: triton or trtllm_mha backend are the only supported
  backends on Blackwell GPUs for hybrid GDN models" (0.5.9 attention_registry.py:203). Machine: a real GB10 dump
  (fixtures/preflight/envdumps/sglang-13198.txt, another report's check_env).

Qwen3.5-35B-A3B's config is not in the project data; the checkpoint is bryce-hoehn/Qwen3.5-25B-REAP-A3B-Coding (a
REAP-pruned Qwen3.5-35B-A3B: same Qwen3_5MoeForConditionalGeneration architecture and Gated DeltaNet layout,
fixtures/oracle-configs). Before this check the same launches were exit 3 ("could not tell": the config-only MTP check
blocked a launch without speculative decoding) and never named the assert.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang.launch.attention import linear_attention_kind

pytestmark = pytest.mark.network

CK = FIXTURES / "oracle-configs" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
B300 = FIXTURES / "launch" / "reports" / "sglang-35080-env.txt"
GB10 = FIXTURES / "preflight" / "envdumps" / "sglang-13198.txt"
REG = "sglang/srt/layers/attention/attention_registry.py"


def _launch(capsys, version: str, env, *extra: str, model=CK) -> tuple[int, str]:
    rc = main(["launch", "-v", "--sglang", str(sglang_wheel(version)), "--env-dump", str(env), "--",
               "python", "-m", "sglang.launch_server", "--model-path", str(model), "--tp-size", "1", *extra])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize(("version", "line", "bound"), [("0.5.18", 398, 395), ("0.5.20", 440, 437)])
def test_sglang_35080_flashinfer_on_b300_dies_at_the_gdn_gate(capsys, version, line, bound) -> None:
    rc, out = _launch(capsys, version, B300, "--attention-backend", "flashinfer")
    assert rc == 1 and out.startswith("FAIL: fix first: 1 error(s) (MTP313)")
    assert (f"--attention-backend: MTP313 error: SGLang {version} stops at start-up with AssertionError at {REG}:{line}: "
            "prefill and decode attention backend flashinfer is not one of triton, trtllm_mha, fa4 on SM100/SM103") in out
    assert f"accepted = triton, trtllm_mha, fa4 (bound at {REG}:{bound})" in out
    assert "linear attention = gdn (config.json of" in out
    assert "--attention-backend trtllm_mha" in out.split("Corrected command: ")[1].splitlines()[0]


def test_sglang_35080_description_sglang_0517_torch_211(capsys) -> None:
    # the issue's own description: sglang==0.5.17, torch 2.11.0+cu130, B300; "AssertionError: Only {'trtllm_mha',
    # 'triton', 'fa4'} backends are supported on Blackwell GPUs for hybrid GDN models. Got attention_backend=flashinfer."
    # 0.5.17 asserts on --attention-backend when no per-phase backend is given (:411), else on both phases (:406)
    env = FIXTURES / "launch" / "reports" / "sglang-35080-description-env.txt"
    rc, out = _launch(capsys, "0.5.17", env, "--attention-backend", "flashinfer")
    assert rc == 1 and out.startswith("FAIL: fix first: 1 error(s) (MTP313)")  # 0.5.17's torch pin is met: no MTP209
    assert (f"MTP313 error: SGLang 0.5.17 stops at start-up with AssertionError at {REG}:411: attention_backend flashinfer "
            "is not one of triton, trtllm_mha, fa4 on SM100/SM103 (Only {allowed} backends are supported on Blackwell GPUs "
            "for hybrid GDN models. Got attention_backend={attn_be}.)") in out
    assert f"accepted = triton, trtllm_mha, fa4 (bound at {REG}:400)" in out
    rc, out = _launch(capsys, "0.5.17", env, "--prefill-attention-backend", "flashinfer", "--decode-attention-backend", "triton")
    assert rc == 1 and f"AssertionError at {REG}:406: prefill attention backend flashinfer" in out
    rc, out = _launch(capsys, "0.5.17", env, "--attention-backend", "triton")
    assert rc == 0 and "MTP313" not in out


def test_sglang_35080_runs_from_0521_and_the_gate_is_named(capsys) -> None:
    rc, out = _launch(capsys, "0.5.21", B300, "--attention-backend", "flashinfer")
    assert rc == 0 and "MTP313" not in out
    assert (f"Attention backend: attention flashinfer (--attention-backend); the hybrid GDN (Gated DeltaNet) gate at "
            f"{REG}:444 accepts triton, trtllm_mha, fa4, flashinfer here (bound at {REG}:441).") in out
    rc, out = _launch(capsys, "0.5.23", B300, "--attention-backend", "flashinfer")
    assert "MTP313" not in out and f"gate at {REG}:473 accepts triton, trtllm_mha, fa4, flashinfer here (bound at {REG}:470)" in out
    # 0.5.23 pins torch 2.14.1; the B300 has 2.13.0 and the transcribed dump records no SGLang: installing 0.5.23
    # replaces torch, a warning (was an error, exit 1)
    assert rc == 0 and "machine: MTP209 warning: sglang 0.5.23 pins torch==2.14.1" in out and "(MTP209)" not in out.splitlines()[0]


def test_pr_18758_flashinfer_on_dgx_spark_with_0_5_9(capsys) -> None:
    rc, out = _launch(capsys, "0.5.9", GB10, "--attention-backend", "flashinfer")
    assert rc == 1 and out.startswith("FAIL: fix first: 1 error(s) (MTP313)")
    assert (f"MTP313 error: SGLang 0.5.9 stops at start-up with AssertionError at {REG}:203: attention_backend flashinfer is "
            "not one of triton, trtllm_mha on SM120/SM121 (triton or trtllm_mha backend are the only supported backends on "
            "Blackwell GPUs for hybrid GDN models") in out
    rc, out = _launch(capsys, "0.5.12", GB10, "--attention-backend", "flashinfer")
    assert "MTP313" not in out and f"gate at {REG}:253 accepts triton, trtllm_mha, fa4, flashinfer here" in out


def test_the_gate_needs_a_gdn_model_and_a_blackwell_gpu(capsys) -> None:
    # Nemotron-H (Mamba2 layers) is a hybrid model, but the gate is for hybrid GDN models only
    nemo = FIXTURES / "oracle-configs" / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
    rc, out = _launch(capsys, "0.5.20", B300, "--attention-backend", "flashinfer", model=nemo)
    assert "MTP313" not in out
    # an H200 (SM90, recorded nvidia-smi) is not Blackwell: fa3 for Qwen3.5 passes the gate there
    h200 = FIXTURES / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
    rc, out = _launch(capsys, "0.5.20", h200, "--attention-backend", "fa3")
    assert "GPUs: 1 x NVIDIA H200 (compute capability 9.0)" in out and "MTP313" not in out
    assert "Attention backend: attention fa3 (--attention-backend)." in out  # no gate holds on SM90
    # the same command on the B300 dies there
    rc, out = _launch(capsys, "0.5.20", B300, "--attention-backend", "fa3")
    assert rc == 1 and f"AssertionError at {REG}:440: prefill and decode attention backend fa3" in out


def test_linear_attention_kind_of_the_real_configs() -> None:
    kinds = {p.parent.name: linear_attention_kind(json.loads(p.read_text()))
             for p in sorted((FIXTURES / "oracle-configs").glob("*/config.json"))}
    assert {k for k, v in kinds.items() if v == "gdn"} == {
        "Qwen--Qwen3-Next-80B-A3B-Instruct", "Qwen--Qwen3-Next-80B-A3B-Thinking", "Qwen--Qwen3.5-122B-A10B", "Qwen--Qwen3.5-27B", "Qwen--Qwen3.5-397B-A17B",
        "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding", "nvidia--Qwen3.5-122B-A10B-NVFP4", "nvidia--Qwen3.5-397B-A17B-NVFP4",
        "nvidia--Qwen3.6-35B-A3B-NVFP4"}
    assert kinds["nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"] == "mamba2"
    assert kinds["nvidia--MiniMax-M2.5-NVFP4"] is None  # attn_type_list is all 1: full attention everywhere
    assert {v for k, v in kinds.items() if "DeepSeek" in k or "GLM" in k or "Mixtral" in k or "MiMo" in k} == {None}


def test_without_attention_backend_the_deciders_are_named(capsys) -> None:
    # no --attention-backend: 0.5.23 model_overrides/qwen3_5.py:47 (registered for Qwen3_5MoeForConditionalGeneration)
    # sets it on SM100 to a value computed in the hook (triton or trtllm_mha); the GDN gate still applies to it
    rc, out = _launch(capsys, "0.5.23", B300)
    line = next(ln for ln in out.splitlines() if ln.startswith("  Attention backend: "))
    assert line.startswith("  Attention backend: not given: SGLang picks it at start-up (the model override at "
                           "sglang/srt/arg_groups/model_overrides/qwen3_5.py:47 may set it to sm100_default_attn_backend "
                           "when not (not get_platform().is_sm100 or cfg.attention_backend is not None); else "
                           "get_default_attn_backend; not replayed)")
    assert f"gate at {REG}:473 accepts triton, trtllm_mha, fa4, flashinfer here" in line and "MTP313" not in out


def test_a_hub_id_is_read_from_the_hf_cache_offline(capsys, monkeypatch, tmp_path) -> None:
    # the report's command names the hub id; its config.json sits in the Hugging Face cache (refs/main -> a snapshot
    # with Qwen/Qwen3.5-27B's real config.json): the kind is read from there, never from the network
    from hubfixture import isolate_hf
    from huggingface_hub import constants

    paths = isolate_hf(monkeypatch, tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = paths["hf_cache"] / "models--Qwen--Qwen3.5-27B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_bytes((FIXTURES / "oracle-configs" / "Qwen--Qwen3.5-27B" / "config.json").read_bytes())
    rc, out = _launch(capsys, "0.5.20", B300, "--attention-backend", "flashinfer", model="Qwen/Qwen3.5-27B")
    assert rc == 1 and f"AssertionError at {REG}:440" in out
    assert "linear attention = gdn (config.json of Qwen/Qwen3.5-27B)" in out
    # not in any cache: the kind is unknown, so no prediction (and no network request: offline)
    rc, out = _launch(capsys, "0.5.20", B300, "--attention-backend", "flashinfer", model="Qwen/Qwen3.5-9B")
    assert "MTP313" not in out and "the linear-attention kind is unknown (Qwen/Qwen3.5-9B: config.json not in the caches" in out


def test_upgrade_from_0520_to_0521_removes_the_crash(capsys) -> None:
    rc = main(["launch", "--sglang", str(sglang_wheel("0.5.20")), "--compare-sglang", str(sglang_wheel("0.5.21")),
               "--env-dump", str(B300), "--", "python", "-m", "sglang.launch_server", "--model-path", str(CK),
               "--attention-backend", "flashinfer"])
    out = capsys.readouterr().out
    assert rc == 0 and "MTP313" not in out.split("what-will-happen:")[0]
    assert ("what-will-happen:attention_backend: MTP310 info: attention backend changes: SGLang 0.5.20: attention_backend "
            "flashinfer; refused at start-up (AssertionError); SGLang 0.5.21: attention_backend flashinfer; accepted: the "
            "gate accepts triton, trtllm_mha, fa4, flashinfer") in out
    assert "what-will-happen:errors: MTP310 info: errors changes: SGLang 0.5.20: MTP313; SGLang 0.5.21: none" in out


def test_odd_or_broken_configs_leave_the_kind_unknown_never_crash(capsys, tmp_path) -> None:
    assert linear_attention_kind({"text_config": [1, 2], "layer_types": "linear_attention"}) is None
    assert linear_attention_kind({"linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "layer_types": None}) is None
    assert linear_attention_kind({"hybrid_override_pattern": 7, "attn_type_list": "0"}) is None
    assert linear_attention_kind([]) is None
    # a config.json that is not UTF-8: bad input, one line, exit 2 (the checkpoint audit's answer), no traceback
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_bytes(b"\xff\xfe{ not json")
    rc = main(["launch", "--sglang", str(sglang_wheel("0.5.20")), "--env-dump", str(B300), "--", "python", "-m",
               "sglang.launch_server", "--model-path", str(bad), "--attention-backend", "flashinfer"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().endswith("config.json: not UTF-8 (byte 0)") and "Traceback" not in err


def test_asserts_in_hooks_of_other_models_are_not_predictions(capsys) -> None:
    # 0.5.20 deepseek_v4_hook.py:189 asserts the algorithm is EAGLE or DSPARK when one is given; the hook runs only for
    # DeepSeek-V4 models and its guard is about the flag alone, so a Qwen3.5 NEXTN launch is not told it dies there
    rc, out = _launch(capsys, "0.5.20", B300, "--attention-backend", "triton", "--speculative-algorithm", "NEXTN")
    assert "deepseek_v4_hook.py" not in out.split("not examined:")[0] and "MTP313" not in out
