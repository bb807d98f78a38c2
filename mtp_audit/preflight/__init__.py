"""``mtp-audit preflight``: can this machine's GPU stack run the FP4 kernels of the intended launch?

Public API: :func:`preflight` -> :class:`mtp_audit.report.Report`. Facts in
``report.facts["preflight"]``: ``summary`` (headline scalars), ``verdicts`` (per GPU: capable /
not capable / unknown, with reasons), ``machine`` (the collected :class:`MachineFacts`),
``launch``, ``checkpoint``, ``resolved`` (effective backends), ``probe``, ``engine`` (which engine the verdict is
for and why: :class:`mtp_audit.preflight.engine.EngineChoice`).
Research: ``../shared/research/blackwell_fp4.md``.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtp_audit.deprecation import ENGINE_FACT_KEYWORDS, folded_keywords, renamed_keywords
from mtp_audit.report import Report
from mtp_audit.report import questions as Q

if TYPE_CHECKING:
    from mtp_audit.preflight.facts import MachineFacts

__all__ = ["audit_machine", "preflight", "load_facts_file"]

#: A verdict reason that is an error finding's message (``"MTP209: sglang 0.5.9 pins ..."``).
_RULE_REASON = re.compile(r"MTP\d{3}: ")


def load_facts_file(path: str | Path):  # -> MachineFacts
    """Read a stored facts JSON (``--save-facts`` output); ``path`` is a ``str`` or a ``Path``.

    Raises:
        InputError: unreadable, not JSON, or not a facts document.
    """
    from mtp_audit.errors import InputError
    from mtp_audit.preflight.facts import MachineFacts
    from mtp_audit.sources.bounded import read_json_bounded

    path = Path(path)
    data = read_json_bounded(path, limit=64 * 1024 * 1024, display=str(path))
    try:
        return MachineFacts.from_dict(data)
    except ValueError as exc:
        raise InputError(str(path), str(exc)) from None


def _answer(vs: list[dict[str, Any]], verdict: str, findings: Sequence[Any], an: Any, engine: str = "",
            unexamined: str = "", partial: bool = False) -> list[str]:
    """The one-line answer the text report opens with (``facts["preflight"]["answer"]``): the GPUs,
    whether they can run native FP4 (on ``engine``, e.g. ``"vLLM 0.20.0"``, when given), why, and the error
    findings to fix. ``unexamined``: why no GPU was listed when the machine was not read (``--no-machine``);
    ``partial``: the GPU list is a lower bound (a cut nvidia-smi table), said "at least N"."""
    groups = an.verdict_groups(vs)
    if not groups:
        return [f"could not tell whether this machine can run native FP4: no GPU listed{unexamined}"]
    least = "at least " if partial else ""
    if len(groups) == 1:
        (name, cc, _), members = groups[0]
        desc = (f"GPU {members[0]['gpu']} ({name or '?'}, compute capability {cc or '?'})" if len(members) == 1 and not partial
                else f"{least}{len(members)} x {name or '?'} (compute capability {cc or '?'})")
    else:
        # kinds are GPU models (name and compute capability), not per-GPU verdicts: eight B200s of two verdicts are one kind
        models = list(dict.fromkeys((name, cc) for (name, cc, _), _m in groups))
        desc = (f"{least}{len(vs)} x {models[0][0] or '?'} (compute capability {models[0][1] or '?'})" if len(models) == 1
                else f"{least}{len(vs)} GPUs of {len(models)} kinds")
    errors = sorted({f.rule_id for f in findings if f.severity.label == "error"})
    reason = next((r for v in vs if v["native_fp4"] == verdict for r in v["reasons"][:1] if not _RULE_REASON.match(r)), "")
    tail = f" ({', '.join(errors)})" if errors else ""
    on = f" on {engine}" if engine else ""
    if verdict == an.CAPABLE:
        stop = (f"; but {', '.join(errors)} stop{'s' if len(errors) == 1 else ''} this launch" if errors
                else "; no blocking problem found in the stack")
        return [f"{desc} can run native FP4{on}{stop}"]
    if verdict == an.NOT_CAPABLE:
        cost = ("; it runs weight-only instead (MTP201)" if not errors and any(f.rule_id == "MTP201" for f in findings) else "")
        return [f"{desc} cannot run native FP4{on}" + (f": {reason}" if reason else "") + tail + cost]
    return [f"could not tell whether {desc} can run native FP4{on}" + (f": {reason}" if reason else "") + tail]


@renamed_keywords({"facts": "machine_facts", "env_dump": "env_dumps", "use_sglang_analyzer": "use_engine_analyzer"})
@folded_keywords("engine_facts", ENGINE_FACT_KEYWORDS)
def preflight(
    *,
    env_dumps: Sequence[str | Path] | str | Path = (),
    facts_file: str | Path | None = None,
    machine_facts: Any = None,
    launch: Sequence[str] | None = None,
    probe: bool = False,
    import_torch: bool = False,
    timeout: float = 10.0,
    cwd: Path | None = None,
    use_engine_analyzer: bool = True,
    probe_result: Any = None,
    engine_facts: Mapping[str, Mapping[str, Any] | None] | None = None,
    engine: str | None = None,
    use_nvml: bool | None = None,
    no_machine: bool = False,
) -> Report:
    """Run the preflight and return its report.

    Exactly one machine source is used: ``machine_facts`` (a MachineFacts), ``facts_file``, ``env_dumps``
    (merged in order), or else the live machine; with ``no_machine`` never the live machine. The old names still work,
    with a DeprecationWarning: ``facts`` (for ``machine_facts``), ``use_sglang_analyzer`` (``use_engine_analyzer``),
    ``sglang_facts=F`` (``engine_facts={"sglang": F}``) and ``vllm_version=V`` (``engine_facts={"vllm": {"version": V}}``).

    Args:
        env_dumps: pasted environment dumps (sglang check_env, torch/vllm/flashinfer collect_env, nvidia-smi),
            as ``str`` or ``Path``; a single path is accepted as one dump.
        facts_file: a stored facts JSON to replay (``str`` or ``Path``).
        machine_facts: an already-built :class:`~mtp_audit.preflight.facts.MachineFacts`.
        launch: tokens of the intended launch command (after ``--``), or ``None``.
        probe: run the tiny FP4 GEMM probe (live machine only; needs torch and a GPU).
        import_torch: import torch (in a child process) for its arch list.
        timeout: seconds allowed per external command (nvidia-smi, nvcc).
        cwd: folder that relative paths in ``launch`` (``--model-path``) are resolved against.
        use_engine_analyzer: on the live machine, ask the installed engine's own analyzer what the launch's options
            mean, when the engine has one (SGLang: :func:`mtp_audit.engines.sglang.audit_sglang`;
            :meth:`~mtp_audit.preflight.kernels.KernelChecks.flag_semantics`).
        probe_result: a recorded :class:`~mtp_audit.preflight.probe.ProbeResult` to evaluate (rule examples, replays).
        engine_facts: engine id -> what its analyzer says of the release the launch runs (not necessarily installed
            here; ``None`` ignored). The entry of the engine the verdict is for gives the option semantics and the
            version, whatever the machine source (SGLang: ``audit_sglang(...).facts["sglang"]``; vLLM:
            ``{"version": ...}`` of ``--vllm TARGET``). ``mtp-audit launch`` passes it.
        engine: a registered engine id or alias (``"sglang"``, ``"vllm"``, ``"trtllm"``, ...; ``--engine``): whose
            kernel checks the verdict applies (its :meth:`~mtp_audit.engines.base.Engine.kernels` hook). It wins over the
            engine detected from the launch command or the machine facts (a disagreement is evidence on MTP228);
            ``None``: detected (:mod:`mtp_audit.preflight.engine`), SGLang when nothing names one.
        use_nvml: live machine only: ``False`` reads the GPUs with nvidia-smi even when NVML is importable;
            ``None`` follows ``MTP_AUDIT_NO_NVML`` (:func:`mtp_audit.preflight.collect.collect_gpus`).
        no_machine: ``--no-machine``: never read this machine (not the serving one): ``env_dumps`` or nothing; the gaps
            of facts left unknown are notes (:mod:`mtp_audit.preflight.nomachine`). Not with stored facts or ``probe``.

    Raises:
        InputError: an unreadable/empty/binary/unrecognised dump, env dumps of different machines (GPU list or
            driver version disagree), a bad facts file, an empty launch, a launch command that is neither
            SGLang (python -m sglang.launch_server … / sglang serve …) nor vLLM (vllm serve … /
            python -m vllm.entrypoints.openai.api_server …; one another engine starts is named), an ``engine`` no registered engine has, or ``no_machine``
            with stored facts or ``probe``.
    """
    from mtp_audit.preflight import analyze as an
    from mtp_audit.preflight import engine as eng

    engine = eng.canonical(engine) if engine is not None else None
    dumps = [Path(p) for p in ([env_dumps] if isinstance(env_dumps, (str, Path)) else env_dumps)]
    facts_file = Path(facts_file) if facts_file is not None else None
    parsed_launch = _checked_launch(engine, launch)
    machine, target, dump_formats = _machine_source(machine_facts, facts_file, dumps, import_torch=import_torch,
                                                    timeout=timeout, use_nvml=use_nvml, no_machine=no_machine, probe=probe)
    machine = _with_platform(machine, parsed_launch)
    launch_src = f"launch command '{' '.join(parsed_launch.argv[:3])}'" if parsed_launch is not None else ""
    choice = eng.choose_engine(engine, parsed_launch.engine if parsed_launch is not None else None, launch_src,
                               eng.machine_hint(machine, dump_formats))
    release = engine_facts.get(choice.engine) if engine_facts else None
    ctx = an.Context(facts=machine, engine=choice.engine, kernels=_kernels_of(choice.engine),
                     engine_facts=dict(release) if release is not None else None)
    # an assumed engine is said on the verdict line ("on SGLang (assumed)") and in MTP228's evidence, not as a gap
    gaps = _attach_launch(ctx, parsed_launch, cwd)
    flag_source = _flag_semantics(ctx, launch is not None and use_engine_analyzer)
    _attach_probe(ctx, gaps, probe, probe_result)
    an.analyze(ctx)
    return _scoped(_report(ctx, choice, gaps, target, flag_source), no_machine, parsed_launch is not None, _answer_why_open(ctx))


def _answer_why_open(ctx: Any) -> str | None:
    """Why the answer's "could not tell" is open (:attr:`mtp_audit.preflight.facts.Fact.why_open`): that of the GPU
    list when no GPU is listed, else that of the first GPU whose verdict is unknown (the one the answer names:
    :func:`_answer`); ``None`` when the verdict is known or its facts were looked for. After :func:`_report`."""
    if not ctx.gpus:
        return ctx.facts.gpu_list.why_open  # type: ignore[no-any-return]
    return next(iter(ctx.unknown_verdicts.values()), None)


def _scoped(report: Report, no_machine: bool, has_launch: bool = True, answer_why_open: str | None = None) -> Report:
    """``report`` with its gaps about facts ``--no-machine`` left unexamined as notes
    (:func:`mtp_audit.preflight.nomachine.scope_report`) and its answer saying "not examined" where it said "could
    not tell"; unchanged without ``no_machine``. Without a launch command the native FP4 verdict is the only question
    asked: when it is unknown its gaps (question ``FP4``) stay blocking (nothing examined is "could not tell", exit 3,
    never a pass). ``answer_why_open``: why the answer's first line is open (:func:`_answer_why_open`)."""
    import dataclasses

    from mtp_audit.preflight.nomachine import machine_note

    if not no_machine:
        return report
    gaps = tuple(g if not has_launch and g.question == Q.FP4 else machine_note(g)
                 for g in report.gaps)
    pf = report.facts.get("preflight")
    if has_launch and isinstance(pf, dict) and pf.get("answer") and answer_why_open == Q.NOT_EXAMINED:
        first = pf["answer"][0].replace("could not tell whether", "not examined whether", 1)
        pf = {**pf, "answer": [first, *pf["answer"][1:]]}
        return dataclasses.replace(report, gaps=gaps, facts={**report.facts, "preflight": pf})
    return dataclasses.replace(report, gaps=gaps) if gaps != report.gaps else report


