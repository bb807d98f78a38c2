"""``mtp-audit launch -- vllm serve ...`` on vLLM 0.34.0, which moved the per-method speculative logic into
``SpeculatorConfig`` classes (``vllm/v1/worker/gpu/spec_decode/<method>/config.py``, named in ``speculator_config.py``'s
``_CONFIG_BY_METHOD``) and removed ``vllm/v1/worker/gpu_model_runner.py``.

Values checked by hand in the unpacked 0.34.0 wheel: ``MTPSpeculatorConfig.default_model`` makes the target its own draft
(``mtp/config.py:43-57``), ``hf_config_override`` rewrites Qwen3.5-27B to ``Qwen3_5MTP``, ``speculator_class`` is
``...mtp.speculator.MTPSpeculator`` (``mtp/config.py:20``); ``DraftModelSpeculatorConfig.default_model`` raises 'num_speculative_tokens
was provided but without speculative model.' (``speculator_config.py:173``); ``mtp`` on a target without MTP layers
(Qwen3-30B-A3B) keeps the target class as the draft; ``_validate_method`` refuses an unknown name (``speculative.py:1631``).
A tree with the deciding file removed is "could not tell: vLLM 0.34.0 moved ...", scoped to the methods that need it.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network

QWEN35 = FIXTURES / "oracle-configs" / "Qwen--Qwen3.5-27B"
QWEN3 = FIXTURES / "oracle-configs" / "Qwen--Qwen3-30B-A3B"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The 0.34.0 wheel's ``vllm/**/*.py`` unpacked (the launch reads only source)."""
    root = tmp_path_factory.mktemp("vllm034")
    with zipfile.ZipFile(vllm_wheel("0.34.0")) as z:
        z.extractall(root, [n for n in z.namelist() if n.startswith("vllm/") and n.endswith(".py")])
    return root


def _without(tree: Path, tmp_path: Path, rel: str) -> Path:
    out = tmp_path / "t"
    shutil.copytree(tree, out)
    (out / rel).unlink()
    return out


def _launch(root: Path, model: Path, spec: dict):
    return audit_launch(["vllm", "serve", str(model), "--speculative-config", json.dumps(spec)], vllm=root, environ={}, cwd=model)


def _refusals(r) -> list[str]:
    return [f.message for f in r.findings if f.rule_id == "MTP320"]


def test_mtp_on_qwen35_runs_with_the_mtp_speculator(tree: Path) -> None:
    r = _launch(tree, QWEN35, {"method": "mtp", "num_speculative_tokens": 3})
    sp = r.facts["launch"]["speculative"]
    assert _refusals(r) == []
    assert sp["runs_as"] == "mtp" and sp["num_speculative_tokens"] == 3
    assert r.facts["launch"]["draft"]["architectures_replayed"] == ["Qwen3_5MTP"]
    assert "MTPSpeculator" in r.facts["launch"]["summary"]["proposer"]


def test_mtp_on_a_target_without_mtp_layers_keeps_the_target_class(tree: Path) -> None:
    r = _launch(tree, QWEN3, {"method": "mtp", "num_speculative_tokens": 1})
    assert _refusals(r) == []
    assert r.facts["launch"]["draft"]["architectures_replayed"] == ["Qwen3MoeForCausalLM"]


def test_tokens_without_model_or_method_raise_in_the_draft_model_class(tree: Path) -> None:
    r = _launch(tree, QWEN35, {"num_speculative_tokens": 1})
    [msg] = _refusals(r)
    assert "num_speculative_tokens was provided but without speculative model." in msg
    assert "(vllm/v1/worker/gpu/spec_decode/speculator_config.py:173)" in msg


def test_unknown_method_is_refused(tree: Path) -> None:
    r = _launch(tree, QWEN35, {"method": "nextn", "num_speculative_tokens": 1})
    assert len(_refusals(r)) == 1


