"""``mtp-audit launch``: paste the SGLang (issue 6) or vLLM (issue 11) launch command, get one cross-checked
verdict before the model loads.

Public API: :func:`audit_launch` -> :class:`mtp_audit.report.Report` holding the engine (sglang or vllm),
checkpoint and preflight reports (each finding keeps its analyzer's rule id) plus the launch cross-checks
(MTP300-MTP312 for SGLang, MTP320-MTP328 for vLLM) and ``facts["launch"]`` (see docs/launch.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.deprecation import renamed_keywords
from mtp_audit.report import Report

__all__ = ["audit_launch"]


@renamed_keywords({"env_dump": "env_dumps", "facts": "facts_file"})
def audit_launch(
    argv: Sequence[str] | str,
    *,
    sglang: str | Path | Report | None = None,
    compare_sglang: str | Path | Report | None = None,
    env_dumps: str | Path | Sequence[str | Path] | None = None,
    facts_file: str | Path | None = None,
    machine_facts: Any = None,
    env: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    engine: str | None = None,
    vllm: str | Path | None = None,
) -> Report:
    """Audit one SGLang launch command on one machine with one (or, diffing, two) SGLang versions.

    Args:
        argv: the command's tokens (``["python", "-m", "sglang.launch_server", "--model-path", ...]``),
            or one string that is split like a POSIX shell; ``KEY=VALUE`` tokens before the program are
            environment variables of the launch. ``sglang serve ...`` is accepted where that SGLang has it.
        sglang: the SGLang to check against: a ``.whl``, an unpacked wheel, a package folder, a checkout,
            an already computed :func:`mtp_audit.engines.sglang.audit_sglang` report, or ``None`` for the installed
            sglang (not installed: a blocking gap, the flags are then split heuristically).
        compare_sglang: a second SGLang (same kinds); the report is the one for this NEW version plus
            MTP310 findings and ``facts["launch"]["diff"]`` saying what changes in "what will happen".
        env_dumps: environment dump(s) of the serving machine (``--env-dump``); ``facts_file``: stored preflight
            facts (``--facts``); ``machine_facts``: a :class:`~mtp_audit.preflight.facts.MachineFacts`.
            None of them: the live machine. The old names ``env_dump`` and ``facts`` still work (DeprecationWarning).
        env: extra environment variables of the launch (``--env KEY=VALUE``), applied last.
        environ: the current environment (default ``os.environ``); only variables SGLang reads are used.
        cwd: folder that relative ``--model-path`` / ``--speculative-draft-model-path`` are resolved
            against (default: the current directory).
        engine: ``"sglang"`` / ``"vllm"`` (``--engine``), passed to the preflight, whose verdict it names (it wins over
            the engine the command starts; a disagreement is shown as evidence on MTP228). A vLLM command itself is
            parsed for the preflight by :func:`mtp_audit.preflight.launch.parse_launch`.
        vllm: for a vLLM command (``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server``):
            the vLLM to check against (same kinds as ``sglang``; ``None``: the installed vllm, absent: a
            blocking gap). The engine is picked from the command's entry point; see
            :func:`mtp_audit.launch.vllm_launch.audit_vllm_launch`.

    Returns:
        The merged report; ``facts["launch"]["summary"]`` has the headline of "what will happen"
        (``verdict`` is ``go`` / ``fix first`` / ``could not tell``, ``corrected_command`` when a flag fix
        is known), ``facts["launch"]["closing"]`` the same in sentences.

    Raises:
        InputError: empty command, a command that is neither an SGLang nor a vLLM server launch, ``--sglang`` with a
            vLLM command or ``--vllm`` with an SGLang one, a ``--model-path`` that
            does not exist (and is not a hub repo id), an unreadable ``--sglang`` target or env dump.
    """
    from mtp_audit.launch.analyze import Machine, audit_sglang_target, evaluate_launch
    from mtp_audit.launch.command import find_entry, shell_join, split_command
    from mtp_audit.launch.outcome import diff_outcomes

    env_dump, facts = env_dumps, facts_file
    toks = split_command([argv] if isinstance(argv, str) else list(argv))
    from mtp_audit.errors import InputError as _InputError
    from mtp_audit.launch.vllm_command import vllm_entry

    if vllm_entry(toks) is not None:
        from mtp_audit.launch.vllm_launch import audit_vllm_launch

        if sglang is not None or compare_sglang is not None:
            raise _InputError("--sglang", f"the command starts vLLM ({vllm_entry(toks)[1]} ...): use --vllm TARGET")

        return audit_vllm_launch(toks, vllm=vllm, env_dump=env_dump, facts=facts, machine_facts=machine_facts, env=env, engine=engine,
                                 environ=environ, cwd=cwd)
    find_entry(toks)  # not SGLang -> InputError before any heavy work
    if vllm is not None:
        raise _InputError("--vllm", "the command starts SGLang, not vLLM: use --sglang TARGET")
    dumps = (env_dump,) if isinstance(env_dump, (str, Path)) else tuple(env_dump or ())
    if len([x for x in (dumps, facts, machine_facts) if x]) > 1:
        from mtp_audit.errors import InputError

        raise InputError("--env-dump/--facts", "use one machine source: --env-dump, or --facts")
    machine = Machine(tuple(Path(p) for p in dumps), Path(facts) if facts else None, machine_facts, engine)
    here = Path(cwd) if cwd is not None else Path.cwd()
    envmap = dict(os.environ) if environ is None else dict(environ)

    def sg_of(target: Any):
        if isinstance(target, Report):
            return target, None
        return audit_sglang_target(target)

    checkpoints: dict[str, Any] = {}
    sg_new, gap_new = sg_of(compare_sglang if compare_sglang is not None else sglang)
    ev = evaluate_launch(toks, sg_report=sg_new, sg_gap=gap_new, machine=machine, env=env, environ=envmap, cwd=here,
                         checkpoints=checkpoints)
    extra_findings = []
    facts_out: dict[str, Any] = {k: ev.outcome[k] for k in ("summary", "answer", "closing", "compare", "verdict", "corrected_command", "changed_flags",
                                                              "speculative", "draft", "parallel", "command", "env")}
    name = shell_join(toks)
    if compare_sglang is not None:
        sg_old, gap_old = sg_of(sglang)
        old = evaluate_launch(toks, sg_report=sg_old, sg_gap=gap_old, machine=machine, env=env, environ=envmap, cwd=here,
                              checkpoints=checkpoints)
        ov, nv = old.ctx.sglang_version, ev.ctx.sglang_version
        extra_findings, diff = diff_outcomes(old.outcome, ev.outcome, ov, nv)
        diff["old_summary"] = old.outcome["summary"]
        facts_out["diff"] = diff
        facts_out["summary"] = dict(facts_out["summary"], compared_with=f"SGLang {ov}: {len(diff['changes'])} change(s)")
        lines = list(facts_out["closing"]["lines"])
        if diff["changes"]:
            lines += [f"Changed from SGLang {ov}: {k.replace('_', ' ')}: was {c['old']}; now {c['new']}." for k, c in diff["changes"].items()]
        else:
            lines.append(f"Compared with SGLang {ov}: nothing in what will happen changes.")
        facts_out["closing"] = {"title": f"What will happen (SGLang {nv}, compared with {ov})", "lines": lines}
        facts_out["answer"] = [f"{facts_out['answer'][0]}; compared with SGLang {ov}: {len(diff['changes'])} change(s)",
                               *facts_out["answer"][1:]]
        name = f"{name} (sglang {ov} -> {nv})"
    from mtp_audit.launch.rules import RULES

    launch = Report.build("launch", name, findings=ev.ctx.findings + extra_findings, gaps=ev.ctx.gaps, facts=facts_out,
                          rule_ids=[r.id for r in RULES])
    return launch.merge(*ev.reports)