def _check_no_machine(facts: Any, facts_file: Path | None, probe: bool) -> None:
    """``--no-machine`` with another machine source than env dumps, or with ``--probe``, is a usage error.

    Raises:
        InputError: naming the option that conflicts.
    """
    from mtp_audit.errors import InputError

    if facts is not None or facts_file is not None:
        raise InputError("--no-machine", "use either --no-machine or --facts (stored facts describe a machine)")
    if probe:
        raise InputError("--no-machine", "--probe runs on this machine; drop one of them")


def _checked_launch(engine: str | None, launch: Sequence[str] | None) -> Any:
    """The parsed launch command (``None`` without one), checked with ``engine`` before any machine fact is
    collected: a command that starts no known engine, or an unknown ``--engine``, is the user's mistake.

    Raises:
        InputError: an ``engine`` other than the known ones, or a command that is neither SGLang nor vLLM.
    """
    from mtp_audit.errors import InputError
    from mtp_audit.preflight import engine as eng
    from mtp_audit.preflight.launch import parse_launch

    if engine is not None and engine not in eng.known_engines():
        raise InputError("--engine", f"expected one of {', '.join(eng.known_engines())}, got {engine!r}")
    if launch is None:
        return None
    parsed_launch = parse_launch(list(launch))
    if not parsed_launch.checked:
        raise InputError("launch command", _unsupported_launch(parsed_launch.argv))
    return parsed_launch


