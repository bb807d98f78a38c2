"""The parallel layout of a launch and the GPUs it needs on this node: the shape every engine's planner fills
(:class:`ParallelPlan`) and the helpers that read integer sizes and on/off flags from a parsed command.

The engine-specific planners live in each engine's package (``engines/<name>/launch/parallel.py``), with the
engine's own option spellings and the file:line of every constraint it enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

#: ``get(*option_strings)`` of a parsed command: the value given (the last one for a repeated option), or None.
Getter = Callable[..., "str | list[str] | None"]


@dataclass(frozen=True)
class ParallelPlan:
    """The parallel layout of one launch and the GPUs it needs on this node.

    Attributes:
        engine: ``"sglang"`` or ``"vllm"``.
        tp, pp, ep: tensor-, pipeline- and expert-parallel sizes as the engine reads them (1 when absent;
            vLLM's ``ep`` is 1, or tp x dp with ``--enable-expert-parallel``).
        dp: the data-parallel size as given.
        attn_dp: data-parallel attention groups inside the TP group (1 without DP attention).
        replicas: full model copies on this node's launch (dp without DP attention, else 1; 0.5.23 ``--dp-size``
            next to ``--attn-dp-size``).
        nnodes: nodes the launch spans.
        base_gpu_id, gpu_id_step: SGLang's GPU id offset and spacing (0 and 1 for vLLM).
        gpus: GPUs this node's processes use (one process per GPU).
        highest_gpu_id: the largest CUDA device id a process is given; the node needs ``highest_gpu_id + 1``
            visible devices.
        formula: how ``gpus`` was computed, in words with the numbers (``"tp 8 x pp 1 x dp 2 = 16"``).
        given: option string as typed -> value, for the options read.
        problems: ``(constraint key, message)`` for sizes the engine rejects at start-up (keys of
            :data:`SGLANG_SOURCES`).
        invalid: option strings whose value is not an integer (nothing computed from them).
    """

    engine: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    attn_dp: int = 1
    replicas: int = 1
    nnodes: int = 1
    base_gpu_id: int = 0
    gpu_id_step: int = 1
    gpus: int = 1
    highest_gpu_id: int = 0
    formula: str = ""
    given: dict[str, str] = field(default_factory=dict)
    problems: tuple[tuple[str, str], ...] = ()
    invalid: tuple[str, ...] = ()

    @property
    def needed(self) -> int:
        """Visible CUDA devices this node needs: ``highest_gpu_id + 1``."""
        return self.highest_gpu_id + 1

    def to_dict(self) -> dict[str, object]:
        """JSON form (the launch report's ``facts.launch.parallel``)."""
        return {"engine": self.engine, "tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep, "attn_dp": self.attn_dp,
                "replicas": self.replicas, "nnodes": self.nnodes, "base_gpu_id": self.base_gpu_id, "gpu_id_step": self.gpu_id_step,
                "gpus": self.gpus, "needed_visible": self.needed, "formula": self.formula, "given": dict(self.given),
                "problems": [{"constraint": k, "message": m} for k, m in self.problems], "invalid": list(self.invalid)}


def read_ints(get: Getter, table: dict[str, tuple[str, ...]]) -> tuple[dict[str, int | None], dict[str, str], list[str]]:
    vals: dict[str, int | None] = {}
    given: dict[str, str] = {}
    invalid: list[str] = []
    for key, names in table.items():
        v = get(*names)
        if isinstance(v, list):
            v = v[-1] if v else None
        if v is None:
            vals[key] = None
            continue
        given[names[0]] = str(v)
        try:
            vals[key] = int(str(v))
        except ValueError:
            vals[key] = None
            invalid.append(names[0])
    return vals, given, invalid


def read_flag(get: Getter, names: tuple[str, ...]) -> bool:
    v = get(*names)
    return v is not None and str(v).lower() not in ("false", "0", "no")
