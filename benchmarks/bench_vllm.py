"""Benchmark `mtp-audit vllm` on a real vLLM wheel and its unpacked form, against a naive baseline,
alternated run by run in fresh subprocesses.

Usage: python benchmarks/bench_vllm.py WHEEL [--runs N]

Rows (each the median of N runs, with min-max, and the peak RSS of the child process):
- tool cold / warm on the .whl (cold: a fresh, empty result cache per run; warm: the cache of a
  previous run);
- tool cold / warm on the unpacked folder (only the files the rules read are extracted, once);
- baseline: parse the same files naively with libcst (``MetadataWrapper`` + ``PositionProvider``,
  what a position-tracking CST pass needs) from the unpacked folder, no analysis at all.
The ratio printed is baseline median / tool cold median on the folder. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r'''
import resource, sys, time, os
t = time.perf_counter()
mode, target = sys.argv[1], sys.argv[2]
if mode == "tool":
    from mtp_audit.cli.main import main
    import io, contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        main(["vllm", target, "-f", "json"])
else:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    for p in sys.argv[3:]:
        MetadataWrapper(cst.parse_module(open(p, encoding="utf-8").read())).resolve(PositionProvider)
dt = time.perf_counter() - t
print(f"{dt:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
'''


def run(mode: str, target: str, cache: str, files: list[str]) -> tuple[float, int]:
    env = {"MTP_AUDIT_CACHE_DIR": cache, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, mode, target, *files], capture_output=True, text=True, env=env, check=True)
    s, rss = out.stdout.split()
    return float(s), int(rss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    from mtp_audit.engines.vllm.target import WANTED

    tmp = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    unpacked = tmp / "unpacked"
    files: list[str] = []
    with zipfile.ZipFile(a.wheel) as zf:
        names = set(zf.namelist())
        for cands in WANTED.values():
            for rel in cands:
                if rel in names:
                    zf.extract(rel, unpacked)
                    files.append(str(unpacked / rel))
        zf.extract(next(n for n in names if n.endswith(".dist-info/METADATA")), unpacked)
    rows: dict[str, list[tuple[float, int]]] = {k: [] for k in ("wheel cold", "wheel warm", "unpacked cold", "unpacked warm", "baseline libcst")}
    for i in range(a.runs):
        for target, label in ((a.wheel, "wheel"), (str(unpacked), "unpacked")):
            cache = str(tmp / f"cache-{label}-{i}")
            rows[f"{label} cold"].append(run("tool", target, cache, []))
            rows[f"{label} warm"].append(run("tool", target, cache, []))
        rows["baseline libcst"].append(run("baseline", "-", str(tmp / "none"), files))
    print(f"vLLM wheel {Path(a.wheel).name}, {len(files)} files parsed, {a.runs} runs each (alternated)")
    print(f"{'row':18} {'median s':>9} {'min-max s':>15} {'peak RSS MB':>12}")
    for k, v in rows.items():
        ts = [x[0] for x in v]
        print(f"{k:18} {statistics.median(ts):9.3f} {min(ts):7.3f}-{max(ts):<7.3f} {max(x[1] for x in v) / 1024:12.1f}")
    ratio = statistics.median(x[0] for x in rows["baseline libcst"]) / statistics.median(x[0] for x in rows["unpacked cold"])
    print(f"baseline / tool cold (unpacked): {ratio:.1f}x")


if __name__ == "__main__":
    main()
