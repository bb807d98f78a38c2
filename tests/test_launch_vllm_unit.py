"""Unit tests of the vLLM launch form's parser and evaluator on hand-written commands (no wheel needed).

Expected values follow vLLM 0.33.0 vllm/utils/argparse_utils.py:372-492 (underscores -> dashes before the first
'.', dotted keys json.loads-ed and appended as one more --speculative-config) and vllm/engine/arg_utils.py:2108-2126
(--spec-* merged, 'mutually exclusive', keys' '-' -> '_')."""

from __future__ import annotations

import pytest

from mtp_audit.engines.vllm.launch.command import parse_vllm_command, rebuild_vllm, vllm_entry
from mtp_audit.engines.vllm.launch.evaluate import n_predict_of
from mtp_audit.engines.vllm.launch.spec_config_replay import UNKNOWN, Evaluator
from mtp_audit.errors import InputError


def test_entries() -> None:
    assert vllm_entry(["vllm", "serve", "m"])[1:] == ("vllm serve", 2)
    assert vllm_entry(["A=1", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]) == (
        {"A": "1"}, "python -m vllm.entrypoints.openai.api_server", 4)
    assert vllm_entry(["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"])[1:] == ("python -m vllm.entrypoints.cli.main serve", 4)
    assert vllm_entry(["python", "-m", "sglang.launch_server", "--model-path", "m"]) is None
    with pytest.raises(InputError):
        parse_vllm_command(["sglang", "serve", "--model-path", "m"], True)


def test_json_forms_and_model() -> None:
    c = parse_vllm_command(["vllm", "serve", "org/m", "--speculative_config={\"method\": \"mtp\", \"num-speculative-tokens\": 2}", "-tp", "8"], True)
    assert (c.model, c.model_source) == ("org/m", "positional")
    assert c.spec == {"method": "mtp", "num_speculative_tokens": 2}
    assert c.options["--tensor-parallel-size"] == "8"
    c = parse_vllm_command(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "-sc", '{"method":"ngram"}'], True)
    assert (c.model, c.model_source, c.spec) == ("m", "--model", {"method": "ngram"})


def test_dotted_replaces_json_and_values_are_json() -> None:
    c = parse_vllm_command(["vllm", "serve", "m", "--speculative-config", '{"model": "d"}', "--speculative-config.method", "mtp",
                            "--speculative-config.num_speculative_tokens=3"], True)
    assert c.spec == {"method": "mtp", "num_speculative_tokens": 3}
    assert [p[0] for p in c.problems] == ["dotted-replaces-json"]


def test_shorthand_merge_and_conflict() -> None:
    c = parse_vllm_command(["vllm", "serve", "m", "--spec-method", "mtp", "--spec-tokens", "2"], True)
    assert c.spec == {"method": "mtp", "num_speculative_tokens": 2}
    c = parse_vllm_command(["vllm", "serve", "m", "--speculative-config", '{"method":"mtp"}', "--spec-method", "eagle"], True)
    assert c.spec == {"method": "mtp"}
    assert c.problems[0][:2] == ("mutually-exclusive", "--spec-method")
    c = parse_vllm_command(["vllm", "serve", "m", "--spec-method", "mtp"], False)  # a version without the shorthand
    assert c.spec is None and c.options["--spec-method"] == "mtp"


def test_bad_json_and_no_model() -> None:
    c = parse_vllm_command(["vllm", "serve", "--speculative-config", "{method: mtp}"], True)
    assert [p[0] for p in c.problems] == ["bad-json", "no-model"]


def test_rebuild_replaces_every_form_once() -> None:
    c = parse_vllm_command(["vllm", "serve", "m", "--spec-method", "mtp", "--port", "8000", "--spec-tokens", "2"], True)
    assert rebuild_vllm(c, {"method": "mtp", "num_speculative_tokens": 1}) == [
        "vllm", "serve", "m", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}', "--port", "8000"]
    assert rebuild_vllm(c, None) == ["vllm", "serve", "m", "--port", "8000"]


def test_evaluator_three_valued() -> None:
    ev = Evaluator({"self.method": "mtp", "self.draft_model_config.model": "/x/EAGLE3-llama", "self.num_speculative_tokens": 2,
                    "self.draft_model_config.hf_config.model_type": "deepseek_mtp", "MTP": ["deepseek_mtp"]},
                   {"use_gemma4_mtp": "self.method == 'mtp' and getattr(self.draft_model_config.hf_config, 'model_type', None) == 'gemma4_mtp'"})
    assert ev.truth("'eagle3' in self.draft_model_config.model.lower()") is True
    assert ev.truth("self.draft_model_config.hf_config.model_type in get_args(MTP)") is True
    assert ev.truth("self.use_gemma4_mtp()") is False
    assert ev.truth("speculative_config.use_gemma4_mtp()") is False  # the runner's spelling reads the same predicate
    assert ev.truth("self.use_multi_module_mtp()") is UNKNOWN  # not one return expression: unknown, not false
    assert ev.truth("unknown_name or self.num_speculative_tokens > 1") is True
    assert ev.truth("unknown_name and self.num_speculative_tokens > 1") is UNKNOWN
    assert ev.truth("self.draft_model_config.hf_config.model_type in 'deepseek_mtp_x'") is True  # substring semantics


