"""``mtp_audit.keepalive``: the console script (which ends with ``os._exit``) keeps each checkpoint audit's facts
instead of freeing 92k tensors one by one; the report is the same either way, and a library caller keeps nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit import keepalive
from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.facts import CheckpointFacts
from mtp_audit.formats import render

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"


def test_kept_facts_leave_the_report_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    target = FIX / "nvidia--Qwen3.6-35B-A3B-NVFP4"
    monkeypatch.setattr(keepalive, "_KEPT", None)
    freed = render(audit_checkpoint(target), "json")
    assert keepalive._KEPT is None  # library callers: nothing kept
    keepalive.until_exit()
    assert render(audit_checkpoint(target), "json") == freed
    kept = keepalive._KEPT
    assert kept is not None and len(kept) == 1 and isinstance(kept[0], CheckpointFacts) and kept[0].config is not None
