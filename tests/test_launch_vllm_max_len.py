"""The draft's ``max_model_len`` and the EAGLE-style wrapping of a composite config, each checked against what real
vLLM recorded (tests/data/oracle/vllm-X-grid3.json) or built in the oracle venvs (/work/oracle-venvs/vllm-X, values
written down by hand below with the command that gave them).

- Kimi-K3 with itself as an ``eagle`` / ``eagle3`` / ``dflash`` draft: ``EAGLEConfig`` reads ``vocab_size`` through the
  release's own ``KimiK3Config.vocab_size`` property, copies the composite's ``to_dict()`` (its ``text_config`` a
  dict) and ``update_arch_`` then refuses it in ``get_hf_text_config`` (0.34.0 ``vllm/transformers_utils/config.py:1310``,
  0.33.0 ``:1265``).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network


def _on(version: str, name: str, spec: dict, *extra: str):
    folder = FIXTURES / "oracle-configs" / name
    return audit_launch(["vllm", "serve", str(folder), *extra, "--speculative-config", json.dumps(spec)],
                        vllm=vllm_wheel(version), environ={}, cwd=folder)


def _refusals(r) -> list[str]:
    return [f.message for f in r.findings if f.rule_id == "MTP320"]


@pytest.mark.parametrize(("version", "line"), [("0.33.0", 1265), ("0.34.0", 1310)])
@pytest.mark.parametrize("method", ["eagle", "eagle3", "dflash"])
def test_kimi_k3_self_draft_is_refused_by_get_hf_text_config(version: str, line: int, method: str) -> None:
    r = _on(version, "moonshotai--Kimi-K3", {"method": method, "model": str(FIXTURES / "oracle-configs" / "moonshotai--Kimi-K3"),
                                              "num_speculative_tokens": 1})
    [msg] = _refusals(r)
    assert "ValueError: The text_config extracted from the model config does not have `num_attention_heads` attribute" in msg
    assert f"(vllm/transformers_utils/config.py:{line})" in msg
    assert "vocab_size" not in msg


# --- the lower bound of the derived length (mtp_audit/engines/vllm/launch/max_len.py) on the real releases -------------

def _view(version: str):
    from mtp_audit.engines.vllm.launch import VllmEngine

    return VllmEngine().release(vllm_wheel(version))[0]


def _cfg(tmp_path, cfg: dict, name: str = "m") -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


@pytest.mark.parametrize(("version", "floor"), [("0.34.0", 163840), ("0.33.0", 163840), ("0.24.0", None)])
def test_deepseek_v3_floor_follows_the_transformers_requirement(version: str, floor) -> None:
    from mtp_audit.engines.vllm.launch.max_len import length_floor

    # DeepseekV3Config (transformers) sets max_position_embeddings only; 0.33.0 / 0.34.0 admit transformers 5.16-5.20 /
    # 5.16-5.22, all read; 0.24.0 admits any transformers >= 5.5.3, whose classes were not all read: not decided
    got, why = length_floor(_view(version), str(FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"), ".")
    assert got == floor, why
    if floor is None:
        assert "admits releases not read" in why


def test_the_releases_own_class_and_yarn_original_length_on_0240() -> None:
    from mtp_audit.engines.vllm.launch.max_len import length_floor, release_steps

    view = _view("0.24.0")
    steps, _ = release_steps(view.sources)
    # 0.24.0 replaces the length with the YaRN original_max_position_embeddings (vllm/config/model.py:2166), then
    # multiplies by the factor: DeepSeek-V4-Flash's 65536 x 16; the lower bound counts 65536
    assert steps["yarn_original"] is True and release_steps(_view("0.34.0").sources)[0]["yarn_original"] is False
    v4, why = length_floor(view, str(FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V4-Flash"), ".")
    assert v4 == 65536 and "the release's own DeepseekV4Config" in why
    nxt, why = length_floor(view, str(FIXTURES / "oracle-configs" / "Qwen--Qwen3-Next-80B-A3B-Thinking"), ".")
    assert nxt == 262144 and "max_position_embeddings=32768" in why


def test_floor_steps_on_synthetic_configs(tmp_path) -> None:
    import math

    from mtp_audit.engines.vllm.launch.max_len import length_floor

    view = _view("0.34.0")

    def floor(cfg: dict, **kw):
        return length_floor(view, _cfg(tmp_path, cfg, f"c{len(list(tmp_path.iterdir()))}"), ".", **kw)[0]

    base = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"]}
    # config.json's key wins over the class default 32768; the least of several keys counts
    assert floor({**base, "max_position_embeddings": 40960}) == 40960
    assert floor({**base, "max_position_embeddings": 40960, "seq_length": 8192}) == 8192
    # the class default where config.json is silent (Qwen3MoeConfig.max_position_embeddings = 32768)
    assert floor(base) == 32768
    # model_max_length replaces the least (Command-R rule), up or down
    assert floor({**base, "max_position_embeddings": 4096, "model_max_length": 131072}) == 131072
    # a factor at least 1 never lowers it; below 1, or longrope: not decided
    assert floor({**base, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}) == 4096
    assert floor({**base, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 0.5}}) is None
    assert floor({**base, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope", "factor": 4}}) is None
    # a class not read, a composite config, an unknown model_type: not decided
    assert floor({"model_type": "llama", "max_position_embeddings": 4096}) is None
    assert floor({**base, "text_config": {"max_position_embeddings": 4096}}) is None
    assert floor({"max_position_embeddings": 4096}) is None
    # a key that is not an integer
    assert floor({**base, "max_position_embeddings": "4096"}) is None
    # config.json's null replaces the class default: no key at all, so a given max_model_len is taken as is (inf) and
    # the target's own length is 2048 (0.34.0 vllm/config/model.py:2623-2640)
    assert floor({**base, "max_position_embeddings": None}) == math.inf
    assert floor({**base, "max_position_embeddings": None}, target=True) == 2048


def test_a_convertor_with_its_own_length_rule_is_not_decided(tmp_path) -> None:
    from mtp_audit.engines.vllm.launch.max_len import convertor_overrides

    view = _view("0.34.0")
    # 0.34.0 MossAudioModelArchConfigConvertor.derive_max_model_len_and_key reads its language config
    assert "MossAudioModelArchConfigConvertor" in convertor_overrides(view.sources, ["moss_audio"])
    assert convertor_overrides(view.sources, ["deepseek_v3", "deepseek_mtp", "qwen3_next_mtp"]) is None
