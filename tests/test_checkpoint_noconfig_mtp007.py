"""Without config.json the architecture is unknown, so "no engine code known to override the exclusion list for
this architecture" is a lost fact, not a finding: MTP007's uncovered-BF16 case becomes a gap (could not tell), and
MTP022 carries the error of the missing config. Removing config.json never raises a severity.

Input: the MTP007 rule example (Qwen3.5 NVFP4 trunk, BF16 mtp.fc not covered by exclude_modules ['lm_head',
'mtp.layers.0*'], as in nvidia/Qwen3.5-397B-A17B-NVFP4's hf_quant_config.json).
"""

from __future__ import annotations

from pathlib import Path

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.rules import _qwen_shards
from mtp_audit.report import Severity, exit_code
from mtp_audit.report.questions import MTP_HEADS


def _write(folder: Path, drop_config: bool) -> Path:
    folder.mkdir()
    for name, data in _qwen_shards(["lm_head", "mtp.layers.0*"]).items():
        if name == "config.json" and drop_config:
            continue
        (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return folder


def test_with_config_mtp007_is_a_warning_naming_the_engines(tmp_path):
    rep = audit_checkpoint(_write(tmp_path / "c", drop_config=False))
    assert [(f.rule_id, f.severity.label) for f in rep.findings if f.rule_id == "MTP007"] == [("MTP007", "warning")]


def test_without_config_mtp007_is_a_gap_and_mtp022_the_error(tmp_path):
    """Was: MTP007 *error* ('no engine code known to override the list for this architecture') + MTP022."""
    rep = audit_checkpoint(_write(tmp_path / "n", drop_config=True))
    assert sorted(f.rule_id for f in rep.findings if f.severity is Severity.ERROR) == ["MTP022"]
    assert "MTP007" not in [f.rule_id for f in rep.findings]
    gaps = [g for g in rep.gaps if g.path == "hf_quant_config.json"]
    assert len(gaps) == 1 and gaps[0].question == MTP_HEADS and not gaps[0].blocking  # MTP022 decides the question
    assert gaps[0].message.startswith("1 MTP linear module(s) stored BF16 are not covered by /quantization/"
                                      "exclude_modules: mtp.fc; whether the engine builds them unquantized")
    assert exit_code(rep, Severity.ERROR) == 1


def test_one_shard_named_alone_without_config_could_not_tell(tmp_path):
    """The MTP shard named alone (no MTP022 there): the same gap blocks the MTP-heads question, exit 3; was exit 1."""
    folder = _write(tmp_path / "s", drop_config=True)
    rep = audit_checkpoint(folder / "model-00002-of-00002.safetensors")
    assert "MTP007" not in [f.rule_id for f in rep.findings]
    assert [g.blocking for g in rep.gaps if g.path == "hf_quant_config.json"] == [True]
    assert exit_code(rep, Severity.ERROR) == 3
