"""What one launch evaluation knows (:class:`Ctx`), where the machine comes from (:class:`Machine`), and the
SGLang option strings the cross-checks read. Shared by :mod:`~mtp_audit.engines.sglang.launch.evaluate` (the checks),
:mod:`~mtp_audit.engines.sglang.launch.correct` (the corrected command) and :mod:`~mtp_audit.engines.sglang.launch.outcome` (the answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer
from mtp_audit.engines.sglang.launch.command import LaunchCommand
from mtp_audit.engines.sglang.launch.conditions import Known
from mtp_audit.engines.sglang.release import Release
from mtp_audit.preflight.typed import GpuAnswer, MachineAnswer
from mtp_audit.report import Evidence, Finding, Gap, Location, Severity

ANALYZER = "launch"

#: Option strings of the arguments the cross-checks read (0.5.9 declares ``--tensor-parallel-size``
#: with alias ``--tp-size``; 0.5.23 the reverse).
MODEL = ("--model-path", "--model")
SPEC = ("--speculative-algorithm",)
DRAFT = ("--speculative-draft-model-path", "--speculative-draft-model")
TP = ("--tp-size", "--tensor-parallel-size")
EP = ("--ep-size", "--expert-parallel-size")
QUANT = ("--quantization",)
MEM_FRACTION = ("--mem-fraction-static",)

#: Algorithms whose worker loads a draft model (EAGLE family; NGRAM has none). Source: SGLang
#: server_args.py (0.5.9 :2355 ``if self.speculative_algorithm in ("EAGLE", "EAGLE3", "STANDALONE")``).
DRAFT_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE", "NEXTN", "FROZEN_KV_MTP")
#: Algorithms that read the MTP / NextN layer of the checkpoint named as the draft.
MTP_ALGORITHMS = ("EAGLE", "NEXTN", "FROZEN_KV_MTP")
#: The flags SGLang's docs give for MTP models (docs/basic_usage/deepseek.md and qwen3.md,
#: "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1
#: --speculative-num-draft-tokens 4"); NEXTN is the alias that names the MTP intent.
MTP_FLAGS = (("--speculative-algorithm", "NEXTN"), ("--speculative-num-steps", "3"),
             ("--speculative-eagle-topk", "1"), ("--speculative-num-draft-tokens", "4"))
#: FP4 ``--quantization`` values and the checkpoint format each expects (SGLang
#: ``layers/quantization/__init__.py``; ModelOpt NVFP4 and OCP MXFP4 per checkpoint_formats.md).
FP4_QUANT_FORMAT = {"modelopt_fp4": "NVFP4", "nvfp4_online": None, "petit_nvfp4": "NVFP4", "mxfp4": "MXFP4", "modelopt_mixed": None}

#: Rewrite shapes whose recorded condition is every guard on the path to the rewrite (the enclosing
#: ``if`` tests of a ServerArgs method, or a MODEL_OVERRIDES row); in hook functions (declare_resolution,
#: return-dict, overrides-dict) an earlier ``return`` may guard it too, so a true condition there is not proof.
COMPLETE_CONDITION_SHAPES = ("assignment", "helper-return via assignment", "MODEL_OVERRIDES")



@dataclass
class Ctx:
    """Everything one evaluation (one SGLang version) knows; filled by :func:`evaluate_launch`.

    ``ck`` / ``draft_ck``: the typed answers of the target's and the draft's checkpoint audits (``None``: not audited);
    ``machine``: the machine's typed answer (``None``: no machine facts); ``pf``: the preflight's own document (its
    verdicts, the backends it resolved)."""

    cmd: LaunchCommand
    sg: dict[str, Any] | None
    sg_name: str
    ck: CheckpointAnswer | None
    model_path: str | None
    draft_ck: CheckpointAnswer | None
    draft_path: str | None
    draft_is_target: bool
    pf: dict[str, Any] | None
    env: dict[str, str]
    env_source: dict[str, str]
    machine: MachineAnswer | None = None
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    fixes: dict[str, str | None] = field(default_factory=dict)
    drop_prefixes: tuple[str, ...] = ()
    algo_requested: str | None = None
    algo_runs_as: str | None = None
    algo_remap: dict[str, Any] | None = None
    algo_conditional: list[dict[str, Any]] = field(default_factory=list)
    #: per-model override rewrites and start-up asserts that apply (engines/sglang/startup_facts.py), set by resolve_model_overrides
    model_overrides: list[dict[str, Any]] = field(default_factory=list)
    startup_asserts: list[dict[str, Any]] = field(default_factory=list)
    draft: dict[str, Any] = field(default_factory=dict)
    #: the spelling-corrected command (misspelt flags, abbreviations, choice case fixed) and the ctx and
    #: findings of its own evaluation; ``None`` when the command has no spelling fix (see :func:`evaluate_launch`)
    respelled: tuple[list[str], Ctx, list[Finding]] | None = None
    #: the GPUs this launch's processes see (:func:`mtp_audit.engines.sglang.launch.evaluate.resolve_gpus`): a
    #: :class:`~mtp_audit.preflight.visible.Visibility`, ``None`` until resolved
    visible: Any = None
    #: the checkpoint's kind of linear attention (:func:`mtp_audit.engines.sglang.launch.attention.linear_attention_kind`:
    #: ``"gdn"``, ``"mamba2"`` ...; ``None`` none) and why it is unknown (``linear_attention_note``; then the kind is unused)
    linear_attention: str | None = None
    linear_attention_note: str | None = None
    #: ``model_type`` (and ``text_config.model_type``) of that config.json, for SGLang's config-class tests
    model_types: list[str] = field(default_factory=list)
    #: its ``architectures[0]``, used when the checkpoint audit gave none (a hub id whose listing is not cached)
    config_architecture: str | None = None
    #: the attention backend words of "What will happen", set by ``check_attention``
    attention_text: str = "not checked"
    #: the replayed speculative hook (:class:`mtp_audit.engines.sglang.launch.spec_hook_replay.HookOutcome`), set by its check
    spec_hook: Any = None
    #: ``(flag, value)`` the hook's replay found for a field it reads as ``None`` (set by its check; ``None``: none)
    spec_fix: Any = None
    #: the corrected command evaluated again (``{"command", "verdict", "errors", "hook_raises"}``), when it carries a
    #: fix found by the replay; ``None`` otherwise
    corrected_check: dict[str, Any] | None = None
    #: the same, location-free (compared between releases) and as facts (``facts.launch.attention``)
    attention_compare: str = "not checked"
    attention_facts: dict[str, Any] = field(default_factory=dict)
    #: whether the launch runs FP4 kernels (:func:`mtp_audit.engines.outcome.fp4_needed`; ``None``: unknown), set by
    #: ``scope_launch``
    fp4_needed: bool | None = None
    #: the command's parallel layout (:class:`mtp_audit.engines.sglang.launch.parallel.ParallelPlan`), set by ``check_gpus``
    parallel: Any = None

    def add(self, rule_id: str, message: str, symbol: str, *, evidence: Sequence[Evidence] = (),
            remediation: str | None = None, severity: Severity | None = None) -> None:
        """Append a finding of launch rule ``rule_id``."""
        from mtp_audit.engines.sglang.launch.rules import RULES_BY_ID

        self.findings.append(RULES_BY_ID[rule_id].finding(message, Location(symbol=symbol), evidence=tuple(evidence),
                                                          remediation=remediation, severity=severity))

    def gap(self, message: str, blocking: bool = False, why_open: str | None = None) -> None:
        """Record something the launch audit could not decide; ``why_open``: why it is open (the
        :attr:`~mtp_audit.known.Known.why_open` of the machine fact it rests on)."""
        self.gaps.append(Gap(ANALYZER, message, None, blocking, why_open=why_open))

    # --- facts of the other analyzers ---------------------------------------------------------
    @property
    def sglang_version(self) -> str:
        """``"0.5.9"`` or ``"(version unknown)"``."""
        return self.release.version or "(version unknown)"

    @cached_property
    def release(self) -> Release:
        """The typed view of :attr:`sg` (:class:`~mtp_audit.engines.sglang.release.Release`), read once."""
        return Release.of(self.sg)

    @property
    def cc(self) -> tuple[int, int] | None:
        """Compute capability of the launch's CUDA device 0 (the first visible GPU; see :meth:`gpus`)."""
        for g in self.gpus():
            if g["cc"] is not None and len(g["cc"]) == 2:
                return int(g["cc"][0]), int(g["cc"][1])
        return None

    def gpus(self) -> list[dict[str, Any]]:
        """``[{"index", "name", "cc", "memory_bytes", "memory_missing", "memory_why_open"}]`` of the GPUs the launch sees: the
        preflight's machine facts after the launch's own ``CUDA_VISIBLE_DEVICES`` (:attr:`visible`), in
        CUDA order."""
        m = self.machine
        if self.visible is not None:
            rows = [GpuAnswer.from_facts(g, m.origin if m else "") for g in self.visible.gpus]
        else:
            rows = list(m.gpus) if m is not None else []
        return [{"index": g.index, "name": g.name.value, "cc": g.cc, "memory_bytes": g.memory_bytes.value,
                 "memory_missing": g.memory_bytes.source.how if g.memory_bytes.value is None else None,
                 "memory_why_open": g.memory_bytes.why_open} for g in rows]

    @staticmethod
    def arch(ck: CheckpointAnswer | None) -> str | None:
        """``architectures[0]`` of a checkpoint's answer (else its summary's architecture)."""
        return ck.architecture if ck is not None else None

    def known(self) -> Known:
        """What the condition evaluator may use (:class:`~mtp_audit.engines.sglang.launch.conditions.Known`)."""
        args: dict[str, Any] = {}
        release = self.release
        cli = release.cli
        for rec in cli.values():
            d = rec.get("default")
            if d is None:
                args[rec["dest"]] = None
            elif re.fullmatch(r"[A-Za-z0-9_.+-]+", d) and not re.search(r"[A-Za-z_]\w*\.\w", d):
                args[rec["dest"]] = {"True": True, "False": False}.get(d, d)
        for o in self.cmd.options:
            given = cli.get(o.flag)
            if given is None:
                continue
            args[given["dest"]] = True if o.value is None and given.get("action") in ("store_true",) else o.value
        qdest = release.dest(self.cmd.flag_of(*QUANT) or "--quantization") or "quantization"
        if not self.cmd.has(*QUANT):
            # not given: SGLang takes the method from the checkpoint's quantization config
            # (ModelConfig._verify_quantization); a check of self.quantization sees that value
            quants = self.ck.quantization if self.ck is not None else ()
            fp4 = ckpt_fp4(self.ck)
            if self.ck is not None and not quants:
                args[qdest] = None
            elif fp4 and all(q.method.lower() == "modelopt" for q in quants):
                args[qdest] = "modelopt_fp4"
            elif fp4 == "MXFP4":
                args[qdest] = "mxfp4"
            else:
                args.pop(qdest, None)
        spec_dest = release.dest("--speculative-algorithm") or "speculative_algorithm"
        if self.algo_requested is not None and self.algo_runs_as != self.algo_requested:
            args.pop(spec_dest, None)  # rewritten mid-way: which value a condition sees depends on order
        gpus = self.gpus()
        return Known(arch=self.arch(self.ck), cc=self.cc, nvidia=True if gpus else None, env=dict(self.env), args=args)


