"""The cold scan of an SGLang tree: every file read once, the byte pre-filter, then each wanted file parsed and
indexed once (:func:`mtp_audit.engines.sglang.scan.scan_file`), with the per-file cache and the value-flow hold-back.
Imported only when a tree is not in the cache, so that a warm audit does not load the parser passes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mtp_audit.engines.code import cache
from mtp_audit.engines.sglang import flow
from mtp_audit.engines.sglang.names import CLI_PATHS, SCAN_VERSION
from mtp_audit.engines.sglang.scan import passes_for, scan_file
from mtp_audit.progress import Progress
from mtp_audit.sources.tree import SourceTree

if TYPE_CHECKING:
    from pathlib import Path


def _workers() -> int:
    """Worker processes for the parse: ``MTP_AUDIT_SCAN_WORKERS`` when set (1-8), else 2 when a second core is free
    (:func:`_second_core_free`), else 1 (serial). Measured on the 2-core development machine (docs/sglang.md): on a
    quiet machine two forked workers took a cold 0.5.23 wheel from 1.59-1.66 s to 1.32-1.47 s (the workers parse
    while this process reads and pre-filters the rest of the tree); with the other core busy (load average 6) the
    same pool was slower than the serial scan (4.3 s against 3.5-3.8 s): it only pays with a core to run on."""
    env = os.environ.get("MTP_AUDIT_SCAN_WORKERS")
    if env is not None:
        try:
            return max(1, min(8, int(env)))
        except ValueError:
            return 1
    return 2 if _second_core_free() else 1


def _second_core_free() -> bool:
    """Whether a forked worker would get a core of its own: Linux (``fork`` is the safe start there), this process
    running no other thread (forking a threaded caller is not safe), at least 2 CPUs this process may use, no more
    tasks running or waiting for a CPU right now than leave one free (:func:`_runnable_now`, this process included:
    at most ``CPUs - 1``) and a 1-minute load average at most ``2 x CPUs``; where the kernel's count cannot be read,
    a load average at most ``CPUs - 0.5``.

    The load average alone (the former test) lags by a minute and counts the audit's own earlier runs: back-to-back
    cold runs, three processes each with the pool, could keep it above 1.5 on 2 cores and turn the pool off in the
    middle of a benchmark. A process of another session that is running now is the case where the pool cannot pay:
    the scheduler's per-session groups (autogroup) then leave the whole audit about one core (beside another session's
    test suite, a pooled cold 0.5.23 wheel took 1.92 s, a serial one 1.95 s: docs/sglang.md)."""
    import sys
    import threading

    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return False
    running = _runnable_now()
    if running is None:
        return cpus >= 2 and load <= cpus - 0.5
    return cpus >= 2 and running <= cpus - 1 and load <= 2 * cpus


def _runnable_now() -> int | None:
    """The tasks running or waiting for a CPU at this instant, this process included (``/proc/loadavg``'s fourth
    field, ``running/total``); ``None`` when it cannot be read."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            return int(fh.read(256).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def _worker_start(parent_alive: int, parent_end: int) -> None:
    """Pool initializer. A worker ignores Ctrl-C (it reaches the whole process group; the audit process handles it
    and shuts the pool down, so a stopped scan prints no worker traceback) and ends quietly on SIGTERM and SIGHUP
    (the system's default action, not the audit process's handlers it was forked with: the pool stops a worker with
    SIGTERM when another one died). It also ends as soon as the audit process is gone: a thread waits on a pipe whose
    only write end the audit process holds, which reads end-of-file when that process exits however it ends
    (``kill -9`` included), so no worker is left behind. The heap inherited from the audit process is frozen
    (``gc.freeze``): the collections a worker's parses set off no longer walk those objects (nor write to their
    pages); the two workers' CPU on SGLang 0.5.23 went from 1.00-1.14 s to 0.91-1.04 s (medians of 6)."""
    import gc
    import signal
    import threading

    gc.freeze()
    for name, action in (("SIGINT", signal.SIG_IGN), ("SIGTERM", signal.SIG_DFL), ("SIGHUP", signal.SIG_DFL)):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), action)
    os.close(parent_end)
    threading.Thread(target=_exit_with_parent, args=(parent_alive,), daemon=True).start()


