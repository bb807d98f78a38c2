"""The checkpoint analyzer's pipeline: :func:`~mtp_audit.checkpoint.facts.gather` the facts from a source,
run the :mod:`~mtp_audit.checkpoint.checks`, and build the report (:mod:`~mtp_audit.checkpoint.answer`).
"""

from __future__ import annotations

from typing import Any

from mtp_audit.checkpoint.answer import build_report
from mtp_audit.checkpoint.facts import ANALYZER, gather
from mtp_audit.report import Gap, Report
from mtp_audit.sources.local import (
    CheckpointSource,
    paused_gc,
)


#: Where :func:`analyze` parks each audit's facts instead of letting them be freed when it returns, when a caller sets
#: it to a list: a process that ends with ``os._exit`` once its report is written (the console script) then never
#: frees a large checkpoint's structures one by one (92k ``TensorInfo`` tuples, the decoded index and header
#: entries: 0.02-0.03 s of CPU with 163 shards, ``benchmarks/bench_checkpoint.py``). ``None`` (the default, for
#: library callers): the facts are freed as usual. The report never refers to them either way.
KEEP_FACTS: list[Any] | None = None


def analyze(source: CheckpointSource, *, mode_hint: str | None = None) -> Report:
    """Audit one checkpoint source (see :func:`gather` for what is read and what raises). What the
    source itself could not see (:meth:`CheckpointSource.gaps`) becomes blocking gaps, and its
    description and I/O counters (HTTP requests, bytes read) become ``facts["checkpoint"]["source"]``.

    The cyclic garbage collector is paused for the whole audit (:func:`paused_gc`): a 1M-tensor
    checkpoint holds millions of acyclic containers that every collection would walk again."""
    with paused_gc():
        facts = gather(source, mode_hint=mode_hint)
        facts.gaps += [Gap(ANALYZER, message, path) for path, message in source.gaps()]
        facts.source = {**source.describe(), **source.stats()}
        if KEEP_FACTS is not None:
            KEEP_FACTS.append(facts)
        return build_report(facts)
