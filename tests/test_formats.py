"""Every output format on a hand-built report: JSON validates against our schema, SARIF against
the official SARIF 2.1.0 schema, text and Markdown carry the lines a user reads, output is
deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mtp_audit.formats import FORMATS, render
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "mtp_audit/schema/report.schema.json").read_text())
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())


def sample_report(reverse: bool = False) -> Report:
    findings = [
        Finding(
            "MTP101",
            Severity.WARNING,
            "--speculative-algorithm NEXTN is rewritten to EAGLE without a log line",
            Location(path="sglang/srt/server_args.py", line=2352, column=9, end_line=2353, end_column=50),
            (Evidence("condition", 'self.speculative_algorithm == "NEXTN"'),),
            "nothing to do: NEXTN is an alias of EAGLE with the target as draft",
        ),
        Finding(
            "MTP001",
            Severity.ERROR,
            "config declares 1 MTP layer (text_config.mtp_num_hidden_layers) but the index has 0 mtp.* tensors",
            Location(path="config.json", symbol="/text_config/mtp_num_hidden_layers"),
            (
                Evidence("index tensors", "22213", Location(path="model.safetensors.index.json")),
                Evidence("MTP tensors", "0"),
            ),
            "re-export with the MTP layer or drop --speculative-algorithm",
        ),
        Finding("MTP201", Severity.INFO, "GPU 0 is SM90 (H200): no native FP4", Location(symbol="cuda:0")),
    ]
    if reverse:
        findings.reverse()
    return Report.build(
        "checkpoint",
        "fixtures/x",
        findings=findings,
        gaps=[Gap("checkpoint", "model-00001-of-00002.safetensors: not present (metadata-only)", "model-00001-of-00002.safetensors", False)],
        facts={"summary": {"architecture": "DeepseekV3ForCausalLM", "mode": "metadata-only", "mtp_layers_declared": 1,
                           "mtp_tensors": 0}, "mode": "metadata-only", "mtp": {"declared_layers": 1, "tensors": 0}},
    )


def test_json_validates_against_schema() -> None:
    doc = json.loads(render(sample_report(), "json"))
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema_version"] == 1
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP201", "MTP001", "MTP101"]
    assert doc["status"] == "findings"


def test_json_schema_rejects_bad_documents() -> None:
    doc = json.loads(render(sample_report(), "json"))
    doc["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


def test_sarif_validates_against_official_schema() -> None:
    doc = json.loads(render(sample_report(), "sarif"))
    jsonschema.validate(doc, SARIF_SCHEMA)
    run = doc["runs"][0]
    res = {r["ruleId"]: r for r in run["results"]}
    region = res["MTP101"]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 2352, "startColumn": 9, "endLine": 2353, "endColumn": 50}
    assert res["MTP001"]["level"] == "error"
    assert res["MTP201"]["level"] == "note"
    # a GPU finding has no file: it points at the preflight's stated artifact, the GPU stays logical
    assert res["MTP201"]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "machine", "uriBaseId": "MTPAUDIT_PREFLIGHT"}
    assert res["MTP201"]["locations"][0]["logicalLocations"] == [{"fullyQualifiedName": "cuda:0"}]
    assert "MTPAUDIT_PREFLIGHT" in run["originalUriBaseIds"]
    assert res["MTP001"]["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model.safetensors.index.json"
    assert run["invocations"][0]["executionSuccessful"] is True  # the only gap is non-blocking


def test_text_is_compiler_style() -> None:
    text = render(sample_report(), "text")
    assert text.startswith("FAIL: 1 error finding(s): MTP001 (exit 1)\n\n")
    assert "sglang/srt/server_args.py:2352:9: MTP101 warning: --speculative-algorithm NEXTN" in text
    assert "config.json [/text_config/mtp_num_hidden_layers]: MTP001 error:" in text
    assert "evidence:" not in text and "mtp_layers_declared" not in text  # evidence and facts are --verbose
    text = render(sample_report(), "text", verbose=True)
    assert "    evidence: index tensors = 22213 (model.safetensors.index.json)" in text
    assert "  mtp_layers_declared: 1" in text
    assert text.rstrip().endswith("3 findings (1 error, 1 warning, 1 info); 1 not examined (0 blocking); status: findings")


def test_markdown_table_escapes_pipes() -> None:
    r = Report.build("checkpoint", "x", findings=[Finding("MTP001", Severity.ERROR, "a | b", Location(path="c"))])
    md = render(r, "markdown")
    assert "| MTP001 | error | `c` | a \\| b |" in md


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_output_is_deterministic(fmt: str) -> None:
    assert render(sample_report(), fmt) == render(sample_report(reverse=True), fmt)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_empty_report_renders(fmt: str) -> None:
    out = render(Report.build("preflight", "local machine"), fmt)
    assert out.endswith("\n")
    if fmt == "sarif":
        jsonschema.validate(json.loads(out), SARIF_SCHEMA)
    if fmt == "json":
        jsonschema.validate(json.loads(out), SCHEMA)


def test_one_byte_unit_family_across_commands() -> None:
    """checkpoint, compare and launch write bytes the same way: the count, then decimal GB."""
    from mtp_audit.checkpoint.accounting import human_bytes as checkpoint_bytes
    from mtp_audit.compare.analyze import human_bytes as compare_bytes
    from mtp_audit.engines.outcome import fmt_bytes
    from mtp_audit.units import human_bytes

    n = 13_191_136_256
    assert checkpoint_bytes(n) == compare_bytes(n) == fmt_bytes(n) == human_bytes(n) == "13,191,136,256 bytes (13.19 GB)"
    assert human_bytes(18_840) == "18,840 bytes (18.8 kB)" and human_bytes(None) == "unknown bytes"
