"""Which serving engine the preflight verdict is for: SGLang or vLLM.

Sources of the answer, strongest first:

1. ``--engine sglang|vllm`` (explicit: it wins; a detected engine that disagrees is shown as evidence).
2. The launch command: ``python -m sglang.launch_server`` / ``sglang serve`` -> SGLang; ``vllm serve`` /
   ``python -m vllm.entrypoints.openai.api_server`` -> vLLM (:func:`mtp_audit.preflight.launch.parse_launch`).
3. The machine facts: ``MachineFacts.engine`` when the env-dump reader recorded one (with its provenance),
   else the dump formats found by :func:`mtp_audit.preflight.envdump.detect_formats`: an
   ``sglang.check_env`` dump -> SGLang, a ``vllm collect-env`` dump (its ``vLLM Version :`` line) -> vLLM.

When nothing names an engine the preflight keeps its SGLang semantics and says so ("on SGLang (assumed)" on
the verdict line, and the option to pass in MTP228's evidence).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.registry import DEFAULT_PREFLIGHT_ENGINE


def _label(engine: str) -> str:
    from mtp_audit.engines.registry import engine_label

    return engine_label(engine)


def canonical(engine: str) -> str:
    """``engine`` as a registered id (``"tensorrt-llm"`` -> ``"trtllm"``): :func:`mtp_audit.engines.registry.canonical_id`."""
    from mtp_audit.engines.registry import canonical_id

    return canonical_id(engine)


def known_engines() -> tuple[str, ...]:
    """Every engine id ``--engine`` accepts (the registry's; no engine package is imported)."""
    from mtp_audit.engines.registry import engine_ids

    return engine_ids()


@dataclass(frozen=True)
class EngineChoice:
    """The engine the verdict is for, and why.

    Attributes:
        engine: a registered engine id (``"sglang"``, ``"vllm"``, ...).
        how: ``"explicit"`` (``--engine``), ``"launch"`` (the launch command), ``"machine"`` (the env dump or
            facts) or ``"assumed"`` (nothing named one: SGLang).
        source: where it was read, in words (``"--engine vllm"``, ``"launch command 'vllm serve'"``,
            ``"vllm-collect-env format (line 40)"``).
        detected: every engine hint found, ``(engine, source)`` in order of strength, the chosen one included.
        conflicts: sentences for hints that disagree with the choice (shown as evidence, never merged).
    """

    engine: str
    how: str
    source: str
    detected: tuple[tuple[str, str], ...] = ()
    conflicts: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """Display name: ``"SGLang"`` / ``"vLLM"``."""
        return _label(self.engine)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``report.facts["preflight"]["engine"]``)."""
        return {"engine": self.engine, "how": self.how, "source": self.source,
                "detected": [{"engine": e, "source": s} for e, s in self.detected], "conflicts": list(self.conflicts)}


def machine_hint(machine: Any, formats: Iterable[tuple[str, Iterable[str]]] = ()) -> tuple[str, str] | None:
    """The engine the machine source names, with its source, or ``None``.

    Args:
        machine: a :class:`~mtp_audit.preflight.facts.MachineFacts`; its ``engine`` fact is used when present
            (the env-dump reader records it with provenance).
        formats: ``(display name, detect_formats(text))`` per env dump, used when the facts carry no engine.

    A set of dumps naming both engines gives no hint (``None``): two engines cannot both run.
    """
    from mtp_audit.preflight.envdump import FORMAT_ENGINE

    fact = getattr(machine, "engine", None)
    if fact is not None and getattr(fact, "present", False) and fact.value in known_engines():
        return str(fact.value), f"env dump: {fact.source}" if fact.source else "machine facts"
    found: dict[str, str] = {}
    for display, fmts in formats:
        for fmt in fmts:
            eng = FORMAT_ENGINE.get(fmt)
            if eng and eng not in found:
                found[eng] = f"{display}: {fmt} format"
    if len(found) == 1:
        (eng, src), = found.items()
        return eng, src
    return None


def choose_engine(explicit: str | None, launch_engine: str | None, launch_source: str,
                  machine: tuple[str, str] | None) -> EngineChoice:
    """Combine the hints (explicit > launch > machine > assumed SGLang).

    Args:
        explicit: ``--engine`` value or ``None``.
        launch_engine: the launch command's engine (``Launch.engine``) when the preflight reads it (``Launch.checked``),
            else ``None``.
        launch_source: how the launch names it (``"launch command 'vllm serve'"``).
        machine: :func:`machine_hint`'s answer.

    Raises:
        ValueError: ``explicit`` is not ``sglang`` or ``vllm`` (the CLI restricts the choice first).
    """
    if explicit is not None and explicit not in known_engines():
        raise ValueError(f"engine must be one of {', '.join(known_engines())}, got {explicit!r}")
    hints: list[tuple[str, str, str]] = []
    if explicit:
        hints.append((explicit, "explicit", f"--engine {explicit}"))
    if launch_engine is not None:
        hints.append((str(launch_engine), "launch", launch_source))
    if machine is not None:
        hints.append((machine[0], "machine", machine[1]))
    if not hints:
        return EngineChoice(DEFAULT_PREFLIGHT_ENGINE, "assumed", "no --engine, no SGLang/vLLM launch command and no engine in the machine facts; "
                                                 "pass --engine vllm for vLLM semantics")
    eng, how, src = hints[0]
    conflicts = tuple(f"{s} says {_label(e)}, but the verdict is for {_label(eng)} ({src})" for e, _, s in hints[1:] if e != eng)
    return EngineChoice(eng, how, src, tuple((e, s) for e, _, s in hints), conflicts)
