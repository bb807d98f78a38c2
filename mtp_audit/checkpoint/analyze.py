"""The checkpoint analyzer's pipeline: :func:`~mtp_audit.checkpoint.facts.gather` the facts from a source,
run the :mod:`~mtp_audit.checkpoint.checks`, and build the report (:mod:`~mtp_audit.checkpoint.answer`).
"""

from __future__ import annotations

from mtp_audit import keepalive
from mtp_audit.checkpoint.answer import build_report
from mtp_audit.checkpoint.facts import ANALYZER, gather
from mtp_audit.checkpoint.heads import HeadsAnswerer
from mtp_audit.report import Gap, Report
from mtp_audit.report.questions import MTP_HEADS
from mtp_audit.sources.local import (
    CheckpointSource,
    paused_gc,
)


def analyze(source: CheckpointSource, *, mode_hint: str | None = None, answer_heads: HeadsAnswerer | None = None) -> Report:
    """Audit one checkpoint source (see :func:`gather` for what is read and what raises). What the
    source itself could not see (:meth:`CheckpointSource.gaps`) becomes blocking gaps, and its
    description and I/O counters (HTTP requests, bytes read) become ``facts["checkpoint"]["source"]``.
    ``answer_heads``: the engine hook that says whether it drafts with the MTP heads (default: the registry's
    :func:`~mtp_audit.engines.registry.heads_answerer`).

    The cyclic garbage collector is paused for the whole audit (:func:`paused_gc`): a 1M-tensor
    checkpoint holds millions of acyclic containers that every collection would walk again."""
    with paused_gc():
        facts = gather(source, mode_hint=mode_hint)
        # what the source could not see is the files it could not list: an un-indexed shard (an MTP sidecar)
        facts.gaps += [Gap(ANALYZER, message, path, question=MTP_HEADS) for path, message in source.gaps()]
        facts.source = {**source.describe(), **source.stats()}
        report = build_report(facts, answer_heads or _default_answerer())
        keepalive.keep(facts)  # a console-script run ends without freeing them (mtp_audit.keepalive)
        return report


def _default_answerer() -> HeadsAnswerer:
    """The default engine's ``uses_heads`` hook, through the engine registry (which imports only that engine)."""
    from mtp_audit.engines.registry import heads_answerer

    return heads_answerer()
