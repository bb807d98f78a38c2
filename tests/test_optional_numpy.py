"""numpy is an optional dependency (``pip install "mtp-audit[numpy]"``): only the rare shard header that the fast reader
does not certify needs it (safetensors judges that header with ``safe_open(framework="numpy")``). Without numpy such a
shard is "could not tell", said with the fix; never a finding and never a crash."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from mtp_audit import audit_checkpoint
from mtp_audit.sources.local import NO_NUMPY


def _checkpoint(tmp_path: Path) -> Path:
    """One unindexed shard whose tensor name has a JSON escape (``\\u0062`` = ``b``): a valid header that the fast
    reader leaves to safetensors (it certifies no header with a backslash)."""
    header = b'{"a\\u0062":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1}))
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    return tmp_path


def test_with_numpy_safetensors_judges_the_header(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    report = audit_checkpoint(_checkpoint(tmp_path))
    assert [g.message for g in report.gaps] == [] and report.findings == ()
    assert report.facts["checkpoint"]["summary"]["tensors"] == 1


def test_without_numpy_the_shard_is_a_gap_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)  # what an install without the extra sees: import numpy fails
    report = audit_checkpoint(_checkpoint(tmp_path))
    assert [(g.path, g.message, g.blocking) for g in report.gaps] == [
        ("model.safetensors", f"{NO_NUMPY}; tensor dtypes and shapes in this shard unknown", True)]
    assert report.findings == () and report.inconclusive


def test_numpy_is_an_extra_not_a_runtime_dependency() -> None:
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    deps = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "numpy" not in deps and 'numpy = ["numpy"]' in text
