"""Env-dump parsing time and memory against a read-and-split baseline, on generated large dumps.

Issue 13: parsing was quadratic (a line number counted from the start of the text for every match);
a 2.6 MB dump took 29 s. Since the line-start index (``mtp_audit/preflight/lineindex.py``) it is
linear. Dumps are bounded by ``MAX_TEXT_BYTES`` (64 MiB, ``read_bytes_bounded``), so 64 MB is the
largest input that is parsed at all.

Inputs (written to a temporary folder): the real fixtures ``sglang-24834.txt`` (check_env, 8x B200),
``h200-nvidia-smi.txt`` (nvidia-smi table, ``-q`` and CSV) and ``freeform/*.txt`` concatenated and
repeated to ~2.6 MB and ~64 MB (just under the 64 MiB limit).

Rows, per size (benchmarks/harness.py: each run a fresh process, the two commands alternated run by
run, median with min–max, peak RSS per process, ratio of medians):

1. baseline: ``python -c`` that reads the file and splits it into lines (the least any parser does);
2. ``parse_dump(read_dump(FILE))`` (every tool-dump format plus the free-form reader).

Usage: ``python benchmarks/bench_envdump.py [--runs 5] [--sizes 2.6,64] [--code DIR]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="2.6,64", help="dump sizes in MB, comma-separated")
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="folder holding the mtp_audit package to time (e.g. an older commit: git archive COMMIT mtp_audit | tar -x -C DIR)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = python_env(Path(tmp))
        env["PYTHONPATH"] = str(a.code) + os.pathsep + env["PYTHONPATH"]
        print(header("env-dump parsing: parse_dump(read_dump(FILE)) vs reading and splitting the same file", a.runs))
        for mb in (float(x) for x in a.sizes.split(",")):
            path = Path(tmp) / f"dump-{mb}MB.txt"
            size = make_dump(path, mb)
            base = "baseline read+splitlines"
            r = measure([Case(base, [sys.executable, "-c", BASELINE, str(path)], env, cwd=str(a.code)),
                         Case("parse_dump", [sys.executable, "-c", PARSE, str(path)], env, cwd=str(a.code))], a.runs)
            print(f"\n{size / 1e6:.1f} MB dump\n")
            print(table(r, baseline=base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