def _unsupported_launch(argv: Sequence[str]) -> str:
    """Why the preflight refuses a launch command that starts neither SGLang nor vLLM, in one line: the engine it
    starts when a registered engine recognises it (its :meth:`~mtp_audit.engines.base.Engine.entry`), what the
    preflight reads, and how to ask for that engine's kernel checks instead (``--engine ID`` without the command)."""
    from mtp_audit.engines.registry import engines

    got = " ".join(argv[:3])
    supported = ("the preflight reads SGLang and vLLM launch commands (python -m sglang.launch_server …, sglang serve …, "
                 "vllm serve … or python -m vllm.entrypoints.openai.api_server …)")
    other = next((e for e in engines() if e.kernels() is None and e.entry(list(argv)) is not None), None)
    if other is None:
        return ("not an SGLang or vLLM launch command: expected python -m sglang.launch_server …, sglang serve …, "
                f"vllm serve … or python -m vllm.entrypoints.openai.api_server … (got '{got}')")
    return (f"'{got}' starts {other.label}: {supported}; for {other.label}'s FP4 kernel checks drop the command and pass "
            f"--engine {other.name}, and audit the command with 'mtp-audit launch'")


def _with_platform(machine: Any, parsed_launch: Any) -> Any:
    """The machine with its platform decided (:func:`mtp_audit.preflight.platforms.with_platform`); where no machine
    fact says it, a launch ``--device npu`` / ``--device hip`` does (its provenance names the launch)."""
    from dataclasses import replace

    from mtp_audit.preflight import platforms as pf
    from mtp_audit.preflight.facts import Fact

    machine = pf.with_platform(machine)
    dev = (parsed_launch.get("--device") or "").lower() if parsed_launch is not None else ""
    if not machine.accelerator.present and pf.DEVICE_FLAG.get(dev) in (pf.ROCM, pf.CANN, pf.XPU, pf.HPU):
        machine = pf.with_platform(replace(machine, accelerator=Fact.of(pf.DEVICE_FLAG[dev], f"launch command --device {dev}")))
    return machine


