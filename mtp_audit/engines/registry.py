"""The engines mtp-audit knows, one line each, and how a command or an id picks one.

Each engine is named by its id and where its :class:`~mtp_audit.engines.base.Engine` class lives
(``"module:Class"``, the entry-point form plugins use: mypy's ``plugins`` setting is the model). A package is
imported only when an engine is asked for: a preflight that needs SGLang's kernel checks imports SGLang's engine,
not the other three; matching a launch command imports them all, in order. The command-line helpers
(:mod:`mtp_audit.engines.argv`, which imports ``shlex``) are imported by :func:`engine_for`, which needs them, not with
the registry: a checkpoint audit asks the registry for its heads and list hooks only. The release keywords of
:func:`mtp_audit.launch.audit_launch`, one per built-in engine, are typed in :mod:`mtp_audit.engines.release_keywords`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from mtp_audit.errors import InputError

if TYPE_CHECKING:  # the interface is imported with the first engine, not with the registry
    from mtp_audit.engines.base import Engine, LogDialect

#: ``(id, "module:Class")`` of every engine, in the order a launch command is matched against them.
ENGINE_SPECS: tuple[tuple[str, str], ...] = (
    ("sglang", "mtp_audit.engines.sglang.launch:SGLangEngine"),
    ("vllm", "mtp_audit.engines.vllm.launch:VllmEngine"),
    ("llamacpp", "mtp_audit.engines.llamacpp.launch:LlamaCppEngine"),
    ("trtllm", "mtp_audit.engines.trtllm.launch:TrtllmEngine"),
)

#: How a person names each built-in engine (the class's ``label``), known without importing it.
LABELS: dict[str, str] = {"sglang": "SGLang", "vllm": "vLLM", "llamacpp": "llama.cpp", "trtllm": "TensorRT-LLM"}

#: Other spellings of an engine id accepted on input (``--engine``, a log's engine hint); every output uses the id.
ALIASES: dict[str, str] = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm",
                           "llama.cpp": "llamacpp", "llama-cpp": "llamacpp", "llama_cpp": "llamacpp"}


#: Engines registered at run time (:func:`register`), matched after the built-in ones.
EXTRA: list[Engine] = []

_LOADED: dict[str, Engine] = {}


def _load(engine_id: str, spec: str) -> Engine:
    """The engine of ``spec`` (``"module:Class"``), imported and instantiated once."""
    if engine_id not in _LOADED:
        module, _, cls = spec.partition(":")
        _LOADED[engine_id] = getattr(importlib.import_module(module), cls)()
    return _LOADED[engine_id]


#: The engine whose answer a checkpoint report gives to "will it draft with these MTP heads?" when the caller names
#: none (the question the checkpoint command has always answered).
DEFAULT_HEADS_ENGINE = "sglang"


#: Where each built-in engine says what it installs that the preflight records on a machine (``"module:attribute"``,
#: a mapping distribution -> the folders of its shared objects whose SM targets the preflight reads), in modules that
#: import nothing else of the engine.
DISTRIBUTION_SPECS: dict[str, str] = {"sglang": "mtp_audit.engines.sglang.distributions:DISTRIBUTIONS",
                                      "vllm": "mtp_audit.engines.vllm.distributions:DISTRIBUTIONS"}


def engine_distributions() -> dict[str, tuple[str, ...]]:
    """Every built-in engine's distributions (:data:`DISTRIBUTION_SPECS`), in registry order: distribution -> the
    folders of its shared objects the preflight reads (``()``: none)."""
    out: dict[str, tuple[str, ...]] = {}
    for engine_id, _ in ENGINE_SPECS:
        if engine_id in DISTRIBUTION_SPECS:
            module, _, attr = DISTRIBUTION_SPECS[engine_id].partition(":")
            out.update(getattr(importlib.import_module(module), attr))
    return out


#: The engine whose kernel checks the preflight applies when nothing names one (no ``--engine``, no launch command, no
#: engine in the machine facts): the preflight has always answered for SGLang, and says so ("on SGLang (assumed)").
DEFAULT_PREFLIGHT_ENGINE = "sglang"


#: The built-in engines' ``uses_heads`` hooks as ``"module:function"`` (each engine's method calls the same function):
#: a checkpoint audit asks one of them without importing the engine's launch package (~20 ms of start-up).
HEADS_SPECS: dict[str, str] = {"sglang": "mtp_audit.engines.sglang.heads:sglang_uses_heads"}


def heads_answerer(engine_id: str | None = None) -> Any:
    """The ``uses_heads`` hook of ``engine_id`` (default :data:`DEFAULT_HEADS_ENGINE`) as a function of a
    checkpoint's :class:`~mtp_audit.checkpoint.heads.HeadsEvidence`: from :data:`HEADS_SPECS` for a built-in
    engine listed there, else the registered engine's method.

    Raises:
        InputError: no engine of that id.
    """
    engine_id = canonical_id(engine_id or DEFAULT_HEADS_ENGINE)
    if engine_id in HEADS_SPECS and not any(e.name == engine_id for e in EXTRA):
        module, _, func = HEADS_SPECS[engine_id].partition(":")
        return getattr(importlib.import_module(module), func)
    return engine_named(engine_id).uses_heads


#: The built-in engines' checkpoint hooks as ``"module:function"``, by hook name (each engine's method of that name
#: calls the same function): the checkpoint analyzer asks them without importing the engines' launch packages.
#: ``list_overrides``: :meth:`~mtp_audit.engines.base.Engine.list_overrides`; ``quantization_method``:
#: :meth:`~mtp_audit.engines.base.Engine.quantization_method`; ``gguf_mtp_graph``:
#: :meth:`~mtp_audit.engines.base.Engine.gguf_mtp_graph`.
CHECKPOINT_HOOK_SPECS: dict[str, dict[str, str]] = {
    "list_overrides": {"sglang": "mtp_audit.engines.sglang.heads:sglang_list_overrides",
                       "vllm": "mtp_audit.engines.vllm.checkpoint:vllm_list_overrides"},
    "quantization_method": {"vllm": "mtp_audit.engines.vllm.checkpoint:vllm_quantization_method"},
    "gguf_mtp_graph": {"llamacpp": "mtp_audit.engines.llamacpp.tables:arch_has_mtp_graph"},
}


def checkpoint_hooks(hook: str) -> tuple[tuple[str, Any], ...]:
    """``(engine id, function)`` for every engine that implements the checkpoint hook ``hook`` (a key of
    :data:`CHECKPOINT_HOOK_SPECS`), in registry order: a built-in engine's function from
    :data:`CHECKPOINT_HOOK_SPECS` (only its module is imported), a registered engine's method when its class
    implements the hook (an engine registered under a built-in id replaces the built-in one)."""
    extra = {e.name: e for e in EXTRA}
    found: list[tuple[str, Any]] = []
    for engine_id, _spec in ENGINE_SPECS:
        spec = CHECKPOINT_HOOK_SPECS.get(hook, {}).get(engine_id)
        if spec is not None and engine_id not in extra:
            module, _, func = spec.partition(":")
            found.append((engine_id, getattr(importlib.import_module(module), func)))
    if EXTRA:
        from mtp_audit.engines.base import Engine

        found += [(e.name, getattr(e, hook)) for e in EXTRA if getattr(type(e), hook) is not getattr(Engine, hook)]
    return tuple(found)


def register(engine: Engine) -> None:
    """Add ``engine`` (an instance of an :class:`~mtp_audit.engines.base.Engine` subclass) after the built-in ones;
    every command then picks it up (launch by its entry point, preflight and log by its id)."""
    EXTRA.append(engine)


def engine_ids() -> tuple[str, ...]:
    """Every engine's id, built-in first, without importing any engine package."""
    return tuple(i for i, _ in ENGINE_SPECS) + tuple(e.name for e in EXTRA)