def test_n_predict_from_checkpoint_facts() -> None:
    ck = {"mtp": {"declared_layers": 2, "declared_by": "/text_config/mtp_num_hidden_layers"}}
    assert n_predict_of("getattr(text_config, 'mtp_num_hidden_layers', None)", ck)[0] == 2
    # another key: the transformers config class may define the attribute, so not decided (not the getattr default)
    v, how = n_predict_of("getattr(hf_config, 'num_nextn_predict_layers', 1)", ck)
    assert v is None and how.endswith("or 1 when the class has none: not decided")
    assert n_predict_of("getattr(hf_config, 'num_nextn_predict_layers', None)", ck)[0] is None
    assert n_predict_of("1", ck)[0] == 1
    assert n_predict_of("mtp_config.get('num_nextn_predict_layers', 0)", {"mtp": {"declared_layers": 3, "declared_by": "/num_nextn_predict_layers"}})[0] == 3


def test_engine_and_source_must_agree(capsys) -> None:
    from mtp_audit.cli.main import main

    assert main(["launch", "--vllm", "v.whl", "--", "python", "-m", "sglang.launch_server", "--model-path", "m"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: --vllm: the command starts SGLang, not vLLM: use --sglang TARGET\n"
    assert main(["launch", "--sglang", "s.whl", "--", "vllm", "serve", "m"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: --sglang: the command starts vLLM, not SGLang: use --vllm TARGET\n"


def _tree(tmp_path, layers: int):
    """The MTP32x example tree (launch/rules.py: a vLLM tree in 0.33.0's shapes, a Qwen3.5-MoE-shaped checkpoint)
    with ``mtp_num_hidden_layers`` set to ``layers``."""
    import json

    from mtp_audit.engines.vllm.launch.rules import RULES_BY_ID

    RULES_BY_ID["MTP323"].examples[0].materialize(tmp_path)
    cfg = json.loads((tmp_path / "ckpt/config.json").read_text())
    cfg["mtp_num_hidden_layers"] = layers
    (tmp_path / "ckpt/config.json").write_text(json.dumps(cfg))
    idx = json.loads((tmp_path / "ckpt/model.safetensors.index.json").read_text())
    wm = idx["weight_map"]
    for layer in range(1, layers):
        wm.update({n.replace("mtp.layers.0.", f"mtp.layers.{layer}."): v for n, v in list(wm.items()) if n.startswith("mtp.layers.0.")})
    (tmp_path / "ckpt/model.safetensors.index.json").write_text(json.dumps(idx))
    return tmp_path


@pytest.mark.parametrize("k, error", [(3, True), (4, False), (1, False)])
def test_divisibility_rule(tmp_path, k: int, error: bool) -> None:
    from mtp_audit.launch import audit_launch

    root = _tree(tmp_path, 2)
    r = audit_launch(["vllm", "serve", "ckpt", "--speculative-config", f'{{"method":"mtp","num_speculative_tokens":{k}}}'],
                     vllm=root / "vl", env_dumps=[root / "env.txt"], environ={}, cwd=root)
    f = r.facts["launch"]
    assert f["speculative"]["mtp_layers"] == 2
    msgs = [x.message for x in r.findings if x.rule_id == "MTP320"]
    if error:
        assert len(msgs) == 1 and "num_speculative_tokens:3 must be divisible by n_predict=2" in msgs[0]
        assert f["corrected_command"] == """vllm serve ckpt --speculative-config '{"method":"mtp","num_speculative_tokens":2}'"""
        assert f["corrected_check"]["verdict"] == "go"
    else:
        assert msgs == [] and f["verdict"] == "go"


def test_model_without_tokens_raises_before_the_silent_default(tmp_path) -> None:
    from mtp_audit.launch import audit_launch

    root = _tree(tmp_path, 2)
    r = audit_launch(["vllm", "serve", "ckpt", "--speculative-config", '{"method":"mtp","model":"ckpt"}'],
                     vllm=root / "vl", env_dumps=[root / "env.txt"], environ={}, cwd=root)
    f = r.facts["launch"]
    # the example tree's auto-detection compares `self.num_speculative_tokens > 1` (vl/vllm/config/speculative.py:52)
    # before the n_predict default below it: None > 1 raises
    errs = [x.message for x in r.findings if x.rule_id == "MTP320"]
    assert len(errs) == 1 and "TypeError: '>' not supported between instances of 'NoneType' and 'int' (vllm/config/speculative.py:52)" in errs[0]
    assert not [x for x in r.findings if x.rule_id == "MTP323"] and f["verdict"] == "fix first"
    assert f["corrected_command"] == """vllm serve ckpt --speculative-config '{"method":"mtp","model":"ckpt","num_speculative_tokens":2}'"""
    assert f["corrected_check"]["verdict"] == "go" and f["corrected_check"]["num_speculative_tokens"] == "2 (given) for 2 MTP layer(s)"


def test_api_server_positional_model_is_ignored() -> None:
    c = parse_vllm_command(["python", "-m", "vllm.entrypoints.openai.api_server", "ck", "--spec-tokens", "1"], True)
    assert c.ignored_positional == (3, "ck") and c.model == "ck" and [p[0] for p in c.problems] == ["positional-ignored"]
    assert rebuild_vllm(c, model_option=True) == ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "ck", "--spec-tokens", "1"]
    c = parse_vllm_command(["vllm", "serve", "ck"], True)
    assert c.ignored_positional is None and c.problems == []


def test_tree_warnings_that_do_not_concern_the_checkpoint_are_info_for_the_launch():
    """Found by a fresh-user run: MTP407 (speculators checkpoints) made a MiMo launch 'WARN' although its
    config.json has no speculators_config, and MTP410 (DeepSeek-V3.2 enforce_eager) stayed a warning on Qwen3.5."""
    from mtp_audit.engines.vllm.launch.evaluate import tree_errors_relaxed
    from mtp_audit.engines.vllm.rules import RULES
    from mtp_audit.report import Location, Report, Severity

    by_id = {r.id: r for r in RULES}
    fs = [by_id["MTP407"].finding("speculators checkpoint replaces --model", Location(path="vllm/config/x.py", line=1)),
          by_id["MTP410"].finding("enforce_eager forced for deepseek_v32", Location(path="vllm/config/x.py", line=2))]
    rep = Report.build("vllm", "vllm-0.33.0.whl", findings=fs, rule_ids=["MTP407", "MTP410"])
    mimo = {"config": {"model_type": "mimo", "text_model_type": None, "speculators_config": False}}
    out = {f.rule_id: f.severity for f in tree_errors_relaxed(rep, mimo).findings}
    assert out == {"MTP407": Severity.INFO, "MTP410": Severity.INFO}
    v32 = {"config": {"model_type": "deepseek_v32", "speculators_config": True}}
    assert {f.rule_id: f.severity for f in tree_errors_relaxed(rep, v32).findings} == {"MTP407": Severity.WARNING,
                                                                                      "MTP410": Severity.WARNING}
    # not audited: not decided, the warnings stay
    assert {f.severity for f in tree_errors_relaxed(rep, None).findings} == {Severity.WARNING}


def test_refused_before_the_replay_is_a_flag_not_words() -> None:
    """The replay is skipped where pydantic already refused the config (``refused_by_validation``) or the parser did
    (MTP320 at another option); an MTP320 at --speculative-config whose words merely say "Literal" (a key the user
    wrote) does not skip it."""
    from types import SimpleNamespace

    from mtp_audit.engines.vllm.launch.decide import _rejected_before
    from mtp_audit.engines.vllm.launch.rules import RULES_BY_ID as BY_ID
    from mtp_audit.report import Location

    worded = BY_ID["MTP320"].finding("--num-speculative-tokens and --speculative-config['Literal'] are mutually exclusive",
                                     Location(symbol="--speculative-config"))
    parser = BY_ID["MTP320"].finding("argument --speculative-config: expected one argument", Location(symbol="--tensor-parallel-size"))
    assert not _rejected_before(SimpleNamespace(refused_by_validation=False, findings=[worded]))
    assert _rejected_before(SimpleNamespace(refused_by_validation=True, findings=[]))
    assert _rejected_before(SimpleNamespace(refused_by_validation=False, findings=[worded, parser]))


def test_the_replay_drops_the_fact_steps_gaps_by_what_they_are_not_by_words() -> None:
    """When the replay answers, the gaps the fact-based steps recorded as theirs go; a later gap that merely names an
    auto-detection test (another step's) stays, and so does every gap before the steps ran."""
    from types import SimpleNamespace

    from mtp_audit.engines.vllm.launch.decide import _drop_fact_answers
    from mtp_audit.report import Gap

    before = Gap("launch", "the method default at x.py:1 was not decided statically")
    fact = Gap("launch", "auto-detection test is_mtp (x.py:9) could not be decided for draft d: the method vLLM runs is unknown")
    other = Gap("launch", "the auto-detection test of the draft was read from a cached tree")
    ctx = SimpleNamespace(findings=[], gaps=[before, fact, other], fact_gaps=[fact])
    _drop_fact_answers(ctx, 0, 1)
    assert ctx.gaps == [before, other]
