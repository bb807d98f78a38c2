"""The shared report model: ordering, merge, status and exit-code precedence."""

from __future__ import annotations

import pytest

from mtp_audit.report import (
    EXIT_FINDINGS,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    Finding,
    Gap,
    Location,
    Report,
    Severity,
    Status,
    exit_code,
)


def _f(rule: str, sev: Severity, path: str = "a", line: int | None = None) -> Finding:
    return Finding(rule, sev, f"{rule} message", Location(path=path, line=line))


def test_findings_sorted_by_location_then_rule() -> None:
    r = Report.build(
        "checkpoint",
        "x",
        findings=[_f("MTP002", Severity.ERROR, "b"), _f("MTP001", Severity.INFO, "b"), _f("MTP009", Severity.ERROR, "a", 3)],
    )
    assert [(f.location.path, f.rule_id) for f in r.findings] == [("a", "MTP009"), ("b", "MTP001"), ("b", "MTP002")]
    assert r.rule_ids == ("MTP001", "MTP002", "MTP009")


def test_duplicate_findings_collapse() -> None:
    r = Report.build("checkpoint", "x", findings=[_f("MTP001", Severity.ERROR)] * 3)
    assert len(r.findings) == 1


@pytest.mark.parametrize(
    ("findings", "gaps", "fail_on", "status", "code"),
    [
        ([], [], Severity.ERROR, Status.PASS, EXIT_OK),
        ([_f("MTP001", Severity.INFO)], [], Severity.ERROR, Status.PASS, EXIT_OK),
        ([_f("MTP001", Severity.INFO)], [], Severity.INFO, Status.PASS, EXIT_FINDINGS),
        ([_f("MTP001", Severity.WARNING)], [], Severity.ERROR, Status.FINDINGS, EXIT_OK),
        ([_f("MTP001", Severity.WARNING)], [], Severity.WARNING, Status.FINDINGS, EXIT_FINDINGS),
        ([], [Gap("checkpoint", "no shards", blocking=True)], Severity.ERROR, Status.INCONCLUSIVE, EXIT_INCONCLUSIVE),
        ([], [Gap("checkpoint", "headers not read", blocking=False)], Severity.ERROR, Status.PASS, EXIT_OK),
        # "could not tell" outranks a warning (status), while the exit code follows --fail-on
        ([_f("MTP001", Severity.WARNING)], [Gap("checkpoint", "x")], Severity.ERROR, Status.INCONCLUSIVE, EXIT_INCONCLUSIVE),
        # a definite error outranks "could not tell"
        ([_f("MTP001", Severity.ERROR)], [Gap("checkpoint", "x")], Severity.ERROR, Status.FINDINGS, EXIT_FINDINGS),
        # --fail-on never: only inconclusive can still fail
        ([_f("MTP001", Severity.ERROR)], [Gap("checkpoint", "x")], None, Status.FINDINGS, EXIT_INCONCLUSIVE),
        ([_f("MTP001", Severity.ERROR)], [], None, Status.FINDINGS, EXIT_OK),
    ],
)
def test_status_and_exit_code(findings, gaps, fail_on, status, code) -> None:  # type: ignore[no-untyped-def]
    r = Report.build("checkpoint", "x", findings=findings, gaps=gaps)
    assert r.status is status
    assert exit_code(r, fail_on) == code


def test_inconclusive_is_never_pass() -> None:
    r = Report.build("checkpoint", "x", gaps=[Gap("checkpoint", "could not read config.json", "config.json")])
    assert r.status is Status.INCONCLUSIVE
    assert r.to_dict()["status"] == "inconclusive"
    assert r.to_dict()["summary"]["inconclusive"] is True


def test_merge_keeps_rule_ids_and_facts_per_analyzer() -> None:
    a = Report.build("checkpoint", "m", findings=[_f("MTP001", Severity.ERROR)], facts={"n": 1})
    b = Report.build("preflight", "local machine", findings=[_f("MTP201", Severity.WARNING)], facts={"gpu": "H200"})
    m = a.merge(b)
    assert [t.analyzer for t in m.targets] == ["checkpoint", "preflight"]
    assert {f.rule_id for f in m.findings} == {"MTP001", "MTP201"}
    assert m.facts == {"checkpoint": {"n": 1}, "preflight": {"gpu": "H200"}}
    assert m.counts() == {"info": 0, "warning": 1, "error": 1}


