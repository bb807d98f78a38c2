"""SARIF from every command, checked against the SARIF 2.1.0 schema and against GitHub code scanning's
ingestion rules, so that ``github/codeql-action/upload-sarif`` accepts it.

GitHub's rules encoded in :func:`github_problems`, from
https://docs.github.com/en/code-security/reference/code-scanning/sarif-files/sarif-support (required
properties, "Consistent file paths", "Fingerprint generation", the ``location`` objects code scanning
needs to place an alert) and the upload limits of
https://docs.github.com/en/code-security/how-tos/scan-code-for-vulnerabilities/integrate-with-existing-tools/uploading-a-sarif-file-to-github
(runs per file, results per run, rules per run, tags per rule, locations per result, file size).
The upload error this guards against is "locationFromSarifResult: expected artifact location": a result
whose only location is logical (``cuda:0``, ``--tp-size``).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, sglang_wheel

from mtp_audit.cli.main import main

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())

MAX_RUNS, MAX_RESULTS, MAX_RULES, MAX_TAGS, MAX_LOCATIONS, MAX_GZIP = 20, 25_000, 25_000, 20, 1_000, 10 * 1024 * 1024
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _artifact_problems(where: str, art: Any, declared: dict[str, Any]) -> list[str]:
    if not isinstance(art, dict) or not isinstance(art.get("uri"), str) or not art["uri"]:
        return [f"{where}: expected artifact location (physicalLocation.artifactLocation.uri)"]
    uri, base = art["uri"], art.get("uriBaseId")
    out = []
    if base is not None:
        if _SCHEME.match(uri) or uri.startswith("/"):
            out.append(f"{where}: uri {uri!r} has a uriBaseId but is not a relative reference")
        if base not in declared:
            out.append(f"{where}: uriBaseId {base!r} is not declared in run.originalUriBaseIds")
    elif not uri.startswith("file:"):
        out.append(f"{where}: relative uri {uri!r} without uriBaseId")
    if any(seg == ".." for seg in uri.split("/")):
        out.append(f"{where}: uri {uri!r} leaves its base with '..'")
    return out


def _location_problems(where: str, loc: Any, declared: dict[str, Any]) -> list[str]:
    phys = loc.get("physicalLocation") if isinstance(loc, dict) else None
    if not isinstance(phys, dict):
        return [f"{where}: expected artifact location (no physicalLocation)"]
    out = _artifact_problems(where, phys.get("artifactLocation"), declared)
    region = phys.get("region")
    if region is not None and not (isinstance(region.get("startLine"), int) and region["startLine"] >= 1):
        out.append(f"{where}: region without a startLine >= 1")
    return out


def _result_problems(i: int, res: dict[str, Any], rule_ids: list[str], declared: dict[str, Any]) -> list[str]:
    where = f"results[{i}]"
    out = []
    if not res.get("ruleId") or (rule_ids and res["ruleId"] not in rule_ids):
        out.append(f"{where}: ruleId {res.get('ruleId')!r} is not in tool.driver.rules")
    if "ruleIndex" in res and rule_ids[res["ruleIndex"]] != res["ruleId"]:
        out.append(f"{where}: ruleIndex does not name ruleId")
    if not (res.get("message") or {}).get("text"):
        out.append(f"{where}: message.text missing")
    locs = res.get("locations") or []
    if not locs:
        out.append(f"{where}: expected artifact location (no locations)")
    if len(locs) > MAX_LOCATIONS:
        out.append(f"{where}: more than {MAX_LOCATIONS} locations")
    for j, loc in enumerate(locs):
        out += _location_problems(f"{where}.locations[{j}]", loc, declared)
    for j, loc in enumerate(res.get("relatedLocations") or []):
        out += _location_problems(f"{where}.relatedLocations[{j}]", loc, declared)
    fp = res.get("partialFingerprints")
    if not fp or not all(isinstance(v, str) and v for v in fp.values()):
        out.append(f"{where}: no partialFingerprints (GitHub shows duplicate alerts across runs)")
    return out


def github_problems(doc: dict[str, Any]) -> list[str]:
    """Every way ``doc`` breaks GitHub code scanning's SARIF rules (see the module docstring); ``[]`` when it
    uploads. Fingerprints must also be unique within a run (equal fingerprints merge two alerts into one)."""
    out = []
    if doc.get("version") != "2.1.0" or "$schema" not in doc:
        out.append("version must be 2.1.0 with a $schema")
    runs = doc.get("runs") or []
    if not runs or len(runs) > MAX_RUNS:
        out.append(f"{len(runs)} runs (1 to {MAX_RUNS} allowed)")
    for run in runs:
        driver = run.get("tool", {}).get("driver", {})
        if not driver.get("name"):
            out.append("tool.driver.name missing")
        rules = driver.get("rules") or []
        rule_ids = [r["id"] for r in rules]
        if len(rules) > MAX_RULES or len(run.get("results", [])) > MAX_RESULTS:
            out.append("too many rules or results in one run")
        out += [f"rule {r['id']}: more than {MAX_TAGS} tags" for r in rules
                if len((r.get("properties") or {}).get("tags", [])) > MAX_TAGS]
        declared = run.get("originalUriBaseIds") or {}
        seen: dict[str, int] = {}
        for i, res in enumerate(run.get("results") or []):
            out += _result_problems(i, res, rule_ids, declared)
            for v in (res.get("partialFingerprints") or {}).values():
                if v in seen:
                    out.append(f"results[{i}]: same partialFingerprints as results[{seen[v]}]")
                seen[v] = i
    if len(gzip.compress(json.dumps(doc).encode())) > MAX_GZIP:
        out.append("larger than 10 MB gzipped")
    return out


def _sarif(tmp_path: Path, args: list[str], codes: tuple[int, ...] = (0, 1, 3)) -> dict[str, Any]:
    out = tmp_path / "r.sarif"
    assert main([args[0], "-o", str(out), *args[1:]]) in codes
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SARIF_SCHEMA)
    assert github_problems(doc) == []
    return doc


def _uris(doc: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(loc["physicalLocation"]["artifactLocation"].get("uriBaseId"), loc["physicalLocation"]["artifactLocation"]["uri"])
            for res in doc["runs"][0]["results"] for loc in res["locations"]]


@pytest.fixture()
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the repository root, as a CI job does (``%SRCROOT%`` = the checkout)."""
    monkeypatch.chdir(REPO)
    return REPO


