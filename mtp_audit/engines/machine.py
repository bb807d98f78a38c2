"""The GPUs of the machine's typed answer as the engines' own FP4 verdicts read them: shared engine code (no engine
named)."""

from __future__ import annotations

from mtp_audit.preflight.typed import MachineAnswer


def machine_gpus(machine: MachineAnswer | None) -> list[tuple[int, str | None, tuple[int, int] | None]]:
    """``(index, name, compute capability)`` of each GPU of the machine's answer (none without one); the name and the
    compute capability are ``None`` where the facts do not know them."""
    return [(g.index, g.name.value, g.cc) for g in (machine.gpus if machine is not None else ())]
