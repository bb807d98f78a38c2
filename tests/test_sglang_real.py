"""Real SGLang wheels from PyPI; every asserted number was checked by hand with grep/sed in the
unpacked wheel (see docs/sglang.md "Verified facts")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import sglang_wheel

from mtp_audit.engines.sglang import audit_sglang, diff_sglang

VERSIONS = ["0.4.0", "0.4.3", "0.4.6", "0.5.4", "0.5.9", "0.5.12", "0.5.15", "0.5.18", "0.5.20", "0.5.23"]

pytestmark = pytest.mark.network


def _wheel(version: str) -> Path:
    return sglang_wheel(version)


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("mtp-cache"))
    out = {}
    for v in VERSIONS:
        out[v] = audit_sglang(_wheel(v))
    return out


def _f(reports: dict, v: str) -> dict:
    return reports[v].facts["sglang"]


def _nextn(facts: dict) -> list[dict]:
    return [r for r in facts["remaps"] if r["from"] == "NEXTN"]


def test_versions_read_from_metadata(reports):
    for v in VERSIONS:
        assert _f(reports, v)["version"] == v


def test_040_has_no_speculative_decoding(reports):
    f = _f(reports, "0.4.0")
    assert "--speculative-algorithm" not in f["cli_arguments"]
    assert [x.rule_id for x in reports["0.4.0"].findings] == ["MTP103"]


def test_043_does_not_accept_nextn(reports):
    f = _f(reports, "0.4.3")
    spec = f["cli_arguments"]["--speculative-algorithm"]
    assert spec["choices"] == ["EAGLE"]
    assert spec["location"] == "sglang/srt/server_args.py:706"
    assert _nextn(f) == []
    assert [x.rule_id for x in reports["0.4.3"].findings] == ["MTP104"]


def test_046_direct_assignment(reports):
    (r,) = _nextn(_f(reports, "0.4.6"))
    assert (r["location"], r["test_location"], r["to"], r["logged"]) == (
        "sglang/srt/server_args.py:319", "sglang/srt/server_args.py:317", ["EAGLE"], False)


def test_054_remap_and_choices(reports):
    f = _f(reports, "0.5.4")
    (r,) = _nextn(f)
    assert r["location"] == "sglang/srt/server_args.py:1282"
    assert r["test_location"] == "sglang/srt/server_args.py:1281"
    assert r["to"] == ["EAGLE"] and r["logged"] is False and r["shape"] == "assignment"
    spec = f["cli_arguments"]["--speculative-algorithm"]
    assert spec["choices_location"] == "sglang/srt/server_args.py:2415"
    assert spec["choices"] == ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]


def test_059_remap_choices_env(reports):
    f = _f(reports, "0.5.9")
    (r,) = _nextn(f)
    assert (r["test_location"], r["location"], r["logged"]) == (
        "sglang/srt/server_args.py:2352", "sglang/srt/server_args.py:2353", False)
    assert f["cli_arguments"]["--speculative-algorithm"]["choices_location"] == "sglang/srt/server_args.py:3927"
    env = {e["name"]: e for e in f["env_vars"]}["SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE"]
    assert "sglang/srt/server_args.py:1320" in env["read"]
    assert env["defined"] == ["sglang/srt/environ.py:323"]
    assert "sglang/srt/models/deepseek_common/utils.py:96" in env["read"]
    fp4 = f["cli_arguments"]["--fp4-gemm-backend"]
    assert fp4["choices"] == ["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"]
    # draft-model default: whitelist assignment + implicit ModelConfig fallback
    fills = {(d["kind"], d["location"]) for d in f["draft_model_path_fills"]}
    assert ("explicit", "sglang/srt/server_args.py:2411") in fills
    assert ("implicit", "sglang/srt/configs/model_config.py:251") in fills
    over = {(d["from"], d["to"]): d["location"] for d in f["draft_arch_overrides"]}
    assert over[("DeepseekV3ForCausalLM", "DeepseekV3ForCausalLMNextN")] == "sglang/srt/configs/model_config.py:279"
    assert over[("GlmMoeDsaForCausalLM", "DeepseekV3ForCausalLMNextN")] == "sglang/srt/configs/model_config.py:279"


def test_0512_helper_assigned_back(reports):
    f = _f(reports, "0.5.12")
    by_to = {r["to"][0]: r for r in _nextn(f) if r["shape"].startswith("helper")}
    assert by_to["EAGLE"]["location"] == "sglang/srt/server_args.py:351" and by_to["EAGLE"]["logged"] is False
    assert by_to["FROZEN_KV_MTP"]["location"] == "sglang/srt/server_args.py:350" and by_to["FROZEN_KV_MTP"]["logged"] is True
    assert by_to["EAGLE"]["via"].endswith("server_args.py:3564")
    assert any(n["argument"] == "speculative_algorithm" and n["kind"] == "upper" for n in f["normalisations"])
    assert "NEXTN" in f["cli_arguments"]["--speculative-algorithm"]["help"]


def test_0515_and_0518_speculative_hook(reports):
    for v, (test, eagle, call) in {"0.5.15": (42, 49, 88), "0.5.18": (52, 59, 98)}.items():
        by_to = {r["to"][0]: r for r in _nextn(_f(reports, v))}
        hook = "sglang/srt/arg_groups/speculative_hook.py"
        assert by_to["EAGLE"]["test_location"] == f"{hook}:{test}"
        assert by_to["EAGLE"]["location"] == f"{hook}:{eagle}"
        assert by_to["EAGLE"]["via"].endswith(f"{hook}:{call}")
        assert by_to["EAGLE"]["shape"] == "helper-return via assignment"


def test_0523_declare_resolution_alias_and_from_string(reports):
    rep = reports["0.5.23"]
    f = rep.facts["sglang"]
    hook = "sglang/srt/arg_groups/speculative_hook.py"
    nx = _nextn(f)
    helper = {r["to"][0]: r for r in nx if r["shape"] == "helper-return via declare_resolution"}
    assert helper["EAGLE"]["test_location"] == f"{hook}:109"
    assert helper["EAGLE"]["location"] == f"{hook}:116" and helper["EAGLE"]["logged"] is False
    assert helper["FROZEN_KV_MTP"]["location"] == f"{hook}:115" and helper["FROZEN_KV_MTP"]["logged"] is True
    assert helper["EAGLE"]["via"].endswith(f"{hook}:154")
    (alias,) = f["aliases"]
    assert alias["members"] == ["NEXTN"] and alias["to"] == "EAGLE"
    assert alias["function"] == "SpeculativeAlgorithm.from_string"
    assert alias["location"] == "sglang/srt/speculative/spec_info.py:61"
    # `_RESERVED_ALIASES = frozenset({"NEXTN"})`, checked with `unzip -p ... spec_registry.py | sed -n 183p`
    assert alias["defined"] == "sglang/srt/speculative/spec_registry.py:183"
    assert reports["0.5.20"].facts["sglang"]["aliases"][0]["defined"] == "sglang/srt/speculative/spec_registry.py:194"
    assert any(r["shape"] == "enum-alias-lookup" and r["to"] == ["EAGLE"] for r in nx)
    assert f["cli_arguments"]["--fp4-gemm-backend"]["location"] == "sglang/srt/arg_groups/fields/exec_.py:282"  # the field line; cli_name="--fp4-gemm-backend" is on 286
    assert f["preflight_choices"]["--fp4-gemm-backend"] == [
        "auto", "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass", "flashinfer_trtllm", "marlin"]
    assert "modelopt_fp4" in f["preflight_choices"]["--quantization(fp4)"]
    classes = {m["class"] for m in f["mtp_classes"]}
    assert {"DeepseekV3ForCausalLMNextN", "Qwen3_5ForCausalLMMTP"} <= classes
    over = {(d["from"], d["to"]) for d in f["draft_arch_overrides"]}
    assert ("DeepseekV32ForCausalLM", "DeepseekV3ForCausalLMNextN") in over
    assert ("InternS2MobiusForConditionalGeneration", "Qwen3_5ForCausalLMMTP") in over
    assert not rep.inconclusive


def test_silent_nextn_to_eagle_everywhere(reports):
    for v in VERSIONS[2:]:
        eagle = [r for r in _nextn(_f(reports, v)) if r["to"] == ["EAGLE"]]
        assert eagle and all(not r["logged"] for r in eagle), v


def _by(d, rule: str, sev: str) -> list:
    return [f for f in d.findings if f.rule_id == rule and f.severity.label == sev]


def test_diff_0_5_9_to_0_5_23(reports):
    d = diff_sglang(reports["0.5.9"], reports["0.5.23"])
    ch = d.facts["sglang"]["diff"]["changes"]
    # NEXTN -> EAGLE moved from server_args.py:2353 to arg_groups/speculative_hook.py:116: not a change;
    # the only new speculative_algorithm rewrites are the Gemma4 draft promotions (speculative_hook.py:109-115)
    assert sorted((r["from"], r["to"][0]) for r in ch["remaps"]["added"]) == [("EAGLE", "FROZEN_KV_MTP"), ("NEXTN", "FROZEN_KV_MTP")]
    assert ch["remaps"]["removed"] == []
    # 0.5.23 declares --speculative-algorithm without choices= (arg_groups/fields/spec.py:31): said so, with no pointer
    # to a not-examined entry that does not exist
    mtp = d.facts["sglang"]["diff"]["mtp"]
    assert ("--speculative-algorithm choices: none declared in the new version (sglang/srt/arg_groups/fields/spec.py:31): "
            "the parser takes any name (the old version had 5 choices)") in mtp
    assert not [ln for ln in mtp if "see 'not examined'" in ln] and not d.gaps
    (fz,) = [f for f in d.findings if f.rule_id == "MTP110" and "NEXTN -> FROZEN_KV_MTP" in f.message]
    assert (fz.location.path, fz.location.line, fz.severity.label) == ("sglang/srt/arg_groups/speculative_hook.py", 115, "info")  # logged
    # every finding has a location (SARIF code scanning rejects results without one)
    assert all(f.location.path for f in d.findings)
    # was 417 findings / 327 errors, nearly all MTP110 about non-MTP flags; 374 (32 errors) before the guards were
    # evaluated. Now a rewrite whose guard never lets an explicit value through is keyed by the value it can change
    # (None or a compared literal): 8 rewrites turned out to be ones 0.5.9 already had (gpt_oss.py:35 `None ->
    # intel_amx` is 0.5.9 server_args.py:895, :39 `None -> aiter` is :1814, minimax_m3.py:53 `None -> <quant_method>`)
    assert len(d.findings) == 366  # 0 + 55 + 220 MTP110, 50 MTP111, 32 MTP112, 2 MTP113, 2 MTP101, 3 MTP105, 2 MTP106 (0.5.23 unquant)
    assert len(_by(d, "MTP106", "warning")) == 2
    assert (len(_by(d, "MTP110", "error")), len(_by(d, "MTP110", "warning")), len(_by(d, "MTP110", "info"))) == (0, 55, 220)
    # model_overrides/minimax_m2.py:28 (not read before) is now an auto-resolution of 0.5.23; the upgrade
    # diff matches rewrites by (argument, from, to), and auto -> flashinfer_trtllm_routed of moe_runner_backend
    # is not new in 0.5.23, so it adds no MTP110
    mm = [r for r in reports["0.5.23"].facts["sglang"]["auto_resolutions"] if r["location"].endswith("model_overrides/minimax_m2.py:28")]
    assert [(r["argument"], r["from"], r["to"], r["logged"]) for r in mm] == [("moe_runner_backend", "auto", ["flashinfer_trtllm_routed"], True)]
    found = {(f.location.path.rsplit("/", 1)[1], f.location.line): f for f in d.findings if f.rule_id == "MTP110"}
    # hand-checked: overrides.py:1666 `return {"quantization": "gguf"}` only when the model path is a GGUF file
    # (`check_gguf_file(view.model_path)`, :1660-1665); mega_moe_hook.py:259 `if cfg.moe_runner_backend != "megamoe":
    # return` before declare_resolution(..., moe_runner_backend="auto") at :274, and 0.5.9 did not accept megamoe
    gguf = found[("overrides.py", 1666)]
    assert gguf.severity.label == "warning" and "a value passed becomes gguf, only when" in gguf.message
    assert "check_gguf_file(view.model_path)" in gguf.message
    mega = found[("mega_moe_hook.py", 274)]
    assert mega.severity.label == "info"
    assert mega.message == ("new silent rewrite: moe_runner_backend megamoe -> auto ('megamoe' becomes auto; "
                            "a value the old version refused)")
    # cuda_graph_max_bs_prefill is new in 0.5.23 (no such flag in 0.5.9): its new rewrite is info, not a warning
    (cg,) = [f for f in d.findings if "cuda_graph_max_bs_prefill" in f.message]
    assert (cg.location.path, cg.location.line, cg.severity.label) == ("sglang/srt/arg_groups/cuda_graph_hook.py", 388, "info")
    # a removal points at the old version's file:line
    gone = [f for f in d.findings if f.message.startswith("rewrite gone") and "cuda_graph_max_bs None -> 8 " in f.message]
    assert [(f.location.path, f.location.line, f.severity.label) for f in gone] == [("sglang/srt/server_args.py", 942, "info")]


def test_diff_0_5_4_to_0_5_9(reports):
    d = diff_sglang(reports["0.5.4"], reports["0.5.9"])
    assert all(f.location.path for f in d.findings)
    assert len(d.findings) == 112  # includes 0.5.9's own MTP106 (unquant -> None at server_args.py:885)
    assert [f.location.line for f in _by(d, "MTP106", "warning")] == [885]
    # 13 errors before the guards were evaluated: 11 of them sit under a model-family `elif model_arch in [...]`
    assert (len(_by(d, "MTP110", "error")), len(_by(d, "MTP110", "warning")), len(_by(d, "MTP110", "info"))) == (2, 21, 63)
    errors = {f.location.line: f.message for f in _by(d, "MTP110", "error")}
    # hand-checked in 0.5.9 server_args.py: 1147-1148 `if self.kv_cache_dtype == "bf16": self.kv_cache_dtype = "bfloat16"`
    # (no other guard), absent from 0.5.4; 1546 `self.moe_runner_backend = "flashinfer_cutlass"` only for
    # NemotronHForCausalLM (`elif model_arch in ["NemotronHForCausalLM"]`, :1533) with a modelopt quantization
    assert sorted(errors) == [885, 1148]
    assert "kv_cache_dtype bf16 -> bfloat16" in errors[1148]
    (nemo,) = [f for f in _by(d, "MTP110", "warning") if f.location.line == 1546]
    assert "moe_runner_backend * -> flashinfer_cutlass (a value passed becomes flashinfer_cutlass, only when" in nemo.message
    assert not [f for f in d.findings if f.rule_id == "MTP110" and "rewrite: speculative_algorithm " in f.message]


def test_cli_two_targets_and_baseline(tmp_path, reports):
    from mtp_audit.cli.main import main

    old, new = _wheel("0.5.4"), _wheel("0.5.9")
    out = tmp_path / "r.json"
    assert main(["sglang", str(old), "-f", "json", "-o", str(out)]) == 0
    rc = main(["sglang", "--baseline", str(out), str(new), "-f", "sarif", "-o", str(tmp_path / "d.sarif")])
    assert rc in (1, 3)
    assert main(["sglang", str(old), str(new), "--fail-on", "never", "-o", str(tmp_path / "x.txt")]) in (0, 3)


def test_0523_nextn_eagle_reported_once_as_an_alias(reports):
    rep = reports["0.5.23"]
    m101 = [f for f in rep.findings if f.rule_id == "MTP101"]
    # one finding per target: EAGLE (speculative_hook.py:116, silent) and FROZEN_KV_MTP (:115, logged)
    assert [(f.location.path, f.location.line) for f in m101] == [
        ("sglang/srt/arg_groups/speculative_hook.py", 115), ("sglang/srt/arg_groups/speculative_hook.py", 116)]
    eagle = m101[1]
    assert eagle.message == ("--speculative-algorithm NEXTN is an alias of EAGLE, draft = the target checkpoint "
                             "(architecture -> one of 23 MTP classes reached by an override (25 registered)); silent rewrite (no log line)")
    # the headline counts the same classes: 25 registered (Dots3NoteForCausalLMNextN and IQuestQ1MTP have no override row)
    assert rep.facts["sglang"]["answer"][0].endswith("; 25 MTP model classes (23 reached by a draft-architecture override)")
    assert "DeepseekV3ForCausalLMNextN" in eagle.detail and len(eagle.message) <= 200  # the list of classes is detail
    (alias,) = [e for e in eagle.evidence if e.label == "alias lookup that also accepts it"]
    assert (alias.value, alias.location.path, alias.location.line) == ("SpeculativeAlgorithm.from_string", "sglang/srt/speculative/spec_info.py", 61)
    assert m101[0].message.endswith("; logged rewrite") and "FROZEN_KV_MTP" in m101[0].message


def test_unrelated_unresolvable_choices_are_counted_not_noted(reports):
    # 0.5.9 server_args.py: --reasoning-parser :3672 (list(ReasoningParser.DetectorMap.keys())), --tool-call-parser
    # :3680 (tool_call_parser_choices), --lora-target-modules :3777 (SUPPORTED_LORA_TARGET_MODULES + [...])
    f = _f(reports, "0.5.9")
    assert [(u["flag"], u["location"].rsplit(":", 1)[1]) for u in f["unresolved_choices"]] == [
        ("--lora-target-modules", "3777"), ("--reasoning-parser", "3672"), ("--tool-call-parser", "3680")]
    assert not [g for g in reports["0.5.9"].gaps if "choices of" in g.message]
    assert f["scan"]["unresolved_choices"] == 3
    f23 = _f(reports, "0.5.23")
    assert f23["scan"]["unresolved_choices"] == 7 and not reports["0.5.23"].gaps


def test_defaults_from_serverargs_fields(reports):
    # add_argument(..., default=ServerArgs.<field>) resolves to the dataclass field's literal; lines checked by hand
    # with `unzip -p <wheel> sglang/srt/server_args.py | grep -n`:
    # 0.5.9: 456 `fp4_gemm_runner_backend: str = "flashinfer_cutlass"`, 498 `moe_runner_backend: str = "auto"`,
    #        3903 "--fp4-gemm-backend" (3906 default=ServerArgs.fp4_gemm_runner_backend), 4093 "--moe-runner-backend";
    # 0.5.12: 568 `fp4_gemm_runner_backend: str = "auto"`, 623 `moe_runner_backend: str = "auto"`, 5764, 6001;
    # 0.5.9 490 `speculative_ngram_capacity: int = 10 * 1000 * 1000` is not a literal: the expression stays.
    p = "sglang/srt/server_args.py:"
    for v, rows in {
        "0.5.9": {"--fp4-gemm-backend": ("flashinfer_cutlass", 456, 3903), "--moe-runner-backend": ("auto", 498, 4093)},
        "0.5.12": {"--fp4-gemm-backend": ("auto", 568, 5764), "--moe-runner-backend": ("auto", 623, 6001)},
    }.items():
        cli = _f(reports, v)["cli_arguments"]
        for flag, (default, field_line, flag_line) in rows.items():
            rec = cli[flag]
            assert (rec["default"], rec["default_location"], rec["location"]) == (default, f"{p}{field_line}", f"{p}{flag_line}"), (v, flag)
            assert rec["default_expr"] == "ServerArgs." + rec["dest"]
    ngram = _f(reports, "0.5.9")["cli_arguments"]["--speculative-ngram-capacity"]
    assert ngram["default"] == "ServerArgs.speculative_ngram_capacity" and ngram["default_location"] == p + "490"
    # no cli default of 0.5.9 .. 0.5.12 is still a bare ServerArgs.<field> reference except those with a non-literal field
    for v in ("0.5.9", "0.5.12"):
        left = sorted(k for k, r in _f(reports, v)["cli_arguments"].items() if str(r["default"]).startswith("ServerArgs."))
        assert left == ["--encoder-transfer-backend", "--speculative-ngram-capacity"], v
