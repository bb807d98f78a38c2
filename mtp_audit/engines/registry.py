"""The engines ``mtp-audit launch`` knows, one line each, and how a command picks its engine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from mtp_audit.engines.argv import split_env_prefix
from mtp_audit.engines.base import Engine, LogDialect
from mtp_audit.engines.llamacpp.launch import LlamaCppEngine
from mtp_audit.engines.sglang.launch import SGLangEngine
from mtp_audit.engines.trtllm.launch import TrtllmEngine
from mtp_audit.engines.vllm.launch import VllmEngine
from mtp_audit.errors import InputError

ENGINES: tuple[Engine, ...] = (
    SGLangEngine(),
    VllmEngine(),
    LlamaCppEngine(),
    TrtllmEngine(),
)


def engine_named(name: str) -> Engine:
    """The registered engine called ``name``.

    Raises:
        InputError: no engine of that name.
    """
    for engine in ENGINES:
        if engine.name == name:
            return engine
    raise InputError("--engine", f"unknown engine {name!r} (known: {', '.join(e.name for e in ENGINES)})")


def engine_for(toks: Sequence[str]) -> Engine:
    """The engine whose server the command starts (the first registered engine that recognises it).

    Raises:
        InputError: only environment assignments, or a program no registered engine starts (the message lists
            how each engine is started).
    """
    for engine in ENGINES:
        if engine.entry(toks) is not None:
            return engine
    _env, i = split_env_prefix(list(toks))
    if i >= len(toks):
        raise InputError("launch command", "only environment assignments, no program")
    prog = " ".join(toks[i:i + 3]) if PurePath(toks[i]).name.startswith("python") else toks[i]
    expected = "; ".join(f"{e.label}: " + " or ".join(e.entry_examples) for e in ENGINES)
    raise InputError("launch command", f"'{prog}' is not a server launch of any engine mtp-audit knows (expected {expected})")


def log_dialects() -> tuple[LogDialect, ...]:
    """Every registered engine's log dialect (:meth:`Engine.log_dialect`), in registry order; engines without one
    are left out. ``mtp-audit log`` reads engines only through these."""
    return tuple(d for d in (e.log_dialect() for e in ENGINES) if d is not None)