def _exit_with_parent(parent_alive: int) -> None:
    try:
        os.read(parent_alive, 1)
    finally:
        os._exit(1)


class _Pool:
    """Forked parse workers (``fork`` where the platform has it) and the pipe that tells them their parent is gone."""

    def __init__(self, workers: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor  # here: a warm audit never needs it

        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
        self.alive, self.end = os.pipe()
        self.executor = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_start,
                                            initargs=(self.alive, self.end))

    def submit(self, job: _Job) -> Any:
        """A future of ``(rel, scan result)`` (:func:`_scan_job`)."""
        return self.executor.submit(_scan_job, job)

    def close(self) -> None:
        """Stop the workers (waiting for the jobs they run, dropping the others) and close the pipe."""
        try:
            self.executor.shutdown(wait=True, cancel_futures=True)
        finally:
            os.close(self.alive)
            os.close(self.end)


#: A parse job for a worker: ``(rel, bytes, passes, cache folder, cache key)``; the worker writes the per-file cache
#: entry when both are given (so the audit process does not encode and write it after the scan).
_Job = tuple[str, bytes, "tuple[str, ...] | bool", "Path | None", "str | None"]


def _scan_job(job: _Job) -> tuple[str, dict[str, Any]]:
    rel, data, passes, folder, key = job
    result = scan_file(rel, data, passes)
    if folder is not None and key is not None:
        cache.store(folder, key, result)
    return rel, result


#: Largest file put through the ast pass (bytes); SGLang 0.5.23's largest such file is 121 KB,
#: 0.5.9's 250 KB. A larger one is not parsed (a blocking gap says so): parse and index run at about 2 MB/s
#: on a 2-core machine, so this and MAX_SERVER_PASS_BYTES bound the audit of any tree to about 25 s.
MAX_SERVER_PASS_FILE = 1024 * 1024

#: Most bytes put through the ast pass in one tree; SGLang 0.5.23 puts 1.5 MB (105 files) through it,
#: 0.5.9 0.46 MB (5 files).
MAX_SERVER_PASS_BYTES = 8 * 1024 * 1024

#: Files to parse before a cold scan shows a progress bar (a warm, cached scan parses none).
PROGRESS_MIN_FILES = 20

#: Bytes of parse jobs queued before the worker pool starts (when :func:`_workers` gives more than 1): a tree with
#: less to parse (SGLang 0.4.x: 0.1 MB, 0.5.9: 0.46 MB) is parsed serially, since forking the workers cost more than
#: they saved there (0.4.0: 0.18-0.27 s pooled against 0.16-0.22 s serial).
POOL_MIN_BYTES = 512 * 1024


class Prefetch:
    """Files the linker parses after the scan (the modules that ``choices=`` names of the server arguments come from,
    e.g. ``srt/utils/common.py`` of SGLang 0.5.23), parsed by the workers beside the scan instead of after it.

    ``wanted(results so far) -> paths`` is asked once, when the server-argument files (:data:`CLI_PATHS`) are parsed;
    each path it names that the scan has not read yet is read then, ahead of its turn, and handed to a worker
    (``scan_file(path, bytes, True)``, what the linker would run); the scan admits those bytes when it reaches the
    path, so no file is read twice for this, and a file read before is left to the linker. ``parsed``: path -> that
    result, filled at the end of the scan; the linker uses an entry only where it would have parsed the file itself,
    so an entry it does not need changes nothing."""

    def __init__(self, wanted: Callable[[dict[str, dict[str, Any]]], Iterable[str]]) -> None:
        self.wanted = wanted
        self.parsed: dict[str, dict[str, Any]] = {}


