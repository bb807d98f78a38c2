"""What a llama.cpp launch will do with MTP: the command (:mod:`.command`), the GGUF facts of ``-m`` and ``-md``
(the checkpoint analyzer's ``facts["checkpoint"]["gguf"]``), the build (:mod:`.tables`) -> findings MTP600-MTP612,
gaps, the verdict and a corrected command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.checkpoint.typed_gguf import GgufModel
from mtp_audit.engines.llamacpp import rules as R
from mtp_audit.engines.llamacpp import tables as T
from mtp_audit.engines.llamacpp.command import (
    OPTION_FLAGS,
    BuildInfo,
    LlamaCommand,
    parse_command,
    shell_join,
    split_types,
)
from mtp_audit.report import Evidence, Finding, Gap, Location

ANALYZER = "launch"  # gaps sit in the launch report (the rules are registered under R.ANALYZER)


@dataclass
class GGUFView:
    """The facts of one GGUF model the command names (the checkpoint answer's
    :class:`~mtp_audit.checkpoint.typed_gguf.GgufModel`).

    Attributes:
        flag: the flag that named it (``-m``, ``-md``).
        entry: the model (None when the file could not be audited).
    """

    flag: str
    entry: GgufModel | None

    @property
    def arch(self) -> str | None:
        """``general.architecture`` of the model."""
        return self.entry.architecture if self.entry else None

    @property
    def heads(self) -> int:
        """Number of nextn blocks present (a Gemma-4 assistant drafter counts as one head)."""
        if not self.entry:
            return 0
        return len(self.entry.blocks) or (1 if self.entry.drafter else 0)

    @property
    def declared(self) -> int | None:
        """``{arch}.nextn_predict_layers`` (None when absent)."""
        return self.entry.nextn_predict_layers if self.entry else None

    def nvfp4_scales(self) -> list[str]:
        """``blk.N.nextn.PART`` NVFP4 weights with scale siblings."""
        out = []
        for block in self.entry.blocks if self.entry else ():
            out += [f"blk.{block.block}.nextn.{p}" for p, t in block.parts.items() if t == "NVFP4" and block.scales.get(p)]
        return out


@dataclass
class Evaluation:
    """One launch's evaluation.

    Attributes:
        findings, gaps: what the checks found and could not tell.
        fixes: ``(description, new tokens)`` in the order applied to the corrected command.
        facts: ``facts["llamacpp"]`` / ``facts["launch"]`` document.
    """

    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    corrected: list[str] | None = None
    facts: dict[str, Any] = field(default_factory=dict)


def _loc(cmd: LlamaCommand, name: str | None) -> Location:
    return Location(path=None, symbol=cmd.flags.get(name or "", name) if name else cmd.program)


def evaluate(cmd: LlamaCommand, build: BuildInfo | None, model: GGUFView | None, draft: GGUFView | None,
             gaps: list[Gap], *, recheck: bool = True) -> Evaluation:
    """Run the MTP600-MTP612 checks and build the facts (see the module docstring); a corrected command is
    evaluated once more (``facts["corrected_check"]``: its verdict, whether MTP runs, its findings)."""
    ev = Evaluation(gaps=list(gaps))
    head = _head(model, draft)
    fork = T.FORKS[_fork_name(cmd, build)]
    steps: list[Callable[..., None]] = [_spelling, _head_unused, _no_head, _build_gate, _arch_graph, _parallel,
                                        _n_max, _broken_build, _nvfp4, _split_mode]
    for step in steps:
        step(ev, cmd, build, head, fork, model)
    ev.corrected = _corrected(cmd, ev, fork)
    ev.facts = _facts(cmd, build, model, draft, head, ev, fork)
    if ev.corrected and recheck:
        again = evaluate(parse_command(ev.corrected), build, model, draft, gaps, recheck=False)
        ev.facts["corrected_check"] = {"verdict": again.facts["verdict"], "mtp_runs": again.facts["summary"]["mtp_runs"],
                                       "findings": sorted({f.rule_id for f in again.findings})}
        check = ev.facts["corrected_check"]
        ev.facts["closing"]["lines"].append(
            f"Checked again, the corrected command: {'MTP drafts' if check['mtp_runs'] else 'MTP still does not draft'}, "
            f"verdict {check['verdict']}" + (f" ({', '.join(check['findings'])})" if check["findings"] else "") + ".")
    return ev


def _fork_name(cmd: LlamaCommand, build: BuildInfo | None) -> str:
    """The fork the build names; without a build, ik_llama.cpp when the command uses its ``mtp:key=value`` spelling
    (mainline has no options syntax), else mainline llama.cpp."""
    if build is not None:
        return build.fork
    return "ik_llama.cpp" if any(s.options for s in cmd.spec_types) else "llama.cpp"


def _head(model: GGUFView | None, draft: GGUFView | None) -> GGUFView | None:
    """The GGUF that carries the MTP head: the -md sidecar when it has nextn blocks, else -m."""
    if draft is not None and draft.heads:
        return draft
    if model is not None and model.heads:
        return model
    return None


def _spelling(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
              model: GGUFView | None) -> None:
    for name in cmd.spec_names:
        if name in fork.spec_types or _other_fork_spelling(ev, cmd, name, build, fork):
            continue
        better = fork.mtp_spec_type if name in ("mtp", "draft-mtp") else T.RENAMED_SPEC_TYPES.get(name)
        hint = f"; this fork spells it {better}" if better else ""
        ev.findings.append(R.MTP602.finding(
            f"--spec-type {name} is not a speculative type of {fork.name}{hint}: the server stops at argument parsing",
            _loc(cmd, "spec_type"), evidence=[Evidence("fork", fork.name), Evidence("source", fork.source)]))
        if better:
            ev.fixes.append(f"spec:{name}->{better}")


def _other_fork_spelling(ev: Evaluation, cmd: LlamaCommand, name: str, build: BuildInfo | None, fork: T.Fork) -> bool:
    """With the build unknown, a ``--spec-type`` value that another fork accepts (``mtp``: ik_llama.cpp's spelling,
    mainline's is ``draft-mtp``) may be right: which fork runs is unknown, so whether the server accepts it could not
    be told (a blocking gap naming both spellings), never MTP602. Not when ik_llama.cpp's ``type:key=value`` syntax
    names the fork (:func:`_fork_name`). Returns whether that gap was added."""
    others = [f for f in T.FORKS.values() if f.name != fork.name and name in f.spec_types]
    if build is not None or not others or any(s.options for s in cmd.spec_types):
        return False
    mtp = name in (f.mtp_spec_type for f in T.FORKS.values())
    spellings = "; ".join(f"{f.name} spells it {f.mtp_spec_type}" for f in T.FORKS.values()) if mtp else \
        f"{', '.join(f.name for f in others)} accepts it, {fork.name} does not"
    ev.gaps.append(Gap(ANALYZER, f"--spec-type {name}: {spellings}; the build is unknown, so whether this server accepts it "
                                 "could not be told (give --llamacpp-build N, or ik:N for ik_llama.cpp)", None, blocking=True))
    return True


def _mtp_asked(cmd: LlamaCommand, fork: T.Fork) -> bool:
    return cmd.wants_mtp()


def _head_unused(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
                 model: GGUFView | None) -> None:
    if head is None or head.entry is None or _mtp_asked(cmd, fork):  # a head has nextn blocks, so an entry
        return
    given = (f"--spec-type is {', '.join(cmd.spec_names)}" if cmd.spec_types else
             "there is no --spec-type (--spec-default is an n-gram preset)" if cmd.spec_default else
             "there is no --spec-type (default: none)")
    where = f"{head.entry.name} ({head.flag})"
    ev.findings.append(R.MTP600.finding(
        f"{where} carries {head.heads} MTP head(s), but {given}: the head is loaded and never drafts",
        _loc(cmd, "spec_type" if cmd.spec_types else None),
        remediation=f"add --spec-type {fork.mtp_spec_type}"))
    ev.fixes.append(f"add:{fork.mtp_spec_type}")


def _no_head(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
             model: GGUFView | None) -> None:
    if not _mtp_asked(cmd, fork) or head is not None or model is None or model.entry is None:
        return
    declared = model.declared
    ev.findings.append(R.MTP601.finding(
        f"--spec-type {fork.mtp_spec_type} but {model.entry.name} has no blk.N.nextn.* tensor "
        f"({model.arch}.nextn_predict_layers = {declared if declared is not None else 'absent'}) and no -md MTP GGUF: "
        "the MTP context cannot be built", _loc(cmd, "model")))


def _build_gate(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
                model: GGUFView | None) -> None:
    if build is None or build.fork != "llama.cpp" or not _mtp_asked(cmd, fork) or build.build is None:
        return
    if build.build < T.FIRST_MTP_BUILD:
        ev.findings.append(R.MTP603.finding(
            f"build b{build.build} predates MTP support (b{T.FIRST_MTP_BUILD}): --spec-type draft-mtp is rejected",
            _loc(cmd, "spec_type"), evidence=[Evidence("build", build.evidence)]))


def _arch_graph(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
                model: GGUFView | None) -> None:
    if not _mtp_asked(cmd, fork) or head is None or fork.name != "llama.cpp":
        return
    number = build.build if build else None
    has, row = T.arch_has_mtp_graph(head.arch, number)
    if has is False and row is not None:
        since = f"since b{row.since_build} ({row.build_source})" if row.since_build else "in no merged build"
        ev.findings.append(R.MTP604.finding(
            f"{head.arch} ({row.family}) has a draft-mtp graph {since}; "
            f"{'build b' + str(number) if number else 'this build'} has none: {row.note or 'the head is not used'}",
            _loc(cmd, "spec_type"), evidence=[Evidence("source", row.source)]))
    elif has is None:
        why = (f"architecture {head.arch!r} is not in the llama.cpp MTP table" if row is None else
               f"b{number} is within the estimated range of {row.arch}'s MTP support ({row.source})")
        ev.gaps.append(Gap(ANALYZER, f"whether llama.cpp runs the MTP head could not be told: {why}", None, blocking=True))


def _parallel(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
              model: GGUFView | None) -> None:
    if _mtp_asked(cmd, fork) and (cmd.parallel or 1) > 1:
        trap = T.TRAP_BY_KEY["parallel-slots"]
        ev.findings.append(R.MTP605.finding(
            f"{cmd.flags['parallel']} {cmd.parallel} with draft-mtp: {trap.summary}", _loc(cmd, "parallel"),
            evidence=[Evidence("source", trap.source)]))


def _n_max(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
           model: GGUFView | None) -> None:
    if not _mtp_asked(cmd, fork):
        return
    row = T.ARCH_BY_NAME.get(head.arch or "") if head else None
    if cmd.n_max is None:
        default, src = T.n_max_default(build.build if build else None)
        text = f"{default}" if default is not None else "3 (16 on builds before the MTP clean-up; this build could not be placed)"
        ev.findings.append(R.MTP607.finding(f"--spec-draft-n-max is not set: the draft length is {text}", _loc(cmd, None),
                                            evidence=[Evidence("source", src)]))
    heads = head.declared or head.heads if head else 0
    if head is not None and row is not None and row.heads_chained and cmd.n_max is not None and heads and cmd.n_max > heads:
        ev.findings.append(R.MTP606.finding(
            f"--spec-draft-n-max {cmd.n_max} but {head.arch} chains {heads} MTP heads: n_max is clamped to {heads}",
            _loc(cmd, "n_max")))


def _broken_build(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
                  model: GGUFView | None) -> None:
    if build is None or build.build is None or build.fork != "llama.cpp" or head is None or not _mtp_asked(cmd, fork):
        return
    trap = T.TRAP_BY_KEY["nextn-layer-heads"]
    if T.within(build.build, trap.first_build, trap.last_build, estimated=False):
        ev.findings.append(R.MTP608.finding(f"b{build.build}: {trap.summary}", _loc(cmd, None),
                                            remediation=f"use b{trap.fixed_in} or newer",
                                            evidence=[Evidence("source", trap.source)]))


def _nvfp4(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
           model: GGUFView | None) -> None:
    parts = model.nvfp4_scales() if model else []
    if not parts or build is None or build.build is None or build.fork != "llama.cpp":
        if parts and build is None:
            ev.gaps.append(Gap(ANALYZER, "NVFP4 MTP scale tensors: whether this build loads them needs --llamacpp-build",
                               None, blocking=False))
        return
    load, no_mtp = T.TRAP_BY_KEY["nvfp4-mtp-scales-load"], T.TRAP_BY_KEY["nvfp4-mtp-scales-no-mtp"]
    for trap, applies in ((load, True), (no_mtp, not _mtp_asked(cmd, fork))):
        hit = T.within(build.build, trap.first_build, trap.last_build, estimated=trap.build_source == "estimated")
        if applies and hit:
            ev.findings.append(R.MTP609.finding(f"b{build.build}: {trap.summary} ({', '.join(parts[:2])})",
                                                _loc(cmd, "model"), evidence=[Evidence("source", trap.source)]))
            return
        if applies and hit is None:
            ev.gaps.append(Gap(ANALYZER, f"b{build.build} is within the estimated range of {trap.source}: whether the NVFP4 "
                                         "MTP scales load could not be told", None, blocking=True))


def _split_mode(ev: Evaluation, cmd: LlamaCommand, build: BuildInfo | None, head: GGUFView | None, fork: T.Fork,
                model: GGUFView | None) -> None:
    if (cmd.split_mode or "").lower() == "tensor" and model is not None and model.heads:
        trap = T.TRAP_BY_KEY["split-mode-tensor"]
        ev.findings.append(R.MTP610.finding(f"{cmd.flags['split_mode']} tensor: {trap.summary}", _loc(cmd, "split_mode"),
                                            evidence=[Evidence("source", trap.source)]))


# -- outcome -------------------------------------------------------------------------------------------


def _corrected(cmd: LlamaCommand, ev: Evaluation, fork: T.Fork) -> list[str] | None:
    if not ev.fixes:
        return None
    toks = list(cmd.toks)
    for fix in ev.fixes:
        kind, _, what = fix.partition(":")
        if kind == "add":
            toks += ["--spec-type", what]
        elif kind == "spec":
            old, _, new = what.partition("->")
            toks = [_respelled(t, old, new) if i and toks[i - 1] == "--spec-type" else t for i, t in enumerate(toks)]
            toks += _options_as_flags(cmd, old, new)
    return toks


def _respelled(value: str, old: str, new: str) -> str:
    """``mtp:n_max=3,p_min=0.5`` -> ``draft-mtp``: the element named ``old`` (its ik options too) becomes ``new``."""
    return ",".join(new if part.split(":")[0] == old else part for part in split_types(value))


def _options_as_flags(cmd: LlamaCommand, old: str, new: str) -> list[str]:
    """The ik_llama.cpp options a respelling drops (``mtp:n_max=3``), as the mainline flags that say the same
    (``--spec-draft-n-max 3``), unless the command already gives that flag."""
    if ":" in new:
        return []
    dropped = {k: v for s in cmd.spec_types if s.name == old for k, v in s.options.items()}
    return [tok for key, flag in OPTION_FLAGS.items()
            if key in dropped and key not in cmd.flags for tok in (flag, dropped[key])]


def verdict(ev: Evaluation) -> str:
    """``fix first`` (an error), ``could not tell`` (a blocking gap), else ``go`` (the facts say ``go without MTP``
    when an MTP head ships and the command does not use it)."""
    if any(f.severity.label == "error" for f in ev.findings):
        return "fix first"
    if any(g.blocking for g in ev.gaps):
        return "could not tell"
    return "go"


def _facts(cmd: LlamaCommand, build: BuildInfo | None, model: GGUFView | None, draft: GGUFView | None,
           head: GGUFView | None, ev: Evaluation, fork: T.Fork) -> dict[str, Any]:
    runs = _what_runs(cmd, head, ev, fork)
    v = verdict(ev)
    if v == "go" and head is not None and runs is False:
        v = "go without MTP"
    summary = {
        "engine": fork.name,
        "build": build.build if build else None,
        "spec_types": cmd.spec_names or ["none"],
        "mtp_head": f"{head.entry.name} ({head.flag})" if head and head.entry else None,
        "mtp_runs": runs,
        "n_max": cmd.n_max,
        "parallel": cmd.parallel or 1,
        "verdict": v,
        "corrected_command": shell_join(ev.corrected) if ev.corrected else None,
    }
    answer = _answer(summary, head, ev)
    closing = [answer, f"Verdict: {v}."] + ([f"Corrected command: {summary['corrected_command']}"] if ev.corrected else [])
    return {"summary": summary, "answer": [answer], "closing": {"title": "What will happen (llama.cpp)", "lines": closing},
            "verdict": v, "corrected_command": summary["corrected_command"], "command": shell_join(cmd.toks),
            "model": model.entry.name if model and model.entry else cmd.model, "draft": draft.entry.name if draft and draft.entry else cmd.draft_model}


def _what_runs(cmd: LlamaCommand, head: GGUFView | None, ev: Evaluation, fork: T.Fork) -> bool | None:
    errors = [f for f in ev.findings if f.severity.label == "error"]
    if not cmd.wants_mtp() or errors:
        return False
    if any(g.blocking for g in ev.gaps):
        return None  # a GGUF not read (not on this machine, -hf) or a build unknown: no head seen is not "no head"
    return head is not None


def _answer(summary: dict[str, Any], head: GGUFView | None, ev: Evaluation) -> str:
    types = ",".join(summary["spec_types"])
    build = f"b{summary['build']}" if summary["build"] else "build unknown"
    if summary["mtp_runs"] is True:
        return f"{summary['engine']} ({build}) drafts with the MTP head of {summary['mtp_head']} (--spec-type {types})"
    if summary["mtp_runs"] is None:
        return f"{summary['engine']} ({build}) with --spec-type {types}: whether the MTP head runs could not be told"
    ids = sorted({f.rule_id for f in ev.findings if f.severity.label in ("error", "warning")})
    why = f" ({', '.join(ids)})" if ids else ""
    what = f"the MTP head of {summary['mtp_head']}" if head else "no MTP head"
    return f"{summary['engine']} ({build}), --spec-type {types}: MTP will not draft with {what}{why}"
