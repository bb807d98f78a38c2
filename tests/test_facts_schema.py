"""``report.facts`` is described by the JSON schema (``mtp_audit/schema/report.schema.json``: ``facts_checkpoint``,
``facts_preflight``, ``facts_log``, ...): every real input the fixtures hold gives facts that validate, and the schema
rejects facts that break the headline shapes consumers read (a verdict outside its words, a count that is not one)."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from mtp_audit.errors import InputError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCHEMA = json.loads(files("mtp_audit.schema").joinpath("report.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
CHECKPOINTS = sorted(p for p in (FIXTURES / "checkpoint").iterdir() if p.is_dir()) + [FIXTURES / "gguf/Qwen3.6-35B-A3B-MTP-layout.gguf"]
DUMPS = sorted(p for p in (FIXTURES / "preflight" / "envdumps").rglob("*.txt") if p.name != "SOURCE.txt")
LOGS = sorted((FIXTURES / "logs").rglob("*.log"))


def _errors(doc: dict) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
def test_checkpoint_facts_validate(path: Path) -> None:
    from mtp_audit import audit_checkpoint

    assert _errors(audit_checkpoint(path).to_dict()) == []


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_preflight_facts_validate(path: Path) -> None:
    from mtp_audit import preflight

    try:
        doc = preflight(env_dumps=[path]).to_dict()
    except InputError:
        pytest.skip("not a dump the preflight reads (an input error, tested elsewhere)")
    assert _errors(doc) == []


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_log_facts_validate(path: Path) -> None:
    from mtp_audit.runtime.analyze import analyze_log

    assert _errors(analyze_log([path]).to_dict()) == []


def test_an_analyzer_that_stopped_before_its_facts_validates_and_nothing_else_is_empty() -> None:
    from mtp_audit.report import Gap, Report

    doc = Report.build("checkpoint", "org/name", gaps=[Gap("checkpoint", "org/name: hub unreachable")]).to_dict()
    assert doc["facts"] == {"checkpoint": {}} and _errors(doc) == []
    doc["facts"]["checkpoint"] = {"mode": "config-only"}  # facts, but not the headline every consumer reads
    assert _errors(doc)


def test_the_inputs_cover_every_platform_verdict() -> None:
    """The fixtures reach each native-FP4 word the schema allows (else the enum is not checked against real input)."""
    from mtp_audit import preflight

    seen = {preflight(env_dumps=[p]).to_dict()["facts"]["preflight"]["summary"]["verdict"]
            for p in (FIXTURES / "preflight/envdumps/h200-nvidia-smi.txt", FIXTURES / "preflight/envdumps/intel/xpumanager-69.txt")}
    assert seen == {"not capable", "not applicable"}


@pytest.mark.parametrize(("where", "value"), [(("preflight", "summary", "verdict"), "maybe"),
                                              (("preflight", "summary", "gpus"), "8"),
                                              (("preflight", "machine", "gpus", 0, "name"), {"value": "H200"})])
def test_the_schema_rejects_broken_headline_facts(where: tuple, value: object) -> None:
    from mtp_audit import preflight

    doc = preflight(env_dumps=[FIXTURES / "preflight/envdumps/h200-nvidia-smi.txt"]).to_dict()
    node = doc["facts"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    assert _errors(doc)


def test_the_launch_verdicts_of_the_schema_are_the_library_s() -> None:
    from mtp_audit.results import LaunchVerdict

    assert set(SCHEMA["$defs"]["launch_verdict"]["enum"]) == {v.value for v in LaunchVerdict}
def test_checkpoint_without_config_validates(tmp_path: Path) -> None:
    """An index with no config.json (MTP022): ``mtp.declared_layers`` is null, which the schema allows (not declared:
    no config); an integer is still required otherwise."""
    import shutil

    from mtp_audit import audit_checkpoint

    shutil.copy(FIXTURES / "checkpoint" / "jj8127--mimo_kor" / "model.safetensors.index.json", tmp_path)
    doc = audit_checkpoint(tmp_path).to_dict()
    assert doc["facts"]["checkpoint"]["mtp"]["declared_layers"] is None
    assert _errors(doc) == []
    doc["facts"]["checkpoint"]["mtp"]["declared_layers"] = "1"
    assert _errors(doc)
