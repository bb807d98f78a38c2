"""The cold scan of an SGLang tree: every file read once, the byte pre-filter, then each wanted file parsed and
indexed once (:func:`mtp_audit.engines.sglang.scan.scan_file`), with the per-file cache and the value-flow hold-back.
Imported only when a tree is not in the cache, so that a warm audit does not load the parser passes.
"""

from __future__ import annotations

import os
from typing import Any

from mtp_audit.engines.code import cache
from mtp_audit.engines.sglang.names import SCAN_VERSION
from mtp_audit.engines.sglang.scan import passes_for, scan_file
from mtp_audit.progress import Progress
from mtp_audit.sources.tree import SourceTree


def _workers() -> int:
    """Worker processes for the parse: 1 (serial). Measured on 2 cores (docs/sglang.md): with one ``ast`` parse
    and one index walk per file, a cold 0.5.23 tree parses 95 files in well under a second, and the pool's
    start-up plus pickling of the results cost more than they save (serial 3.5-3.8 s vs pooled 4.3 s under
    load average 6); ``MTP_AUDIT_SCAN_WORKERS`` sets another count."""
    try:
        return max(1, min(8, int(os.environ.get("MTP_AUDIT_SCAN_WORKERS", "1"))))
    except ValueError:
        return 1


def _scan_job(job: tuple[str, bytes, tuple[str, ...]]) -> tuple[str, dict[str, Any]]:
    rel, data, passes = job
    return rel, scan_file(rel, data, passes)


#: Largest file put through the ast pass (bytes); SGLang 0.5.23's largest such file is 121 KB,
#: 0.5.9's 250 KB. A larger one is not parsed (a blocking gap says so): parse and index run at about 2 MB/s
#: on a 2-core machine, so this and MAX_SERVER_PASS_BYTES bound the audit of any tree to about 25 s.
MAX_SERVER_PASS_FILE = 1024 * 1024

#: Most bytes put through the ast pass in one tree; SGLang 0.5.23 puts 1.5 MB (105 files) through it,
#: 0.5.9 0.46 MB (5 files).
MAX_SERVER_PASS_BYTES = 8 * 1024 * 1024

#: Files to parse before a cold scan shows a progress bar (a warm, cached scan parses none).
PROGRESS_MIN_FILES = 20