def test_removed_method_config_is_could_not_tell_for_that_method_only(tree: Path, tmp_path: Path) -> None:
    root = _without(tree, tmp_path, "vllm/v1/worker/gpu/spec_decode/mtp/config.py")
    r = _launch(root, QWEN35, {"method": "mtp", "num_speculative_tokens": 3})
    assert _refusals(r) == []
    gaps = [g for g in r.gaps if "moved" in g.message and g.analyzer == "launch"]
    assert any(g.analyzer == "vllm" and not g.blocking and "(the classes named for mtp are not in this tree)" in g.message for g in r.gaps)
    assert [g.message for g in gaps] == [
        "could not tell: vLLM 0.34.0 moved vllm.v1.worker.gpu.spec_decode.mtp.config.MTPSpeculatorConfig "
        "(vllm/v1/worker/gpu/spec_decode/mtp/config.py is not in this tree or does not parse): what vLLM does with this "
        "speculative config is not decided"]
    assert gaps[0].blocking and r.facts["launch"]["speculative"]["runs_as"] is None
    ngram = _launch(root, QWEN35, {"method": "ngram", "num_speculative_tokens": 3})
    assert ngram.facts["launch"]["speculative"]["runs_as"] == "ngram"
    assert not any("moved" in g.message for g in ngram.gaps if g.analyzer == "launch")


def test_removed_speculator_table_is_could_not_tell_not_a_refusal(tree: Path, tmp_path: Path) -> None:
    root = _without(tree, tmp_path, "vllm/v1/worker/gpu/spec_decode/speculator_config.py")
    r = _launch(root, QWEN35, {"method": "mtp", "num_speculative_tokens": 3})
    assert _refusals(r) == []
    moved = [g.message for g in r.gaps if g.blocking and "could not tell: vLLM 0.34.0 moved" in g.message]
    assert moved and "vllm/v1/worker/gpu/spec_decode/speculator_config.py is not in this tree or does not parse" in moved[0]
    assert r.facts["launch"]["verdict"] == "could not tell"


def test_removed_v1_runner_on_0_33_is_could_not_tell_not_no_proposer(tmp_path: Path) -> None:
    root = tmp_path / "v33"
    with zipfile.ZipFile(vllm_wheel("0.33.0")) as z:
        z.extractall(root, [n for n in z.namelist() if n.startswith("vllm/") and n.endswith(".py")
                            and n != "vllm/v1/worker/gpu_model_runner.py"])
    r = audit_launch(["VLLM_USE_V2_MODEL_RUNNER=0", "vllm", "serve", str(QWEN35), "--speculative-config",
                      json.dumps({"method": "mtp", "num_speculative_tokens": 1})], vllm=root, environ={}, cwd=QWEN35)
    assert _refusals(r) == []
    assert [g.message for g in r.gaps if "proposer dispatch" in g.message] == [
        "could not tell: vLLM 0.33.0 moved the proposer dispatch (vllm/v1/worker/gpu_model_runner.py is not in this tree): "
        "which proposer runs method 'mtp', and whether the V1 runner has one, is not decided"]


def _spec(version: str, spec: dict, *extra: str):
    return audit_launch(["vllm", "serve", str(QWEN35), "--speculative-config", json.dumps(spec), *extra], vllm=vllm_wheel(version),
                        environ={}, cwd=QWEN35)


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_a_key_the_release_lacks_is_pydantics_unexpected_keyword(version: str) -> None:
    # @config builds a pydantic dataclass with ConfigDict(extra="forbid") (vllm/config/utils.py:69 / :71); 0.34.0 added
    # speculator_options
    [msg] = _refusals(_spec(version, {"method": "mtp", "num_speculative_tokens": 1, "speculator_options": {}}))
    assert "ValidationError: 1 validation error for SpeculativeConfig: speculator_options: Unexpected keyword argument" in msg


def test_removed_field_on_0_34_is_unexpected_and_the_new_one_is_checked_per_method(tree: Path) -> None:
    [msg] = _refusals(_launch(tree, QWEN35, {"method": "mtp", "num_speculative_tokens": 1, "disable_padded_drafter_batch": True}))
    assert "disable_padded_drafter_batch: Unexpected keyword argument" in msg
    [opt] = _refusals(_launch(tree, QWEN35, {"method": "ngram", "num_speculative_tokens": 3, "index_share_for_mtp_iteration": True}))
    assert "index_share_for_mtp_iteration is not supported with speculative method 'ngram'. (vllm/config/speculative.py:1399)" in opt
    [pd] = _refusals(_launch(tree, QWEN35, {"method": "mtp", "num_speculative_tokens": 1, "parallel_drafting": True}))
    assert "parallel_drafting is only supported by the dflash and dspark methods, not 'mtp'. (vllm/config/speculative.py:1690)" in pd


