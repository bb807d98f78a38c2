"""Model-override rewrites and backend asserts of real SGLang wheels, and their guards evaluated for a launch.

Hand-checked in the wheels: 0.5.23 ``srt/arg_groups/model_overrides/minimax_m2.py:23-28`` (``if
get_platform().is_sm100 and cfg.moe_runner_backend == "auto" and model_config_of(server_args).quantization ==
"modelopt_fp4": overrides["moe_runner_backend"] = "flashinfer_trtllm_routed"``, registered with
``@_register_for("MiniMaxM2ForCausalLM")``); 0.5.12 ``srt/layers/attention/attention_registry.py:253`` (hybrid
GDN models on Blackwell accept only triton / trtllm_mha / fa4 / flashinfer); 0.5.23
``srt/arg_groups/speculative_hook.py:115`` (NEXTN -> FROZEN_KV_MTP only when ``is_gemma4_draft``).
"""

from __future__ import annotations

import os

import pytest
from conftest import sglang_wheel

from mtp_audit.engines.code.evaluator import UNKNOWN, evaluate
from mtp_audit.engines.sglang.audit import audit_sglang
from mtp_audit.engines.sglang.scan import passes_for
from mtp_audit.engines.sglang.startup_facts import (
    guard_value,
    predict_asserts,
    predict_overrides,
)


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("replay-cache"))
    return {v: audit_sglang(sglang_wheel(v)).facts["sglang"] for v in ("0.5.12", "0.5.23")}


def test_every_model_overrides_file_is_read(facts):
    files = {m["location"].rsplit(":", 1)[0].rsplit("/", 1)[1] for m in facts["0.5.23"]["model_overrides"]}
    assert len(files) == 34  # 35 files in model_overrides/: all but __init__.py register an override function
    assert "minimax_m2.py" in files and "qwen3_5.py" in files
    assert facts["0.5.12"]["model_overrides"] == []  # 0.5.12 has no model_overrides package


def test_minimax_m2_override_applies_only_where_its_guard_holds(facts):
    f = facts["0.5.23"]
    (mm,) = [m for m in f["model_overrides"] if m["location"].endswith("minimax_m2.py:28")]
    assert (mm["argument"], mm["from"], mm["to"], mm["architectures"]) == (
        "moe_runner_backend", "auto", ["flashinfer_trtllm_routed"], ["MiniMaxM2ForCausalLM"])
    assert mm["test_location"].endswith("minimax_m2.py:23") and mm["logged"]
    launch = {"architecture": "MiniMaxM2ForCausalLM", "quantization": "modelopt_fp4",
              "fields": {"moe_runner_backend": "auto"}, "gpu": "sm100"}
    hits = [r for r in predict_overrides(f, launch) if r["argument"] == "moe_runner_backend"]
    assert [(r["to"], r["certain"]) for r in hits] == [(["flashinfer_trtllm_routed"], True)]
    assert not [r for r in predict_overrides(f, dict(launch, gpu="sm90")) if r["argument"] == "moe_runner_backend"]
    assert not [r for r in predict_overrides(f, dict(launch, quantization="fp8")) if r["argument"] == "moe_runner_backend"]
    unsure = [r for r in predict_overrides(f, dict(launch, gpu=None)) if r["argument"] == "moe_runner_backend"]
    assert [r["certain"] for r in unsure] == [False]  # GPU unknown: it may apply, never a headline as certain
    # a user value other than auto is honoured
    assert not [r for r in predict_overrides(f, dict(launch, fields={"moe_runner_backend": "triton"}))
                if r["argument"] == "moe_runner_backend"]


def test_gemma4_rewrite_guard_is_false_for_qwen35(facts):
    (fz,) = {r["condition"] for r in facts["0.5.23"]["remaps"] if r["to"] == ["FROZEN_KV_MTP"] and r["from"] == "NEXTN"}
    qwen = {"architecture": "Qwen3_5MoeForConditionalGeneration", "fields": {"speculative_algorithm": "NEXTN"}}
    assert guard_value(fz, qwen) is False
    assert guard_value(fz, dict(qwen, architecture="Gemma4ForConditionalGeneration")) is True
    assert guard_value(fz, {"fields": {"speculative_algorithm": "NEXTN"}}) is None  # no checkpoint: cannot tell