# --- inputs ----------------------------------------------------------------------------------------


def reads_mtp_layer(ctx: Ctx) -> bool:
    """Whether the draft worker loads the MTP / NextN layer of the checkpoint it drafts from: an MTP algorithm
    (:data:`MTP_ALGORITHMS`), or any draft algorithm (EAGLE3, STANDALONE) run without a separate draft path whose
    draft class is an MTP class. SGLang's own path (0.5.23): every EAGLE-family worker builds its draft with
    ``TpModelWorker(is_draft_worker=True)`` (``speculative/eagle_worker_v2.py:223``, ``standalone_worker_v2.py:87``),
    whose model path is ``speculative_draft_model_path`` (``managers/tp_worker.py:473``); when unset, ``ModelConfig.from_server_args``
    takes ``model_path or cfg.model_path`` (``configs/model_config.py:956``), the target, and ``is_draft_model``
    applies the draft-architecture override (``configs/model_config.py:1179``: Qwen3.5 -> ``Qwen3_5ForCausalLMMTP``)."""
    d = ctx.draft
    if not d.get("uses_draft"):
        return False
    if ctx.algo_runs_as in MTP_ALGORITHMS:
        return True
    mtp_names = {m["class"] for m in ctx.release.mtp_classes}
    return (ctx.draft_path is None or ctx.draft_is_target) and d.get("draft_class") in mtp_names


def ckpt_fp4(ck: CheckpointAnswer | None) -> str | None:
    """``"NVFP4"`` / ``"MXFP4"`` when the checkpoint's quantization is FP4, else ``None``."""
    return ck.fp4 if ck is not None else None
