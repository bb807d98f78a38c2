"""The guard each SGLang rewrite sits under (engines/sglang/guards.py) and what the upgrade diff makes of it.

Small hand-written trees for each kind of guard (no network), then the 13 rewrites of the 0.5.9 -> 0.5.23 upgrade that
were errors ("whatever value is passed", condition "(always)") although their own code bounds them, each checked by
hand in the 0.5.23 wheel (``sglang/srt/arg_groups/...``):

- ``model_overrides/gpt_oss.py:29-39``: ``if is_attention_backend_not_set(cfg):`` then ``elif is_cpu() and
  get_platform().has_amx`` (:35 intel_amx), ``elif get_platform().is_xpu`` (:37 intel_xpu), ``elif get_platform().is_hip``
  (:39 aiter); ``model_override_base.py:176-182`` ``is_attention_backend_not_set``: the three backends ``is None``. 0.5.9
  already had ``attention_backend None -> intel_amx`` (server_args.py:895) and ``None -> aiter`` (:1814).
- ``model_overrides/minicpm.py:29-43``: ``if envs.SGLANG_MINICPM_FORCE_DENSE.get():`` then the three dense backends
  (:37/:40/:43); ``:57-58`` ``if is_attention_backend_not_set(cfg):`` (a sparse MiniCPM); registered for
  ``MiniCPMForCausalLM``, ``MiniCPMSALAForCausalLM`` (:14).
- ``model_overrides/deepseek_v4.py:52-60``: ``if cfg.device == "npu":`` (prefill/decode ``dsv4``), registered for
  ``DeepseekV4ForCausalLM``.
- ``model_overrides/kimi_k3.py:136-148``: SM100/SM103 only (early return :136), ``backends_unset =
  is_attention_backend_not_set(cfg)`` (:138), DSPARK only (early return :139-150), ``if backends_unset:`` (:146).
- ``speculative_hook.py:1019-1020`` ``if target.architectures[0] != "IQuestQ1ForCausalLM": return False``; :1037-1039
  ``steps = cfg.speculative_num_steps`` / ``if steps is None: steps = draft.num_draft_slots``; :1051-1052 ``if
  cfg.speculative_num_draft_tokens not in (None, steps + 1): raise ValueError``; :1055/:1057 the declarations.
- ``mega_moe_hook.py:259-260`` ``if cfg.moe_runner_backend != "megamoe": return`` before :274 ``moe_runner_backend="auto"``;
  0.5.9's ``--moe-runner-backend`` choices do not hold ``megamoe``.
"""

from __future__ import annotations

import os

import pytest
from conftest import sglang_wheel

from mtp_audit.engines.sglang import audit_sglang
from mtp_audit.engines.sglang.diff import diff_facts, diff_sglang
from mtp_audit.engines.sglang.guards import given_value_test
from mtp_audit.engines.sglang.scan import scan_file


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))


def _sites(src: str, rel: str = "sglang/srt/arg_groups/h.py") -> dict[tuple[str, int], dict]:
    res = scan_file(rel, src.encode(), True)
    return {(s["argument"], s["line"]): s for fn in res["funcs"] for s in fn["sites"]}


def _rec(site: dict, frm: str = "*") -> dict:
    to = site.get("to") or [f"<{site['call']['func']}(...)>"]
    return {"argument": site["argument"], "from": frm, "to": [str(t) for t in to], "condition": site["condition"],
            **{k: site[k] for k in ("guard", "keeps_given", "rebinds_given") if k in site}}


ALIAS = '''def handle(server_args):
    cfg = resolving_view(server_args)
    if cfg.moe_runner_backend != "megamoe":
        return
    declare_resolution(server_args, "handle", moe_runner_backend="auto")
'''


def test_an_early_return_makes_the_rewrite_one_of_the_compared_value() -> None:
    s = _sites(ALIAS)[("moe_runner_backend", 5)]
    assert s["condition"] == "" and s["guard"] == "not cfg.moe_runner_backend != 'megamoe'"
    assert given_value_test(_rec(s)) == {"given": False, "froms": ["megamoe"], "guard": s["guard"]}


