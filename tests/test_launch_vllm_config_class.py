"""The draft's ``n_predict`` when ``config.json`` does not hold the key ``hf_config_override`` reads
(``getattr(hf_config, "num_nextn_predict_layers", None)`` for ``qwen3_next_mtp``: 0.33.0 ``speculative.py:910-913``,
0.34.0 ``:1027-1030``): decided from the config class vLLM builds (:mod:`mtp_audit.engines.vllm.launch.config_class`).

Checked by hand: 0.24.0 registers its own ``Qwen3NextConfig`` (``vllm/transformers_utils/config.py:121``, class at
``configs/qwen3_next.py:25``, no ``num_nextn_predict_layers``); 0.33.0 / 0.34.0 use transformers' (``Requires-Dist:
transformers<5.21.0,>=5.16.1`` / ``<5.23.0,>=5.16.1``), whose ``configuration_qwen3_next.py`` has no such attribute in
5.16.1 ... 5.22.2. So ``n_predict`` is ``None`` and real vLLM builds ``{"method": "mtp", "num_speculative_tokens": 3}``
with 3 tokens and ``Qwen3NextMTP`` (tests/data/oracle/vllm-0.33.0.json).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.engines.vllm.launch.config_class import class_defines
from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network

NEXT = FIXTURES / "oracle-configs" / "Qwen--Qwen3-Next-80B-A3B-Thinking"


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0", "0.34.0"])
def test_qwen3_next_n_predict_is_none_so_three_tokens_run(version: str) -> None:
    r = audit_launch(["vllm", "serve", str(NEXT), "--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 3})],
                     vllm=vllm_wheel(version), environ={}, cwd=NEXT)
    sp = r.facts["launch"]["speculative"]
    assert [f.rule_id for f in r.findings if f.rule_id == "MTP320"] == []
    assert (sp["runs_as"], sp["num_speculative_tokens"]) == ("mtp", 3)
    assert r.facts["launch"]["draft"]["architectures_replayed"] == ["Qwen3NextMTP"]
    assert not [g for g in r.gaps if "n_predict" in g.message]


def _tree(tmp_path, registry: str, cls_body: str, requires=None):
    cfg = tmp_path / "vllm/transformers_utils/config.py"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f"_CONFIG_REGISTRY = LazyConfigDict(\n    {registry}\n)\n")
    (tmp_path / "vllm/transformers_utils/configs").mkdir()
    (tmp_path / "vllm/transformers_utils/configs/__init__.py").write_text(
        '_CLASS_TO_MODULE = {"FooConfig": "vllm.transformers_utils.configs.foo"}\n')
    (tmp_path / "vllm/transformers_utils/configs/foo.py").write_text(cls_body)
    return {rel: (tmp_path / rel).read_bytes() for rel in ("vllm/transformers_utils/config.py", "vllm/transformers_utils/configs/__init__.py",
                                                           "vllm/transformers_utils/configs/foo.py")}


def test_the_releases_own_class_decides_when_it_names_the_attribute_or_not(tmp_path) -> None:
    lacks = _tree(tmp_path / "a", 'foo="FooConfig",', 'class FooConfig(PretrainedConfig):\n    """num_nextn_predict_layers"""\n    x = 1\n')
    assert class_defines(lacks, None, "foo", "num_nextn_predict_layers") == (
        False, "the release's own FooConfig (vllm/transformers_utils/configs/foo.py:1, a PretrainedConfig) does not define num_nextn_predict_layers")
    has = _tree(tmp_path / "b", 'foo="FooConfig",', "class FooConfig(PretrainedConfig):\n    def __init__(self, num_nextn_predict_layers=1): pass\n")
    assert class_defines(has, None, "foo", "num_nextn_predict_layers")[0] is True
    sub = _tree(tmp_path / "c", 'foo="FooConfig",', "class FooConfig(DeepseekV3Config):\n    pass\n")
    assert class_defines(sub, None, "foo", "num_nextn_predict_layers")[0] is None


def test_a_transformers_class_is_decided_only_where_every_admitted_release_was_read(tmp_path) -> None:
    src = _tree(tmp_path, 'foo="FooConfig",', "class FooConfig(PretrainedConfig):\n    pass\n")
    assert class_defines(src, ["transformers<5.21.0,>=5.16.1"], "qwen3_next", "num_nextn_predict_layers")[0] is False
    # an open upper bound admits releases nobody read; a lower bound below the first one read as well
    assert class_defines(src, ["transformers>=5.16.1"], "qwen3_next", "num_nextn_predict_layers")[0] is None
    assert class_defines(src, ["transformers<5.21.0,>=5.10"], "qwen3_next", "num_nextn_predict_layers")[0] is None
    assert class_defines(src, None, "qwen3_next", "num_nextn_predict_layers")[0] is None
    assert class_defines(src, ["transformers<5.21.0,>=5.16.1"], "deepseek_v3", "num_nextn_predict_layers")[0] is None
