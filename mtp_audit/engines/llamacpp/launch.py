"""llama.cpp as a launch engine (:class:`LlamaCppEngine`): ``mtp-audit launch [--llamacpp-build N] -- llama-server ...``.

It parses the command (:mod:`.command`), audits the GGUF files of ``-m`` and ``-md`` with the checkpoint analyzer it
is lent (headers only), places the build (``--llamacpp-build`` or ``llama-server --version`` text in an
``--env-dump``) and evaluates (:mod:`.evaluate`): rules MTP600-MTP612, the answer, the verdict, the corrected
command. The machine is not checked for llama.cpp (its GPU back-ends are not in the preflight matrix): a
non-blocking gap says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint.typed import checkpoint_answer
from mtp_audit.checkpoint.typed_gguf import GgufModel
from mtp_audit.engines.base import (
    DraftMemory,
    DraftQuestion,
    Engine,
    EngineOutcome,
    Fp4Verdict,
    KernelQuestion,
    LaunchRequest,
    LogDialect,
)
from mtp_audit.engines.llamacpp import parity as P
from mtp_audit.engines.llamacpp.command import BuildInfo, is_llamacpp, parse_build, parse_command, shell_join
from mtp_audit.engines.llamacpp.evaluate import ANALYZER, GGUFView, evaluate
from mtp_audit.errors import InputError
from mtp_audit.preflight.typed import MachineAnswer, machine_answer
from mtp_audit.report import Gap, Report

#: Largest ``--env-dump`` file read for a version line (bytes).
MAX_DUMP_BYTES = 16 * 1024 * 1024

#: Checkpoint findings about how to pass a head (an mtp-*.gguf sidecar; a trunk without one beside it) that the
#: launch answers itself from -m / -md.
SAID_BY_LAUNCH = frozenset({"MTP036", "MTP037"})


class LlamaCppEngine(Engine):
    """:class:`~mtp_audit.engines.base.Engine` for llama.cpp and ik_llama.cpp (knowledge: :mod:`.tables`)."""

    name = "llamacpp"
    label = "llama.cpp"
    target_option = "--llamacpp-build"
    rules_module = "mtp_audit.engines.llamacpp.rules"
    entry_examples = ("llama-server -m MODEL.gguf ...", "llama-cli -m MODEL.gguf ...")
    platforms, platforms_source, parity = P.PLATFORMS, P.PLATFORMS_SOURCE, P.PARITY

    def log_dialect(self) -> LogDialect:
        """How this engine writes its log (``mtp_audit.engines.llamacpp.logdialect``)."""
        from mtp_audit.engines.llamacpp.logdialect import DIALECT

        return DIALECT

    def entry(self, toks: Sequence[str]) -> str | None:
        """``llama-server`` / ``llama-cli`` ... when the command starts one, else ``None``."""
        return is_llamacpp(toks)

    def gguf_mtp_graph(self, arch: str | None, build: int | None) -> tuple[bool | None, Any]:
        """Whether llama.cpp ``build`` has a ``draft-mtp`` graph for ``arch``
        (:func:`mtp_audit.engines.llamacpp.tables.arch_has_mtp_graph`)."""
        from mtp_audit.engines.llamacpp.tables import arch_has_mtp_graph

        return arch_has_mtp_graph(arch, build)

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        """The build named by ``--llamacpp-build`` (``10444``, ``b10444``, ``ik:4100``, ``--version`` text); ``None``:
        read from the launch's ``--env-dump`` files in :meth:`evaluate`, else unknown (a non-blocking gap).

        Raises:
            InputError: a target with no build number.
        """
        return (parse_build(str(target)) if target is not None else None), None

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        """See :meth:`mtp_audit.engines.base.Engine.evaluate`; ``facts["launch"]["summary"]`` holds ``engine`` (fork),
        ``build``, ``spec_types``, ``mtp_head``, ``mtp_runs``, ``n_max``, ``parallel``, ``verdict`` and
        ``corrected_command``."""
        info = release if release is not None else build_from_dumps(request.machine.env_dumps)

        def machine() -> MachineAnswer | None:
            return machine_answer(request.analyzers.preflight(None, engine=None))

        return evaluate_launch(request.toks, info, local_files_only(request.analyzers.checkpoint, request.cwd), machine)

    def draft_memory(self, question: DraftQuestion) -> DraftMemory | None:
        """The MTP head's bytes, whole on one device (:func:`mtp_audit.engines.llamacpp.memory.draft_memory`, MTP612);
        ``question.checkpoint``: the GGUF model entry that holds the head."""
        from mtp_audit.engines.llamacpp.memory import draft_memory

        return draft_memory(question)

    def fp4_verdict(self, question: KernelQuestion) -> Fp4Verdict | None:
        """llama.cpp's MXFP4/NVFP4 GGUF kernels against the machine's GPUs (:func:`mtp_audit.engines.llamacpp.fp4.fp4_verdict`,
        rule MTP611); ``question.options["fp4_types"]``: the GGUF's FP4 tensor types."""
        from mtp_audit.engines.llamacpp.fp4 import fp4_verdict

        return fp4_verdict(question)