def scan_tree(tree: SourceTree, *, workers: int | None = None, reuse: bool = True,
              prefetch: Prefetch | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Scan every file of ``tree``; returns (rel -> scan result, statistics). ``reuse``: take a parsed file's result
    from the per-file cache when it holds one (``False``: parse every file; the entries are written anew).

    Files whose bytes hold none of the searched tokens get only the regex env-var pass; server
    files are parsed and indexed once, by a pool of forked workers when a second core is free and the tree has at
    least :data:`POOL_MIN_BYTES` to parse, else serially (``workers``; see :func:`_workers`). A server file is
    handed to the pool as soon as it is read, so the workers parse while this process reads and
    regex-scans the rest of the tree (the serial work before the pool used to leave them idle).
    Results, their order and the tree's notes are those of a plain sorted pass. Only parsed files go through the
    per-file cache: a file holding only an ``EntryClass`` is scanned again each time (its scan costs less than
    writing or reading its cache entry, which was three quarters of a cold run's 480 cache writes).

    A file that only the value-flow consumer pass wants is parsed only when a value flow can need it: first those
    that can read a field a hook rewrites to ``None`` (:func:`~mtp_audit.engines.sglang.flow.may_consume`), then
    those that can define a class such a consumer constructs (:func:`~mtp_audit.engines.sglang.flow.may_refill`);
    the others are scanned as files no pass wants (``stats["parsed"]`` counts the files parsed). The
    server-argument files, hook files included, are read first (:func:`reading_order`), so that with a pool the
    first test (and ``prefetch``) is decided as soon as the workers have parsed them, and the files it picks are
    parsed while the rest of the tree is read, not after it.
    """
    scan = _TreeScan(tree, workers if workers is not None else _workers(), reuse=reuse, prefetch=prefetch)
    first, others = reading_order(tree.files)
    try:
        for rel in first:
            scan.read(rel)
        scan.first_read = True
        for rel in others:
            scan.read(rel)
        scan.run()
        scan.decide_consumers()
        scan.run()
        scan.decide_refills()
        scan.run()
        scan.collect_prefetched()
    finally:
        if scan.pool is not None:
            scan.pool.close()
    return scan.finish()


def reading_order(files: Iterable[str]) -> tuple[list[str], list[str]]:
    """The paths of ``files`` in the order the cold scan reads them: ``(the server-argument files, the others)``, each
    in path order. The server-argument files (:data:`~mtp_audit.engines.sglang.names.CLI_PATHS`, the hook files of
    :data:`~mtp_audit.engines.sglang.names.HOOK_PATHS` among them: their value-flow rewrites decide which consumer
    files are parsed) come first. The order matters only where a bound is met: past the tree's byte bound
    (:data:`mtp_audit.sources.tree.MAX_TREE_PY_BYTES`) or :data:`MAX_SERVER_PASS_BYTES`, the files later in this
    order are the ones not examined."""
    first: list[str] = []
    others: list[str] = []
    for rel in sorted(files):
        (first if CLI_PATHS.search(rel) else others).append(rel)
    return first, others


def _split(items: list[tuple[str, bytes]], test: Any) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """``(items whose bytes pass test, the others)``, each in the given order."""
    yes: list[tuple[str, bytes]] = []
    no: list[tuple[str, bytes]] = []
    for item in items:
        (yes if test(item[1]) else no).append(item)
    return yes, no


class _TreeScan:
    """The state of one :func:`scan_tree`: results, parse jobs ``(rel, data, passes, cache key)`` in the order
    queued, statistics, the worker pool and the files held back for the value-flow decision (``deferred``)."""

    def __init__(self, tree: SourceTree, workers: int, *, reuse: bool = True, prefetch: Prefetch | None = None) -> None:
        self.tree, self.n, self.reuse, self.prefetch = tree, workers, reuse, prefetch
        self.folder = cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}")
        self.results: dict[str, dict[str, Any]] = {}
        self.done: dict[str, dict[str, Any]] = {}
        self.jobs: list[tuple[str, bytes, tuple[str, ...], str | None]] = []
        self.ran = 0
        self.stats = {"files": len(tree.files), "parsed": 0, "cached": 0, "bytes": 0}
        self.server_bytes = 0
        self.pool: _Pool | None = None
        self.futures: dict[str, Any] = {}
        self.unsent: list[_Job] = []  # parse jobs not handed to a pool (none started yet)
        self.stored: set[str] = set()  # files whose cache entry a worker wrote
        self.unsent_bytes = 0
        self.deferred: list[tuple[str, bytes]] = []  # files only the consumer pass wants, not decided yet
        self.rest: list[tuple[str, bytes]] = []  # of those, the ones that read no rewritten field
        self.fields: set[str] | None = None  # the fields hook files rewrite to None, once known
        self.first_read = False  # every server-argument file read (they are read first: reading_order)
        self.first_jobs: list[tuple[str, bytes, tuple[str, ...]]] = []  # their parse jobs, not collected yet
        self.seen: set[str] = set()  # the files read so far
        self.early: dict[str, bytes | None] = {}  # files read ahead of their turn for the linker (Prefetch)
        self.link_futures: dict[str, Any] = {}
        self.notes_before = len(tree.notes)

    def read(self, rel: str) -> None:
        """Read ``rel`` (or take the bytes :meth:`_start_prefetch` read) and admit it; with a pool, once every
        server-argument file is read and parsed, decide the files held back for the consumer pass
        (:meth:`decide_consumers`) and start the linker's parses, without waiting for the rest of the tree."""
        data = self.early.pop(rel) if rel in self.early else self.tree.read(rel)
        self.seen.add(rel)
        if data is not None:
            self.admit(rel, data)
        if self.fields is None and self.first_read and self.pool is not None and self._first_parsed():
            self.decide_consumers()
            if self.prefetch is not None:
                self._start_prefetch()

    def _start_prefetch(self) -> None:
        """Hand the files :class:`Prefetch` wants to a worker: those not read yet are read now and their bytes kept
        for when the scan reaches them (each file is still read once); a file read before is left to the linker."""
        assert self.prefetch is not None
        for rel in self.prefetch.wanted(self.merged()):
            if rel in self.seen or rel in self.early or rel not in self.tree.files:
                continue
            data = self.early[rel] = self.tree.read(rel)
            if data is not None and len(data) <= MAX_SERVER_PASS_FILE:
                self._prefetch(rel, data)

    def _prefetch(self, rel: str, data: bytes) -> None:
        """Hand ``rel`` to a worker for the linker (a pool that broke is dropped; the linker then parses it)."""
        from concurrent.futures.process import BrokenProcessPool

        if self.pool is not None:
            try:
                self.link_futures[rel] = self.pool.submit((rel, data, True, None, None))
            except BrokenProcessPool:
                self._drop_pool()

    def _first_parsed(self) -> bool:
        """Whether the workers have parsed every server-argument file (their results are then collected)."""
        jobs = self.first_jobs
        while jobs and jobs[-1][0] in self.futures and self.futures[jobs[-1][0]].done():
            job = jobs.pop()
            self.done[job[0]] = self._pooled_result(*job)
        return not jobs and self.pool is not None

    def collect_prefetched(self) -> None:
        """The workers' results for the linker (:class:`Prefetch`), where the pool did not break."""
        from concurrent.futures.process import BrokenProcessPool

        prefetch = self.prefetch
        if prefetch is None:
            return  # nothing was handed to the linker's workers
        for rel, future in self.link_futures.items():
            try:
                prefetch.parsed[rel] = future.result()[1]
            except BrokenProcessPool:
                self._drop_pool()

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
            if self.fields is not None:
                self.decide_consumers()
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
        hit = cache.load(self.folder, key) if self.reuse else None
        if hit is not None:
            self.results[rel] = hit
            self.stats["cached"] += 1
            return
        self.jobs.append((rel, data, passes, key))
        if not self.first_read:
            self.first_jobs.append((rel, data, passes))
        if self.n > 1:
            self.unsent.append((rel, data, passes, self.folder, key))
            self.unsent_bytes += len(data)
            if self.pool is None and self.unsent_bytes >= POOL_MIN_BYTES:
                self.pool = _Pool(self.n)
            if self.pool is not None:
                self._send()

    def _send(self) -> None:
        """Hand the unsent jobs to the pool; a pool that broke (a worker killed, by the OOM killer say) is dropped and
        the scan goes on serially (the jobs not handed over are parsed here)."""
        from concurrent.futures.process import BrokenProcessPool

        assert self.pool is not None
        try:
            for job in self.unsent:
                self.futures[job[0]] = self.pool.submit(job)
        except BrokenProcessPool:
            self._drop_pool()
        self.unsent.clear()

    def _drop_pool(self) -> None:
        """Stop using the pool (closed here); every later job is parsed serially."""
        if self.pool is not None:
            self.pool.close()
            self.pool, self.n = None, 1

    def run(self) -> None:
        """Parse the jobs queued since the last call (a progress bar on a terminal when there are many)."""
        todo, self.ran = self.jobs[self.ran:], len(self.jobs)
        with Progress(len(todo), f"parsing {self.tree.display}", min_total=PROGRESS_MIN_FILES) as progress:
            for rel, data, passes, _ in todo:
                if rel not in self.futures:
                    self.results[rel] = scan_file(rel, data, passes)
                    progress.step()
            for rel, data, passes, _ in todo:
                if rel in self.futures:
                    if rel not in self.done:  # a server-argument file's result may be in already (read)
                        self.done[rel] = self._pooled_result(rel, data, passes)
                    progress.step()

    def decide_consumers(self) -> None:
        """Queue the held-back files that can read a field a hook file rewrites to ``None``
        (:func:`~mtp_audit.engines.sglang.flow.may_consume`); keep the others for :meth:`decide_refills`. The fields
        are fixed on the first call, from the results of the hook files (every one of them read and parsed by then:
        at the end of the reading, or as soon as the workers have parsed them)."""
        if self.fields is None:
            self.fields = flow.rewritten_fields(self.merged())
        fields = self.fields
        named, rest = _split(self.deferred, lambda data: flow.may_consume(data, fields))
        self.deferred = []
        self.rest += rest
        for rel, data in named:
            self.queue(rel, data, ("flow-consumer",))

    def decide_refills(self) -> None:
        """After every consumer is parsed: queue the remaining held-back files that can define a class a consumer of a
        rewritten field constructs (:func:`~mtp_audit.engines.sglang.flow.may_refill`); scan the others as files no
        pass wants."""
        callees = flow.consumer_callees(self.merged(), self.fields or set())
        named, rest = _split(self.rest, lambda data: flow.may_refill(data, callees))
        self.rest = []
        for rel, data in named:
            self.queue(rel, data, ("flow-consumer",))
        for rel, data in rest:
            self.queue(rel, data, ())

    def _pooled_result(self, rel: str, data: bytes, passes: tuple[str, ...]) -> dict[str, Any]:
        """The worker's result for ``rel``, or, when the pool broke (a worker died), the result of parsing it here."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            result = self.futures[rel].result()[1]
            self.stored.add(rel)  # with its cache entry, where it has a key (_scan_job)
            return result
        except BrokenProcessPool:
            self._drop_pool()
            return scan_file(rel, data, passes)

    def merged(self) -> dict[str, dict[str, Any]]:
        """Every result so far, serial and pooled."""
        return {**self.results, **self.done}

    def finish(self) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
        """The results in the order of a plain sorted pass, the statistics; the tree's notes sorted, the cache entries
        the workers did not write written."""
        self.stats["parsed"] = sum(1 for j in self.jobs if j[2])
        jobs = sorted(self.jobs, key=lambda j: j[0])
        results = _ordered(self.results, self.done, jobs)
        self.tree.notes[self.notes_before:] = sorted(self.tree.notes[self.notes_before:], key=lambda note: note[0])
        for rel, _, _, key in jobs:
            if key is not None and rel not in self.stored:
                cache.store(self.folder, key, results[rel])
        return results, self.stats


def _ordered(results: dict[str, dict[str, Any]], done: dict[str, dict[str, Any]],
             jobs: list[tuple[str, bytes, Any, str | None]]) -> dict[str, dict[str, Any]]:
    """The insertion order of a plain serial pass, whichever files a pool parsed: the files scanned at once in path
    order, then the parse jobs in path order."""
    merged = {**results, **done}
    in_jobs = {j[0] for j in jobs}
    first = {rel: res for rel, res in sorted(merged.items()) if rel not in in_jobs}
    return {**first, **{j[0]: merged[j[0]] for j in jobs}}