def test_checkpoint_uris_are_relative_to_the_repository(in_repo: Path, tmp_path: Path) -> None:
    reap = "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
    doc = _sarif(tmp_path, ["checkpoint", reap, "-f", "sarif"])
    uris = _uris(doc)
    assert uris == [("%SRCROOT%", f"{reap}/config.json")]
    # the same audit from an absolute path names the same files, so the fingerprints stay the same
    doc2 = _sarif(tmp_path, ["checkpoint", str(in_repo / reap), "-f", "sarif"])
    assert _uris(doc2) == uris
    assert ([r["partialFingerprints"] for r in doc2["runs"][0]["results"]]
            == [r["partialFingerprints"] for r in doc["runs"][0]["results"]])


def test_checkpoint_outside_the_repository_gets_its_own_declared_base(tmp_path: Path) -> None:
    """The Qwen3.5-397B-A17B-NVFP4 metadata with synthesized shard headers: MTP006 and MTP007 on
    hf_quant_config.json, which the SARIF names under the checkpoint's own base (the old output:
    ``uri: "hf_quant_config.json"`` under %SRCROOT%, a file the repository does not have)."""
    from test_checkpoint_fixtures import QW, _make

    ckpt = _make(tmp_path / "ckpt", QW, ("config.json", "hf_quant_config.json"), shards=True)
    doc = _sarif(tmp_path, ["checkpoint", str(ckpt), "-f", "sarif"])
    run = doc["runs"][0]
    assert {base for base, _ in _uris(doc)} == {"MTPAUDIT_CHECKPOINT"}
    assert ("MTPAUDIT_CHECKPOINT", "hf_quant_config.json") in _uris(doc)
    assert run["originalUriBaseIds"]["MTPAUDIT_CHECKPOINT"]["uri"] == ckpt.resolve().as_uri() + "/"
    assert sorted(r["ruleId"] for r in run["results"]) == ["MTP006", "MTP007"]


def test_compare(in_repo: Path, tmp_path: Path) -> None:
    _sarif(tmp_path, ["compare", "fixtures/checkpoint/nvidia--Qwen3.5-397B-A17B-NVFP4",
                      "fixtures/checkpoint/nvidia--Qwen3.5-122B-A10B-NVFP4", "-f", "sarif"])


def test_preflight_gpu_findings_point_at_the_dump(in_repo: Path, tmp_path: Path) -> None:
    doc = _sarif(tmp_path, ["preflight", "--env-dump", "fixtures/preflight/envdumps/vllm-57932.txt", "-f", "sarif"])
    assert set(_uris(doc)) == {("%SRCROOT%", "fixtures/preflight/envdumps/vllm-57932.txt")}
    doc = _sarif(tmp_path, ["preflight", "--facts", "fixtures/preflight/h200-live-facts.json", "-f", "sarif"])
    assert {r["ruleId"] for r in doc["runs"][0]["results"]} == {"MTP200", "MTP228"}
    assert set(_uris(doc)) == {("%SRCROOT%", "fixtures/preflight/h200-live-facts.json")}


@pytest.mark.network
def test_sglang_and_its_upgrade(in_repo: Path, tmp_path: Path) -> None:
    old, new = sglang_wheel("0.5.4"), sglang_wheel("0.5.9")
    doc = _sarif(tmp_path, ["sglang", str(new), "-f", "sarif"])
    assert ("MTPAUDIT_SGLANG", "sglang/srt/server_args.py") in _uris(doc)
    _sarif(tmp_path, ["sglang", str(old), str(new), "-f", "sarif"])


