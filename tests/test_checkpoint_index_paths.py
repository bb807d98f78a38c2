"""weight_map values are normalised inside the folder before judging "outside" (``sub/../x`` is inside, ``../x`` is
not), and a value that is not a plain top-level name is what the engines cannot load (MTP008): vLLM 0.33.0 compares
``os.path.join(folder, value)`` with its top-level glob (model_loader/default_loader.py:230, weight_utils.py:603-613,
FileNotFoundError) and SGLang 0.5.9 drops the shard (model_loader/weight_utils.py:599-603).

Input: the MTP008 rule example's one-shard DeepSeek-style checkpoint (6 tensors, 5 of them MTP: model.layers.2 eh_proj, input_layernorm, enorm,
hnorm, shared_head.norm).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.rules import _dotted_shard
from mtp_audit.report import Severity, exit_code


def _write(folder: Path, value: str, *, move_to: str | None = None) -> Path:
    folder.mkdir()
    for name, data in _dotted_shard(value).items():
        dest = folder / (move_to if move_to and name == "model.safetensors" else name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data.encode() if isinstance(data, str) else data)
    (folder / "sub").mkdir(exist_ok=True)
    return folder


@pytest.mark.parametrize("value", ["sub/../model.safetensors", "./model.safetensors"])
def test_a_dotted_value_inside_the_folder_is_mtp008_not_mtp010(tmp_path, value):
    """Was MTP010 'outside the checkpoint folder' + MTP009 for sub/../ (and PASS for ./); the header is read."""
    rep = audit_checkpoint(_write(tmp_path / "c", value))
    ids = sorted(f.rule_id for f in rep.findings)
    assert ids == ["MTP008"]
    f = rep.findings[0]
    assert f.message.startswith(f'model.safetensors.index.json maps 6 tensor(s) to "{value}" (inside the folder: '
                                "model.safetensors), 5 of them MTP tensors, which is not a top-level shard name")
    assert rep.facts["checkpoint"]["mode"] == "shards" and exit_code(rep, Severity.ERROR) == 1


def test_a_shard_in_a_subfolder_is_mtp008(tmp_path):
    """Was PASS in metadata-only mode ('none read') although neither engine loads sub/model.safetensors."""
    rep = audit_checkpoint(_write(tmp_path / "s", "sub/model.safetensors", move_to="sub/model.safetensors"))
    assert [f.rule_id for f in rep.findings if f.severity is Severity.ERROR] == ["MTP008"]
    assert '"sub/model.safetensors" (inside the folder: sub/model.safetensors)' in rep.findings[0].message


def test_leaving_the_folder_stays_mtp010(tmp_path):
    rep = audit_checkpoint(_write(tmp_path / "o", "sub/../../model.safetensors"))
    assert "MTP010" in [f.rule_id for f in rep.findings]
    assert "MTP008" not in [f.rule_id for f in rep.findings]


def test_a_plain_name_is_left_alone(tmp_path):
    rep = audit_checkpoint(_write(tmp_path / "p", "model.safetensors"))
    assert [f.rule_id for f in rep.findings] == []
