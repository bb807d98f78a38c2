"""Injection into what a person reads: one escaping function for every renderer and for stderr.

Invariant, for every character class an audited value may carry (C0, DEL, C1 with NEL and CSI, the line and
paragraph separators, bidi embeddings/overrides/isolates/marks, BOM): no renderer writes one raw, the text
and Markdown reports keep their line count, and JSON/SARIF still decode to the exact original value.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fuzzkit import fuzz_settings
from hostilekit import cli, raw_unsafe
from hypothesis import given
from hypothesis import strategies as st

from mtp_audit.formats import render
from mtp_audit.formats.escape import escape, escape_json
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity

FORMATS = ("text", "markdown", "json", "sarif")
CLASSES = {
    "C0": [*range(0x00, 0x20)],
    "DEL": [0x7F],
    "C1": [*range(0x80, 0xA0)],
    "separators": [0x2028, 0x2029],
    "bidi": [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)],
    "bom": [0xFEFF],
}


def _report(value: str) -> Report:
    f = Finding("MTP001", Severity.ERROR, f"shard {value} is missing", Location(path=f"dir/{value}.safetensors", symbol=value),
                evidence=(Evidence("file", value),), remediation=f"restore {value}", detail=value)
    g = Gap("checkpoint", f"{value}: not read", path=value, blocking=True)
    return Report.build("checkpoint", f"ck/{value}", findings=[f], gaps=[g],
                        facts={"checkpoint": {"answer": [f"answer {value}"], "name": value, value: [value]}})


def _strings(doc: object) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in [k, *_strings(v)]]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return []


@pytest.mark.parametrize("cls", sorted(CLASSES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_renderer_escapes_every_class(cls: str, fmt: str) -> None:
    value = "a" + "".join(chr(c) for c in CLASSES[cls]) + "b"
    plain_lines = render(_report("ab"), fmt, verbose=True).count("\n")
    out = render(_report(value), fmt, verbose=True)
    assert raw_unsafe(out, allow="\n") == []
    if fmt in ("text", "markdown"):
        assert out.count("\n") == plain_lines
    else:
        doc = json.loads(out)
        assert any(value in s for s in _strings(doc))  # the value itself is kept, only escaped


@fuzz_settings(200)
@given(value=st.text(st.characters(codec=None, blacklist_categories=("Cs",)), max_size=30), fmt=st.sampled_from(FORMATS))
def test_render_invariant_over_any_text(value: str, fmt: str) -> None:
    value = "v" + value
    out = render(_report(value), fmt, verbose=True)
    assert raw_unsafe(out, allow="\n") == []
    if fmt in ("json", "sarif"):
        json.loads(out)
    else:
        assert out.count("\n") == render(_report("x"), fmt, verbose=True).count("\n")


def test_escape_is_visible_and_json_escape_is_lossless() -> None:
    assert escape("\x1b[2J\rPASS:\n\u009b1m\u202egnp.\u2028") == "\\x1b[2J\\rPASS:\\n\\x9b1m\\u202egnp.\\u2028"
    doc = json.dumps({"k": "\u0085\u202e\x7f\u2029"}, ensure_ascii=False)
    assert json.loads(escape_json(doc)) == {"k": "\u0085\u202e\x7f\u2029"}
    assert raw_unsafe(escape_json(doc), allow="") == []


def test_ascii_shortcuts_escape_what_the_pattern_does() -> None:
    """``escape`` and ``escape_json`` skip their scan for ASCII text that cannot hold an unsafe character; every
    single character below U+0100 and every pair of a printable and an unprintable one still comes out as the
    full scan writes it (DEL is ASCII and escaped by both)."""
    from mtp_audit.formats.escape import _JSON_RE, _TABLE, _UNSAFE_RE

    samples = [chr(c) for c in range(0x100)] + [f"a{chr(c)}b" for c in range(0x100)] + ["plain text", "", '{"a": 1}\n']
    for t in samples:
        assert escape(t) == (t if re.search(_UNSAFE_RE, t) is None else t.translate(_TABLE)), repr(t)
        assert escape_json(t) == re.sub(_JSON_RE, lambda m: f"\\u{ord(m.group()):04x}", t), repr(t)
    assert escape_json('{"k": "a\x7fb"}') == '{"k": "a\\u007fb"}'


def test_cli_shard_name_cannot_fake_a_verdict(tmp_path: Path) -> None:
    """A weight-map shard name with ESC / CR / LF / CSI reaches the text report and stderr escaped."""
    ck = tmp_path / "ck"
    ck.mkdir()
    evil = "x\x1b[2J\r\nPASS: all good\u009b31m\u2028\u202e.safetensors"
    (ck / "config.json").write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                                                "num_nextn_predict_layers": 1, "num_hidden_layers": 2}))
    (ck / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": {"mtp.fc.weight": evil}}))
    for fmt in FORMATS:
        code, out, err = cli(["checkpoint", str(ck), "-f", fmt, "-v"])
        assert code in (1, 3), (fmt, code, err)
        assert raw_unsafe(out, allow="\n") == [], fmt
        assert "\nPASS: all good" not in out
        assert raw_unsafe(err, allow="\n") == []
