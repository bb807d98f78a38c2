"""Every rule's examples run as tests, and every rule is documented the same way.

Examples come from each analyzer's ``rules.py`` (``Rule.examples``); this file runs each one
through the analyzer's real code path (``run_example``) and checks that the rule fires exactly on
the examples marked ``fires=True``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.report.rules import ID_RANGES, all_rules, get_rule, run_rule_example

RULES = all_rules()
CASES = [(r, i, ex) for r in RULES for i, ex in enumerate(r.examples)]



@pytest.mark.parametrize(
    ("rule", "index", "example"),
    CASES,
    ids=[f"{r.id}-{'fires' if ex.fires else 'quiet'}-{i}" for r, i, ex in CASES],
)
def test_rule_example(rule, index, example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = run_rule_example(rule, example, tmp_path)
    fired = [f for f in report.findings if f.rule_id == rule.id]
    assert bool(fired) == example.fires, f"{rule.id} example {index} ({example.note}): fired={fired}"
    for f in fired:
        assert f.message and not f.message.endswith("\n")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_is_documented(rule) -> None:  # type: ignore[no-untyped-def]
    assert any(ex.fires for ex in rule.examples), f"{rule.id} has no firing example"
    assert any(not ex.fires for ex in rule.examples), f"{rule.id} has no quiet example"
    assert rule.summary and not rule.summary.endswith(".") and "\n" not in rule.summary
    assert rule.sources, f"{rule.id} names no source"
    # a source written as ("text") is one string, which `explain` once listed a character per line
    assert isinstance(rule.sources, tuple) and all(isinstance(s, str) and len(s) > 3 for s in rule.sources), rule.id
    doc = rule.doc()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## How to fix", "## Sources"):
        assert section in doc, f"{rule.id} doc lacks {section}"
    if rule.basis == "bug report":
        assert "based on public bug reports" in doc
    assert int(rule.id[3:]) in ID_RANGES[rule.analyzer]


def test_rule_names_unique() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))


def test_explain_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    for r in RULES:
        assert main(["explain", r.id.lower()]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"# {r.id} {r.name}")
    assert get_rule(RULES[0].id.lower()) is RULES[0]


def test_explain_unknown_rule_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "MTP999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtp-audit: error: MTP999: no such rule; did you mean MTP")  # the closest ids (difflib)
    assert err.endswith(" (see 'mtp-audit rules')\n") and err.count("\n") == 1
    assert main(["explain", "no-such-thing-at-all"]) == 2
    assert capsys.readouterr().err == "mtp-audit: error: no-such-thing-at-all: no such rule (see 'mtp-audit rules')\n"


def test_rules_listing_covers_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == [r.id for r in RULES]


def test_engines_lend_their_examples_of_shared_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """MTP200 is declared with SGLang's examples in mtp_audit.preflight.rules; vLLM's come from its own package, after
    them. Examples lent to a rule the analyzer does not declare are a programming error."""
    import sys
    import types

    from mtp_audit.report import rules as registry

    mtp200 = get_rule("MTP200")
    assert [e.note for e in mtp200.examples] == [
        "H200 with an NVFP4 launch on SGLang 0.5.9 (no Marlin fallback)", "B200: FP4 tensor cores present",
        "H200 with vLLM 0.8.5 (no Marlin NVFP4 fallback yet)", "H200 with vLLM 0.20.0: it falls back to Marlin by itself (MTP201, a warning)"]
    stray = types.ModuleType("stray_rules")
    stray.RULES = ()  # type: ignore[attr-defined]
    stray.EXAMPLES = {"MTP299": mtp200.examples[:1]}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "stray_rules", stray)
    monkeypatch.setitem(registry.ANALYZER_RULE_MODULES, "preflight", (*registry.rule_modules("preflight"), "stray_rules"))
    with pytest.raises(ValueError, match="MTP299"):
        registry.analyzer_rules("preflight")