def test_hybrid_gdn_attention_assert_before_0522(facts):
    asserts = [a for a in facts["0.5.12"]["backend_asserts"] if a["location"].endswith("attention_registry.py:253")]
    (a,) = asserts
    assert a["accepts"] == ["triton", "trtllm_mha", "fa4", "flashinfer"] and "Blackwell" in a["message"]
    qwen_b200 = {"fields": {"attention_backend": "fa3"}, "gpu": "sm100", "hybrid_linear_attention": True}
    (hit,) = [x for x in predict_asserts(facts["0.5.12"], qwen_b200) if x["location"] == a["location"]]
    assert hit["certain"] and hit["value"] == "fa3"
    assert not [x for x in predict_asserts(facts["0.5.12"], dict(qwen_b200, gpu="sm90")) if x["location"] == a["location"]]
    assert not [x for x in predict_asserts(facts["0.5.12"], dict(qwen_b200, hybrid_linear_attention=False))
                if x["location"] == a["location"]]
    ok = dict(qwen_b200, fields={"attention_backend": "triton"})
    assert not [x for x in predict_asserts(facts["0.5.12"], ok) if x["location"] == a["location"]]
    # 0.5.23 still has it, on the per-phase backends against a set bound per GPU family (attention_registry.py:464
    # {triton, trtllm_mha, flashinfer} on SM120, :470 HYBRID_GDN_SM100_BACKENDS = the four above, defined at :44)
    new = sorted((x["field"], x["set_location"].rsplit(":", 1)[1], x["accepts"]) for x in facts["0.5.23"]["backend_asserts"]
                 if x["location"].endswith("attention_registry.py:473"))
    assert new == [("decode_attention_backend", "464", ["triton", "trtllm_mha", "flashinfer"]),
                   ("decode_attention_backend", "470", ["triton", "trtllm_mha", "fa4", "flashinfer"]),
                   ("prefill_attention_backend", "464", ["triton", "trtllm_mha", "flashinfer"]),
                   ("prefill_attention_backend", "470", ["triton", "trtllm_mha", "fa4", "flashinfer"])]
    # the checkpoint's architecture and model types decide the early exits before the gate (Dots3Config, a MiniMax
    # sparse config, Inkling configs: none of them a Qwen3.5 config)
    b300 = {"fields": {"attention_backend": "fa3"}, "gpu": "sm100", "linear_attention": "gdn",
            "architecture": "Qwen3_5MoeForConditionalGeneration", "model_types": ["qwen3_5_moe", "qwen3_5_moe_text"],
            "registered": [e["class"] for e in facts["0.5.23"]["entry_classes"]]}
    def sure(known):
        return {x["location"].rsplit("/", 1)[1] for x in predict_asserts(facts["0.5.23"], known) if x["certain"]}

    assert sure(b300) == {"attention_registry.py:473"}
    # kv_cache_hook.py:302/313 (the KV4 cache's backend lists) may apply, their guards cannot be told: not certain
    assert {x["location"].rsplit("/", 1)[1] for x in predict_asserts(facts["0.5.23"], b300) if not x["certain"]} == {
        "kv_cache_hook.py:302", "kv_cache_hook.py:313"}
    assert sure(dict(b300, linear_attention="mamba2")) == set()  # Nemotron-H: not a GDN model
    assert sure(dict(b300, fields={"attention_backend": "flashinfer"})) == set()
    assert sure(dict(b300, gpu="sm120", fields={"attention_backend": "fa4"})) == {"attention_registry.py:473"}


def test_evaluate_python_semantics():
    look = {"a": None, "b": 3, "s": "auto"}.get

    def lk(name: str):
        return look(name, UNKNOWN)

    assert evaluate("a > 1", lk).error == "TypeError"  # None > 1 raises, as in the engine
    assert evaluate("b > 1 and s == 'auto'", lk).truth() is True
    assert evaluate("u and b > 5", lk).truth() is False  # short circuit on the known false side
    assert evaluate("u or b > 1", lk).truth() is True
    assert evaluate("u and b > 1", lk).truth() is None
    assert evaluate("not (", lk).truth() is None  # text that does not parse: unknown, never a guess


def test_prefilter_is_derived_from_the_passes():
    # a new override file with none of the old trigger words is still read by the server pass
    src = b'@_register_for("NewArchForCausalLM")\ndef f(server_args, hf_config):\n    overrides = {}\n' \
          b'    overrides["moe_runner_backend"] = "triton"\n    return overrides\n'
    assert "server" in passes_for("sglang/srt/arg_groups/model_overrides/new_arch.py", src)
    assert passes_for("sglang/srt/layers/foo.py", src) == ()
    assert "asserts" in passes_for("sglang/srt/layers/x.py", b"assert (\n    runner.server_args.attention_backend == 'triton'\n)")


