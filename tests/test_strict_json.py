"""Strict JSON in every JSON and SARIF document mtp-audit writes: a YAML ``.nan`` / ``-.inf`` and a
``--speculative-config`` with ``NaN`` / ``Infinity`` reach ``-f json`` and ``-f sarif`` as strings, never as the bare
tokens RFC 8259 has no place for (``JSON.parse``, jq and Go reject them); cache entries are strict too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "fixtures" / "checkpoint" / "zai-org--GLM-5-FP8"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"


def strict(text: str) -> object:
    """``json.loads`` that fails on a bare ``NaN``, ``Infinity`` or ``-Infinity``."""
    def refuse(constant: str) -> object:
        raise AssertionError(f"bare {constant} in the document")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_yaml_nan_and_infinity_are_strings(tmp_path, capsys, fmt):
    y = tmp_path / "nan.yaml"
    y.write_text("speculative_config: {decoding_type: MTP, max_draft_len: 2, acceptance_rate_threshold: .nan, x: -.inf}\n")
    rc = main(["launch", "-f", fmt, "--env-dump", str(H200), "--", "trtllm-serve", str(MODEL), "--config", str(y)])
    out = capsys.readouterr().out
    assert rc == 3
    doc = strict(out)
    if fmt == "json":
        assert doc["facts"]["launch"]["config"] == {"decoding_type": "MTP", "max_draft_len": 2,
                                                   "acceptance_rate_threshold": "NaN", "x": "-Infinity"}
    assert "acceptance_rate_threshold nan:" in out  # MTP705's message keeps the value as Python wrote it


def test_speculative_config_nan_is_a_string(capsys):
    rc = main(["launch", "-f", "json", "--env-dump", str(H200), "--", "vllm", "serve", str(MODEL), "--speculative-config",
               '{"method": "mtp", "num_speculative_tokens": NaN, "x": Infinity}'])
    doc = strict(capsys.readouterr().out)
    assert rc == 3
    found = []

    def walk(v):
        if isinstance(v, dict):
            if "num_speculative_tokens" in v:
                found.append((v["num_speculative_tokens"], v.get("x")))
            for w in v.values():
                walk(w)
        elif isinstance(v, list):
            for w in v:
                walk(w)
    walk(doc["facts"])
    assert found.count(("NaN", "Infinity")) == 2  # the speculative config as given and as vLLM reads it


def test_scan_cache_keeps_no_entry_with_nan(tmp_path):
    """A value strict JSON cannot hold is not cached (scanned again next time), never written with a bare NaN."""
    from mtp_audit.engines.code import cache

    cache.store(tmp_path, "ab" + "0" * 38, {"x": float("nan")})
    cache.store(tmp_path, "cd" + "0" * 38, {"x": 1.5})
    assert [p.name for p in tmp_path.rglob("*.json")] == ["cd" + "0" * 38 + ".json"]
    assert cache.load(tmp_path, "cd" + "0" * 38) == {"x": 1.5}
