"""Forms the fourth oracle grid (tests/oracle/grid.py ``FORMS_4``) found the launch replay getting wrong, each checked
against what real vLLM recorded (tests/data/oracle/vllm-X-grid4.json, built by tests/oracle/build_vllm_oracle.py):

- ``"num_speculative_tokens": null``: the field is ``int = Field(default=None, gt=0)`` (0.34.0 ``speculative.py:455``,
  0.33.0 ``:413``, 0.24.0 ``:81``); pydantic never validates the default but validates a given ``None``: real vLLM raises
  ``ValidationError`` ("Input should be a valid integer", ``int_type``) before ``__post_init__``, the replay said the
  'must be provided' ``ValueError`` of ``__post_init__``;
- a token count pydantic cannot make an integer (``2.5``, ``"two"``): real vLLM raises pydantic's ``ValidationError``
  (no vLLM ``file:line``); the replay refused with its own words, no exception class.
"""

from __future__ import annotations

import ast
import json

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.engines.vllm.launch.spec_config_replay import admits_none, module_aliases
from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network

V3 = FIXTURES / "oracle-configs" / "deepseek-ai--DeepSeek-V3"


def _launch(version: str, spec: dict, folder=V3):
    return audit_launch(["vllm", "serve", str(folder), "--speculative-config", json.dumps(spec)], vllm=vllm_wheel(version),
                        environ={}, cwd=folder)


def _refusals(r) -> list[str]:
    return [f.message for f in r.findings if f.rule_id == "MTP320"]


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0", "0.34.0"])
def test_a_null_token_count_is_pydantics_validation_error(version: str) -> None:
    [msg] = _refusals(_launch(version, {"method": "mtp", "num_speculative_tokens": None}))
    assert "ValidationError: 1 validation error for SpeculativeConfig: num_speculative_tokens: Input should be a valid " \
           "int (got None)" in msg
    assert "(vllm/" not in msg  # pydantic raises it: no vLLM file:line
    # leaving the key out is not the same: the default None is never validated, __post_init__ decides
    [absent] = _refusals(_launch(version, {"method": "mtp"}))
    assert "ValidationError" not in absent
    # "model": null and "method": null are Optional fields: no refusal of their own
    assert _refusals(_launch(version, {"method": "mtp", "model": None, "num_speculative_tokens": 1})) == []


@pytest.mark.parametrize("k", [2.5, "two"])
def test_a_token_count_pydantic_cannot_read_is_its_validation_error(k) -> None:
    for version in ("0.33.0", "0.34.0"):
        [msg] = _refusals(_launch(version, {"method": "mtp", "num_speculative_tokens": k}))
        assert "(the server will not start): ValidationError: 1 validation error for SpeculativeConfig: " \
               f"num_speculative_tokens: Input should be a valid integer, got {k!r}" in msg
        assert "(vllm/" not in msg


def test_which_annotations_admit_none() -> None:
    module = ast.parse("M = Literal['mtp', 'ngram']\nN: TypeAlias = M | None\nclass C: pass\n")
    aliases = module_aliases(module)
    ann = lambda text: ast.parse(text, mode="eval").body  # noqa: E731
    assert [admits_none(ann(t), aliases) for t in ("int", "int | None", "Optional[int]", "M", "N", "C", "Any", "dict[str, int]")] \
        == [False, True, True, False, True, None, True, False]
