"""A checkpoint folder without a usable ``config.json`` (fresh-user report): ``null`` is an input error like any other
non-object (exit 2); a folder with an index or shards and no ``config.json`` is MTP022 (error, exit 1), never PASS, and
a launch of it (SGLang, TensorRT-LLM, vLLM) is "fix first" instead of "go"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import sglang_wheel, vllm_wheel

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.launch import audit_launch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"


def _index_only(d: Path) -> Path:
    """The MiMo fixture's index (16 MTP tensors) with no config.json beside it."""
    d.mkdir()
    shutil.copy(MIMO / "model.safetensors.index.json", d)
    return d


@pytest.mark.parametrize(("text", "got"), [("null", "null"), ("1", "int"), ('"s"', "str"), ("[1]", "list")])
def test_a_config_that_is_not_an_object_is_an_input_error(tmp_path: Path, capsys, text: str, got: str) -> None:
    d = _index_only(tmp_path / "c")
    (d / "config.json").write_text(text + "\n")
    out = tmp_path / "r.json"
    assert main(["checkpoint", str(d), "-f", "json", "-o", str(out)]) == 2
    o, err = capsys.readouterr()
    assert err == f"mtp-audit: error: {d}/config.json: /: expected a JSON object, got {got}\n" and o == ""
    assert not out.exists()


def test_an_index_without_config_is_mtp022_not_pass(tmp_path: Path, capsys) -> None:
    d = _index_only(tmp_path / "c")
    rep = audit_checkpoint(d)
    assert [f.rule_id for f in rep.findings] == ["MTP022"]
    assert rep.findings[0].message == ("the checkpoint holds model.safetensors.index.json but no config.json: no engine "
                                       "loads a model folder without it, so its 16 MTP tensor(s) are never used")
    assert rep.facts["checkpoint"]["mtp"]["declared_layers"] is None
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False
    assert main(["checkpoint", str(d)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("FAIL: ") and first.endswith("(MTP022) (exit 1)")


def test_params_json_or_a_lone_shard_is_not_mtp022(tmp_path: Path) -> None:
    d = _index_only(tmp_path / "c")
    (d / "params.json").write_text("{}")  # vLLM's Mistral format reads params.json instead (0.33.0 config.py:893-899)
    assert "MTP022" not in {f.rule_id for f in audit_checkpoint(d).findings}


def test_launch_of_a_folder_without_config_is_fix_first(tmp_path: Path) -> None:
    d = _index_only(tmp_path / "noconf")
    sg = audit_launch(["python", "-m", "sglang.launch_server", "--model-path", str(d), "--speculative-algorithm", "NEXTN"],
                      sglang=sglang_wheel("0.5.9"), environ={}, cwd=tmp_path, no_machine=True)
    assert sg.facts["launch"]["verdict"] == "fix first" and "MTP022" in {f.rule_id for f in sg.findings}
    trt = audit_launch(["trtllm-serve", str(d), "--config", str(FIXTURES / "trtllm" / "r1-nextn-3.yaml")],
                       environ={}, cwd=tmp_path, no_machine=True)
    assert trt.facts["launch"]["verdict"] == "fix first" and "MTP022" in {f.rule_id for f in trt.findings}
    vl = audit_launch(["vllm", "serve", str(d), "--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 1})],
                      vllm=vllm_wheel("0.33.0"), environ={}, cwd=tmp_path, no_machine=True)
    assert vl.facts["launch"]["verdict"] == "fix first" and "MTP022" in {f.rule_id for f in vl.findings}