def local_files_only(checkpoint: Any, cwd: Path) -> Any:
    """``checkpoint`` for ``-m`` / ``-md`` values, which llama.cpp opens as local files, never as a hub repo id to
    fetch (``-hf`` is the flag that downloads). A file that is not on this machine (a command written for its server)
    is missing evidence: no report and a blocking gap, and the questions that need no GGUF are still answered. A
    ``.gguf`` file whose header llama.cpp refuses is the launch's defect, not bad input to the audit: MTP013 (the
    load fails, ggml/src/gguf.cpp ``gguf_init_from_file_impl``) with the rest of the launch audited."""
    from mtp_audit.checkpoint.gguf_audit import audit_gguf_path

    def audit(text: str, flag: str) -> Any:
        path = Path(text).expanduser()
        full = path if path.is_absolute() else cwd / path
        if not full.exists():
            return None, Gap(ANALYZER, f"{flag} {text}: no such file on this machine, so whether the GGUF carries an MTP head "
                                       "could not be told; audit where the file is, or copy it here", text, True)
        if full.is_file() and full.name.endswith(".gguf"):
            return audit_gguf_path(full, text, as_model=True), None
        return checkpoint(text, flag)

    return audit


def build_from_dumps(dumps: Sequence[Path]) -> BuildInfo | None:
    """The first build named in the dumps' text (``llama-server --version`` output pasted into a file).

    Raises:
        InputError: an unreadable dump.
    """
    from mtp_audit.sources.bounded import read_bytes_bounded

    for dump in dumps:
        text = read_bytes_bounded(Path(dump), MAX_DUMP_BYTES, display=str(dump)).decode("utf-8", errors="replace")
        try:
            return parse_build(text)
        except InputError:
            continue
    return None


def evaluate_launch(toks: Sequence[str], info: BuildInfo | None, checkpoint: Any,
                    machine: Callable[[], MachineAnswer | None] | None = None) -> EngineOutcome:
    """Evaluate one llama.cpp command: ``checkpoint(path_text, flag) -> (report, gap)`` audits ``-m`` / ``-md``;
    ``machine()`` gives the preflight facts, read only when the model GGUF holds MXFP4/NVFP4 tensors (the FP4 verdict
    of :meth:`LlamaCppEngine.fp4_verdict`); ``None``: the machine is not read.

    Raises:
        InputError: not a llama.cpp command, a flag without its value, a model path that does not exist, a
            malformed GGUF.
    """
    cmd = parse_command(toks)
    gaps: list[Gap] = []
    reports: list[Report] = []
    model = _view(cmd.model, cmd.flags.get("model", "-m"), checkpoint, reports, gaps)
    draft = _view(cmd.draft_model, cmd.flags.get("draft_model", "-md"), checkpoint, reports, gaps)
    if cmd.model is None:
        what = f"-hf {cmd.hf_repo}" if cmd.hf_repo else "no -m"
        gaps.append(Gap(ANALYZER, f"{what}: the model GGUF is not audited (llama.cpp downloads it); whether it carries "
                                  "an MTP head could not be told", None, blocking=cmd.wants_mtp()))
    if info is None:  # which builds have a draft-mtp graph (and which crash) decides an MTP launch: never assume one
        gaps.append(Gap(ANALYZER, "llama.cpp build unknown (give --llamacpp-build N or paste llama-server --version "
                                  "with --env-dump): whether this build has the MTP graph and the fixes the checks name could "
                                  "not be told; build-specific checks are shown for the newest known build", None,
                        blocking=cmd.wants_mtp()))
    fp4 = _fp4(model, machine, gaps)
    ev = evaluate(cmd, info, model, draft, gaps)
    _head_memory(cmd, model, draft, ev.findings)
    facts = dict(ev.facts)
    if fp4 is not None:
        ev.findings.extend(fp4.findings)
        facts["fp4"] = fp4.to_dict()
    return EngineOutcome(name=shell_join(cmd.toks), version=f"b{info.build}" if info and info.build else None,
                         findings=ev.findings, gaps=ev.gaps, reports=[_without(r, SAID_BY_LAUNCH) for r in reports],
                         facts=facts)


