"""The CLI answers a typo with the closest names (difflib): a mistyped option before the engine command, an unknown
rule id or name for ``explain``, an unknown ``--analyzer``; ``explain`` finds a rule by its name and ``rules
--analyzer`` takes every analyzer that declares rules. Each: one line, exit 2 (before: the typo was read as the engine
command, 'no such rule', or click's list of choices)."""

from __future__ import annotations

import pytest

from mtp_audit.cli.main import main
from mtp_audit.report.rules import ANALYZER_RULE_MODULES, all_rules


@pytest.mark.parametrize("argv, line", [
    (["launch", "--vlm", "0.33.0", "--", "vllm", "serve", "m"],
     "mtp-audit: error: --vlm: no such option; did you mean --vllm, --log, --env? (an engine command goes after --)"),
    (["preflight", "--env-dum", "x.txt"],
     "mtp-audit: error: --env-dum: no such option; did you mean --env-dump? (an engine command goes after --)"),
    (["explain", "MTP3255"], "mtp-audit: error: MTP3255: no such rule; did you mean MTP325, MTP505, MTP332? (see 'mtp-audit rules')"),
])
def test_typos_get_the_closest_names(argv, line, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == line


def test_unknown_analyzer_choice_gets_a_hint(capsys):
    assert main(["rules", "--analyzer", "trtlm"]) == 2
    assert capsys.readouterr().err.strip().endswith("; did you mean trtllm? (see 'mtp-audit rules --help')")


@pytest.mark.parametrize("analyzer", sorted(ANALYZER_RULE_MODULES))
def test_rules_takes_every_analyzer(analyzer, capsys):
    assert main(["rules", "--analyzer", analyzer, "-f", "json"]) == 0
    import json

    ids = [r["id"] for r in json.loads(capsys.readouterr().out)]
    assert ids == [r.id for r in all_rules() if r.analyzer == analyzer] and ids


def test_explain_by_name_is_explain_by_id(capsys):
    assert main(["explain", "vllm-torch-pin-mismatch"]) == 0
    by_name = capsys.readouterr().out
    assert main(["explain", "MTP339"]) == 0
    assert capsys.readouterr().out == by_name and by_name.startswith("# MTP339 vllm-torch-pin-mismatch")
