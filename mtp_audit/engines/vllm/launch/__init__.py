"""vLLM as a launch engine: parse ``vllm serve MODEL ...`` (and the api_server / cli.main forms) with every
``--speculative-config`` spelling, replay ``SpeculativeConfig``'s decisions from one vLLM release's source, and
cross-check the command with the checkpoint and the machine (rules MTP320-MTP339,
:mod:`mtp_audit.engines.vllm.launch.rules`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mtp_audit.engines.base import (
    DraftMemory,
    DraftQuestion,
    Engine,
    EngineOutcome,
    LaunchRequest,
    LogDialect,
    PinCheck,
    open_release,
)
from mtp_audit.engines.vllm.launch import parity as P
from mtp_audit.report import Gap

#: the keys of an evaluation's outcome that make up ``facts["launch"]``
FACT_KEYS = ("summary", "answer", "closing", "verdict", "corrected_command", "corrected_check", "engine", "speculative", "draft",
             "parallel", "command", "env", "attention")


class VllmEngine(Engine):
    """:class:`~mtp_audit.engines.base.Engine` for vLLM (releases read from source by :mod:`mtp_audit.engines.vllm`)."""

    name = "vllm"
    label = "vLLM"
    target_option = "--vllm"
    index_package = "vllm"
    example_tree = "vl"  # the release tree of the launch rules' examples
    rules_module = "mtp_audit.engines.vllm.launch.rules"
    entry_examples = ("vllm serve MODEL ...", "python -m vllm.entrypoints.openai.api_server --model MODEL ...")
    platforms, platforms_source, parity = P.PLATFORMS, P.PLATFORMS_SOURCE, P.PARITY

    def log_dialect(self) -> LogDialect:
        """How this engine writes its log (``mtp_audit.engines.vllm.logdialect``)."""
        from mtp_audit.engines.vllm.logdialect import DIALECT

        return DIALECT

    def entry(self, toks: Sequence[str]) -> str | None:
        """``"vllm serve"`` (or the api_server / cli.main form) when the command starts vLLM's server, else ``None``."""
        from mtp_audit.engines.vllm.launch.command import vllm_entry

        found = vllm_entry(list(toks))
        return found[1] if found is not None else None

    def kernels(self) -> Any:
        """Vllm's FP4 GEMM / MoE kernel checks for the preflight (:class:`mtp_audit.engines.vllm.kernels.VllmKernels`)."""
        from mtp_audit.engines.vllm.kernels import VllmKernels

        return VllmKernels()

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        """The vLLM analyzer's launch view of ``target`` (``None``: the installed vllm; absent: a blocking gap)."""
        from mtp_audit.engines.vllm import open_for_launch

        return open_release(open_for_launch, target, self.label, self.target_option, "0.33.0")  # the release its rules cite

    def list_overrides(self) -> Any:
        """Where vLLM builds (part of) the MTP module unquantized whatever the exclusion list says
        (:func:`mtp_audit.engines.vllm.checkpoint.vllm_list_overrides`)."""
        from mtp_audit.engines.vllm.checkpoint import vllm_list_overrides

        return vllm_list_overrides()

    def quantization_method(self, method: str, quant_algo: str) -> Mapping[str, str] | None:
        """The ModelOpt method vLLM resolves the checkpoint's ``quant_algo`` to, whatever ``--quantization`` says
        (:func:`mtp_audit.engines.vllm.checkpoint.vllm_quantization_method`)."""
        from mtp_audit.engines.vllm.checkpoint import vllm_quantization_method

        return vllm_quantization_method(method, quant_algo)

    def draft_memory(self, question: DraftQuestion) -> DraftMemory | None:
        """The MTP draft's bytes per GPU at load (:func:`mtp_audit.engines.vllm.launch.depth.draft_memory`, MTP338)."""
        from mtp_audit.engines.vllm.launch.depth import draft_memory

        return draft_memory(question)

    def release_pins(self, release: Any, machine: Mapping[str, Any]) -> tuple[PinCheck, ...]:
        """The release's ``Requires-Dist: torch`` against the machine's torch
        (:func:`mtp_audit.engines.vllm.launch.depth.release_pins`, MTP339)."""
        from mtp_audit.engines.vllm.launch.depth import release_pins
        from mtp_audit.engines.vllm.release import VllmRelease

        return release_pins(release, machine, str(VllmRelease.from_report(release).version))

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """See :meth:`mtp_audit.engines.base.Engine.evaluate` (:func:`~mtp_audit.engines.vllm.launch.evaluate.evaluate_vllm`):
        ``facts["launch"]["summary"]`` holds ``method`` (after aliasing and auto-detection), ``proposer``,
        ``draft_model``, ``draft_architecture``, ``num_speculative_tokens``, ``verdict`` and ``corrected_command``
        (evaluated again before it is shown: ``corrected_check``)."""
        from mtp_audit.engines.argv import shell_join
        from mtp_audit.engines.vllm.launch.evaluate import evaluate_vllm

        ev = evaluate_vllm(request.toks, view=release, view_gap=gap, analyzers=request.analyzers, env=request.env,
                           environ=request.environ, cwd=request.cwd)
        return EngineOutcome(name=shell_join(request.toks), version=ev.ctx.release.version, findings=list(ev.ctx.findings), gaps=list(ev.ctx.gaps),
                             reports=list(ev.reports), facts={k: ev.outcome[k] for k in FACT_KEYS})
