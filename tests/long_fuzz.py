"""The long fuzz run before a release: every fuzz kind of the suite, N examples each, split over seeds and processes.

Each kind (one ``@fuzz_settings`` test) is cut into shards; a shard is one pytest process running that test with
``MTP_AUDIT_FUZZ_EXAMPLES=<examples per shard>`` and its own ``--hypothesis-seed``, so the shards of a kind draw
different examples and together make the kind's total. Shards run ``--jobs`` at a time, the costliest first; one
that outlives ``--shard-timeout`` is killed and recorded as a hang. Per shard the JSON summary keeps the exit code,
wall and CPU seconds (user + sys of the process tree, ``os.wait4``), peak RSS, pytest's last line, hypothesis's
example counts and the shares of the CLI's exit codes (``fuzzkit.run_cli`` records them as events).

Usage (from the repository root)::

    python tests/long_fuzz.py --examples 10000 --jobs 16 --waiting-jobs 48 --out fuzz-results.json [--deadline 560] [--only KIND ...]

A second call with ``--resume fuzz-results.json`` runs only the shards that file does not hold, so a run can be
spread over several machine sessions; ``--report FILE...`` merges result files and prints the per-kind table of
docs/fuzzing.md. Exit status: 0 when every shard that ran passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: (test node, CPU seconds per example measured on a 2-core x86 machine, total examples or None for --examples).
#: The cost only orders and sizes the shards; a kind whose whole input space is smaller than the total
#: (the concurrent-runs kind: 6 cases) stops when hypothesis has exhausted it.
KINDS: list[tuple[str, float, int | None]] = [
    ("tests/test_fuzz.py::test_fuzz_shard_header", 0.02, None),
    ("tests/test_fuzz.py::test_fuzz_index", 0.02, None),
    ("tests/test_fuzz.py::test_fuzz_config_dialects", 0.02, None),
    ("tests/test_fuzz.py::test_fuzz_quant_configs", 0.02, None),
    ("tests/test_fuzz.py::test_fuzz_env_dumps", 0.03, None),
    ("tests/test_fuzz.py::test_fuzz_facts_file", 0.02, None),
    ("tests/test_fuzz.py::test_fuzz_sglang_folders", 0.04, None),
    ("tests/test_fuzz.py::test_fuzz_sglang_wheels", 0.04, None),
    ("tests/test_fuzz.py::test_fuzz_vllm_targets", 0.04, None),
    ("tests/test_fuzz.py::test_fuzz_output_paths", 0.03, None),
    ("tests/test_gguf_fuzz.py::test_fuzz_gguf_headers", 0.02, None),
    ("tests/test_gguf_fuzz.py::test_fuzz_gguf_llamacpp_launch", 0.03, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_hostile_hub", 0.04, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_hostile_index", 0.3, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_hostile_metrics", 0.05, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_cache_entries", 0.12, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_concurrent_runs_share_a_cache", 4.0, 6),
    ("tests/test_fuzz_hostile.py::test_fuzz_signals_during_writes", 0.1, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_source_encodings", 0.004, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_trtllm_yaml", 0.06, None),
    ("tests/test_fuzz_hostile.py::test_fuzz_markdown_values_render_as_text", 0.005, None),
    ("tests/test_hostile_api.py::test_wrong_types_raise_a_clear_type_error", 0.003, None),
    ("tests/test_hostile_api.py::test_unknown_keyword_arguments_raise", 0.003, None),
    ("tests/test_hostile_escape.py::test_render_invariant_over_any_text", 0.002, None),
    # the truncation property: one example runs every real dump (58) or log (29) once; the launch kind audits 2 launches
    ("tests/test_truncation.py::test_cutting_an_env_dump_adds_no_error_and_no_pass", 1.2, 2000),
    ("tests/test_truncation.py::test_cutting_an_engine_log_adds_no_error_and_no_verdict", 0.5, 2000),
    ("tests/test_truncation.py::test_cutting_the_dump_of_a_launch", 8.0, 500),
]

#: Wall seconds per example of the kinds that mostly wait (loopback time-outs, signal delays): sizes their shards.
WAITS = {"test_fuzz_hostile_hub": 1.05, "test_fuzz_signals_during_writes": 0.5, "test_fuzz_hostile_index": 0.9,
         "test_fuzz_hostile_metrics": 0.6}


@dataclass
class Shard:
    """One pytest process: ``examples`` examples of ``node`` drawn from ``seed``."""

    node: str
    seed: int
    examples: int
    cost: float
    waits: bool = False

    @property
    def key(self) -> str:
        return f"{self.node}@{self.seed}"


def plan(examples: int, shard_seconds: float, only: list[str]) -> list[Shard]:
    """Cut every kind into shards of about ``shard_seconds`` of CPU (or of waiting), costliest first."""
    shards: list[Shard] = []
    for node, cpu, total in KINDS:
        name = node.rsplit("::", 1)[1]
        if only and not any(o in name for o in only):
            continue
        total = total or examples
        per = max(cpu, WAITS.get(name, 0.0))
        n = max(1, min(total, round(total * per / shard_seconds)))
        for i in range(n):
            count = total // n + (1 if i < total % n else 0)
            shards.append(Shard(node, 1000 + i, count, count * per, name in WAITS))
    return sorted(shards, key=lambda s: -s.cost)


STAT_LINE = re.compile(r"^\s*- (\d+) passing, (\d+) failing, and (\d+) invalid test cases", re.M)
EVENT_LINE = re.compile(r"^\s*\* (\d+(?:\.\d+)?)%, (exit \d+)$", re.M)


def parse_output(text: str) -> dict[str, object]:
    """What pytest and hypothesis's statistics say: last line, example counts, exit-code shares (percent)."""
    passing = failing = invalid = 0
    for m in STAT_LINE.finditer(text):
        passing += int(m.group(1))
        failing += int(m.group(2))
        invalid += int(m.group(3))
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return {"last": lines[-1][:300] if lines else "", "passing": passing, "failing": failing, "invalid": invalid,
            "events": {m.group(2): float(m.group(1)) for m in EVENT_LINE.finditer(text)}}


