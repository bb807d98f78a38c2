"""Hostile ``--config`` YAMLs and command-line numbers for ``trtllm-serve`` launches: an alias bomb is refused by its
expanded size before anything is built, a recursive alias and over-long integers are one line and exit 2, and every
other YAML type (dates, sets, ``!!binary``, non-string keys) reaches ``-f json`` as JSON data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.sources.yamlfile import MAX_YAML_EXPANDED_NODES, read_yaml_bounded

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "fixtures" / "checkpoint" / "zai-org--GLM-5-FP8"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"


def laughs(levels: int = 8, width: int = 10) -> str:
    """The "billion laughs" shape: each level an anchored list of ``width`` aliases of the level below."""
    lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _launch(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str | None, *extra: str, fmt: str = "json"):
    args = ["launch", "-f", fmt, "--env-dump", str(H200), "--", "trtllm-serve", str(MODEL)]
    if body is not None:
        y = tmp_path / "x.yaml"
        y.write_text(body)
        args += ["--config", str(y)]
    capsys.readouterr()
    rc = main(args + list(extra))
    out, err = capsys.readouterr()
    return rc, out, err


def test_alias_bomb_is_refused_by_its_expanded_size(tmp_path):
    """80 aliases in a 430-byte file: under the alias (100) and event bounds, 10^9 items once expanded."""
    body = laughs()
    assert body.count("*") == 80 and len(body) < 700
    y = tmp_path / "bomb.yaml"
    y.write_text(body)
    with pytest.raises(InputError) as exc:
        read_yaml_bounded(y)
    assert "once its aliases are expanded" in str(exc.value) and f"{MAX_YAML_EXPANDED_NODES:,} nodes" in str(exc.value)


def test_alias_bomb_in_the_launch_is_one_line_exit_2(tmp_path, capsys):
    body = laughs().replace("a8:", "speculative_config: {decoding_type: MTP, x: *a7}\na8:")
    rc, out, err = _launch(tmp_path, capsys, body)
    assert (rc, out, err.count("\n")) == (2, "", 1) and "once its aliases are expanded" in err


def test_a_few_aliases_of_a_real_anchor_still_load(tmp_path):
    """Ten aliases of a mapping: 10 x 4 nodes, far under the bound; the aliases become separate copies."""
    body = "base: &b {decoding_type: MTP, max_draft_len: 3}\n" + "".join(f"k{i}: *b\n" for i in range(10))
    y = tmp_path / "ok.yaml"
    y.write_text(body)
    doc = read_yaml_bounded(y)
    assert doc["k9"] == {"decoding_type": "MTP", "max_draft_len": 3} and doc["k9"] is not doc["k8"]


def test_recursive_alias_is_one_line_exit_2(tmp_path, capsys):
    rc, out, err = _launch(tmp_path, capsys, "speculative_config: &a {decoding_type: MTP, max_draft_len: 2, me: *a}\n")
    assert (rc, out) == (2, "") and "a recursive alias at line 1, column 21" in err and err.count("\n") == 1


@pytest.mark.parametrize("digits", ["1" * 5000, "0x" + "f" * 5000, "-" + "9" * 4400, "1" * 101])
def test_long_yaml_integer_is_one_line_exit_2(tmp_path, capsys, digits):
    body = "speculative_config: {decoding_type: MTP, max_draft_len: " + digits + "}\n"
    rc, out, err = _launch(tmp_path, capsys, body)
    assert (rc, out) == (2, "") and err.count("\n") == 1
    assert f"an integer of {len(digits):,} characters at line 1, column 57" in err


def test_integer_of_100_digits_is_read(tmp_path, capsys):
    """At the bound: 10^99 is a (huge) max_draft_len: MTP716 and its blocking gap (exit 3), the number written out."""
    rc, out, err = _launch(tmp_path, capsys, "speculative_config: {decoding_type: MTP, max_draft_len: 1" + "0" * 99 + "}\n")
    assert rc == 3 and err == ""
    mtp716 = [f["message"] for f in json.loads(out)["findings"] if f["rule_id"] == "MTP716"]
    assert len(mtp716) == 1 and mtp716[0].startswith("max_draft_len 1" + ",000" * 33 + ":")


@pytest.mark.parametrize("option", ["--max_num_tokens", "--tp_size"])
def test_long_command_line_integer_is_one_line_exit_2(tmp_path, capsys, option):
    rc, out, err = _launch(tmp_path, capsys, "speculative_config: {decoding_type: MTP, max_draft_len: 2}\n",
                           option, "7" * 5000)
    assert (rc, out) == (2, "") and err == f"mtp-audit: error: {option}: an integer of 5,000 digits: over the bound of 100 " \
        "(no engine option takes one)\n"


def test_every_yaml_type_reaches_json(tmp_path, capsys):
    """Dates and timestamps keep their text, a set is its members in order, !!binary its base64 text, an int or null key its
    JSON text, !!omap a list of pairs; the document is strict JSON."""
    body = ("speculative_config:\n  decoding_type: MTP\n  max_draft_len: 2\n  when: 2024-01-01\n"
            "  t: 2001-12-14t21:59:43.10-05:00\n  s: !!set {b, a}\n  b: !!binary aGVs\n    bG8=\n  2: two\n"
            "  null: n\n  o: !!omap [x: 1, y: 2]\n")
    rc, out, err = _launch(tmp_path, capsys, body)
    assert rc == 3 and err == ""
    config = json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c}"))["facts"]["launch"]["config"]
    assert config == {"decoding_type": "MTP", "max_draft_len": 2, "when": "2024-01-01", "t": "2001-12-14t21:59:43.10-05:00",
                      "s": ["b", "a"], "b": "aGVsbG8=", "2": "two", "null": "n", "o": [["x", 1], ["y", 2]]}


def test_keys_that_become_one_text_are_refused(tmp_path, capsys):
    rc, out, err = _launch(tmp_path, capsys, "speculative_config: {decoding_type: MTP, 1: a, \"1\": b}\n")
    assert (rc, out) == (2, "") and "the keys 1 and '1' of one mapping are the same text" in err


def test_nesting_is_bounded_on_the_event_stream(tmp_path):
    """100 levels are read; 101 are refused where the 101st collection opens, before the composer recurses. Before: a
    RecursionError ("nested too deeply") after the scanner's quadratic work over the whole file (2,000 levels: 2 s)."""
    y = tmp_path / "x.yaml"
    y.write_text("a: " + "[" * 99 + "1" + "]" * 99 + "\n")
    doc = read_yaml_bounded(y)
    for _ in range(100):
        doc = doc["a"] if isinstance(doc, dict) else doc[0]
    assert doc == 1
    for depth, column in ((100, 103), (2000, 103)):
        y.write_text("a: " + "[" * depth + "1" + "]" * depth + "\n")
        with pytest.raises(InputError) as exc:
            read_yaml_bounded(y)
        assert exc.value.problem == f"YAML nested deeper than 100 levels (at line 1, column {column})"


def test_deep_config_in_the_launch_is_one_line_exit_2(tmp_path, capsys):
    rc, out, err = _launch(tmp_path, capsys, "speculative_config: {decoding_type: MTP, x: " + "{a: " * 150 + "1" + "}" * 151 + "\n")
    assert (rc, out) == (2, "") and err.count("\n") == 1
    assert err.endswith("YAML nested deeper than 100 levels (at line 1, column 437)\n")