@pytest.mark.parametrize(("version", "line"), [("0.24.0", 960), ("0.33.0", 1866)])
def test_draft_tensor_parallel_size_other_than_1_or_the_targets(version: str, line: int) -> None:
    [msg] = _refusals(_spec(version, {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 2}))
    assert f"cannot be other value than 1 or target model tensor_parallel_size (vllm/config/speculative.py:{line})" in msg
    ok = _spec(version, {"method": "mtp", "num_speculative_tokens": 1, "draft_tensor_parallel_size": 2}, "-tp", "2")
    assert _refusals(ok) == [] and ok.facts["launch"]["speculative"]["runs_as"] == "mtp"


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_zero_tokens_is_refused_by_the_field_bound(version: str) -> None:
    [msg] = _refusals(_spec(version, {"method": "mtp", "num_speculative_tokens": 0}))
    assert "num_speculative_tokens: Input should be greater than 0 (pydantic" in msg


def test_suffix_default_on_0_33_depends_on_arctic_inference_not_a_refusal() -> None:
    # without machine facts (the live machine's packages decide it: tests/test_launch_vllm_suffix.py)
    r = audit_launch(["vllm", "serve", str(QWEN35), "--speculative-config", json.dumps({"method": "suffix"})],
                     vllm=vllm_wheel("0.33.0"), environ={}, cwd=QWEN35, no_machine=True)
    assert _refusals(r) == []
    assert any("not has_arctic_inference() (vllm/config/speculative.py:1727)" in g.message for g in r.gaps)


def test_suffix_default_on_0_34_is_eight_tokens(tree: Path) -> None:
    r = _launch(tree, QWEN35, {"method": "suffix"})
    assert _refusals(r) == [] and r.facts["launch"]["speculative"]["num_speculative_tokens"] == 8


def test_ngram_gpu_on_0_24_is_dispatched_by_its_predicate() -> None:
    # 0.24.0 gpu_model_runner.py:574-575: elif self.speculative_config.use_ngram_gpu(): self.drafter = NgramProposerGPU(...)
    r = _spec("0.24.0", {"method": "ngram_gpu", "num_speculative_tokens": 3})
    assert _refusals(r) == [] and r.facts["launch"]["speculative"]["runs_as"] == "ngram_gpu"
    assert "NgramProposerGPU" in r.facts["launch"]["summary"]["proposer"]


def test_upgrade_diff_0_33_to_0_34_says_what_moved_for_mtp_users() -> None:
    from mtp_audit.engines.vllm.audit import audit_vllm
    from mtp_audit.engines.vllm.diff import diff_vllm

    r = diff_vllm(audit_vllm(vllm_wheel("0.33.0")), audit_vllm(vllm_wheel("0.34.0")))
    ch = r.facts["vllm"]["diff"]["changes"]
    assert ch["fields"] == {"added": ["draft_decode_context_parallel_size", "suffix_decoding_corpus_tokens", "speculator_options"],
                            "removed": ["disable_padded_drafter_batch", "use_heterogeneous_vocab"]}
    assert ch["speculator_configs"]["detection_order"] == ["eagle", "eagle3", "dflash", "dspark", "mtp"]
    by = [((f.rule_id, str(f.location)), f.message) for f in r.findings if f.rule_id in ("MTP420", "MTP424")]
    gone = [m for (rid, _l), m in by if rid == "MTP424" and "is gone" in m]
    assert len(gone) == 2 and "'disable_padded_drafter_batch' is gone" in gone[0]
    options = [m for (rid, _l), m in by if rid == "MTP424" and "speculative option" in m]
    assert "speculative option 'index_share_for_mtp_iteration' is now accepted only with method mtp (of the 10 in _CONFIG_BY_METHOD)" in " ".join(options)
    table = next(m for (rid, loc), m in by if rid == "MTP420" and "speculator_config.py:298" in loc)
    assert "mtp -> MTPSpeculatorConfig (MTPSpeculator)" in table
    assert any("speculator_config.py:401" in loc and "eagle, eagle3, dflash, dspark, mtp" in m for (_rid, loc), m in by)
    assert not any("gpu_model_runner.py not found" in g.message for g in r.gaps)


