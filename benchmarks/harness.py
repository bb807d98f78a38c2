"""The one timing harness every script in benchmarks/ uses, so that every number is taken the same way:

- the baseline and the tool run on the same input, each run a separate process;
- runs alternate case by case (``A B A B ...``, the order reversed every other round, so a slow
  moment of the machine does not fall on one case only), after one untimed warm-up run of each case;
- a case reports the median wall time with its min–max, and the peak RSS *of each process*
  (``ru_maxrss`` from ``os.wait4`` on that child alone, never a running maximum over all children;
  children are forked from a small helper process, see :class:`_Spawner`);
- the ratio to the baseline is the ratio of the medians, printed next to the target when there is one.

Usage from a benchmark script::

    from harness import Case, measure, table
    results = measure([Case("json.load", [...]), Case("mtp-audit", [...])], runs=15)
    print(table(results, baseline="json.load", targets={"mtp-audit": 2.0}))

``python_env`` gives the environment the scripts run Python children in (this checkout first on
``PYTHONPATH``, bytecode compiled once into a private ``PYTHONPYCACHEPREFIX`` as an installed package
would have it).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The working folder of every case that names none: empty, outside the checkout (made once per benchmark process).
NEUTRAL_CWD = tempfile.mkdtemp(prefix="mtp-audit-bench-cwd-")
atexit.register(shutil.rmtree, NEUTRAL_CWD, True)


@dataclass
class Case:
    """One command to time.

    Attributes:
        label: row name (unique within one measurement).
        argv: the command; run with ``cwd`` and ``env``, stdout discarded.
        env: environment (None: this process's).
        ok: exit codes that count as success (anything else aborts the benchmark with its stderr).
        before: called (untimed) before every run of this case, e.g. to empty a cache for a cold run.
        cwd: working folder (default: :data:`NEUTRAL_CWD`, an empty folder, as a user runs the tool from a project of
            their own; ``PYTHONPATH`` from :func:`python_env` makes ``python -m mtp_audit`` run this checkout. From the
            checkout itself every run would also read its ``pyproject.toml``, which names ``mtp-audit``, as a possible
            settings file).
    """

    label: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    ok: tuple[int, ...] = (0,)
    before: Callable[[], None] | None = None
    cwd: str | None = None


@dataclass
class Result:
    """Every timed run of one :class:`Case`: wall seconds and peak RSS in KiB, one entry per process."""

    label: str
    walls: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median wall seconds over the timed runs."""
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        """Median CPU seconds (user + system, ``os.wait4``'s rusage of each process) over the timed runs: on a
        machine shared with other work, a steadier measure than wall time."""
        return statistics.median(self.cpus) if self.cpus else float("nan")

    @property
    def rss_mib(self) -> float:
        """Median over the runs of each process's own peak RSS, MiB."""
        return statistics.median(self.rss_kib) / 1024


SPAWNER = r"""
import json, os, sys, time
for line in sys.stdin:
    req = json.loads(line)
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            if req["cwd"]:
                os.chdir(req["cwd"])
            null = os.open(os.devnull, os.O_RDWR)
            err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(null, 0); os.dup2(null, 1); os.dup2(err, 2)
            os.execvpe(req["argv"][0], req["argv"], req["env"])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "rc": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss,
                      "cpu": usage.ru_utime + usage.ru_stime}), flush=True)
"""


class _Spawner:
    """A small helper process that forks and execs every timed command and reports ``os.wait4``'s
    rusage of that one child. Needed because Linux carries a process's peak RSS across ``fork`` and
    ``exec`` (``ru_maxrss`` of a child forked from a benchmark that holds 70 MB of fixtures reads at
    least 70 MB); the helper holds ~8 MB, so each child's peak is its own above that floor."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", SPAWNER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None, stderr: str) -> dict[str, float]:
        """Run one command to completion; ``{"wall": s, "rc": code, "maxrss": KiB}`` of that child."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": list(map(str, argv)), "env": dict(env), "cwd": cwd, "stderr": stderr}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


_SPAWNER: _Spawner | None = None


