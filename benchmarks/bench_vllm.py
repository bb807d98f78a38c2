"""Benchmark `mtp-audit vllm` on a real vLLM wheel and its unpacked form, against a naive baseline,
in the same run (benchmarks/harness.py: each run a separate process, cases alternated, median with
min–max, peak RSS per process).

Usage: python benchmarks/bench_vllm.py WHEEL [--runs N]

Rows:
- tool cold / warm on the .whl (cold: a fresh, empty result cache per run; warm: the cache of a
  previous run);
- tool cold / warm on the unpacked folder (only the files the rules read are extracted, once);
- baseline: parse the same files naively with libcst (``MetadataWrapper`` + ``PositionProvider``,
  what a position-tracking CST pass needs) from the unpacked folder, no analysis at all.
The ratio column is each row's median over the baseline's. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

BASELINE = r"""
import sys
import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
for p in sys.argv[1:]:
    MetadataWrapper(cst.parse_module(open(p, encoding="utf-8").read())).resolve(PositionProvider)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from mtp_audit.engines.vllm.target import WANTED

    with tempfile.TemporaryDirectory(prefix="bench-vllm-") as t:
        tmp = Path(t)
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
        cases = []
        for target, label in ((a.wheel, "wheel"), (str(unpacked), "unpacked")):
            cold_cache = tmp / f"cache-{label}-cold"
            env = python_env(tmp, {"MTP_AUDIT_CACHE_DIR": str(cold_cache)})
            warm_env = dict(env, MTP_AUDIT_CACHE_DIR=str(tmp / f"cache-{label}-warm"))
            cmd = [sys.executable, "-m", "mtp_audit", "vllm", target, "-f", "json", "-o", str(tmp / f"r-{label}.json")]
            cases.append(Case(f"{label} cold", cmd, env, ok=(0, 1, 3), before=lambda c=cold_cache: shutil.rmtree(c, ignore_errors=True)))
            cases.append(Case(f"{label} warm", cmd, warm_env, ok=(0, 1, 3)))
        cases.append(Case("baseline libcst", [sys.executable, "-c", BASELINE, *files], python_env(tmp)))
        results = measure(cases, a.runs)
    print(header(f"vLLM wheel {Path(a.wheel).name}, {len(files)} files parsed", a.runs))
    print()
    print(table(results, baseline="baseline libcst"))


if __name__ == "__main__":
    main()