def test_tree_without_the_speculator_table_is_a_gap_in_the_vllm_audit(tree: Path, tmp_path: Path) -> None:
    from mtp_audit.engines.vllm.audit import audit_vllm

    r = audit_vllm(_without(tree, tmp_path, "vllm/v1/worker/gpu/spec_decode/speculator_config.py"))
    assert r.facts["vllm"]["speculator_configs"]["gap"] == ("vllm/v1/worker/gpu/spec_decode/speculator_config.py is not in this "
                                                           "tree or does not parse")
    assert any(g.message.startswith("could not tell: vLLM 0.34.0 moved the speculator table") for g in r.gaps)


@pytest.mark.parametrize(("version", "line"), [("0.24.0", 2225), ("0.33.0", 2680)])
def test_max_model_len_beyond_anything_the_draft_config_allows(version: str, line: int) -> None:
    # the draft ModelConfig(max_model_len=...) raises 'User-specified max_model_len ... is greater than the derived
    # max_model_len' (vllm/config/model.py _get_and_verify_max_len); 10**8 is above every number of Qwen3.5-27B's config.json
    [msg] = _refusals(_spec(version, {"method": "mtp", "num_speculative_tokens": 1, "max_model_len": 10**8}))
    assert "User-specified max_model_len (100000000) is greater than the derived max_model_len" in msg
    assert f"(vllm/config/model.py:{line})" in msg
    allowed = audit_launch(["VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "vllm", "serve", str(QWEN35), "--speculative-config",
                            json.dumps({"method": "mtp", "num_speculative_tokens": 1, "max_model_len": 10**8})],
                           vllm=vllm_wheel(version), environ={}, cwd=QWEN35)
    assert not any("User-specified max_model_len" in m for m in _refusals(allowed))


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_model_ngram_names_the_method_not_a_draft_checkpoint(version: str) -> None:
    # 0.33.0 speculative.py:1241 / 0.34.0 :1368: ``self.model in ("ngram", "[ngram]")`` sets method ngram; nothing to audit
    r = _spec(version, {"model": "ngram", "num_speculative_tokens": 3})
    assert _refusals(r) == [] and r.facts["launch"]["speculative"]["runs_as"] == "ngram"


def test_dflash_wraps_the_draft_and_the_registry_refuses_it(tree: Path) -> None:
    # 0.34.0 DFlashSpeculatorConfig.adapt_draft_model_config -> EAGLEConfig(method="dflash") (eagle.py:65-76): the
    # registry has no DFlashDeepSeekMTPModel (real vLLM 0.34.0 raised the same, tests/data/oracle/vllm-0.34.0.json)
    [msg] = _refusals(_launch(tree, FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3",
                              {"method": "dflash", "model": str(FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"),
                               "num_speculative_tokens": 1}))
    assert "Model architectures ['DFlashDeepSeekMTPModel'] are not supported for now." in msg


def test_a_model_path_not_on_this_machine_is_could_not_tell_not_a_crash(tmp_path: Path) -> None:
    """``vllm serve ./nonexist --speculative-config '{"method":"mtp",...}'`` off the serving machine: the draft's
    architectures are not known (no config.json here), so whether the registry takes them is not decided; it once
    crashed (exit 4: ``'_Unknown' is not iterable`` in the registry look-up)."""
    r = audit_launch(["vllm", "serve", "./nonexist", "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}'],
                     vllm=vllm_wheel("0.33.0"), environ={}, cwd=tmp_path, no_machine=True)
    assert r.facts["launch"]["verdict"] == "could not tell"
    assert any(g.blocking and "./nonexist: no such file or folder on this machine" in g.message for g in r.gaps)


def test_only_the_v1_runner_note_itself_is_dropped(tree: Path) -> None:
    """The release with a speculator table drops the V1-runner note by the gap it is (``NO_V1_RUNNER``), not by its
    words: another gap that starts with the same words stays."""
    from mtp_audit.engines.vllm.audit import ANALYZER, NO_V1_RUNNER, link_speculators
    from mtp_audit.engines.vllm.target import open_target
    from mtp_audit.report import Gap

    lookalike = Gap(ANALYZER, NO_V1_RUNNER.message + " (another gap worded alike)", blocking=False)
    gaps = [NO_V1_RUNNER, lookalike]
    facts: dict = {}
    link_speculators(open_target(tree), facts, gaps)
    assert gaps == [lookalike] and facts["speculator_configs"]["detection_order"] == ["eagle", "eagle3", "dflash", "dspark", "mtp"]
