"""SGLang as a launch engine: parse ``python -m sglang.launch_server ...`` / ``sglang serve ...`` against the flag table of
one SGLang release, replay its rewrites, and cross-check the command with the checkpoint and the machine (rules
MTP300-MTP313, :mod:`mtp_audit.engines.sglang.launch.rules`); two releases can be compared (MTP310)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtp_audit.engines.base import Engine, EngineOutcome, LaunchRequest, open_release
from mtp_audit.engines.sglang.launch import parity as P
from mtp_audit.report import Gap, Report

#: the keys of an evaluation's outcome that make up ``facts["launch"]``
FACT_KEYS = ("summary", "answer", "closing", "compare", "verdict", "corrected_command", "changed_flags", "speculative", "draft",
             "model_overrides", "startup_asserts", "attention",
             "parallel", "command", "env")


class SGLangEngine(Engine):
    """:class:`~mtp_audit.engines.base.Engine` for SGLang (releases read from source by :mod:`mtp_audit.engines.sglang`)."""

    name = "sglang"
    label = "SGLang"
    target_option = "--sglang"
    rules_module = "mtp_audit.engines.sglang.launch.rules"
    entry_examples = ("python -m sglang.launch_server --model-path MODEL ...", "sglang serve MODEL ...")
    platforms, platforms_source, parity = P.PLATFORMS, P.PLATFORMS_SOURCE, P.PARITY

    def entry(self, toks: Sequence[str]) -> str | None:
        """``"python -m sglang.launch_server"`` or ``"sglang serve"`` when the command starts SGLang, else ``None``."""
        from mtp_audit.engines.sglang.launch.command import find_entry
        from mtp_audit.errors import InputError

        try:
            return find_entry(list(toks))[1]
        except InputError:
            return None

    def release(self, target: Any) -> tuple[Report | None, Gap | None]:
        """The sglang analyzer's report on ``target`` (a report passes through; ``None``: the installed sglang)."""
        from mtp_audit.engines.sglang import audit_sglang

        if isinstance(target, Report):
            return target, None
        return open_release(audit_sglang, target, self.label, self.target_option)

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """See :meth:`mtp_audit.engines.base.Engine.evaluate` (:func:`~mtp_audit.engines.sglang.launch.evaluate.evaluate_launch`)."""
        from mtp_audit.engines.argv import shell_join
        from mtp_audit.engines.sglang.launch.evaluate import evaluate_launch

        ev = evaluate_launch(request.toks, sg_report=release, sg_gap=gap, analyzers=request.analyzers, env=request.env,
                             environ=request.environ, cwd=request.cwd)
        return EngineOutcome(name=shell_join(request.toks), version=ev.ctx.sglang_version, findings=list(ev.ctx.findings),
                             gaps=list(ev.ctx.gaps), reports=list(ev.reports), facts={k: ev.outcome[k] for k in FACT_KEYS})

    def compare(self, request: LaunchRequest, old: EngineOutcome, new: EngineOutcome) -> EngineOutcome:
        """The ``new`` outcome plus MTP310 findings and ``facts["diff"]``: what changes in "what will happen" between
        the two SGLang releases."""
        from mtp_audit.engines.sglang.launch.outcome import compare_outcomes

        return compare_outcomes(old, new)