def _machine_source(facts: Any, facts_file: Path | None, env_dumps: list[Path], *, import_torch: bool, timeout: float,
                    use_nvml: bool | None, no_machine: bool = False,
                    probe: bool = False) -> tuple[Any, str, list[tuple[str, tuple[str, ...]]]]:
    """``(MachineFacts, target label, [(dump file name, formats found)])`` of the one machine source used:
    ``facts``, ``facts_file``, ``env_dumps`` or else the live machine; with ``no_machine`` the dumps with what they
    do not state marked unexamined, or no machine at all (:mod:`mtp_audit.preflight.nomachine`).

    Raises:
        InputError: ``no_machine`` with ``facts`` / ``facts_file`` or ``probe``.
    """
    from mtp_audit.preflight import nomachine

    if no_machine:
        _check_no_machine(facts, facts_file, probe)
    if facts is not None:
        return facts, f"facts ({facts.origin})", []
    if facts_file is not None:
        return load_facts_file(facts_file), f"facts file {facts_file.name}", []
    if env_dumps:
        machine, target, formats = _machine_from_dumps(env_dumps)
        return (nomachine.only_given(machine), target + " (--no-machine)", formats) if no_machine else (machine, target, formats)
    if no_machine:
        return nomachine.unexamined_machine(), "no machine (--no-machine: not the serving machine)", []
    from mtp_audit.preflight.collect import collect_live

    return collect_live(import_torch=import_torch, timeout=timeout, use_nvml=use_nvml), "local machine", []