def run_once(case: Case) -> tuple[float, int]:
    """Run ``case`` once in a child process; return ``(wall seconds, that child's peak RSS in KiB)`` (its CPU seconds:
    :data:`LAST_CPU`).

    Raises:
        SystemExit: the exit code is not in ``case.ok`` (the child's stderr tail is shown).
    """
    global _SPAWNER
    if _SPAWNER is None:
        _SPAWNER = _Spawner()
    if case.before is not None:
        case.before()
    with tempfile.NamedTemporaryFile() as err:
        got = _SPAWNER.run(case.argv, case.env if case.env is not None else os.environ, case.cwd or NEUTRAL_CWD, err.name)
        if got["rc"] not in case.ok:
            raise SystemExit(f"{case.label}: {' '.join(map(str, case.argv))} exited {got['rc']}: "
                             f"{Path(err.name).read_bytes().decode(errors='replace')[-800:]}")
    global LAST_CPU
    LAST_CPU = float(got.get("cpu", float("nan")))
    return got["wall"], int(got["maxrss"])  # Linux: KiB


#: CPU seconds (user + system) of the process :func:`run_once` ran last.
LAST_CPU = float("nan")


def measure(cases: Sequence[Case], runs: int, *, warmup: int = 1, progress: bool = True) -> dict[str, Result]:
    """Time every case ``runs`` times, alternating between the cases run by run (see the module
    docstring); ``warmup`` untimed rounds first."""
    results = {c.label: Result(c.label) for c in cases}
    for _ in range(warmup):
        for c in cases:
            run_once(c)
    for i in range(runs):
        for c in cases if i % 2 == 0 else list(reversed(cases)):
            wall, rss = run_once(c)
            results[c.label].walls.append(wall)
            results[c.label].rss_kib.append(rss)
            results[c.label].cpus.append(LAST_CPU)
        if progress:
            print(f"\r  round {i + 1}/{runs}", end="", file=sys.stderr, flush=True)
    if progress:
        print("\r\x1b[K", end="", file=sys.stderr, flush=True)
    return results


def fmt_s(sec: float) -> str:
    """Seconds for a table cell: 3 decimals below 10 s, 1 above."""
    return f"{sec:.3f}" if sec < 10 else f"{sec:.1f}"


def table(
    results: Mapping[str, Result],
    *,
    baseline: str | None = None,
    targets: Mapping[str, float] | None = None,
    abs_targets: Mapping[str, float] | None = None,
    mem_targets: Mapping[str, float] | None = None,
) -> str:
    """A Markdown table: case, median wall s, min–max, median CPU s (user + system of each process), peak RSS (MiB,
    median of the per-process peaks), ratio of medians to ``baseline`` (wall, and CPU in brackets), and the target
    verdicts (on wall time).

    Args:
        targets: label -> the largest allowed ratio to ``baseline``.
        abs_targets: label -> the largest allowed median in seconds.
        mem_targets: label -> the largest allowed peak RSS in MiB (the max over the runs).
    """
    targets, abs_targets, mem_targets = targets or {}, abs_targets or {}, mem_targets or {}
    base = results[baseline].median if baseline else None
    lines = [
        f"| case | median s | min–max s | CPU s | peak RSS MiB | × {baseline or 'baseline'} (CPU) | target |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, r in results.items():
        ratio = r.median / base if base else None
        verdicts = []
        if label in targets and ratio is not None:
            verdicts.append(f"≤ {targets[label]:g}× {'met' if ratio <= targets[label] else 'MISSED'}")
        if label in abs_targets:
            verdicts.append(f"≤ {abs_targets[label]:g} s {'met' if r.median <= abs_targets[label] else 'MISSED'}")
        if label in mem_targets:
            peak = max(r.rss_kib) / 1024
            verdicts.append(f"≤ {mem_targets[label]:g} MiB {'met' if peak <= mem_targets[label] else 'MISSED'}")
        cpu_ratio = r.cpu / results[baseline].cpu if baseline and results[baseline].cpu else None
        rat = "baseline" if label == baseline else (f"{ratio:.2f}× ({cpu_ratio:.2f}×)" if ratio is not None and cpu_ratio is not None
                                                    else f"{ratio:.2f}×" if ratio is not None else "")
        lines.append(
            f"| {label} | {fmt_s(r.median)} | {fmt_s(min(r.walls))}–{fmt_s(max(r.walls))} | {fmt_s(r.cpu)} | {r.rss_mib:.0f} | {rat} | {'; '.join(verdicts)} |"
        )
    return "\n".join(lines)


def python_env(work: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for Python children: this checkout first on ``PYTHONPATH``, bytecode written
    once (during the warm-up) into ``work/pycache`` and reused, as an installed package would."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def header(title: str, runs: int) -> str:
    """First lines of every benchmark's output: what, how many runs, and the machine."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{title}\n{runs} timed runs per case, alternating, each a separate process, after 1 warm-up; "
            f"{os.cpu_count()} CPUs, load average {load:.1f} at the start; Python {sys.version.split()[0]}")