def test_launch_names_the_minimax_m2_moe_override(facts, tmp_path):
    """A MiniMax-M2.5 NVFP4 launch (config + hf_quant_config of nvidia/MiniMax-M2.5-NVFP4) on 8x B200 (env dump of
    sglang issue 24834) with SGLang 0.5.23: the MoE runner is the one minimax_m2.py:28 picks, not the generic one."""
    from pathlib import Path

    from conftest import FIXTURES

    from mtp_audit.engines.sglang.audit import audit_sglang as audit
    from mtp_audit.launch import audit_launch

    sg = audit(sglang_wheel("0.5.23"))
    ck = FIXTURES / "checkpoint" / "nvidia--MiniMax-M2.5-NVFP4"
    r = audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(ck), "--quantization", "modelopt_fp4"],
                     sglang=sg, env_dumps=Path(FIXTURES / "preflight" / "envdumps" / "sglang-24834.txt"), environ={})
    launch = r.facts["launch"]
    assert launch["summary"]["moe_runner_backend"] == (
        "flashinfer_trtllm_routed (model override at sglang/srt/arg_groups/model_overrides/minimax_m2.py:28; logged)")
    assert [m["location"].rsplit("/", 1)[1] for m in launch["model_overrides"] if m["argument"] == "moe_runner_backend"] == [
        "minimax_m2.py:28"]
    assert launch["startup_asserts"] == []


def test_early_returns_guard_what_follows(facts):
    """0.5.23 ``model_overrides/kimi_k3.py:180-190`` returns ``{}`` early unless the backend is ``auto``, the GPU is
    SM100/SM103/SM107 and the checkpoint is MXFP4-packed, then returns ``{"moe_runner_backend": "flashinfer_mxfp4"}``;
    ``kv_cache_hook.py:531`` returns unless ``--enable-unified-memory`` before its asserts (:588). Real SGLang 0.5.23
    (tests/data/oracle/sglang-0.5.23.json) keeps ``moe_runner_backend`` at ``auto`` for moonshotai/Kimi-K3's config.json
    on a declared H200 and RTX PRO 6000 and picks ``flashinfer_mxfp4`` on B200 (its text_config declares
    ``mxfp4-pack-quantized``), and starts every NEXTN launch of the grid without the unified pool."""
    f = facts["0.5.23"]
    (kimi,) = [m for m in f["model_overrides"] if m["location"].endswith("kimi_k3.py:190")]
    assert kimi["condition"] == ('not (cfg.moe_runner_backend != "auto") and not (not (get_platform().is_sm100 and '
                                 'get_platform().device_sm in (100, 103, 107))) and not (not _is_mxfp4_pack_quantized(hf_config))')
    launch = {"architecture": "KimiK3ForConditionalGeneration", "fields": {"moe_runner_backend": "auto"}, "gpu": "sm100"}
    hits = [r for r in predict_overrides(f, launch) if r["argument"] == "moe_runner_backend"]
    assert [r["certain"] for r in hits] == [False]  # the MXFP4 packing is not told from the launch: never a certain override
    assert not [r for r in predict_overrides(f, dict(launch, gpu="sm90")) if r["argument"] == "moe_runner_backend"]
    (pool,) = [a for a in f["backend_asserts"] if a["location"].endswith("kv_cache_hook.py:588")]
    assert pool["condition"] == "not (not cfg.enable_unified_memory)"
    nextn = {"fields": {"speculative_algorithm": "NEXTN"}, "gpu": "sm100"}
    assert [x["certain"] for x in predict_asserts(f, nextn) if x["location"] == pool["location"]] == [False]
    assert not [x for x in predict_asserts(f, {"fields": dict(nextn["fields"], enable_unified_memory=False)})
                if x["location"] == pool["location"]]


def test_unknown_speculative_algorithm_name_stops_the_server(facts):
    """0.5.23's --speculative-algorithm is free-form (``arg_groups/fields/spec.py:31``): argparse takes ``MTP`` and
    ``SpeculativeAlgorithm.from_string`` raises ``ValueError: Unknown speculative algorithm name: MTP`` at
    ``speculative/spec_info.py:65``, as real SGLang 0.5.23 does on every config of tests/data/oracle/sglang-0.5.23.json;
    ``nextn`` (upper-cased, the ``_RESERVED_ALIASES`` alias) and ``NGRAM`` (an enum member) are known names."""
    from conftest import FIXTURES

    from mtp_audit.launch import audit_launch

    (lookup,) = facts["0.5.23"]["aliases"]
    assert lookup["enum_members"] == ["DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE"]
    assert lookup["unknown_raises"] == {"exception": "ValueError", "message": "Unknown speculative algorithm name: {name}",
                                        "location": "sglang/srt/speculative/spec_info.py:65"}
    sg = audit_sglang(sglang_wheel("0.5.23"))
    ck = FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"
    dump = FIXTURES / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
    base = ["python", "-m", "sglang.launch_server", "--model-path", str(ck), "--speculative-algorithm"]
    r = audit_launch(base + ["MTP"], sglang=sg, env_dumps=dump, environ={})
    (f,) = [x for x in r.findings if x.rule_id == "MTP300"]
    assert "ValueError: Unknown speculative algorithm name: MTP (sglang/srt/speculative/spec_info.py:65)" in f.message
    for name in ("nextn", "NGRAM"):
        assert not [x for x in audit_launch(base + [name], sglang=sg, env_dumps=dump, environ={}).findings if x.rule_id == "MTP300"]
