"""The vLLM form of ``mtp-audit launch`` (issue 11): :func:`audit_vllm_launch`, called by
:func:`mtp_audit.launch.audit_launch` when the command starts vLLM's server."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.report import Report


def audit_vllm_launch(toks: Sequence[str], *, vllm: str | Path | None = None, env_dump: Path | Sequence[Path] | None = None,
                      facts: Path | None = None, machine_facts: Any = None, env: Mapping[str, str] | None = None,
                      environ: Mapping[str, str] | None = None, cwd: Path | None = None, engine: str | None = None) -> Report:
    """Audit one vLLM server command (already split into tokens) on one machine with one vLLM.

    Returns the merged report (the vllm, checkpoint and preflight reports plus the MTP320-MTP328 findings);
    ``facts["launch"]["summary"]`` holds "what will happen": ``method`` (after aliasing and auto-detection),
    ``proposer`` (V1/V2 class), ``draft_model``, ``draft_architecture`` (after ``hf_config_override``, with
    the registry location), ``num_speculative_tokens`` (given or defaulted, against the MTP layers),
    ``verdict`` (go / fix first / could not tell) and ``corrected_command`` (evaluated again before it is
    shown: ``facts["launch"]["corrected_check"]``).

    ``engine`` (``--engine``) is handed to the preflight, whose verdict it names (default: ``"vllm"``, the engine the
    command starts).

    Raises:
        InputError: a model path that does not exist (and is not a hub repo id), an unreadable ``vllm``
            target or env dump, or two machine sources.
    """
    from mtp_audit.errors import InputError
    from mtp_audit.launch.command import shell_join
    from mtp_audit.launch.context import Machine
    from mtp_audit.launch.rules import RULES
    from mtp_audit.launch.vllm_checks import evaluate_vllm, open_vllm

    dumps = (env_dump,) if isinstance(env_dump, (str, Path)) else tuple(env_dump or ())
    if len([x for x in (dumps, facts, machine_facts) if x]) > 1:
        raise InputError("--env-dump/--facts", "use one machine source: --env-dump, or --facts")
    machine = Machine(tuple(Path(p) for p in dumps), Path(facts) if facts else None, machine_facts, engine)
    here = Path(cwd) if cwd is not None else Path.cwd()
    envmap = dict(os.environ) if environ is None else dict(environ)
    view, gap = open_vllm(vllm)
    ev = evaluate_vllm(list(toks), view=view, view_gap=gap, machine=machine, env=env, environ=envmap, cwd=here, checkpoints={})
    keys = ("summary", "answer", "closing", "verdict", "corrected_command", "corrected_check", "engine", "speculative", "draft", "parallel", "command", "env")
    launch = Report.build("launch", shell_join(list(toks)), findings=ev.ctx.findings, gaps=ev.ctx.gaps,
                          facts={k: ev.outcome[k] for k in keys}, rule_ids=[r.id for r in RULES])
    return launch.merge(*ev.reports)
