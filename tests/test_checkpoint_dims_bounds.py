"""config.json dimensions feed every byte estimate and MTP023's shapes: like the expert and layer counts, they are
bounded (at most 1,048,576) and must be non-negative integers, hidden_size / vocab_size / num_attention_heads
positive; anything else is an unusable config (exit 2, one line naming the key), never a '0 bytes' or
'4,000,000,000,000,058,000,000,000,000,000 bytes' estimate.

Input: the MTP001 rule example's DeepSeek-style config.json with an index of its MTP layer (metadata-only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.checkpoint.rules import _DS, _DS_MTP, _DS_TRUNK, _index
from mtp_audit.cli.main import main


def _folder(tmp: Path, key: str, value: object) -> Path:
    (tmp / "config.json").write_text(json.dumps({**_DS, key: value}))
    (tmp / "model.safetensors.index.json").write_text(_index({**_DS_TRUNK, **_DS_MTP}))
    return tmp


@pytest.mark.parametrize("key, value, problem", [
    ("hidden_size", 10**15, "/hidden_size: 1000000000000000 hidden_size is implausible (more than 1048576); not audited"),
    ("hidden_size", -8, "/hidden_size: expected a positive integer, got -8"),
    ("hidden_size", 0, "/hidden_size: expected a positive integer, got 0"),
    ("moe_intermediate_size", 1.5, "/moe_intermediate_size: expected a non-negative integer, got 1.5"),
    ("vocab_size", "129280", "/vocab_size: expected a positive integer, got \"129280\""),
])
def test_an_impossible_dimension_is_one_line_exit_2(tmp_path, capsys, key, value, problem):
    """Was exit 0 (PASS) with a '0 bytes' / 4e36-byte / 336-byte estimate."""
    folder = _folder(tmp_path, key, value)
    assert main(["checkpoint", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"mtp-audit: error: {folder / 'config.json'}: {problem}\n"


@pytest.mark.parametrize("key, value", [("hidden_size", 7168), ("n_shared_experts", 0), ("q_lora_rank", None),
                                        ("hidden_size", 4096.0)])
def test_real_dimensions_are_accepted(tmp_path, key, value):
    assert main(["checkpoint", str(_folder(tmp_path, key, value)), "-q"]) == 0