def start(shard: Shard, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start one shard's pytest in its own process group; its output goes to a file."""
    log = workdir / f"{shard.key.replace('/', '_').replace('::', '.')}.log"
    env = {**os.environ, "MTP_AUDIT_FUZZ_EXAMPLES": str(shard.examples), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", shard.node, "-m", "",
           f"--hypothesis-seed={shard.seed}", "--hypothesis-show-statistics", "--basetemp", str(workdir / f"tmp-{shard.seed}-{abs(hash(shard.node)) % 10**6}")]
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True)
    return proc, log


def run(shards: list[Shard], jobs: int, waiting_jobs: int, shard_timeout: float, deadline: float, stop_at: float,
        workdir: Path) -> list[dict[str, object]]:
    """Run the shards until done or until ``deadline`` seconds have passed (no new start after): ``jobs`` CPU-bound
    shards and ``waiting_jobs`` mostly-waiting ones (loopback time-outs, signal delays) at a time. At ``stop_at``
    seconds the shards still running are killed and left out of the results (a ``--resume`` run does them again);
    a shard that outlives ``shard_timeout`` is killed and recorded as a hang."""
    t0 = time.monotonic()
    todo = list(shards)
    running: dict[int, tuple[Shard, subprocess.Popen[bytes], Path, float]] = {}
    results: list[dict[str, object]] = []
    while todo or running:
        for s in list(todo):
            if time.monotonic() - t0 >= deadline:
                break
            busy = sum(1 for r in running.values() if r[0].waits == s.waits)
            if busy < (waiting_jobs if s.waits else jobs):
                todo.remove(s)
                proc, log = start(s, workdir)
                running[proc.pid] = (s, proc, log, time.monotonic())
        if not running:
            break
        if time.monotonic() - t0 >= stop_at:
            for _s, proc, _log, _t in running.values():
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            print(f"stopped: {len(running)} shards cut, {len(todo)} not started", flush=True)
            break
        _reap(running, results, shard_timeout)
        time.sleep(0.05)
    return results