def test_merge_is_a_class_level_combiner() -> None:
    a = Report.build("checkpoint", "m", findings=[_f("MTP001", Severity.ERROR)], facts={"n": 1})
    b = Report.build("preflight", "local machine", findings=[_f("MTP201", Severity.WARNING)], facts={"gpu": "H200"})
    c = Report.build("sglang", "sglang 0.5.9", gaps=[Gap("sglang", "x.py does not parse", "x.py")])
    assert Report.merge(a, b, c) == a.merge(b, c)
    assert [t.analyzer for t in Report.merge(a, b, c).targets] == ["checkpoint", "preflight", "sglang"]
    assert Report.merge(a) == a.merge()
    assert Report.merge(*[a, b]).counts() == {"info": 0, "warning": 1, "error": 1}
    with pytest.raises(ValueError, match="at least one report"):
        Report.merge()
    with pytest.raises(TypeError, match="combines Report objects"):
        Report.merge(a, {"targets": []})  # type: ignore[arg-type]


def test_severity_parse_and_sarif_levels() -> None:
    assert Severity.parse(" Warning ") is Severity.WARNING
    assert [s.sarif_level for s in Severity] == ["note", "warning", "error"]
    with pytest.raises(ValueError, match="unknown severity"):
        Severity.parse("fatal")


def test_location_text() -> None:
    assert str(Location(path="python/sglang/srt/server_args.py", line=2352, column=9)) == "python/sglang/srt/server_args.py:2352:9"
    assert str(Location(path="config.json", symbol="/text_config/mtp_num_hidden_layers")) == "config.json [/text_config/mtp_num_hidden_layers]"
    assert str(Location(symbol="cuda:0")) == "cuda:0"
    assert str(Location()) == "-"


def test_question_is_carried_from_the_rule_and_the_schema_lists_every_question() -> None:
    import json
    from dataclasses import replace
    from importlib.resources import files

    import jsonschema

    from mtp_audit.report import Gap
    from mtp_audit.report.questions import FP4, QUESTIONS
    from mtp_audit.report.rules import get_rule

    schema = json.loads(files("mtp_audit.schema").joinpath("report.schema.json").read_text())
    assert tuple(schema["$defs"]["question"]["enum"]) == QUESTIONS
    rule = replace(get_rule("MTP200"), question=FP4)
    assert rule.finding("no FP4 here").to_dict()["question"] == "fp4"
    assert "question" not in replace(rule, question=None).finding("x").to_dict()
    gap = Gap("preflight", "native FP4 verdict unknown", None, True, FP4)
    assert gap.to_dict() == {"analyzer": "preflight", "message": "native FP4 verdict unknown", "blocking": True, "question": "fp4"}
    jsonschema.validate(gap.to_dict(), {"$defs": schema["$defs"], "$ref": "#/$defs/gap"})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**gap.to_dict(), "question": "FP4"}, {"$defs": schema["$defs"], "$ref": "#/$defs/gap"})


def test_a_gap_says_why_it_is_open_only_when_set() -> None:
    """``why_open`` (:data:`mtp_audit.report.questions.WHY_OPEN`) is in JSON only when set, and the schema knows the
    same ids for gaps and missing machine facts."""
    import json
    from importlib.resources import files

    import jsonschema

    from mtp_audit.report import Gap
    from mtp_audit.report.questions import GPU_COUNT, NOT_EXAMINED, WHY_OPEN

    schema = json.loads(files("mtp_audit.schema").joinpath("report.schema.json").read_text())
    assert tuple(schema["$defs"]["why_open"]["enum"]) == WHY_OPEN == ("not-examined",)
    gap = Gap("preflight", "no GPU information", None, True, GPU_COUNT, NOT_EXAMINED)
    assert gap.to_dict() == {"analyzer": "preflight", "message": "no GPU information", "blocking": True,
                             "question": "gpu-count", "why_open": "not-examined"}
    assert "why_open" not in Gap("preflight", "no GPU information").to_dict()
    jsonschema.validate(gap.to_dict(), {"$defs": schema["$defs"], "$ref": "#/$defs/gap"})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**gap.to_dict(), "why_open": "missing"}, {"$defs": schema["$defs"], "$ref": "#/$defs/gap"})
    fact = {"missing": "not examined: not the serving machine", "source": "--no-machine", "why_open": "not-examined"}
    jsonschema.validate(fact, {"$defs": schema["$defs"], "$ref": "#/$defs/fact"})