@pytest.mark.network
def test_launch_flag_findings_point_at_the_config_file(in_repo: Path, tmp_path: Path) -> None:
    """A finding about a flag (``--tp-size``) has no file: with a pyproject.toml it points at its
    ``[tool.mtp-audit]`` table, else at the stated artifact ``launch-command``."""
    whl = sglang_wheel("0.5.9")
    # vllm-57932's excerpt ends after its GPU 0 line (at least 1 GPU): an empty CUDA_VISIBLE_DEVICES hides them all,
    # so --tp-size 8 is surely short of GPUs (MTP311) whatever the rest of the list was
    cmd = ["--sglang", str(whl), "--env-dump", "fixtures/preflight/envdumps/vllm-57932.txt", "-f", "sarif", "--",
           "CUDA_VISIBLE_DEVICES=", "python", "-m", "sglang.launch_server", "--model-path", "fixtures/preflight/checkpoints/nvidia--Qwen3.5-397B-A17B-NVFP4",
           "--fp4-gemm-backend", "flashinfer_trtllm", "--speculative-algorithm", "NEXTN", "--tp-size", "8"]
    doc = _sarif(tmp_path, ["launch", *cmd])
    res = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    assert res["MTP311"]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "launch-command", "uriBaseId": "MTPAUDIT_LAUNCH"}
    assert res["MTP209"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "fixtures/preflight/envdumps/vllm-57932.txt"
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text("[project]\nname = 'x'\n\n[tool.mtp-audit]\nfail-on = 'error'\n")
    doc = _sarif(tmp_path, ["launch", "--config", str(cfg), *cmd])
    res = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    phys = res["MTP311"]["locations"][0]["physicalLocation"]
    assert phys["region"] == {"startLine": 4} and phys["artifactLocation"]["uriBaseId"] == "MTPAUDIT_ANCHOR"


def test_every_rule_example_renders_acceptable_sarif() -> None:
    """The rule registry's own examples cover every analyzer's location kinds (files, tensors, GPUs, flags)."""
    from mtp_audit.formats.sarif import render
    from mtp_audit.report import Finding, Location, Report, Severity
    from mtp_audit.report.rules import all_rules

    findings = [Finding(r.id, Severity.WARNING, f"{r.id} example", Location(symbol=f"sym-{i % 3}") if i % 2 else Location(path="config.json", line=3))
                for i, r in enumerate(all_rules())]
    doc = json.loads(render(Report.build("launch", "x", findings=findings)))
    jsonschema.validate(doc, SARIF_SCHEMA)
    assert github_problems(doc) == []
    assert len(doc["runs"][0]["results"]) == len(all_rules())


def test_the_checker_catches_a_logical_only_location() -> None:
    """The check can fail: the SARIF this tool wrote before (a GPU finding with only a logical location)."""
    doc = {"$schema": "x", "version": "2.1.0", "runs": [{"tool": {"driver": {"name": "mtp-audit", "rules": [{"id": "MTP200"}]}},
           "results": [{"ruleId": "MTP200", "message": {"text": "m"}, "locations": [{"logicalLocations": [{"fullyQualifiedName": "cuda:0"}]}]}]}]}
    assert github_problems(doc) == ["results[0].locations[0]: expected artifact location (no physicalLocation)",
                                    "results[0]: no partialFingerprints (GitHub shows duplicate alerts across runs)"]


@pytest.mark.network
def test_vllm_and_a_vllm_launch(in_repo: Path, tmp_path: Path) -> None:
    from conftest import vllm_wheel

    whl = vllm_wheel("0.11.0")
    doc = _sarif(tmp_path, ["vllm", str(whl), "-f", "sarif"])
    assert ("MTPAUDIT_VLLM", "vllm/config/speculative.py") in _uris(doc)
    _sarif(tmp_path, ["launch", "--vllm", str(whl), "--env-dump", "fixtures/preflight/envdumps/vllm-57932.txt", "-f", "sarif", "--",
                      "vllm", "serve", "fixtures/checkpoint/deepseek-ai--DeepSeek-V3", "--tensor-parallel-size", "8",
                      "--speculative-config", '{"method": "deepseek_mtp", "num_speculative_tokens": 3}'])


def test_the_sarif_category_names_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--sarif-category`` sets ``runs[].automationDetails.id`` (what GitHub code scanning keys alerts by), so two
    audits of one repository keep their alerts apart; without it the id is ``mtp-audit/<analyzer>/``; an empty one is
    refused before any work (exit 2, one line)."""
    reap = str(REPO / "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding")
    ids = []
    for extra in ([], ["--sarif-category", "models/reap"], ["--sarif-category", "ckpt-a/"]):
        out = tmp_path / f"r{len(ids)}.sarif"
        assert main(["checkpoint", reap, "-o", str(out), *extra]) == 1
        ids.append(json.loads(out.read_text())["runs"][0]["automationDetails"]["id"])
    assert ids == ["mtp-audit/checkpoint/", "models/reap/", "ckpt-a/"]
    capsys.readouterr()
    assert main(["checkpoint", reap, "-f", "sarif", "--sarif-category", " "]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtp-audit: error: --sarif-category: not a usable category") and err.count("\n") == 1
