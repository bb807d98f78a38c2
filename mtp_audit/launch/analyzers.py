"""The checkpoint and machine analyzers a launch audit lends its engine (:class:`mtp_audit.engines.base.Analyzers`):
model paths are resolved as the engines resolve them (a local path relative to the launch's folder, else a Hugging
Face repo id) and audited once per path text across the releases compared; the preflight reads the one machine
source of the launch.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtp_audit.engines.base import Machine
from mtp_audit.report import Gap, Report

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")


def is_hub_id(text: str) -> bool:
    """Whether a model path reads as ``ORG/NAME`` (optionally ``@REVISION``), not as a local path."""
    return bool(_HUB_ID.match(text)) and not text.startswith((".", "/", "~"))


def audit_model(path_text: str, cwd: Path, flag: str, given: str | None = None) -> tuple[Report | None, Gap | None]:
    """Checkpoint audit of a model path as the engine resolves it: a local path (relative to ``cwd``), else a
    Hugging Face repo id (metadata over HTTP range reads, or the HF cache; an unreachable hub gives an
    inconclusive checkpoint report).

    A path that does not exist here (a launch written for its serving container, ``vllm serve /model`` audited on a
    laptop) is missing evidence, not bad input: no report and a blocking gap that says how to point the audit at a
    local copy (``--model-dir SRC=DST``) or a hub id; the engine still answers every question that needs no checkpoint.

    ``given``: the command's own path when a ``--model-dir`` mapping turned it into ``path_text``; the gap then names
    both and asks for the mapping to be fixed (suggesting ``--model-dir`` for the mapped path would map it twice).

    Raises:
        InputError: a path that exists but is not a checkpoint (malformed input).
    """
    from mtp_audit.checkpoint import audit_checkpoint

    p = Path(path_text).expanduser()
    full = p if p.is_absolute() else cwd / p
    if os.path.lexists(full):
        return audit_checkpoint(full), None
    if is_hub_id(path_text) and not (cwd / path_text.split("/", 1)[0]).is_dir():  # else a mistyped local path
        return audit_checkpoint(path_text), None
    if given is not None and given != path_text:
        return None, Gap("launch", f"{flag} {given} (read at {path_text} through --model-dir): no such file or folder on this "
                         "machine, so the checkpoint questions (MTP heads, quantization, weights per GPU) could not be told; "
                         f"fix --model-dir so that {given} maps to a local copy of it",
                         path_text, True)
    return None, Gap("launch", f"{flag} {path_text}: no such file or folder on this machine, so the checkpoint questions "
                     f"(MTP heads, quantization, weights per GPU) could not be told; point the audit at a local copy with "
                     f"--model-dir {path_text}=LOCAL_FOLDER, or write the Hugging Face repo id (ORG/NAME) in the command",
                     path_text, True)


def map_model_dir(path_text: str, model_dirs: Sequence[tuple[str, str]]) -> str | None:
    """``path_text`` with the first ``(SRC, DST)`` of ``model_dirs`` whose ``SRC`` is the path or a folder above it
    replaced by ``DST`` (``/models/x/ckpt`` with ``("/models", "/data/models")`` -> ``/data/models/x/ckpt``): a launch
    written for its container, audited where the checkpoint sits elsewhere. The path is normalised in the container's
    namespace first (POSIX ``..`` and ``.``), so ``/models/../etc`` is ``/etc``, not under ``/models``. ``None`` when the
    path is written under a ``SRC`` but leaves it once normalised (it is on neither machine as far as the audit
    knows, and a folder outside ``DST`` is never opened). Unmapped paths are returned unchanged."""
    norm = posixpath.normpath(path_text) if path_text else path_text
    for src, dst in model_dirs:
        s = posixpath.normpath(src) if src.strip("/") else "/"
        under = (s.rstrip("/") + "/") if s != "/" else "/"
        if norm == s:
            return dst
        if norm.startswith(under):
            return dst.rstrip("/") + "/" + norm[len(under):]
        if path_text.startswith(under):
            return None
    return path_text


def _or_nowhere(mapped: str | None, token: str) -> str:
    return mapped if mapped is not None else posixpath.join(os.devnull, posixpath.normpath(token).lstrip("/"))


def _leaves(path_text: str, model_dirs: Sequence[tuple[str, str]]) -> str:
    """The ``--model-dir`` source that ``path_text`` is written under (for the gap's words)."""
    return next((src for src, _ in model_dirs if path_text.startswith(src.rstrip("/") + "/")), "SRC")


class LaunchAnalyzers:
    """:class:`~mtp_audit.engines.base.Analyzers` for one launch audit: checkpoint reports cached by path text (a
    compare of two releases audits each checkpoint once), the preflight on ``machine``."""

    def __init__(self, machine: Machine, cwd: Path, model_dirs: Sequence[tuple[str, str]] = ()) -> None:
        self.machine = machine
        self.cwd = cwd
        self.model_dirs = tuple(model_dirs)
        self._checkpoints: dict[str, tuple[Report | None, Gap | None]] = {}

    def checkpoint(self, path_text: str, flag: str) -> tuple[Report | None, Gap | None]:
        """See :meth:`mtp_audit.engines.base.Analyzers.checkpoint`; a path under a ``--model-dir SRC=DST`` source is
        read at its destination (:func:`map_model_dir`)."""
        if path_text not in self._checkpoints:
            mapped = map_model_dir(path_text, self.model_dirs)
            self._checkpoints[path_text] = (audit_model(mapped, self.cwd, flag, path_text) if mapped is not None else (None, Gap(
                "launch", f"{flag} {path_text}: written under --model-dir {_leaves(path_text, self.model_dirs)} but it "
                f"leaves that folder in the container ({posixpath.normpath(path_text)}), so it is not read here and the "
                "checkpoint questions (MTP heads, quantization, weights per GPU) could not be told", path_text, True)))
        return self._checkpoints[path_text]

    def preflight(self, launch: Sequence[str] | None, *, engine: str | None, **engine_facts: Any) -> Report:
        """See :meth:`mtp_audit.engines.base.Analyzers.preflight`; ``--engine`` (``machine.engine``) wins over ``engine``.
        The report carries its typed :class:`~mtp_audit.preflight.typed.MachineAnswer` (read once here)."""
        from mtp_audit.preflight import preflight
        from mtp_audit.preflight.typed import machine_answer

        m = self.machine
        # its model path is read here too; one that leaves its --model-dir source points under os.devnull (a file, so
        # nothing under it exists) rather than at a host folder outside DST
        toks = ([_or_nowhere(map_model_dir(t, self.model_dirs), t) for t in launch] if launch is not None else None)
        report = preflight(env_dumps=list(m.env_dumps), facts_file=m.facts_file, machine_facts=m.facts, cwd=self.cwd,
                           launch=toks, engine=m.engine or engine, no_machine=m.no_machine, **engine_facts)
        return report if report.answer is not None else dataclasses.replace(report, answer=machine_answer(report))
