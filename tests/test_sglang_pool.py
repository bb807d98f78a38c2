"""The parse workers of a cold SGLang scan: when they start, that they change nothing in the report, and that no
worker outlives the audit process however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mtp_audit.engines.sglang import treescan
from tests.conftest import sglang_wheel


@pytest.mark.parametrize(("cpus", "load", "running", "threads", "platform", "want"), [
    (2, 0.4, 1, 1, "linux", 2),     # the quiet 2-core development machine
    (2, 1.8, 1, 1, "linux", 2),     # the audit's own earlier runs in the load average, nothing else running now
    (2, 1.0, 2, 1, "linux", 1),     # another process running now: the whole audit gets about one core
    (2, 4.5, 1, 1, "linux", 1),     # heavy load a moment ago: serial
    (2, 0.4, None, 1, "linux", 2),  # no /proc/loadavg count: the load average alone
    (2, 1.6, None, 1, "linux", 1),
    (1, 0.0, 1, 1, "linux", 1),     # one core: nothing to run a worker on
    (16, 3.0, 4, 1, "linux", 2),    # a big host with cores to spare
    (2, 0.4, 1, 3, "linux", 1),     # a caller with threads: never fork it
    (8, 0.0, 1, 1, "darwin", 1),    # fork is not the safe start there
])
def test_workers_start_only_with_a_free_core(monkeypatch: pytest.MonkeyPatch, cpus: int, load: float,
                                             running: int | None, threads: int, platform: str, want: int) -> None:
    import threading

    monkeypatch.delenv("MTP_AUDIT_SCAN_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(treescan, "_runnable_now", lambda: running)
    monkeypatch.setattr(threading, "active_count", lambda: threads)
    monkeypatch.setattr(sys, "platform", platform)
    assert treescan._workers() == want


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/loadavg")
def test_the_runnable_count_includes_this_process() -> None:
    assert 1 <= treescan._runnable_now() <= 10_000  # type: ignore[operator]


def test_the_environment_sets_the_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, want in (("1", 1), ("3", 3), ("99", 8), ("0", 1), ("two", 1)):
        monkeypatch.setenv("MTP_AUDIT_SCAN_WORKERS", value)
        assert treescan._workers() == want


def test_pooled_and_serial_scans_give_the_same_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """SGLang 0.5.23 (99 files parsed, 2.7 MB): two forked workers and the serial scan, every fact and finding equal."""
    from mtp_audit.engines.sglang import audit_sglang

    wheel = sglang_wheel("0.5.23")
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", "")
    reports = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("MTP_AUDIT_SCAN_WORKERS", workers)
        reports[workers] = audit_sglang(wheel).to_dict()
    assert reports["1"]["facts"]["sglang"]["scan"]["parsed"] == 99
    assert reports["1"] == reports["2"]


@pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"), reason="forked workers: Linux")
def test_a_killed_audit_leaves_no_worker_behind(tmp_path: Path) -> None:
    """``kill -9`` of the audit process while its two workers parse: the workers end within seconds (they wait on a
    pipe only the audit process writes to), nothing keeps running."""
    wheel = sglang_wheel("0.5.23")
    env = dict(os.environ, MTP_AUDIT_SCAN_WORKERS="2", MTP_AUDIT_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "mtp_audit", "sglang", str(wheel), "-o", str(tmp_path / "r.json")],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert _wait_for(lambda: _children(proc.pid), 20), "the pool never started"
        proc.kill()
        proc.wait(10)
        left = _wait_for(lambda: not _group(proc.pid), 10)
        assert left, f"workers left behind: {_group(proc.pid)}"
    finally:
        for pid in _group(proc.pid):  # never leave one running for the rest of the suite
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    assert not (tmp_path / "r.json").exists()


def _wait_for(test, seconds: float):  # noqa: ANN001, ANN202 - a polling helper
    end = time.monotonic() + seconds
    while True:
        got = test()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.05)


def _children(pid: int) -> list[str]:
    return subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()


def _group(pgid: int) -> list[str]:
    """The live processes of the group (an exited worker that PID 1 has not reaped yet is a zombie: not counted)."""
    rows = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(pgid)], capture_output=True, text=True).stdout.splitlines()
    return [r.split()[0] for r in rows if r.split() and not r.split()[1].startswith("Z")]


@pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"), reason="forked workers: Linux")
def test_a_worker_killed_mid_scan_leaves_the_report_whole(tmp_path: Path) -> None:
    """One of the two workers killed (``kill -9``, as the OOM killer does) while it parses: the pool is dropped, the
    files it held are parsed in the audit process, and the report equals a serial scan's (no hang, no exit 4)."""
    wheel = sglang_wheel("0.5.23")
    base = dict(os.environ, MTP_AUDIT_CACHE_DIR="")
    serial = subprocess.run([sys.executable, "-m", "mtp_audit", "sglang", str(wheel), "-f", "json"], env=dict(
        base, MTP_AUDIT_SCAN_WORKERS="1"), capture_output=True, text=True, timeout=300)
    proc = subprocess.Popen([sys.executable, "-m", "mtp_audit", "sglang", str(wheel), "-f", "json"],
                            env=dict(base, MTP_AUDIT_SCAN_WORKERS="2"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        workers = _wait_for(lambda: _children(proc.pid), 20)
        assert workers, "the pool never started"
        time.sleep(0.2)
        os.kill(int(workers[0]), signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        for pid in _group(proc.pid):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    assert proc.returncode == serial.returncode == 0, err
    assert out == serial.stdout


def test_server_argument_files_are_read_first() -> None:
    first, others = treescan.reading_order(["b/x.py", "sglang/srt/server_args.py", "a/y.py",
                                            "sglang/srt/arg_groups/fields/spec.py", "sglang/srt/arg_groups/a_hook.py"])
    assert first == ["sglang/srt/arg_groups/a_hook.py", "sglang/srt/arg_groups/fields/spec.py", "sglang/srt/server_args.py"]
    assert others == ["a/y.py", "b/x.py"]


@pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"), reason="forked workers: Linux")
def test_consumers_and_the_linker_module_are_parsed_beside_the_reading(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    """SGLang 0.5.23 with two workers and a reader slowed down until the server-argument files are parsed: the 10
    consumer files (``quantization`` readers) are handed to the workers while the tree is still read, the linker's
    ``srt/utils/common.py`` is parsed by a worker (the linker parses nothing itself), every file is read once, the
    workers write the same cache entries as a serial scan, and the report is the serial scan's."""
    from mtp_audit.engines.sglang import audit, audit_sglang
    from mtp_audit.sources.tree import SourceTree

    wheel = sglang_wheel("0.5.23")
    reads: list[str] = []
    real_read = SourceTree.read

    in_draft_api: list[str] = []  # the draft-API pass reads its worker and model files again (counted apart)
    draft_api_reads: list[str] = []

    def counted(self: SourceTree, rel: str) -> bytes | None:
        (draft_api_reads if in_draft_api else reads).append(rel)
        return real_read(self, rel)

    real_draft_api = audit.draft_api

    def draft_api(tree: SourceTree, mtp_classes: list) -> dict:
        in_draft_api.append("on")
        try:
            return real_draft_api(tree, mtp_classes)
        finally:
            in_draft_api.clear()

    decided_at: list[int] = []
    real_read_one, real_decide = treescan._TreeScan.read, treescan._TreeScan.decide_consumers

    def slow_read(self: treescan._TreeScan, rel: str) -> None:
        if self.first_read and self.fields is None and self.pool is not None:  # wait for the workers, as a slow disk would
            _wait_for(lambda: all(self.futures[j[0]].done() for j in self.first_jobs if j[0] in self.futures), 60)
        real_read_one(self, rel)

    def decide(self: treescan._TreeScan) -> None:
        if self.fields is None:
            decided_at.append(len(self.seen))
        real_decide(self)

    parses: list[str] = []
    real_parse = audit._Consts._parse
    monkeypatch.setattr(SourceTree, "read", counted)
    monkeypatch.setattr(audit, "draft_api", draft_api)
    monkeypatch.setattr(treescan._TreeScan, "read", slow_read)
    monkeypatch.setattr(treescan._TreeScan, "decide_consumers", decide)
    monkeypatch.setattr(audit._Consts, "_parse", lambda self, rel: parses.append(rel) or real_parse(self, rel))
    reports, caches = {}, {}
    for workers in ("1", "2"):
        monkeypatch.setenv("MTP_AUDIT_SCAN_WORKERS", workers)
        monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / workers))
        reads.clear(), parses.clear(), decided_at.clear(), draft_api_reads.clear()
        reports[workers] = audit_sglang(wheel).to_dict()
        caches[workers] = {p.relative_to(tmp_path / workers): p.read_bytes() for p in (tmp_path / workers).rglob("*.json")}
        again = sorted(rel for rel in set(reads) if reads.count(rel) > 1)  # cli/main.py: read again for `sglang serve`
        if workers == "1":  # serial: the linker reads common.py a second time, to parse it
            assert again == ["sglang/cli/main.py", "sglang/srt/utils/common.py"] and len(reads) == 3987
            assert parses == ["sglang/srt/utils/common.py"] and decided_at == [3985]
        else:
            assert again == ["sglang/cli/main.py"] and len(reads) == 3986
            assert parses == [] and decided_at and decided_at[0] < 3985
        # the 10 srt/speculative/*worker*.py files and the 39 files of the MTP classes and their bases, each read once
        assert len(draft_api_reads) == len(set(draft_api_reads)) == 49
    assert reports["1"] == reports["2"] and caches["1"] == caches["2"]
    assert len(caches["1"]) == 101  # the 99 parsed files, the tree, the wheel's one-stat key


def test_facts_from_per_file_cache_entries_are_in_the_order_of_a_fresh_scan(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """Found by a new user: 0.5.23 has two backend asserts at ``attention_registry.py:473``; read back from the
    per-file cache entries (canonical JSON, keys sorted) they came out swapped, because records at one location were
    ordered by ``str(record)``, which follows the key order of the dict. Now by their sorted items."""
    import shutil

    from mtp_audit.engines.sglang import audit_sglang

    wheel = sglang_wheel("0.5.23")
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path))
    fresh = audit_sglang(wheel).to_dict()["facts"]["sglang"]
    folder = next(tmp_path.glob("sglang-scan-v*"))
    for whole in ("tr", "wh"):  # keep only the per-file entries
        shutil.rmtree(folder / whole, ignore_errors=True)
    for entry in folder.rglob("whl-*.json"):
        entry.unlink()
    again = audit_sglang(wheel).to_dict()["facts"]["sglang"]
    assert again["scan"]["cached"] > 0
    locations = [a["location"] for a in fresh["backend_asserts"]]
    assert len(locations) > len(set(locations))  # records sharing a location: the order is decided by the tie-break
    for name in ("backend_asserts", "model_overrides"):
        assert again[name] == fresh[name]
