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


def _on(version: str, name: str, spec: dict, *extra: str, **machine):
    folder = FIXTURES / "oracle-configs" / name
    return audit_launch(["vllm", "serve", str(folder), *extra, "--speculative-config", json.dumps(spec)],
                        vllm=vllm_wheel(version), environ={}, cwd=folder, **machine)


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


# --- real values: what the real vLLM did (tests/oracle/probe_max_len.py in /work/oracle-venvs/vllm-X, CPU, on
# 2026-12-05), and what the launch replay says for the same launch --------------------------------------------------

def _mtp(version: str, name: str, mml: int, *extra: str, **machine) -> tuple[str, str]:
    r = _on(version, name, {"method": "mtp", "num_speculative_tokens": 1, "max_model_len": mml}, *extra, **machine)
    refused = _refusals(r)
    if refused:
        return "refused", refused[0].split("(the server will not start): ", 1)[1]
    runs = r.facts["launch"]["speculative"].get("runs_as")
    return ("runs", runs) if runs else ("undecided", "; ".join(g.message for g in r.gaps))


#: (version, config, max_model_len, what real vLLM did: "runs" or the exception's "Type at file:line")
REAL = [
    # 0.34.0: the derived length is max_position_embeddings (DeepSeek-V3's YaRN factor is not applied: model.py:2661)
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 1024, "runs"),
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 163840, "runs"),
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 163841, "ValueError at vllm/config/model.py:2724"),
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 10**6, "ValueError at vllm/config/model.py:2724"),
    ("0.34.0", "mistralai--Mixtral-8x22B-v0.1", 65536, "runs"),
    ("0.34.0", "mistralai--Mixtral-8x22B-v0.1", 65537, "ValueError at vllm/config/model.py:2724"),
    ("0.34.0", "zai-org--GLM-5", 202752, "runs"),
    ("0.34.0", "zai-org--GLM-5", 202753, "ValueError at vllm/config/model.py:2724"),
    ("0.34.0", "deepseek-ai--DeepSeek-V4-Flash", 1048576, "runs"),
    ("0.34.0", "deepseek-ai--DeepSeek-V4-Flash", 1048577, "ValueError at vllm/config/model.py:2724"),
    ("0.34.0", "XiaomiMiMo--MiMo-V2-Flash", 262144, "runs"),
    ("0.34.0", "XiaomiMiMo--MiMo-V2-Flash", 262145, "ValueError at vllm/config/model.py:2724"),
    ("0.33.0", "deepseek-ai--DeepSeek-V3", 163840, "runs"),
    ("0.33.0", "deepseek-ai--DeepSeek-V3", 163841, "ValueError at vllm/config/model.py:2680"),
    ("0.33.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 262144, "runs"),
    ("0.33.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 262145, "ValueError at vllm/config/model.py:2680"),
    ("0.33.0", "zai-org--GLM-5", 202753, "ValueError at vllm/config/model.py:2680"),
    # 0.33.0 has no MTP for Mixtral, but the draft ModelConfig checks the length first
    ("0.33.0", "mistralai--Mixtral-8x22B-v0.1", 65536, "NotImplementedError at vllm/config/speculative.py:1499"),
    ("0.33.0", "mistralai--Mixtral-8x22B-v0.1", 65537, "ValueError at vllm/config/model.py:2680"),
    # 0.24.0: Qwen3-Next and DeepSeek-V4 are the release's own classes (read from its tree)
    ("0.24.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 262144, "runs"),
    ("0.24.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 262145, "ValueError at vllm/config/model.py:2225"),
    ("0.24.0", "deepseek-ai--DeepSeek-V4-Flash", 65536, "runs"),
]

#: real vLLM runs these, but a step of the derivation is not read: "could not tell", never a pass or a refusal
NOT_DECIDED = [
    # 0.24.0 admits any transformers >= 5.5.3: DeepseekV3Config's defaults were not read in all of them
    ("0.24.0", "deepseek-ai--DeepSeek-V3", 1024),
    # 0.24.0 derives 65536 x 16 (the YaRN original length times its factor, model.py:2166): only 65536 is a bound
    ("0.24.0", "deepseek-ai--DeepSeek-V4-Flash", 1048576),
]


@pytest.mark.parametrize(("version", "name", "mml", "real"), REAL)
def test_speculative_max_model_len_against_real_vllm(version: str, name: str, mml: int, real: str) -> None:
    kind, detail = _mtp(version, name, mml)
    if real == "runs":
        assert (kind, detail) == ("runs", "mtp")
    else:
        exc, where = real.split(" at ")
        assert kind == "refused" and detail.startswith(f"{exc}: ") and f"({where})" in detail


@pytest.mark.parametrize(("version", "name", "mml"), NOT_DECIDED)
def test_speculative_max_model_len_not_read_stays_could_not_tell(version: str, name: str, mml: int) -> None:
    kind, detail = _mtp(version, name, mml)
    assert kind == "undecided" and "speculative_max_model_len > draft_max_model_len" in detail


@pytest.mark.parametrize(("version", "name", "mml", "real"), [
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 2048, "runs"),
    ("0.34.0", "deepseek-ai--DeepSeek-V3", 2049, "vllm/config/speculative.py:1466"),
    ("0.34.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 2049, "vllm/config/speculative.py:1466"),
    ("0.33.0", "deepseek-ai--DeepSeek-V3", 2049, "vllm/config/speculative.py:1787"),
    ("0.24.0", "Qwen--Qwen3-Next-80B-A3B-Thinking", 2049, "vllm/config/speculative.py:912"),
])
def test_speculative_max_model_len_against_the_targets_given_length(version: str, name: str, mml: int, real: str) -> None:
    # vllm serve --max-model-len 2048: the target keeps 2048 and _maybe_override_draft_max_model_len refuses a larger
    # speculative one ("speculative_max_model_len=2049 cannot be larger than target_max_model_len=2048")
    kind, detail = _mtp(version, name, mml, "--max-model-len", "2048")
    if real == "runs":
        assert (kind, detail) == ("runs", "mtp")
    else:
        assert kind == "refused" and "speculative_max_model_len=2049 cannot be larger than target_max_model_len=2048" in detail
        assert detail.startswith("ValueError: ") and f"({real})" in detail


def test_bounded_integer_comparisons() -> None:
    import ast

    from mtp_audit.engines.code.statements import UNKNOWN, Bounded

    b = Bounded(163840, 6553600)
    assert b.compare(ast.Gt(), 1024, True) is False      # 1024 > b
    assert b.compare(ast.Gt(), 163840, True) is False    # 163840 > b
    assert b.compare(ast.Gt(), 163841, True) is UNKNOWN
    assert b.compare(ast.Gt(), 6553601, True) is True
    assert b.compare(ast.Eq(), 1024, False) is False and b.compare(ast.Eq(), 200000, False) is UNKNOWN
    assert Bounded(5).compare(ast.Lt(), 10**9, False) is UNKNOWN   # no upper bound


# --- the machine's transformers (vLLM 0.24.0 admits any transformers >= 5.5.3: the installed one decides) -------------

#: ``pip freeze`` of the 0.24.0 oracle venv (transformers==5.25.0 at line 130; real vLLM ran mtp with max_model_len 1024
#: on DeepSeek-V3 / R1 / V3.1, GLM-5 there: tests/data/oracle/vllm-0.24.0-grid3.json, form ``mtp-mml-1024``)
FREEZE_024 = FIXTURES / "preflight" / "envdumps" / "pip" / "pip-freeze-vllm-0.24.0-cpu.txt"


def _freeze(tmp_path, transformers: str | None):
    """The 0.24.0 venv's pip freeze with its ``transformers==5.25.0`` line replaced (``None``: removed: the whole
    listing then says transformers is not installed)."""
    lines = FREEZE_024.read_text().splitlines(keepends=True)
    [i] = [n for n, line in enumerate(lines) if line.startswith("transformers==")]
    lines[i:i + 1] = [f"transformers=={transformers}\n"] if transformers else []
    out = tmp_path / "pip-freeze.txt"
    out.write_text("".join(lines))
    return out


@pytest.mark.parametrize(("version", "machine_tf", "floor", "why"), [
    ("0.24.0", ("5.25.0", "pip freeze"), 4096, "read in 5.25.0, installed on the machine [pip freeze]"),
    ("0.24.0", ("5.25", "pip freeze"), 4096, "read in 5.25, installed on the machine"),
    ("0.24.0", ("5.23.0", "pip freeze"), None, "the machine's transformers 5.23.0 was not read"),
    ("0.24.0", ("5.25.0.dev0", "pip freeze"), None, "the machine's transformers 5.25.0.dev0 was not read"),
    ("0.24.0", None, None, "admits releases not read"),
    # 0.34.0's requirement admits only releases read: the machine is not asked
    ("0.34.0", ("5.23.0", "pip freeze"), 163840, "read in every admitted release"),
])
def test_the_machines_transformers_decides_the_class_defaults(version: str, machine_tf, floor, why: str) -> None:
    from mtp_audit.engines.vllm.launch.max_len import length_floor

    got, because = length_floor(_view(version), str(FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"), ".",
                                machine_tf=machine_tf)
    assert got == floor and why in because, because


def test_a_pip_freeze_naming_a_transformers_read_decides_max_model_len_on_0240() -> None:
    assert _mtp("0.24.0", "deepseek-ai--DeepSeek-V3", 1024, env_dumps=[FREEZE_024]) == ("runs", "mtp")
    assert _mtp("0.24.0", "zai-org--GLM-5", 1024, env_dumps=[FREEZE_024]) == ("runs", "mtp")


@pytest.mark.parametrize("transformers", ["5.23.0", None])
def test_a_transformers_not_read_or_not_listed_stays_could_not_tell(tmp_path, transformers) -> None:
    kind, detail = _mtp("0.24.0", "deepseek-ai--DeepSeek-V3", 1024, env_dumps=[_freeze(tmp_path, transformers)])
    assert kind == "undecided" and "speculative_max_model_len > draft_max_model_len" in detail


def test_no_machine_facts_stays_could_not_tell() -> None:
    kind, detail = _mtp("0.24.0", "deepseek-ai--DeepSeek-V3", 1024, no_machine=True)
    assert kind == "undecided" and "speculative_max_model_len > draft_max_model_len" in detail


def _no_length(tmp_path):
    """DeepSeek-V3's config.json without ``max_position_embeddings``, ``rope_scaling`` and ``quantization_config``: the
    length is DeepseekV3Config's default alone (4096 in transformers 5.25.0, ``configuration_deepseek_v3.py:105``)."""
    cfg = json.loads((FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3" / "config.json").read_text())
    for key in ("max_position_embeddings", "rope_scaling", "quantization_config"):
        cfg.pop(key)
    folder = tmp_path / "dsv3-nolen"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def _launch(folder, mml: int, **machine):
    return audit_launch(["vllm", "serve", str(folder), "--speculative-config",
                         json.dumps({"method": "mtp", "num_speculative_tokens": 1, "max_model_len": mml})],
                        vllm=vllm_wheel("0.24.0"), environ={}, cwd=folder, **machine)


def test_a_refusal_the_machines_transformers_decides_names_it(tmp_path) -> None:
    # real vLLM 0.24.0 with transformers 5.25.0 (tests/oracle/probe_max_len.py 4096,4097 in /work/oracle-venvs/vllm-0.24.0
    # on this config, 2026-12-05): 4096 runs (target_derived 4096), 4097 is "ValueError: User-specified max_model_len
    # (4097) is greater than the derived max_model_len" at vllm/config/model.py:2225
    folder = _no_length(tmp_path)
    assert _launch(folder, 4096, env_dumps=[FREEZE_024]).facts["launch"]["speculative"].get("runs_as") == "mtp"
    r = _launch(folder, 4097, env_dumps=[FREEZE_024])
    [f] = [f for f in r.findings if f.rule_id == "MTP320"]
    assert "ValueError: User-specified max_model_len (4097) is greater than the derived max_model_len (at most 4096" in f.message
    assert "(vllm/config/model.py:2225)" in f.message
    ev = {e.label: e.value for e in f.evidence}
    assert ev["machine: transformers"].startswith("5.25.0 installed [")
    # the machine's transformers unknown: neither a pass nor a refusal
    r = _launch(folder, 4097, no_machine=True)
    assert [f for f in r.findings if f.rule_id == "MTP320"] == [] and r.facts["launch"]["speculative"].get("runs_as") is None