IQUEST = '''def handle(server_args):
    cfg = resolving_view(server_args)
    target = model_config_of(server_args).hf_config
    if target.architectures[0] != "Q1":
        return False
    steps = cfg.speculative_num_steps
    if steps is None:
        steps = draft.num_draft_slots
    if cfg.speculative_num_draft_tokens not in (None, steps + 1):
        raise ValueError("width")
    declare_resolution(server_args, "h", speculative_num_steps=steps, speculative_eagle_topk=1,
                       speculative_num_draft_tokens=steps + 1)
'''


def test_a_none_default_and_a_raise_instead_of_a_rewrite_only_fill_an_unset_flag() -> None:
    sites = _sites(IQUEST)
    steps, width = sites[("speculative_num_steps", 11)], sites[("speculative_num_draft_tokens", 12)]
    assert steps["keeps_given"] is True  # steps = cfg.speculative_num_steps, refilled only under `if steps is None`
    assert given_value_test(_rec(steps))["froms"] == ["None"]
    # any other given value raises at line 9: only None is rewritten (steps + 1 itself would be no change)
    t = given_value_test(_rec(width))
    assert (t["given"], t["froms"]) == (False, ["None"])
    assert "not cfg.speculative_num_draft_tokens not in (None, steps + 1)" in t["guard"]
    # the model-family test is kept (read as `model_arch` when a launch evaluates it)
    assert t["guard"].startswith("not target.architectures[0] != 'Q1'")
    topk = given_value_test(_rec(sites[("speculative_eagle_topk", 11)]))
    assert topk["given"] is None  # an explicit topk is rewritten to 1 only for that model family: could not tell


PLATFORM = '''def is_attention_backend_not_set(cfg):
    """All unset."""
    return cfg.attention_backend is None and cfg.decode_attention_backend is None


@_register_for("GptOssForCausalLM")
def _overrides(server_args, hf_config):
    cfg = resolving_view(server_args)
    overrides = {}
    backends_unset = is_attention_backend_not_set(cfg)
    if backends_unset:
        if get_platform().is_xpu:
            overrides["attention_backend"] = "intel_xpu"
    if envs.SGLANG_FORCE.get():
        overrides["decode_attention_backend"] = "dense"
    return overrides
'''


def test_locals_and_predicates_are_inlined_and_platforms_and_env_vars_stay_conditions(tmp_path) -> None:
    sites = _sites(PLATFORM, "sglang/srt/arg_groups/model_overrides/x.py")
    xpu = sites[("attention_backend", 13)]
    assert xpu["guard"] == "is_attention_backend_not_set(cfg) and get_platform().is_xpu"  # the local is inlined
    # across files, the predicate's test is put in at link time (audit): the rewrite only fills unset backends
    from mtp_audit.engines.sglang.audit import _predicates
    from mtp_audit.engines.sglang.guards import inline_predicates

    preds = _predicates({"a.py": scan_file("sglang/srt/arg_groups/model_overrides/x.py", PLATFORM.encode(), True)})
    guard = inline_predicates(xpu["guard"], preds)
    assert guard == "cfg.attention_backend is None and cfg.decode_attention_backend is None and get_platform().is_xpu"
    t = given_value_test(dict(_rec(xpu), guard=guard))
    assert (t["given"], t["froms"]) == (False, ["None"])
    dense = given_value_test(_rec(sites[("decode_attention_backend", 15)]))
    assert (dense["given"], dense["froms"]) == (None, ["*"])  # an environment variable decides: only when it is set


CALLER = '''def outer(server_args):
    cfg = resolving_view(server_args)
    if envs.SGLANG_USE_MODELSCOPE.get():
        inner(server_args)


def inner(server_args):
    cfg = resolving_view(server_args)
    declare_resolution(server_args, "inner", speculative_draft_model_path=download(cfg.speculative_draft_model_path))
'''


