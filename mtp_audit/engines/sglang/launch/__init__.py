"""SGLang as a launch engine: parse ``python -m sglang.launch_server ...`` / ``sglang serve ...`` against the flag table of
one SGLang release, replay its rewrites, and cross-check the command with the checkpoint and the machine (rules
MTP300-MTP314, :mod:`mtp_audit.engines.sglang.launch.rules`); two releases can be compared (MTP310)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtp_audit.engines.base import Engine, EngineOutcome, LaunchRequest, LogDialect, open_release
from mtp_audit.engines.sglang.launch import parity as P
from mtp_audit.report import Gap, Report

#: the keys of an evaluation's outcome that make up ``facts["launch"]``
FACT_KEYS = ("summary", "answer", "closing", "compare", "verdict", "corrected_command", "changed_flags", "speculative", "draft",
             "model_overrides", "startup_asserts", "attention",
             "parallel", "command", "env", "corrected_check")


class SGLangEngine(Engine):
    """:class:`~mtp_audit.engines.base.Engine` for SGLang (releases read from source by :mod:`mtp_audit.engines.sglang`)."""

    name = "sglang"
    label = "SGLang"
    target_option = "--sglang"
    index_package = "sglang"
    example_tree = "sg"  # the release tree of the launch rules' examples
    rules_module = "mtp_audit.engines.sglang.launch.rules"
    entry_examples = ("python -m sglang.launch_server --model-path MODEL ...", "sglang serve MODEL ...")
    platforms, platforms_source, parity = P.PLATFORMS, P.PLATFORMS_SOURCE, P.PARITY

    def log_dialect(self) -> LogDialect:
        """How this engine writes its log (``mtp_audit.engines.sglang.logdialect``)."""
        from mtp_audit.engines.sglang.logdialect import DIALECT

        return DIALECT

    def entry(self, toks: Sequence[str]) -> str | None:
        """``"python -m sglang.launch_server"`` or ``"sglang serve"`` when the command starts SGLang, else ``None``."""
        from mtp_audit.engines.sglang.launch.command import find_entry
        from mtp_audit.errors import InputError

        try:
            return find_entry(list(toks))[1]
        except InputError:
            return None

    def kernels(self) -> Any:
        """SGLang's FP4 GEMM / MoE kernel checks for the preflight (:class:`mtp_audit.engines.sglang.kernels.SGLangKernels`)."""
        from mtp_audit.engines.sglang.kernels import SGLangKernels

        return SGLangKernels()

    def uses_heads(self, evidence: Any) -> Any:
        """SGLang's answer: ``--speculative-algorithm NEXTN`` drafts with the checkpoint's own MTP heads
        (:func:`mtp_audit.engines.sglang.heads.sglang_uses_heads`)."""
        from mtp_audit.engines.sglang.heads import sglang_uses_heads

        return sglang_uses_heads(evidence)

    def list_overrides(self) -> Any:
        """Where SGLang builds the MTP module unquantized whatever the exclusion list says
        (:func:`mtp_audit.engines.sglang.heads.sglang_list_overrides`)."""
        from mtp_audit.engines.sglang.heads import sglang_list_overrides

        return sglang_list_overrides()

    def release(self, target: Any) -> tuple[Report | None, Gap | None]:
        """The sglang analyzer's report on ``target`` (a report passes through; ``None``: the installed sglang)."""
        from mtp_audit.engines.sglang import audit_sglang
        from mtp_audit.engines.sglang.logdialect import RELEASE  # the release the rules were read in

        if isinstance(target, Report):
            return target, None
        return open_release(audit_sglang, target, self.label, self.target_option, RELEASE)

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """See :meth:`mtp_audit.engines.base.Engine.evaluate` (:func:`~mtp_audit.engines.sglang.launch.evaluate.evaluate_launch`)."""
        from mtp_audit.engines.argv import shell_join
        from mtp_audit.engines.sglang.launch.evaluate import (
            evaluate_launch,
            replay_known,
        )

        ev = evaluate_launch(request.toks, sg_report=release, sg_gap=gap, analyzers=request.analyzers, env=request.env,
                             environ=request.environ, cwd=request.cwd)
        context = {"sglang": ev.ctx.sg, "known": _with_algorithm(replay_known(ev.ctx), ev.ctx.sg, ev.ctx.algo_runs_as)} if ev.ctx.sg else None
        return EngineOutcome(name=shell_join(request.toks), version=ev.ctx.sglang_version, findings=list(ev.ctx.findings),
                             gaps=list(ev.ctx.gaps), reports=list(ev.reports), facts={k: ev.outcome[k] for k in FACT_KEYS if k in ev.outcome},
                             context=context)

    def compare(self, request: LaunchRequest, old: EngineOutcome, new: EngineOutcome) -> EngineOutcome:
        """The ``new`` outcome plus MTP310 findings and ``facts["diff"]``: what changes in "what will happen" between
        the two SGLang releases."""
        from mtp_audit.engines.sglang.launch.outcome import (
            compare_outcomes,
            upgrade_rewrites,
        )

        return upgrade_rewrites(old, compare_outcomes(old, new))


def _with_algorithm(known: dict[str, Any], sg: dict[str, Any], algorithm: str | None) -> dict[str, Any]:
    """``known`` with the names a guard inlined from ``SpeculativeAlgorithm``'s dispatch methods reads (0.5.23
    ``spec_info.py:117-118`` ``is_dflash``: ``self == SpeculativeAlgorithm.DFLASH``): ``self`` is the algorithm the launch
    runs as, each ``SpeculativeAlgorithm.<MEMBER>`` that member's name (members from the release's dispatch predicates
    and its alias lookup); unchanged when the launch requests no algorithm."""
    if not algorithm:
        return known
    hooks = sg.get("speculative_hooks") or {}
    members = {m for ms in (hooks.get("predicates") or {}).values() for m in ms}
    members |= {m for a in sg.get("aliases") or [] for m in a.get("enum_members") or []}
    names = dict(known.get("names") or {}, self=algorithm)
    names.update({f"SpeculativeAlgorithm.{m}": m for m in members})
    return dict(known, names=names)