def _head_memory(cmd: Any, model: GGUFView | None, draft: GGUFView | None, findings: list[Any]) -> None:
    """MTP612 when the command drafts with an MTP head: for the first of ``-m`` / ``-md`` that carries nextn blocks."""
    from mtp_audit.engines.llamacpp.memory import head_bytes, memory_finding

    if not cmd.wants_mtp() or any(f.severity.label == "error" for f in findings):
        return
    view = next((v for v in (model, draft) if v is not None and head_bytes(v.entry) > 0), None)
    found = memory_finding(view.entry, view.flag, cmd.split_mode) if view is not None else None
    if found is not None:
        findings.append(found)


def _fp4(model: GGUFView | None, machine: Callable[[], MachineAnswer | None] | None, gaps: list[Gap]) -> Any:
    """The FP4 verdict when the model GGUF holds MXFP4/NVFP4 tensors and the machine can be read (else ``None``), and
    the gap that says how far the machine was checked."""
    from mtp_audit.engines.base import KernelQuestion
    from mtp_audit.engines.llamacpp.fp4 import fp4_tensor_types

    types = fp4_tensor_types(model.entry if model is not None else None)
    if not types or machine is None:
        gaps.append(Gap(ANALYZER, "the machine is not checked for llama.cpp (its GPU back-ends are not in the preflight "
                                  "matrix)", None, blocking=False))
        return None
    gaps.append(Gap(ANALYZER, "the machine is checked for llama.cpp only for the FP4 kernels of the GGUF's "
                              + "/".join(sorted(types)) + " tensors (its other GPU back-ends are not in the preflight matrix)",
                    None, blocking=False))
    return LlamaCppEngine().fp4_verdict(KernelQuestion(None, machine(), {"fp4_types": types}))


def _without(report: Report, rule_ids: frozenset[str]) -> Report:
    """``report`` without the findings of ``rule_ids``."""
    return dataclasses.replace(report, findings=tuple(f for f in report.findings if f.rule_id not in rule_ids))


def _view(text: str | None, flag: str, checkpoint: Any, reports: list[Report], gaps: list[Gap]) -> GGUFView | None:
    if text is None:
        return None
    report, gap = checkpoint(text, flag)
    if gap is not None:
        gaps.append(gap)
    if report is None:
        return GGUFView(flag, None)
    reports.append(report)
    entry = _entry(report)
    if entry is None and any(f.rule_id == "MTP013" for f in report.findings):  # the load fails: the error says so
        gaps.append(Gap(ANALYZER, f"{flag} {text}: llama.cpp refuses its header (MTP013), so whether it carries an MTP head "
                                  "could not be told", text, blocking=True))
    elif entry is None:
        gaps.append(Gap(ANALYZER, f"{flag} {text} is not a GGUF model (llama.cpp loads GGUF only)", text, blocking=True))
    return GGUFView(flag, entry)


def _entry(report: Report) -> GgufModel | None:
    answer = checkpoint_answer(report)
    return answer.gguf_models[0] if answer is not None and answer.gguf_models else None