def test_a_guard_around_the_only_call_of_the_function_guards_its_rewrites(tmp_path) -> None:
    from mtp_audit.engines.sglang.audit import _hook_calls
    from mtp_audit.engines.sglang.guards import caller_guard, with_callers

    res = scan_file("sglang/srt/arg_groups/h.py", CALLER.encode(), True)
    assert res["hook_calls"] == [{"callee": "inner", "function": "outer", "line": 4, "guard": "envs.SGLANG_USE_MODELSCOPE.get()"}]
    calls = _hook_calls({"h.py": res})
    assert caller_guard("inner", calls) == "envs.SGLANG_USE_MODELSCOPE.get()"
    assert caller_guard("outer", calls) == ""  # never called by name: a pipeline runs it
    rec = {"argument": "speculative_draft_model_path", "from": "*", "to": ["<download(...)>"], "condition": "",
           "guard": with_callers(None, caller_guard("inner", calls))}
    assert given_value_test(rec)["given"] is None


def _facts(records: list[dict], choices: list[str] | None = None, overrides: list[dict] | None = None) -> dict:
    return {"auto_resolutions": records, "remaps": [], "model_overrides": overrides or [],
            "cli_arguments": {"--moe-runner-backend": {"dest": "moe_runner_backend", "choices": choices}}}


def _r(argument: str, location: str, **kw) -> dict:
    return {"argument": argument, "from": "*", "to": ["x"], "condition": "", "logged": False, "location": location,
            "test_location": None, "shape": "declare_resolution", **kw}


def test_diff_severity_follows_the_guard() -> None:
    new = _facts([_r("moe_runner_backend", "a.py:1"),  # unconditional: whatever value is passed
                  _r("attention_backend", "b.py:2", guard="get_platform().is_xpu"),  # a platform
                  _r("quantization", "c.py:3", guard="cfg.quantization is None"),  # an unset flag only
                  _r("moe_runner_backend", "d.py:4", to=["auto"], guard="not cfg.moe_runner_backend != 'megamoe'")],
                 overrides=[{"location": "b.py:2", "architectures": ["GptOssForCausalLM"]}])
    findings, changes = diff_facts(_facts([], choices=["auto", "triton"]), new)
    got = {f.location.path: (f.severity.label, f.message) for f in findings}
    assert got["a.py"] == ("error", "new silent rewrite: moe_runner_backend * -> x (whatever value is passed becomes x)")
    assert got["b.py"] == ("warning", ("new silent rewrite: attention_backend * -> x (a value passed becomes x, only for "
                                       "GptOssForCausalLM, when get_platform().is_xpu)"))
    assert got["c.py"] == ("warning", "new silent rewrite: quantization None -> x (unset (None) becomes x)")
    assert got["d.py"] == ("info", ("new silent rewrite: moe_runner_backend megamoe -> auto ('megamoe' becomes auto; a "
                                    "value the old version refused)"))
    added = {r["location"]: r for r in changes["auto_resolutions"]["added"]}
    assert added["b.py:2"]["applies_to_given"] is None and added["b.py:2"]["architectures"] == ["GptOssForCausalLM"]
    assert added["a.py:1"]["applies_to_given"] is True


def test_with_a_launch_only_rewrites_that_apply_are_errors() -> None:
    new = _facts([_r("attention_backend", "b.py:2", guard="get_platform().is_sm100"),
                  _r("moe_runner_backend", "e.py:5", guard="cfg.quantization == 'modelopt_fp4'"),
                  _r("kv_cache_dtype", "f.py:6", guard="envs.SGLANG_X.get()")])
    known = {"gpu": "sm90", "architecture": "DeepseekV3ForCausalLM", "fields": {"quantization": "modelopt_fp4",
             "moe_runner_backend": "triton", "attention_backend": "fa3"}, "defaults": {}}
    findings, _ = diff_facts(_facts([]), new, known=known)
    got = {f.location.path: (f.severity.label, f.message) for f in findings}
    assert "b.py" not in got  # an SM100 rewrite on an H200 does not apply
    assert got["e.py"][0] == "error" and got["e.py"][1].endswith("; for this launch: it applies)")
    assert got["f.py"][0] == "warning" and "could not tell whether it applies" in got["f.py"][1]