def _machine_from_dumps(env_dumps: list[Path]) -> tuple[Any, str, list[tuple[str, tuple[str, ...]]]]:
    """The dumps read, parsed and merged in order (dumps of two machines are refused); the engine their
    formats name is kept in the facts so that ``--save-facts`` replays it.

    Raises:
        InputError: an unreadable or unrecognised dump, dumps of different machines, or standard input ('-') given
            more than once.
    """
    from mtp_audit.errors import InputError
    from mtp_audit.preflight import engine as eng
    from mtp_audit.preflight.envdump import detect_formats, parse_dump, read_dump

    if sum(str(p) == "-" for p in env_dumps) > 1:
        raise InputError("--env-dump -", "given more than once: standard input can be read only once")
    dump_formats: list[tuple[str, tuple[str, ...]]] = []
    machine: MachineFacts | None = None
    seen: list[tuple[Path, Any]] = []
    for p in env_dumps:
        text = read_dump(p)
        dump_formats.append((p.name, detect_formats(text)))
        try:
            m = parse_dump(text, display=str(p))
        except ValueError as exc:  # int() of a number of more than 4300 digits, wherever the dump has one
            if "digits" not in str(exc):
                raise
            raise InputError(str(p), "holds a number of more than 4300 digits where a count or index belongs; "
                                     "not an environment dump") from None
        # dumps of two machines merged silently would describe a machine that does not exist
        for q, earlier in seen:
            why = earlier.conflict_with(m)
            if why:
                raise InputError(f"--env-dump {q} + {p}",
                                 f"the dumps come from different machines ({why}); pass dumps of one machine only")
        seen.append((p, m))
        machine = m if machine is None else machine.merged_with(m)
    assert machine is not None, "called with at least one dump (preflight's machine source checks env_dumps)"
    target = "env dump " + ", ".join(p.name for p in env_dumps)
    if not machine.engine.present:
        hint = eng.machine_hint(None, dump_formats)
        if hint is not None:
            from dataclasses import replace

            from mtp_audit.preflight.facts import Fact

            machine = replace(machine, engine=Fact.of(hint[0], hint[1]))
    return machine, target, dump_formats


def _attach_launch(ctx: Any, parsed_launch: Any, cwd: Path | None) -> list[Any]:
    """Put the launch and its checkpoint's quantization (a local ``--model-path`` / model folder) on ``ctx``;
    returns the gaps (a folder that is not local, a quantization that could not be read)."""
    from mtp_audit.preflight.launch import read_checkpoint_quant
    from mtp_audit.report import Gap

    gaps: list[Gap] = []
    if parsed_launch is None:
        return gaps
    ctx.launch = parsed_launch
    mp = ctx.launch.get("--model-path")
    mlabel = ctx.launch.model_label
    if mp:
        folder = (cwd or Path.cwd()) / mp
        if folder.is_dir():
            ctx.quant = read_checkpoint_quant(folder)
            if ctx.quant.problem and not ctx.quant.algo:
                gaps.append(Gap("preflight", f"{mlabel} {mp}: {ctx.quant.problem}", mp, False, Q.FP4))
        else:
            gaps.append(Gap("preflight", f"{mlabel} {mp} is not a local folder; checkpoint quantization taken from --quantization only", None, False, Q.FP4))
    return gaps


def _kernels_of(engine: str) -> Any:
    """The FP4 kernel checks of the engine called ``engine`` (its :meth:`~mtp_audit.engines.base.Engine.kernels`
    hook), found through the engine registry; the defaults (nothing to add) for an engine without any."""
    from mtp_audit.engines.registry import engine_named
    from mtp_audit.preflight.kernels import KernelChecks

    return engine_named(engine).kernels() or KernelChecks()