def engine_label(engine_id: str) -> str:
    """How a person names the engine ``engine_id`` (``"SGLang"``); the id itself for an engine nobody registered."""
    engine_id = canonical_id(engine_id)
    if engine_id in LABELS:
        return LABELS[engine_id]
    return next((e.label for e in EXTRA if e.name == engine_id), engine_id)


def engines() -> tuple[Engine, ...]:
    """Every engine, in matching order (imports every built-in engine package)."""
    return tuple(_load(i, spec) for i, spec in ENGINE_SPECS) + tuple(EXTRA)


def canonical_id(name: str) -> str:
    """``name`` as an engine id: an alias (:data:`ALIASES`, any case) becomes the id it stands for; anything else is
    returned lower-cased, known or not."""
    low = name.strip().lower()
    return ALIASES.get(low, low)


def engine_named(name: str) -> Engine:
    """The registered engine whose id (or an alias of it) is ``name``; only that engine's package is imported.

    Raises:
        InputError: no engine of that id.
    """
    name = canonical_id(name)
    for engine_id, spec in ENGINE_SPECS:
        if engine_id == name:
            return _load(engine_id, spec)
    for engine in EXTRA:
        if engine.name == name:
            return engine
    raise InputError("--engine", f"unknown engine {name!r} (known: {', '.join(engine_ids())})")


def engine_for(toks: Sequence[str]) -> Engine:
    """The engine whose server the command starts (the first registered engine that recognises it).

    Raises:
        InputError: only environment assignments, or a program no registered engine starts (the message lists
            how each engine is started).
    """
    from mtp_audit.engines.argv import split_env_prefix

    known = engines()
    for engine in known:
        if engine.entry(toks) is not None:
            return engine
    _env, i = split_env_prefix(list(toks))
    if i >= len(toks):
        raise InputError("launch command", "only environment assignments, no program")
    prog = " ".join(toks[i:i + 3]) if PurePath(toks[i]).name.startswith("python") else toks[i]
    expected = "; ".join(f"{e.label}: " + " or ".join(e.entry_examples) for e in known)
    raise InputError("launch command", f"'{prog}' is not a server launch of any engine mtp-audit knows (expected {expected})")


def log_dialects() -> tuple[LogDialect, ...]:
    """Every registered engine's log dialect (:meth:`Engine.log_dialect`), in registry order; engines without one
    are left out. ``mtp-audit log`` reads engines only through these."""
    return tuple(d for d in (e.log_dialect() for e in engines()) if d is not None)