@pytest.mark.network
def test_the_13_condition_bound_rewrites_of_0_5_9_to_0_5_23_are_not_errors(tmp_path_factory) -> None:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("guards-cache"))
    d = diff_sglang(audit_sglang(sglang_wheel("0.5.9")), audit_sglang(sglang_wheel("0.5.23")))
    mtp110 = {}
    for f in d.findings:
        if f.rule_id == "MTP110":
            mtp110.setdefault((f.location.path.rsplit("arg_groups/", 1)[-1], f.location.line), []).append(f)
    sev = {k: {f.severity.label for f in v} for k, v in mtp110.items()}
    # gpt_oss.py:35 and :39 fill an unset backend, as 0.5.9 did: no longer a change
    assert ("model_overrides/gpt_oss.py", 35) not in mtp110 and ("model_overrides/gpt_oss.py", 39) not in mtp110
    (xpu,) = mtp110[("model_overrides/gpt_oss.py", 37)]
    assert xpu.severity.label == "warning" and "attention_backend None -> intel_xpu (unset (None) becomes intel_xpu, only for GptOssForCausalLM" in xpu.message
    assert xpu.message.endswith("and get_platform().is_xpu)")
    for line in (37, 40, 43):
        (f,) = mtp110[("model_overrides/minicpm.py", line)]
        assert f.severity.label == "warning" and "envs.SGLANG_MINICPM_FORCE_DENSE.get()" in f.message and "only for MiniCPMForCausalLM" in f.message
    (sparse,) = mtp110[("model_overrides/minicpm.py", 58)]
    assert sparse.severity.label == "warning" and "attention_backend None -> minicpm_flashinfer, minicpm_flashattn (unset (None)" in sparse.message
    for line in (59, 60):
        (f,) = mtp110[("model_overrides/deepseek_v4.py", line)]
        assert f.severity.label == "warning" and "only for DeepseekV4ForCausalLM, when cfg.device == 'npu')" in f.message
    (kimi,) = mtp110[("model_overrides/kimi_k3.py", 148)]
    assert kimi.severity.label == "warning" and "decode_attention_backend None -> <backend>" in kimi.message
    assert "not cfg.speculative_algorithm != 'DSPARK'" in kimi.message
    (steps,) = mtp110[("speculative_hook.py", 1055)]
    assert steps.severity.label == "warning" and "speculative_num_steps None -> <steps> (unset (None) becomes <steps>" in steps.message
    (width,) = mtp110[("speculative_hook.py", 1057)]
    assert width.severity.label == "warning" and "speculative_num_draft_tokens None -> <steps + 1>" in width.message
    assert "not cfg.speculative_num_draft_tokens not in (None, steps + 1))" in width.message
    assert sev[("mega_moe_hook.py", 274)] == {"info"}
    # the MTP summary says how many conditioned MTP/FP4 rewrites there are and how to evaluate them for a launch
    assert d.facts["sglang"]["diff"]["mtp"][-1] == (
        "44 new MTP/FP4 rewrite(s) apply only under a guard (a platform, a model family, an environment variable, another "
        "flag): warnings here; mtp-audit launch --sglang 0.5.9 --compare-sglang 0.5.23 -- <command> tells which apply to a launch")
    # no MTP110 error is left; "whatever value is passed" only where no guard bounds the store
    assert not [f for v in mtp110.values() for f in v if f.severity.label == "error"]
    whatever = sorted(k for k, v in mtp110.items() for f in v if "whatever value is passed" in f.message and f.severity.label != "info")
    assert whatever == [("serving_hook.py", 301), ("serving_hook.py", 658), ("sglang/srt/server_args.py", 578)]