def _reap(running: dict[int, tuple[Shard, subprocess.Popen[bytes], Path, float]], results: list[dict[str, object]],
          shard_timeout: float) -> None:
    for pid, (s, proc, log, began) in list(running.items()):
        hung = time.monotonic() - began > shard_timeout
        if hung:
            os.killpg(proc.pid, signal.SIGKILL)
        got, status, usage = os.wait4(pid, 0 if hung else os.WNOHANG)
        if got == 0:
            continue
        del running[pid]
        text = log.read_text(errors="replace")
        results.append({"node": s.node, "seed": s.seed, "examples": s.examples, "rc": os.waitstatus_to_exitcode(status),
                        "hang": hung, "wall": round(time.monotonic() - began, 1),
                        "cpu": round(usage.ru_utime + usage.ru_stime, 1), "maxrss_mib": usage.ru_maxrss // 1024,
                        **parse_output(text), "tail": text[-2000:] if hung or status else ""})
        print(f"{s.key}: rc={results[-1]['rc']} {results[-1]['last']}", flush=True)


def report(paths: list[Path]) -> str:
    """The per-kind table (Markdown) of the merged result files."""
    rows: dict[str, list[dict]] = {}
    for p in paths:
        for r in json.loads(p.read_text()):
            rows.setdefault(r["node"].rsplit("::", 1)[1], []).append(r)
    out = ["| kind | shards | examples asked | passing examples | failing | exit codes (share) | hangs | CPU s | max wall s | peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, rs in rows.items():
        weights = [(r["passing"] or 0, r["events"]) for r in rs]
        total = sum(w for w, _ in weights) or 1
        shares: dict[str, float] = {}
        for w, ev in weights:
            for k, v in ev.items():
                shares[k] = shares.get(k, 0.0) + v * w / total
        ev_text = ", ".join(f"{v:.0f}% {k}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.5) or "-"
        failing = sum(r["failing"] for r in rs) + sum(1 for r in rs if r["rc"] not in (0,) and not r["failing"])
        out.append(f"| `{name}` | {len(rs)} | {sum(r['examples'] for r in rs):,} | {sum(r['passing'] for r in rs):,} | "
                   f"{failing} | {ev_text} | {sum(1 for r in rs if r['hang'])} | {sum(r['cpu'] for r in rs):,.0f} | "
                   f"{max(r['wall'] for r in rs):.0f} | {max(r['maxrss_mib'] for r in rs)} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--waiting-jobs", type=int, default=2 * (os.cpu_count() or 2))
    ap.add_argument("--shard-seconds", type=float, default=120.0, help="target CPU (or waiting) seconds per shard")
    ap.add_argument("--shard-timeout", type=float, default=900.0)
    ap.add_argument("--deadline", type=float, default=float("inf"), help="start no shard after this many seconds")
    ap.add_argument("--stop-at", type=float, default=float("inf"), help="kill what still runs after this many seconds")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--resume", type=Path, nargs="*", default=[])
    ap.add_argument("--out", type=Path, default=Path("fuzz-results.json"))
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/mtp-audit-long-fuzz"))
    ap.add_argument("--report", type=Path, nargs="*")
    args = ap.parse_args()
    if args.report:
        print(report(args.report))
        return 0
    done = {f"{r['node']}@{r['seed']}" for p in args.resume for r in json.loads(p.read_text())}
    shards = [s for s in plan(args.examples, args.shard_seconds, args.only) if s.key not in done]
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"{len(shards)} shards, {sum(s.examples for s in shards):,} examples, ~{sum(s.cost for s in shards):,.0f} s", flush=True)
    results = run(shards, args.jobs, args.waiting_jobs, args.shard_timeout, args.deadline, args.stop_at, args.workdir)
    args.out.write_text(json.dumps(results, indent=1))
    print(report([args.out]))
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
