"""Large audit structures that a process ending with ``os._exit`` keeps instead of freeing one object at a time.

The console script writes its report and ends with ``os._exit`` (:func:`mtp_audit.cli.fast.leave`), so the
interpreter's teardown never runs; but an analyzer's own structures are freed before that, when the analysis
returns: 92k ``TensorInfo`` tuples, the decoded index and the header entries of a 163-shard checkpoint take
0.02-0.06 s of CPU to free one by one (``benchmarks/bench_checkpoint.py``). The entry point that will end that way
calls :func:`until_exit`; analyzers hand their structures to :func:`keep` once the report no longer needs them. A
library caller never calls :func:`until_exit`, and then :func:`keep` does nothing: everything is freed as usual.
"""

from __future__ import annotations

from typing import Any

_KEPT: list[Any] | None = None


def until_exit() -> None:
    """From now on, :func:`keep` holds what it is given until the process ends (the caller ends it with
    ``os._exit``, without teardown)."""
    global _KEPT
    if _KEPT is None:
        _KEPT = []


def keep(obj: Any) -> None:
    """Hold ``obj`` until the process ends, if :func:`until_exit` was called; otherwise do nothing."""
    if _KEPT is not None:
        _KEPT.append(obj)