@pytest.mark.network
def test_a_launch_compared_across_the_upgrade_gets_the_rewrites_that_concern_it(capsys, tmp_path) -> None:
    from conftest import FIXTURES

    from mtp_audit.cli.main import main

    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path / "cache")
    rc = main(["launch", "-v", "--sglang", str(sglang_wheel("0.5.9")), "--compare-sglang", str(sglang_wheel("0.5.23")),
               "--env-dump", str(FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt"), "--",
               "python", "-m", "sglang.launch_server", "--model-path", str(FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"),
               "--tp-size", "8", "--speculative-algorithm", "NEXTN"])
    out = capsys.readouterr().out
    assert rc == 3  # the config-only checkpoint leaves the MTP weights unchecked
    lines = [ln for ln in out.splitlines() if "MTP110" in ln]
    # the headline counts the rewrites it lists below (it gave only the changes of what will happen, "1 change(s)")
    listed = [ln for ln in lines if ln.startswith("sglang/")]
    applies = sum(1 for ln in listed if ln.endswith("; for this launch: it applies)"))
    assert (len(listed), applies) == (10, 4)
    assert out.splitlines()[0].endswith("compared with SGLang 0.5.9: 1 change(s) in what will happen, 10 new silent rewrite(s) "
                                        "concern this launch (4 apply, 6 could not tell) (exit 3)")
    assert ("  New since SGLang 0.5.9: 10 silent rewrite(s) concern this launch (4 apply, 6 could not tell whether they apply): "
            "the MTP110 findings.") in out.splitlines()
    lines = listed
    # DeepSeek-V3 on a B200: no GPT-OSS / MiniCPM / DeepSeek-V4 / Kimi-K3 / NPU rewrite concerns it
    assert not [ln for ln in lines if "model_overrides/" in ln]
    # overrides.py:1655 `if cfg.speculative_moe_runner_backend is None:` fills the draft's MoE runner: it applies
    assert any(ln.startswith("sglang/srt/arg_groups/overrides.py:1655: MTP110 warning: new silent rewrite: "
                             "speculative_moe_runner_backend None -> <default>") and ln.endswith("; for this launch: it applies)")
               for ln in lines)
    assert not [ln for ln in lines if " MTP110 error" in ln]
    # speculative_hook.py:761 fills the steps of DSPARK only (its hook runs under `self == SpeculativeAlgorithm.DSPARK`,
    # inlined from spec_info.py's dispatch): not for this EAGLE launch
    assert not [ln for ln in lines if ln.startswith("sglang/srt/arg_groups/speculative_hook.py:761:")]


def test_a_record_of_an_unset_flag_is_evaluated_with_none() -> None:
    rec = {"argument": "attention_backend", "from": "None", "to": ["fa3"], "condition": "cfg.attention_backend is None",
           "guard": "cfg.attention_backend is None and get_platform().is_sm90"}
    assert given_value_test(rec) == {"given": None, "froms": ["None"], "guard": rec["guard"]}
    rec["guard"] = "cfg.attention_backend is None"
    assert given_value_test(rec)["given"] is True  # the string "None" would have made it False


@pytest.mark.parametrize("depth", [900, 2000])
def test_a_guard_nested_too_deeply_is_not_told_and_the_file_is_still_read(depth) -> None:
    src = ("def h(server_args):\n    cfg = resolving_view(server_args)\n    if " + "not " * depth
           + "cfg.x:\n        declare_resolution(server_args, 'h', speculative_num_steps=1)\n")
    res = scan_file("sglang/srt/arg_groups/h.py", src.encode(), True)
    assert res["gap"] is None
    (site,) = [s for fn in res["funcs"] for s in fn["sites"]]
    assert site["guard"] == "<guard too long to keep>"
    assert given_value_test(_rec(site)) == {"given": None, "froms": ["*"], "guard": "<guard too long to keep>"}


def test_a_function_name_defined_in_two_files_gets_no_caller_guard() -> None:
    from mtp_audit.engines.sglang.audit import _hook_calls
    from mtp_audit.engines.sglang.guards import caller_guard

    a = scan_file("sglang/srt/arg_groups/a.py", CALLER.encode(), True)
    b = scan_file("sglang/srt/arg_groups/b.py", b"def inner(server_args):\n    return None\n", True)
    assert a["defines"] == ["inner", "outer"] and b["defines"] == ["inner"]
    assert caller_guard("inner", _hook_calls({"a.py": a, "b.py": b})) == ""  # which `inner` the call reaches: not told
