"""The GPUs of a preflight report as the engines' own FP4 verdicts read them: shared engine code (no engine named)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def machine_gpus(machine: Mapping[str, Any]) -> list[tuple[int, str | None, tuple[int, int] | None]]:
    """``(index, name, compute capability)`` of each GPU in ``facts["preflight"]`` (``machine["machine"]["gpus"]``);
    the name and the compute capability are ``None`` where the facts do not know them."""
    out = []
    for i, gpu in enumerate((machine.get("machine") or {}).get("gpus") or []):
        cc = (gpu.get("compute_capability") or {}).get("value")
        known = (int(cc[0]), int(cc[1])) if isinstance(cc, (list, tuple)) and len(cc) == 2 else None
        out.append((int(gpu.get("index", i)), (gpu.get("name") or {}).get("value"), known))
    return out
