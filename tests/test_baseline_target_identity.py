"""A baseline names its findings' targets: one written for checkpoint A outside the working folder never silences the
same finding in checkpoint B outside it (the fingerprint of an artifact outside ``%SRCROOT%`` carries its absolute
location), while A's own baseline keeps working from any other folder outside A. Fingerprints of inputs inside the
working folder are unchanged, so baselines of in-repository targets stay valid (format version 1, key mtpAudit/v1).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from mtp_audit.cli.main import main

REAP = FIXTURES / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"


@pytest.fixture
def two_models(tmp_path: Path) -> Path:
    """Two identical copies of the REAP checkpoint (one MTP001 each), a baseline folder and two working folders."""
    for name in ("model-a", "model-b"):
        shutil.copytree(REAP, tmp_path / name)
    for name in ("ci1", "ci2"):
        (tmp_path / name).mkdir()
    return tmp_path


def test_a_baseline_for_one_checkpoint_does_not_silence_another(two_models: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Was: exit 0 with '[MTP001 ignored by the baseline]' for model-b."""
    monkeypatch.chdir(two_models / "ci1")
    assert main(["checkpoint", "../model-a", "--write-baseline", "../bl.json", "-q"]) == 1
    monkeypatch.chdir(two_models / "ci2")
    capsys.readouterr()
    assert main(["checkpoint", "../model-b", "--baseline-findings", "../bl.json", "-q"]) == 1
    assert "ignored by the baseline" not in capsys.readouterr().out
    assert main(["checkpoint", "../model-a", "--baseline-findings", "../bl.json", "-q"]) == 0
    assert "[MTP001 ignored by the baseline]" in capsys.readouterr().out


def test_rewriting_an_existing_baseline_is_allowed(two_models: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--write-baseline is an output: writing it again over the earlier one is not 'the audited input' (was exit 2)."""
    monkeypatch.chdir(two_models / "ci1")
    assert main(["checkpoint", "../model-a", "--write-baseline", "../bl.json", "-q"]) == 1
    assert main(["checkpoint", "../model-a", "--write-baseline", "../bl.json", "-q"]) == 1
    assert len(json.loads((two_models / "bl.json").read_text())["findings"]) == 1


def test_inside_the_working_folder_fingerprints_are_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The REAP fixture audited from the repository root has the fingerprint main gave it before (a8723f38...)."""
    monkeypatch.chdir(FIXTURES.parent)
    assert main(["checkpoint", str(REAP.relative_to(FIXTURES.parent)), "--write-baseline", str(tmp_path / "b.json"),
                 "-q"]) == 1
    doc = json.loads((tmp_path / "b.json").read_text())
    assert [f["fingerprint"] for f in doc["findings"]] == ["a8723f38d91a5ccdfac5ffac9e8a85e5"]


def test_hub_targets_are_told_apart_by_id_not_by_revision(tmp_path: Path) -> None:
    """No local root (a hub checkpoint): the fingerprint carries the hub id, without the revision."""
    import dataclasses

    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.formats import render
    from mtp_audit.report import Target

    rep = audit_checkpoint(str(REAP))

    def fp(name: str) -> str:
        named = dataclasses.replace(rep, targets=(Target("checkpoint", name),))
        doc = json.loads(render(named, "sarif", roots={}))
        return doc["runs"][0]["results"][0]["partialFingerprints"]["mtpAudit/v1"]

    assert fp("org-a/model@1111111") == fp("org-a/model@2222222")
    assert fp("org-a/model@1111111") != fp("org-b/model@1111111")
