"""``mtp-audit launch -- llama-server ...``: the llama.cpp launch audit as one function.

It parses the command (:mod:`.command`), audits the GGUF files of ``-m`` and ``-md`` with the checkpoint analyzer
(headers only), places the build (``--llamacpp-build`` or ``llama-server --version`` text in an ``--env-dump``) and
evaluates (:mod:`.evaluate`). The report holds a ``llamacpp`` part (rules MTP600-MTP610, the answer, the verdict,
the corrected command) merged with the checkpoint reports.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.engines.llamacpp import rules as R
from mtp_audit.engines.llamacpp.command import BuildInfo, LlamaCommand, parse_build, parse_command, shell_join
from mtp_audit.engines.llamacpp.evaluate import ANALYZER, GGUFView, evaluate
from mtp_audit.errors import InputError
from mtp_audit.report import Gap, Report

#: Largest ``--env-dump`` file read for a version line (bytes).
MAX_DUMP_BYTES = 16 * 1024 * 1024

#: ``(path text, flag) -> (report or None, gap or None)``: how a model path becomes a checkpoint report.
CheckpointFn = Callable[[str, str], "tuple[Report | None, Gap | None]"]


def audit_llamacpp_launch(
    argv: Sequence[str],
    *,
    build: str | int | None = None,
    env_dumps: Sequence[Path] = (),
    cwd: Path | None = None,
    checkpoint: CheckpointFn | None = None,
) -> Report:
    """Audit one llama.cpp launch.

    Args:
        argv: the command tokens (or one shell string), program first (``KEY=VALUE`` prefixes allowed).
        build: ``--llamacpp-build``: ``10444``, ``"b10444"``, ``"ik:4100"`` or pasted ``--version`` text.
        env_dumps: files whose text may hold ``llama-server --version`` output (used when ``build`` is None).
        cwd: where relative ``-m`` / ``-md`` paths are resolved (default: the current folder).
        checkpoint: how a model path is audited (default: :func:`mtp_audit.checkpoint.audit_checkpoint` on the
            resolved path; hub ids and ``-hf`` repos are a gap).

    Returns:
        The merged report: ``facts["llamacpp"]`` with ``summary`` (``verdict``: ``go`` / ``fix first`` /
        ``could not tell``; ``mtp_runs``; ``corrected_command``), ``answer`` and ``closing``.

    Raises:
        InputError: not a llama.cpp command, a flag without its value, an unreadable dump, a ``--llamacpp-build``
            with no build number, a malformed GGUF.
    """
    cmd = parse_command(argv)
    info = _build_info(build, env_dumps)
    here = Path(cwd) if cwd is not None else Path.cwd()
    audit = checkpoint or _local_checkpoint(here)
    gaps: list[Gap] = []
    reports: list[Report] = []
    model = _view(cmd.model, cmd.flags.get("model", "-m"), audit, reports, gaps)
    draft = _view(cmd.draft_model, cmd.flags.get("draft_model", "-md"), audit, reports, gaps)
    if cmd.model is None:
        what = f"-hf {cmd.hf_repo}" if cmd.hf_repo else "no -m"
        gaps.append(Gap(ANALYZER, f"{what}: the model GGUF is not audited (llama.cpp downloads it); whether it carries "
                                  "an MTP head could not be told", None, blocking=cmd.wants_mtp()))
    if info is None:
        gaps.append(Gap(ANALYZER, "llama.cpp build unknown (give --llamacpp-build N or paste llama-server --version "
                                  "with --env-dump): build-specific checks assume the newest known build", None, blocking=False))
    ev = evaluate(cmd, info, model, draft, gaps)
    reports = [_without(r, _SAID_BY_LAUNCH) for r in reports]
    report = Report.build(ANALYZER, shell_join(cmd.toks), findings=ev.findings, gaps=ev.gaps, facts=ev.facts,
                          rule_ids=[r.id for r in R.RULES])
    return report.merge(*reports) if reports else report


#: Checkpoint findings about how to pass a head (an mtp-*.gguf sidecar; a trunk without one beside it) that the launch
#: answers itself from -m / -md.
_SAID_BY_LAUNCH = frozenset({"MTP036", "MTP037"})


def _without(report: Report, rule_ids: frozenset[str]) -> Report:
    """``report`` without the findings of ``rule_ids``."""
    import dataclasses

    return dataclasses.replace(report, findings=tuple(f for f in report.findings if f.rule_id not in rule_ids))


def _build_info(build: str | int | None, env_dumps: Sequence[Path]) -> BuildInfo | None:
    if build is not None:
        return parse_build(str(build))
    for dump in env_dumps:
        text = _read_dump(Path(dump))
        try:
            return parse_build(text)
        except InputError:
            continue
    return None


def _read_dump(path: Path) -> str:
    from mtp_audit.sources.bounded import read_bytes_bounded

    return read_bytes_bounded(path, MAX_DUMP_BYTES, display=str(path)).decode("utf-8", errors="replace")


def _local_checkpoint(cwd: Path) -> CheckpointFn:
    def audit(text: str, flag: str) -> tuple[Report | None, Gap | None]:
        from mtp_audit.checkpoint import audit_checkpoint

        path = Path(text) if os.path.isabs(text) else cwd / text
        if not path.exists():
            raise InputError(f"{flag} {text}", "no such file")
        if not path.name.endswith(".gguf"):
            return None, Gap(ANALYZER, f"{flag} {text} is not a .gguf file: llama.cpp loads GGUF only", text, blocking=True)
        return audit_checkpoint(path), None

    return audit


def _view(text: str | None, flag: str, audit: CheckpointFn, reports: list[Report], gaps: list[Gap]) -> GGUFView | None:
    if text is None:
        return None
    report, gap = audit(text, flag)
    if gap is not None:
        gaps.append(gap)
    if report is None:
        return GGUFView(flag, None)
    reports.append(report)
    return GGUFView(flag, _entry(report))


def _entry(report: Report) -> dict[str, Any] | None:
    models = (((report.facts.get("checkpoint") or {}).get("gguf") or {}).get("models")) or []
    return models[0] if models else None


def command_of(cmd: LlamaCommand) -> str:
    """The command as one shell line."""
    return shell_join(cmd.toks)