def scan_tree(tree: SourceTree, *, workers: int | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Scan every file of ``tree``; returns (rel -> scan result, statistics).

    Files whose bytes hold none of the searched tokens get only the regex env-var pass; server
    files are parsed and indexed once, serially by default (``workers``; see :func:`_workers`). A server file is
    handed to the pool as soon as it is read, so the workers parse while this process reads and
    regex-scans the rest of the tree (the serial work before the pool used to leave them idle).
    Results, their order and the tree's notes are those of a plain sorted pass. Only parsed files go through the
    per-file cache: a file holding only an ``EntryClass`` is scanned again each time (its scan costs less than
    writing or reading its cache entry, which was three quarters of a cold run's 480 cache writes).

    A file that only the value-flow consumer pass wants is parsed only when a value flow can need it, decided once
    the other files are scanned: first those that can read a field a hook rewrites to ``None``
    (:func:`~mtp_audit.engines.sglang.flow.may_consume`), then those that can define a class such a consumer
    constructs (:func:`~mtp_audit.engines.sglang.flow.may_refill`); the others are scanned as files no pass wants (``stats["parsed"]`` counts the files parsed).
    """
    from mtp_audit.engines.sglang import flow

    scan = _TreeScan(tree, workers if workers is not None else _workers())
    try:
        for rel in sorted(tree.files):
            data = tree.read(rel)
            if data is not None:
                scan.admit(rel, data)
        scan.run()
        fields = flow.rewritten_fields(scan.merged())
        named, rest = _split(scan.deferred, lambda data: flow.may_consume(data, fields))
        for rel, data in named:
            scan.queue(rel, data, ("flow-consumer",))
        scan.run()
        callees = flow.consumer_callees(scan.merged(), fields)
        named, rest = _split(rest, lambda data: flow.may_refill(data, callees))
        for rel, data in named:
            scan.queue(rel, data, ("flow-consumer",))
        for rel, data in rest:
            scan.queue(rel, data, ())
        scan.run()
    finally:
        if scan.pool is not None:
            scan.pool.shutdown(wait=True, cancel_futures=True)
    return scan.finish()


def _split(items: list[tuple[str, bytes]], test: Any) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """``(items whose bytes pass test, the others)``, each in the given order."""
    return [x for x in items if test(x[1])], [x for x in items if not test(x[1])]


class _TreeScan:
    """The state of one :func:`scan_tree`: results, parse jobs ``(rel, data, passes, cache key)`` in the order
    queued, statistics, the worker pool and the files held back for the value-flow decision (``deferred``)."""

    def __init__(self, tree: SourceTree, workers: int) -> None:
        self.tree, self.n = tree, workers
        self.folder = cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}")
        self.results: dict[str, dict[str, Any]] = {}
        self.done: dict[str, dict[str, Any]] = {}
        self.jobs: list[tuple[str, bytes, tuple[str, ...], str | None]] = []
        self.ran = 0
        self.stats = {"files": len(tree.files), "parsed": 0, "cached": 0, "bytes": 0}
        self.server_bytes = 0
        self.pool: Any = None
        self.futures: dict[str, Any] = {}
        self.deferred: list[tuple[str, bytes]] = []
        self.notes_before = len(tree.notes)

    def admit(self, rel: str, data: bytes) -> None:
        """One file as read: over a limit (a gap), held back (only the consumer pass wants it) or queued."""
        from mtp_audit.engines.sglang.scan import scan_env

        self.stats["bytes"] += len(data)
        passes = passes_for(rel, data)
        if passes and (len(data) > MAX_SERVER_PASS_FILE or self.server_bytes + len(data) > MAX_SERVER_PASS_BYTES):
            over = (f"{len(data)} bytes, over the {MAX_SERVER_PASS_FILE}-byte limit" if len(data) > MAX_SERVER_PASS_FILE
                    else f"the tree's server-argument files exceed {MAX_SERVER_PASS_BYTES} bytes")
            self.results[rel] = {"env": scan_env(data), "entry": [], "gap": f"{over} for the ast pass; not parsed"}
            return
        if passes:
            self.server_bytes += len(data)
        if passes == ("flow-consumer",):
            self.deferred.append((rel, data))
            return
        self.queue(rel, data, passes)

    def queue(self, rel: str, data: bytes, passes: tuple[str, ...]) -> None:
        """Scan ``rel`` with ``passes``: at once when nothing is parsed, from the cache, or as a parse job."""
        from mtp_audit.engines.sglang.scan import has_entry, scan_env

        if not passes and not has_entry(data):
            self.results[rel] = {"env": scan_env(data), "entry": [], "gap": None}
            return
        if not passes:  # EntryClass only: recomputed in microseconds, less than a cache entry's write or read costs
            self.jobs.append((rel, data, passes, None))
            return
        key = cache.key_for(data, passes)
        hit = cache.load(self.folder, key)
        if hit is not None:
            self.results[rel] = hit
            self.stats["cached"] += 1
            return
        self.jobs.append((rel, data, passes, key))
        if self.n > 1:
            if self.pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor  # here: a warm audit never needs it

                ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
                self.pool = ProcessPoolExecutor(max_workers=self.n, mp_context=ctx)
            self.futures[rel] = self.pool.submit(_scan_job, (rel, data, passes))

    def run(self) -> None:
        """Parse the jobs queued since the last call (a progress bar on a terminal when there are many)."""
        todo, self.ran = self.jobs[self.ran:], len(self.jobs)
        pooled = [rel for rel, *_ in todo if rel in self.futures]
        with Progress(len(todo), f"parsing {self.tree.display}", min_total=PROGRESS_MIN_FILES) as progress:
            for rel, data, passes, _ in todo:
                if rel not in self.futures:
                    self.results[rel] = scan_file(rel, data, passes)
                    progress.step()
            for rel in pooled:
                self.done[rel] = self.futures[rel].result()[1]
                progress.step()

    def merged(self) -> dict[str, dict[str, Any]]:
        """Every result so far, serial and pooled."""
        return {**self.results, **self.done}

    def finish(self) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
        """The results in the order of a plain sorted pass, the statistics; the tree's notes sorted, the cache written."""
        self.stats["parsed"] = sum(1 for j in self.jobs if j[2])
        jobs = sorted(self.jobs, key=lambda j: j[0])
        results = _ordered(self.results, self.done, jobs, self.n)
        self.tree.notes[self.notes_before:] = sorted(self.tree.notes[self.notes_before:], key=lambda note: note[0])
        for rel, _, _, key in jobs:
            if key is not None:
                cache.store(self.folder, key, results[rel])
        return results, self.stats


def _ordered(results: dict[str, dict[str, Any]], done: dict[str, dict[str, Any]], jobs: list[tuple[str, bytes, Any, str | None]],
             n: int) -> dict[str, dict[str, Any]]:
    """The insertion order of the former two-phase pass: loop results, then the pooled files largest first (when
    more than 3), then the other jobs in path order."""
    big = [j for j in jobs if j[2]]
    in_jobs = {j[0] for j in jobs}
    if n > 1 and len(big) > 3:
        big.sort(key=lambda j: -len(j[1]))
        first = {rel: res for rel, res in sorted(results.items()) if rel not in in_jobs}
        return {**first, **{j[0]: done[j[0]] for j in big}, **{j[0]: results[j[0]] for j in jobs if not j[2]}}
    merged = {**results, **done}
    first = {rel: res for rel, res in sorted(merged.items()) if rel not in in_jobs}
    return {**first, **{j[0]: merged[j[0]] for j in jobs}}
