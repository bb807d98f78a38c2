"""The engine interface: a fake engine registered in a few lines is picked by ``mtp-audit launch`` for the command it
starts, lent the checkpoint and machine analyzers, and its outcome becomes the launch report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mtp_audit.engines import registry
from mtp_audit.engines.base import Engine, EngineOutcome, LaunchRequest
from mtp_audit.errors import InputError
from mtp_audit.launch import audit_launch
from mtp_audit.report import Gap

ROOT = Path(__file__).resolve().parents[1]
REAP = ROOT / "fixtures" / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"


class FakeEngine(Engine):
    name = "fake"
    label = "Fake"
    target_option = "--fake"
    rules_module = "mtp_audit.engines.trtllm.rules"
    entry_examples = ("fake-serve MODEL",)

    def entry(self, toks: Sequence[str]) -> str | None:
        return "fake-serve" if toks and toks[0] == "fake-serve" else None

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        return {"release": target}, None

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        ck, ck_gap = request.analyzers.checkpoint(request.toks[1], "MODEL")
        pf = request.analyzers.preflight(None, engine=None)
        mtp = (ck.facts["checkpoint"]["mtp"] if ck else {}).get("declared_layers")
        return EngineOutcome(name=" ".join(request.toks), version="1.0", findings=[], gaps=[],
                             reports=[r for r in (ck, pf) if r is not None],
                             facts={"summary": {"verdict": "go", "mtp_layers": mtp}, "verdict": "go"})


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(registry, "ENGINES", registry.ENGINES + (FakeEngine(),))


def test_a_registered_engine_is_picked_and_lent_the_analyzers(fake):
    r = audit_launch(["fake-serve", str(REAP)], env_dumps=[H200], environ={})
    assert [t.analyzer for t in r.targets] == ["launch", "checkpoint", "preflight"]
    assert r.facts["launch"]["summary"] == {"verdict": "go", "mtp_layers": 1}
    assert r.facts["preflight"]["machine"]["gpus"][0]["name"]["value"] == "NVIDIA H200"


def test_an_unregistered_command_lists_every_engine():
    with pytest.raises(InputError) as exc:
        audit_launch(["fake-serve", str(REAP)], env_dumps=[H200], environ={})
    msg = str(exc.value)
    assert "'fake-serve' is not a server launch of any engine mtp-audit knows" in msg
    assert all(e.label in msg for e in registry.ENGINES)


def test_another_engines_release_option_is_refused(fake):
    with pytest.raises(InputError) as exc:
        audit_launch(["fake-serve", str(REAP)], sglang="x", env_dumps=[H200], environ={})
    assert str(exc.value) == "--sglang: the command starts Fake, not SGLang: use --fake TARGET"
