"""``mtp_audit.checkpoint.analyze.KEEP_FACTS``: a caller that ends its process without freeing (the console script)
may park each audit's facts there; the report is the same either way, and by default nothing is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import mtp_audit.checkpoint.analyze as analyze_mod
from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.checkpoint.facts import CheckpointFacts
from mtp_audit.formats import render

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint"


def test_parked_facts_leave_the_report_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    target = FIX / "nvidia--Qwen3.6-35B-A3B-NVFP4"
    assert analyze_mod.KEEP_FACTS is None  # library callers: freed as usual
    freed = render(audit_checkpoint(target), "json")
    kept: list[object] = []
    monkeypatch.setattr(analyze_mod, "KEEP_FACTS", kept)
    assert render(audit_checkpoint(target), "json") == freed
    assert len(kept) == 1 and isinstance(kept[0], CheckpointFacts) and kept[0].config is not None
