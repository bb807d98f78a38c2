"""Env-dump parsing time and memory against a read-and-split baseline, on generated large dumps.

Issue 13: parsing was quadratic (a line number counted from the start of the text for every match);
a 2.6 MB dump took 29 s. Since the line-start index (``mtp_audit/preflight/lineindex.py``) it is
linear. Dumps are bounded by ``MAX_TEXT_BYTES`` (64 MiB, ``read_bytes_bounded``), so 64 MB is the
largest input that is parsed at all.

Inputs (written to a temporary folder): the real fixtures ``sglang-24834.txt`` (check_env, 8x B200),
``h200-nvidia-smi.txt`` (nvidia-smi table, ``-q`` and CSV) and ``freeform/*.txt`` concatenated and
repeated to ~2.6 MB and ~64 MB (just under the 64 MiB limit).

Rows, per size, each run in a fresh process, the two commands alternated run by run:

1. baseline: ``python -c`` that reads the file and splits it into lines (the least any parser does);
2. ``parse_dump(read_dump(FILE))`` (every tool-dump format plus the free-form reader).

Printed: median (min-max) wall seconds, peak RSS of the child (``ru_maxrss`` of the finished child,
KiB on Linux), and the ratio of medians.

Usage: ``python benchmarks/bench_envdump.py [--runs 5] [--sizes 2.6,64] [--code DIR]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "preflight" / "envdumps"

BASELINE = "import sys; t=open(sys.argv[1], encoding='utf-8', errors='replace').read(); print(len(t.splitlines()))"
PARSE = ("import sys; from pathlib import Path; from mtp_audit.preflight.envdump import parse_dump, read_dump; "
         "f=parse_dump(read_dump(Path(sys.argv[1])), display=sys.argv[1]); print(len(f.gpus))")


def make_dump(path: Path, mb: float) -> int:
    """Write ~``mb`` MB of concatenated real dumps to ``path``; returns its size in bytes."""
    parts = [FIX / "sglang-24834.txt", FIX / "h200-nvidia-smi.txt"] + sorted((FIX / "freeform").glob("*.txt"))
    chunk = "\n".join(p.read_text(encoding="utf-8") for p in parts if p.exists() and p.name != "SOURCE.txt") + "\n"
    want = int(mb * 1_000_000)
    limit = 64 * 1024 * 1024 - len(chunk.encode())
    with path.open("w", encoding="utf-8") as fh:
        n = 0
        while n < min(want, limit):
            fh.write(chunk)
            n += len(chunk.encode())
    return path.stat().st_size


def run_rss(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS KiB of the child) through ``os.wait4``."""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execvpe(cmd[0], cmd, env)
    _, status, ru = os.wait4(pid, 0)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed ({os.waitstatus_to_exitcode(status)})")
    return dt, ru.ru_maxrss


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} s ({min(xs):.3f}-{max(xs):.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="2.6,64", help="dump sizes in MB, comma-separated")
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="folder holding the mtp_audit package to time (e.g. an older commit: git archive COMMIT mtp_audit | tar -x -C DIR)")
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(a.code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (float(x) for x in a.sizes.split(",")):
            path = Path(tmp) / f"dump-{mb}MB.txt"
            size = make_dump(path, mb)
            base, parse = [sys.executable, "-c", BASELINE, str(path)], [sys.executable, "-c", PARSE, str(path)]
            bt, pt, brss, prss = [], [], [], []
            run_rss(parse, env)  # warm-up (bytecode, page cache)
            for _ in range(a.runs):
                t, r = run_rss(base, env); bt.append(t); brss.append(r)
                t, r = run_rss(parse, env); pt.append(t); prss.append(r)
            print(f"{size / 1e6:.1f} MB dump ({a.runs} runs, alternated)")
            print(f"  baseline read+splitlines : {fmt(bt)}, peak RSS {max(brss) / 1024:.0f} MiB")
            print(f"  parse_dump               : {fmt(pt)}, peak RSS {max(prss) / 1024:.0f} MiB")
            print(f"  ratio (median)           : {statistics.median(pt) / statistics.median(bt):.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
