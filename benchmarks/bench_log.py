"""Speed and memory of ``mtp-audit log`` on a large log, against a floor measured in the same run
(benchmarks/harness.py: each run a separate process, cases alternated, median with min–max, peak RSS).

Inputs, generated in a temporary folder from the real excerpts of ``fixtures/logs/``:

1. ``vllm``: a vLLM serving log, 40 request lines (``"POST /v1/chat/completions HTTP/1.1" 200 OK``) then
   the four lines of ``vllm_ascend_9803_glm5_mtp3.log`` (two ``SpecDecoding metrics`` lines), repeated.
2. ``sglang``: ``sglang_pr608_decode_batch_tp_ep.log`` repeated: every other line a ``Decode batch`` line
   with ``accept len`` (the densest statistics an engine writes).

Floor: a plain Python loop over the lines that finds the statistic's key and converts the number after it
(``for line in f: i = line.find(b"accept"); ...``): what any one-pass reader in Python must at least do.
Reported: MB/s of each case (size / median), peak RSS (the reader keeps one 1 MiB chunk plus one line).

Usage: ``python benchmarks/bench_log.py [--size-mb 1024] [--runs 3] [--api]`` (``--api``: call
``analyze_log`` in the child instead of the CLI, for a machine without the CLI's dependencies; the analyzer
itself needs only the standard library)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

LOGS = ROOT / "fixtures" / "logs"

FLOOR = r"""
import re, sys
num = re.compile(rb"[0-9.]+")
total = 0.0
with open(sys.argv[1], "rb") as f:
    for line in f:
        i = line.find(sys.argv[2].encode())
        if i >= 0:
            m = num.match(line, i + len(sys.argv[2]))
            if m:
                total += float(m.group(0))
print(total)
"""


API = r"""
import sys
from mtp_audit.runtime.analyze import analyze_log
print(analyze_log([sys.argv[1]]).facts["log"]["verdict"])
"""


def generate(path: Path, kind: str, size: int) -> None:
    """Write about ``size`` bytes of a ``kind`` (``vllm``/``sglang``) log at ``path`` from the real excerpts."""
    if kind == "vllm":
        req = b'(APIServer pid=13026) INFO:     127.0.0.1:37582 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        block = req * 40 + (LOGS / "vllm_ascend_9803_glm5_mtp3.log").read_bytes()
    else:
        block = (LOGS / "sglang_pr608_decode_batch_tp_ep.log").read_bytes()
    reps = max(1, size // len(block))
    big = block * max(1, (8 << 20) // len(block))
    with open(path, "wb") as f:
        written = 0
        while written + len(big) <= reps * len(block):
            f.write(big)
            written += len(big)
        f.write(block * ((reps * len(block) - written) // len(block)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--api", action="store_true", help="run analyze_log in the child instead of the CLI")
    args = ap.parse_args()
    print(header(f"mtp-audit log on generated {args.size_mb} MB logs", args.runs))
    with tempfile.TemporaryDirectory(prefix="bench-log-") as tmp:
        work = Path(tmp)
        env = python_env(work)
        for kind, key in (("vllm", "Mean acceptance length: "), ("sglang", "accept len: ")):
            log = work / f"{kind}.log"
            generate(log, kind, args.size_mb << 20)
            size = log.stat().st_size
            tool = ([sys.executable, "-c", API, str(log)] if args.api else
                    [sys.executable, "-m", "mtp_audit", "log", str(log), "-f", "json", "-o", str(work / "out.json")])
            cases = [Case("floor: python line loop", [sys.executable, "-c", FLOOR, str(log), key], env=env),
                     Case("mtp-audit log", tool, env=env, ok=(0, 1, 3))]
            results = measure(cases, args.runs)
            print(f"\n{kind}: {size / 1e6:.0f} MB, {sum(1 for _ in open(log, 'rb'))} lines")
            print(table(results, baseline="floor: python line loop", mem_targets={"mtp-audit log": 200}))
            for label, r in results.items():
                print(f"  {label}: {size / 1e6 / r.median:.1f} MB/s")
            log.unlink()


if __name__ == "__main__":
    main()
