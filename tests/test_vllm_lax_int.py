"""vLLM takes ``num_speculative_tokens`` through pydantic's lax mode: ``"2"`` is 2, ``"2.5"`` is refused. The table is
what the real vLLM 0.24.0, 0.33.0 and 0.34.0 did building ``SpeculativeConfig(method="ngram",
num_speculative_tokens=X, prompt_lookup_max=3, prompt_lookup_min=1)`` on CPU (found by a fresh-user run: the launch audit
called '{"num_speculative_tokens": "2"}' fatal, MTP320 "is not an integer", while vLLM starts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import vllm_wheel

from mtp_audit.engines.vllm.launch.lax_int import NOT_AN_INT, lax_int

CK = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"


@pytest.mark.parametrize(("given", "vllm_makes"), [("2", 2), (" 2 ", 2), ("+2", 2), ("02", 2), ("2.0", 2), (2.0, 2), ("2_0", 20),
                                                  (True, 1), (3, 3), (None, None)])
def test_what_pydantic_converts(given: object, vllm_makes: object) -> None:
    assert lax_int(given) == vllm_makes and type(lax_int(given)) is type(vllm_makes)


@pytest.mark.parametrize("given", ["2.5", 2.5, "2.", "2e0", "0x2", "", "x", [], {}, "２"])
def test_what_pydantic_refuses(given: object) -> None:
    assert lax_int(given) is NOT_AN_INT


@pytest.mark.parametrize(("k", "verdict", "tokens"), [('"2"', "go", 2), ("2.0", "go", 2), ('"2.5"', "fix first", None)])
def test_the_launch_audit_takes_what_vllm_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k: str, verdict: str,
                                                tokens: int | None) -> None:
    import mtp_audit

    whl = vllm_wheel("0.33.0")
    r = mtp_audit.audit_launch(["vllm", "serve", str(CK / "jj8127--mimo_kor"), "--speculative-config",
                                '{"method":"mtp","num_speculative_tokens":' + k + '}'], vllm=str(whl), no_machine=True, environ={})
    result = mtp_audit.launch_result(r)
    assert result.verdict.value == verdict and result.draft_tokens == tokens
    assert ("MTP320" in {f.rule_id for f in r.findings}) is (verdict == "fix first")
