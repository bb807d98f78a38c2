"""Unit tests of the vLLM extraction on small snippets in the real code's shapes (no network)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from mtp_audit.engines.vllm.chain import simulate, simulate_all
from mtp_audit.engines.vllm.scan import module_consts, paren_string_in_tests, scan_spec
from mtp_audit.engines.vllm.target import open_target
from mtp_audit.errors import InputError


def _fn(src: str) -> tuple[ast.FunctionDef, dict]:
    tree = ast.parse(textwrap.dedent(src))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return fn, module_consts(tree)


def test_two_step_chain_and_substring_semantics() -> None:
    fn, consts = _fn('''
    def hf_config_override(hf_config):
        if hf_config.model_type in ("pangu_ultra_moe"):
            hf_config.model_type = "pangu_ultra_moe_mtp"
        if hf_config.model_type == "pangu_ultra_moe_mtp":
            hf_config.update({"n_predict": 1, "architectures": ["OpenPanguMTPModel"]})
        return hf_config
    ''')
    assert simulate(fn, consts, "pangu_ultra_moe", None)["architectures"] == ["OpenPanguMTPModel"]
    # `in ("pangu_ultra_moe")` is a substring test: "pangu" matches too, as in Python
    assert simulate(fn, consts, "pangu", None)["architectures"] == ["OpenPanguMTPModel"]
    assert simulate(fn, consts, "llama", None)["architectures"] is None


def test_walrus_dict_lookup_ifexp_and_overrides_dict() -> None:
    fn, consts = _fn('''
    def hf_config_override(hf_config):
        use_v32 = hf_config.model_type in ("deepseek_v32",)
        if hf_config.model_type in ("deepseek_v3", "deepseek_v32"):
            hf_config.model_type = "deepseek_mtp"
        if hf_config.model_type == "deepseek_mtp":
            hf_config.update({"architectures": ["V32MTP" if use_v32 else "V3MTP"]})
        if (arch := hf_config.architectures[0]) in ("A", "B"):
            maps = {"A": "AMTP", "B": "BMTP"}
            hf_config.update({"architectures": [maps[arch]]})
        if hf_config.model_type == "v4":
            overrides = {"n_predict": 1}
            if getattr(hf_config, "flag", False):
                overrides["architectures"] = ["V4MTP"]
            hf_config.update(overrides)
        return hf_config
    ''')
    assert simulate(fn, consts, "deepseek_v3", None)["architectures"] == ["V3MTP"]
    assert simulate(fn, consts, "deepseek_v32", None)["architectures"] == ["V32MTP"]
    assert simulate(fn, consts, None, "B")["architectures"] == ["BMTP"]
    v4 = simulate(fn, consts, "v4", None)
    assert v4["architectures"] == ["V4MTP"] and v4["conditional"] is True
    keys = {(c["key"], c["value"]) for c in simulate_all(fn, consts)}
    assert {("model_type", "deepseek_v3"), ("arch", "A"), ("model_type", "v4")} <= keys


def test_text_config_rebinding_and_early_return() -> None:
    fn, consts = _fn('''
    def hf_config_override(hf_config, extra=None):
        if extra is not None:
            hf_config.update(extra)
            return hf_config
        if hf_config.architectures[0] == "Radio":
            hf_config.update({"architectures": ["RadioMTP"]})
            return hf_config
        if hf_config.model_type == "step5":
            hf_config = getattr(hf_config, "text_config", hf_config)
            hf_config.model_type = "step5_mtp"
            hf_config.update({"architectures": ["Step5MTP"]})
        return hf_config
    ''')
    r = simulate(fn, consts, "step5", None)
    assert r["architectures"] == ["Step5MTP"] and r["text_config_line"] == 10
    assert simulate(fn, consts, None, "Radio")["stopped"] == "returns at line 8"


def test_paren_string_lint_needs_parentheses() -> None:
    src = 'a = x in ("one")\nb = x in ("one",)\nc = x in "two"\n'
    hits = paren_string_in_tests(ast.parse(src), src)
    assert [h["line"] for h in hits] == [1]


def test_rewrite_kinds() -> None:
    src = textwrap.dedent('''
    from pydantic.dataclasses import dataclass
    from typing import Literal
    M = Literal["eagle", "mtp", "deepseek_mtp"]
    ALIASES = ("deepseek_mtp",)

    @dataclass
    class SpeculativeConfig:
        method: M | None = None

        def __post_init__(self):
            if self.method is None:
                self.method = "draft_model"
            if self.method in ALIASES:
                self.method = "mtp"
            if self.model is None:
                self.model = self.target_model_config.model
            if self.method in ("eagle",):
                pass
            elif "eagle-" in self.model:
                self.method = "eagle"
    ''').encode()
    r = scan_spec("vllm/config/speculative.py", src)
    kinds = [(w["field"], w["kind"]) for w in r["rewrites"]]
    assert kinds == [("method", "default-fill"), ("method", "alias"), ("model", "draft-target"), ("method", "auto-detect")]
    assert r["rewrites"][1]["from"] == ["deepseek_mtp"]
    assert r["dataclass_from"] == "pydantic.dataclasses.dataclass"


def test_bad_source_is_a_gap_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / "vllm" / "config" / "speculative.py").write_text("class SpeculativeConfig(:\n")
    from mtp_audit.engines.vllm import audit_vllm

    # the probe for `class SpeculativeConfig` fails (not a class line), so the tree has no spec file
    rep = audit_vllm(tmp_path)
    assert rep.inconclusive


def test_not_a_vllm_tree(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        open_target(tmp_path)
    with pytest.raises(InputError):
        open_target(tmp_path / "missing")