def _flag_semantics(ctx: Any, ask_installed: bool) -> str:
    """Where the flag semantics come from (the summary's ``flag_semantics``): the capability matrix, or what the
    engine's own analyzer says of the release (``ctx.engine_facts`` given, or the installed engine analysed on the
    live machine when ``ask_installed``): :meth:`mtp_audit.preflight.kernels.KernelChecks.flag_semantics`."""
    from mtp_audit.preflight import matrix as mx

    return ctx.kernels.flag_semantics(ctx, ctx.engine_facts, ask_installed, f"capability matrix v{mx.load()['matrix_version']}")


def _attach_probe(ctx: Any, gaps: list[Any], probe: bool, probe_result: Any) -> None:
    """Run the FP4 GEMM probe (live machine only; a gap otherwise) or take the recorded ``probe_result``."""
    from mtp_audit.report import Gap

    if probe:
        from mtp_audit.preflight.probe import run_probe

        if ctx.facts.origin != "live":
            gaps.append(Gap("preflight", "--probe needs the live machine; ignored with --env-dump / --facts", None, False, Q.FP4))
        else:
            flag = ctx.kernels.probe_gemm_flag
            gemm = ctx.launch.get(flag) if ctx.launch and flag else None
            ctx.probe = run_probe(gemm if gemm and gemm != "auto" else None)
    if probe_result is not None:
        ctx.probe = probe_result


def _verdict_findings(ctx: Any, vs: list[dict[str, Any]], engine_line: str, engine_evidence: tuple[Any, ...], gaps: list[Any]) -> None:
    """One MTP228 finding per group of GPUs with the same name, compute capability and verdict."""
    from mtp_audit.preflight import analyze as an
    from mtp_audit.preflight.rules import rule_by_id
    from mtp_audit.report import Location

    for key, group in an.verdict_groups(vs):
        name, cc, native = key
        arch = group[0].get("arch")
        what = f"compute capability {cc or '?'}" if not group[0].get("platform") else f"{arch or 'architecture unknown'}"
        reasons = list(dict.fromkeys(r for v in group for r in v["reasons"][:1]))
        errors = sorted({r.split(":", 1)[0] for v in group for r in v["reasons"] if r[:3] == "MTP"})
        idx = an.index_ranges([v["gpu"] for v in group])
        label = f"GPU {idx}" if len(group) == 1 else f"GPUs {idx}"
        # the error findings are reported on their own lines: the verdict names them, it does not repeat them
        why = [r for r in reasons if not _RULE_REASON.match(r)] + ([f"blocked by {', '.join(errors)} (see those findings)"] if errors else [])
        ctx.findings.append(rule_by_id("MTP228").finding(
            f"{label} ({name or '?'}, {what}): native FP4 {native} on {engine_line} — " + "; ".join(why),
            Location(symbol=ctx.device(idx)), evidence=engine_evidence,
            remediation="" if native == an.CAPABLE else
            (f"resolve {', '.join(errors)} (error findings above)" if errors else "") + ("; " if errors and ctx.gaps + gaps else "")
            + ("see the gaps below" if ctx.gaps + gaps else "")))


def _summary(ctx: Any, choice: Any, vs: list[dict[str, Any]], verdict: str, flag_source: str) -> dict[str, Any]:
    """``facts["preflight"]["summary"]``: the headline scalars."""
    machine = ctx.facts
    return {
        "verdict": verdict,
        "platform": machine.accelerator.value,
        "engine": choice.engine,
        "engine_source": f"{choice.how}: {choice.source}",
        "gpus": len(machine.gpus),
        "compute_capabilities": sorted({v["compute_capability"] for v in vs if v["compute_capability"]}),
        "torch": machine.torch_version.value,
        "torch_cuda": machine.torch_cuda.value,
        "driver": machine.driver_version.value,
        **ctx.kernels.summary(ctx),
        "flag_semantics": flag_source,
        "origin": machine.origin,
    }


def _unexamined(machine: Any) -> str:
    """``" (not examined: not the serving machine)"`` when ``--no-machine`` left the GPU list unknown (its fact is
    :attr:`~mtp_audit.preflight.facts.Fact.unexamined`), the conflict when the dump named GPUs without saying which the
    machine has (``" (conflict: ...)"``), else ``""``."""
    from mtp_audit.preflight.nomachine import NOT_SERVING_MACHINE

    if machine.gpu_list.why_open:
        return f" ({NOT_SERVING_MACHINE})"
    missing = str(machine.gpu_list.missing or "")
    return f" ({missing})" if missing.startswith("conflict: ") else ""


