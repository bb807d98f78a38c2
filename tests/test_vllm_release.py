"""The typed view of a vLLM release's facts (:class:`mtp_audit.engines.vllm.release.VllmRelease`), on real wheels
(cached); the file:line values were checked by hand with ``unzip -p WHEEL vllm/config/speculative.py | sed -n 1250p``."""

from __future__ import annotations

import json
import os

import pytest
from conftest import vllm_wheel

from mtp_audit.engines.vllm import audit_vllm
from mtp_audit.engines.vllm.release import MethodLiteral, VllmRelease, registered

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["MTP_AUDIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("vllm-release-cache"))
    return {v: audit_vllm(vllm_wheel(v)) for v in ("0.8.5", "0.33.0")}


def test_0330_release_view(reports):
    rel = VllmRelease.from_report(reports["0.33.0"])
    assert rel.known and rel.version == "0.33.0"
    sc = rel.spec_config
    assert (sc.location, sc.validated, sc.method_field) == ("vllm/config/speculative.py:407", True, "vllm/config/speculative.py:419")
    assert sc.validated_by == "@config (vllm/config/utils.py:20 builds a pydantic dataclass)"
    assert sc.method_literal is not None and (sc.method_literal.name, sc.method_literal.location) == (
        "SpeculativeMethod", "vllm/config/speculative.py:74")
    assert len(sc.method_literal.values) == 38 and "mtp" in sc.method_literal.values
    assert sc.fields is not None and len(sc.fields) == 43 and "num_speculative_tokens" in sc.fields
    alias = rel.mtp_alias
    assert alias is not None
    assert (alias.set, alias.set_kind, alias.set_location, alias.location, alias.logged) == (
        "MTPModelTypes", "Literal", "vllm/config/speculative.py:38", "vllm/config/speculative.py:1250", True)
    assert len(rel.alias_members) == 27 and "mimo_mtp" in rel.alias_members
    assert rel.runner.v2_runner_exists and rel.runner.env == "VLLM_USE_V2_MODEL_RUNNER" and rel.runner.env_default == "None"
    assert rel.runner.auto_location == "vllm/config/vllm.py:731"
    assert rel.v1_oracle is None and rel.v0_spec_decode is None
    npr = rel.n_predict_rules
    assert (npr.default, npr.divisible_error, npr.reuse_warning) == (
        "vllm/config/speculative.py:1603", "vllm/config/speculative.py:1609", "vllm/config/speculative.py:1491")
    assert npr.reuse_warning_skips == ("step3p5_mtp", "step5_mtp", "inkling_mtp")
    assert [f["flag"] for f in rel.spec_flags] == ["--spec-method", "--spec-model", "--spec-tokens"]
    assert len(rel.env_var_names) == 31 and "VLLM_USE_V2_MODEL_RUNNER" in rel.env_var_names
    assert rel.unknown_env_check == "vllm/platforms/interface.py:1466"
    assert [p["class"] for p in rel.proposers_of("v2", "mtp")] == ["Gemma4Speculator", "MultiModuleMTPSpeculator", "MTPSpeculator"]
    assert rel.proposers_of("v2", "mtp")[-1]["location"] == "vllm/v1/worker/gpu/spec_decode/__init__.py:74"
    assert rel.proposers_of("v1", "no-such-method") == ()
    assert (rel.override_location, rel.override_link["how"]) == ("vllm/config/speculative.py:711", "composed")
    assert (len(rel.draft_chains), len(rel.mtp_classes), len(rel.lints.paren_string_in)) == (63, 36, 1)
    # the "method" aliases by line: the MTP alias, then ``if self.method in ("ngram", "[ngram]"): self.method = "ngram"``
    assert [(r["location"], r["value"]) for r in rel.rewrites_of("method", ("alias",))] == [
        ("vllm/config/speculative.py:1250", "'mtp'"), ("vllm/config/speculative.py:1298", "'ngram'")]


def test_085_release_view(reports):
    rel = VllmRelease.from_report(reports["0.8.5"])
    assert rel.version == "0.8.5" and rel.mtp_alias is None and rel.alias_members == ()
    assert rel.spec_config.validated is False and rel.spec_config.validated_by is None
    assert rel.spec_config.method_literal == MethodLiteral(
        "SpeculativeMethod", ("ngram", "eagle", "medusa", "mlp_speculator", "draft_model"), "vllm/config.py:2137")
    assert rel.v1_oracle is not None
    assert (rel.v1_oracle.accepted, rel.v1_oracle.location) == (("[ngram]", "eagle", "eagle3", "ngram"), "vllm/engine/arg_utils.py:1430")
    assert rel.v0_spec_decode == "vllm/spec_decode/spec_decode_worker.py:202"
    assert rel.runner.default == "v1" and not rel.runner.v2_runner_exists and rel.dispatch("v2") == {}
    assert rel.spec_flags == () and rel.n_predict_rules.reuse_warning is None
    chain = [c for c in rel.draft_chains if c["value"] == "deepseek_v3"]
    assert [dict(registered(c)) for c in chain] == [{"DeepSeekMTPModel": "vllm/model_executor/models/registry.py:219"}]


def test_json_report_reads_the_same(reports):
    """A ``--baseline`` JSON file gives the same view as the report it was written from."""
    report = reports["0.33.0"]
    as_json = json.loads(json.dumps({"facts": report.facts}))
    a, b = VllmRelease.from_report(report), VllmRelease.from_report(as_json)
    assert (a.version, a.spec_config, a.mtp_alias, a.runner, a.n_predict_rules) == (
        b.version, b.spec_config, b.mtp_alias, b.runner, b.n_predict_rules)


def test_partial_facts_read_as_absent():
    """No facts, or a part missing or ``null``: absent, never an exception."""
    none = VllmRelease.from_facts(None)
    assert not none.known and none.version is None and none.spec_config.method_literal is None
    assert none.proposers_of("v1", "mtp") == () and none.env_var_names == frozenset()
    part = VllmRelease.from_facts({"version": "0.11.0", "spec_config": None, "mtp_alias": None, "proposers": {"v1": None},
                                   "n_predict_rules": {"default": "vllm/config/speculative.py:363"}})
    assert part.known and part.version == "0.11.0"
    assert part.spec_config.validated is False and part.spec_config.fields is None
    assert part.dispatch("v1") == {} and part.n_predict_rules.default == "vllm/config/speculative.py:363"
    assert part.n_predict_rules.divisible_error is None
    assert VllmRelease.from_report({"facts": {"sglang": {}}}).known is False
    assert VllmRelease.from_report(object()).known is False


def test_view_pickles_and_deep_copies(reports):
    """Like the report it is read from (a launch evaluation may be copied or sent to a worker)."""
    import copy
    import pickle

    rel = VllmRelease.from_report(reports["0.33.0"])
    for other in (pickle.loads(pickle.dumps(rel)), copy.deepcopy(rel), copy.deepcopy(VllmRelease.from_facts(None))):
        assert other.spec_config == copy.deepcopy(other).spec_config
    assert pickle.loads(pickle.dumps(rel)).mtp_alias == rel.mtp_alias
