"""The parity matrix (check x engine x platform) is generated from the engines' declarations and the rule registry:
docs/parity.md must be what ``python -m mtp_audit.engines.parity`` prints, every cell must name rules of that
engine's launch report or say why it does not apply, and the open cells are exactly the ones listed here (closing one
means removing it from OPEN)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from mtp_audit.engines.base import Coverage, Engine
from mtp_audit.engines.parity import CHECKS, matrix, platforms, render
from mtp_audit.engines.registry import engines

ROOT = Path(__file__).resolve().parents[1]
#: (check, engine, platform) cells an engine does not answer yet
OPEN = {("speculation shape", "sglang", p) for p in ("cuda", "rocm", "cann", "xpu", "hpu", "cpu")} | \
       {("release pins", "sglang", p) for p in ("rocm", "cann", "xpu", "hpu", "cpu")} | \
       {("release pins", "trtllm", "cuda")}


def test_docs_parity_is_generated_from_the_code():
    assert (ROOT / "docs" / "parity.md").read_text() == render(), "regenerate: python -m mtp_audit.engines.parity > docs/parity.md"


def test_every_cell_names_rules_or_a_reason():
    cells = matrix()
    assert len(cells) == len(CHECKS) * len(engines()) * len(platforms()) == 6 * 4 * 6
    assert [c.text for c in cells if c.problem] == []
    assert {(c.check, c.engine, c.platform) for c in cells if c.coverage.open} == OPEN


def test_the_fp4_verdict_row_names_each_engines_own_rule():
    row = {c.engine: c.coverage.rules for c in matrix() if c.check == "fp4 verdict" and c.platform == "cuda"}
    assert row == {"sglang": ("MTP200", "MTP201", "MTP228"), "vllm": ("MTP228", "MTP231"), "llamacpp": ("MTP611",),
                   "trtllm": ("MTP718",)}
    hooked = [e.name for e in engines() if type(e).fp4_verdict is not Engine.fp4_verdict]
    assert hooked == ["llamacpp", "trtllm"]
    via = {(c.check, c.engine) for c in matrix() if c.hook and c.platform == "cuda"}
    assert via == {("fp4 verdict", "llamacpp"), ("fp4 verdict", "trtllm"), ("draft memory", "vllm"),
                   ("draft memory", "trtllm"), ("draft memory", "llamacpp"), ("release pins", "vllm")}


class _Fifth(Engine):
    """A fake engine that declares one check with a rule it does not report and leaves the others out."""

    name, label, target_option, rules_module = "fifth", "Fifth", "", "mtp_audit.engines.trtllm.rules"
    parity: ClassVar[dict[str, Coverage]] = {"what runs": Coverage(rules=("MTP320",)), "fp4 verdict": Coverage(rules=("MTP718",), na="both")}

    def entry(self, toks):  # type: ignore[no-untyped-def]
        return None

    def release(self, target):  # type: ignore[no-untyped-def]
        return None, None

    def evaluate(self, request, release, gap):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def test_a_cell_that_is_neither_fails():
    cells = {(c.check, c.platform): c for c in matrix((_Fifth(),))}
    assert cells[("what runs", "cuda")].problem == "rule(s) MTP320 not in this engine's launch report"
    assert cells[("fp4 verdict", "cuda")].problem == "gives more than one answer"
    assert cells[("parallelism", "cuda")].problem == "names no rule, no reason and no open item"
    assert cells[("parallelism", "rocm")].text.startswith("n/a: Fifth does not run on rocm")