def _report(ctx: Any, choice: Any, gaps: list[Any], target: str, flag_source: str) -> Report:
    """The verdicts, their MTP228 findings, the gaps and the facts of an analysed ``ctx`` as a :class:`Report`."""
    from mtp_audit.preflight import analyze as an
    from mtp_audit.preflight import matrix as mx
    from mtp_audit.preflight.rules import preflight_rules
    from mtp_audit.report import Evidence, Gap

    ver = ctx.engine_version
    # the verdict line names the engine (and its version); where the engine came from is the MTP228 evidence
    engine_line = (f"{choice.name} {ver}" if ver else f"{choice.name} (version unknown)") + (" (assumed)" if choice.how == "assumed" else "")
    engine_evidence = tuple([Evidence("engine", f"{choice.name} ({choice.how}: {choice.source})")]
                            + [Evidence("engine conflict", c) for c in choice.conflicts])
    from mtp_audit.preflight import vendors

    vs = an.verdicts(ctx)
    verdict = an.overall(vs)
    unexamined = _unexamined(ctx.facts)
    if not vs and vendors.platform(ctx) in (*vendors.NOT_APPLICABLE_PLATFORMS, "cpu"):
        # no device the FP4 checks apply to: not an unknown, unless a launch's FP4 weights were left open (CPU only)
        verdict = an.UNKNOWN if vendors.open_fp4_launch(ctx) else an.NOT_APPLICABLE
    _verdict_findings(ctx, vs, engine_line, engine_evidence, gaps)
    if verdict == an.UNKNOWN and not vendors.unknowns_have_gaps(ctx, vs):  # those gaps say why already
        why = "no GPU listed" + unexamined if not vs else "; ".join(dict.fromkeys(
            r for v in vs if v["native_fp4"] == an.UNKNOWN for r in v["reasons"][:1]))  # one reason said once
        why_open = ctx.facts.gpu_list.why_open if not vs else next((w for w in ctx.unknown_verdicts.values() if w), None)
        gaps.append(Gap("preflight", f"native FP4 verdict unknown: {why}", None, True, Q.FP4, why_open))
    # once the verdict is known, its blocking gaps are answered; a GPU list that is missing stays open
    ctx.gaps = [g for g in ctx.gaps if not (g.blocking and verdict != an.UNKNOWN and g.question != Q.GPU_COUNT)] + gaps
    answer = (vendors.answer(ctx, vs, "" if choice.how == "assumed" else engine_line)
              or _answer(vs, verdict, ctx.findings, an, "" if choice.how == "assumed" else engine_line, unexamined,
                         ctx.facts.gpu_list_partial))
    return Report.build(
        "preflight",
        target,
        findings=ctx.findings,
        gaps=ctx.gaps,
        facts={
            "summary": _summary(ctx, choice, vs, verdict, flag_source),
            "answer": answer,
            "verdicts": vs,
            "machine": ctx.facts.to_dict(),
            "launch": ctx.launch.to_dict() if ctx.launch else None,
            "checkpoint": ctx.quant.to_dict() if ctx.quant else None,
            "resolved": ctx.resolved,
            "probe": ctx.probe.to_dict() if ctx.probe else None,
            "matrix_version": mx.load()["matrix_version"],
            "engine": choice.to_dict(),
        },
        rule_ids=[r.id for r in preflight_rules()],
    )


#: The same function under the name the other audits share (``audit_checkpoint``, ``audit_launch``, ...).
audit_machine = preflight


class _CallableModule(types.ModuleType):
    """This package calls :func:`preflight` when called: once ``mtp_audit.preflight`` is imported as a package
    (``import mtp_audit.preflight.envdump``), the attribute ``mtp_audit.preflight`` is the package, not the
    function; calling it still runs the preflight, so ``mtp_audit.preflight(env_dumps=...)`` always works, with
    the arguments checked and the call run as one bounded run like every top-level function
    (:func:`mtp_audit.api.public`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        from mtp_audit.api import public

        return public("preflight", preflight)(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
