"""Benchmark `mtp-audit sglang` on a real SGLang wheel against two baselines, in the same run.

Usage: python benchmarks/bench_sglang.py [WHEEL] [--semgrep PATH_TO_SEMGREP] [--sample N]

Rows: our audit cold (fresh cache, one subprocess) and warm (second run, same cache); parsing every
.py file with libcst (a random sample of N files, extrapolated by line count, said so in the
table); semgrep with an equivalent three-pattern NEXTN remap rule on the unpacked tree (skipped,
with the reason, when no semgrep is given or it fails). Peak memory is ru_maxrss of each child.
Timings are wall-clock on this machine; nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULE = """rules:
  - id: nextn-remap
    languages: [python]
    severity: INFO
    message: NEXTN remap
    pattern-either:
      - pattern: |
          if $X.speculative_algorithm == "NEXTN":
              ...
      - pattern: |
          if $A == "NEXTN" or $B:
              ...
      - pattern: $S = frozenset({"NEXTN"})
"""


def child(cmd: list[str], env: dict[str, str], timeout: int = 900) -> tuple[float, int, int]:
    """Run ``cmd``; return (wall seconds, exit code, peak RSS of the child in MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    try:
        rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = -9
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, rc, max(peak, before) // 1024


LIBCST_SAMPLE = """
import sys, time, libcst
files = sys.argv[2:]
lines = 0
t = time.perf_counter()
for f in files:
    src = open(f, encoding="utf-8", errors="replace").read()
    lines += src.count("\\n")
    try:
        libcst.parse_module(src)
    except Exception:
        pass
print(time.perf_counter() - t, lines)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel", nargs="?", default=str(Path(os.environ.get("MTP_AUDIT_TEST_CACHE", "/work/cache")) / "sglang-wheels"))
    ap.add_argument("--semgrep", default="/work/cache/semgrep-venv/bin/semgrep")
    ap.add_argument("--sample", type=int, default=300)
    a = ap.parse_args()
    wheel = Path(a.wheel)
    if wheel.is_dir():
        wheel = sorted(wheel.glob("sglang-0.5.23-*.whl"))[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        env["MTP_AUDIT_CACHE_DIR"] = str(Path(tmp) / "cache")
        cmd = [sys.executable, "-m", "mtp_audit", "sglang", str(wheel), "-f", "json", "-o", str(Path(tmp) / "r.json")]
        cold, rc, mem = child(cmd, env)
        rows.append(("mtp-audit sglang, cold (2 workers)", f"{cold:.2f}", f"{mem}", f"rc={rc}"))
        warm, rc, mem2 = child(cmd, env)
        rows.append(("mtp-audit sglang, warm cache", f"{warm:.2f}", f"{mem2}", f"rc={rc}"))
        src = Path(tmp) / "src"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(src, [n for n in zf.namelist() if n.endswith(".py")])
        files = sorted(str(p) for p in src.rglob("*.py"))
        total_lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
        random.seed(0)
        sample = random.sample(files, min(a.sample, len(files)))
        out = subprocess.run([sys.executable, "-c", LIBCST_SAMPLE, "x", *sample], capture_output=True, text=True, env=env)
        try:
            secs, lines = out.stdout.split()
            est = float(secs) * total_lines / max(1, int(lines))
            rows.append((f"libcst parse of every file (sample {len(sample)} of {len(files)}, extrapolated by lines)",
                         f"{est:.1f}", "-", f"sample {float(secs):.1f}s/{lines} lines"))
        except ValueError:
            rows.append(("libcst parse of every file", "failed", "-", out.stderr[-80:]))
        sg = Path(a.semgrep)
        if sg.exists():
            rule = Path(tmp) / "rule.yml"
            rule.write_text(RULE)
            t, rc, mem3 = child([str(sg), "scan", "--config", str(rule), "--metrics=off", "--jobs", "2", "--timeout", "0", "--quiet", str(src)], env)
            rows.append(("semgrep, 3-pattern NEXTN remap rule, 2 jobs", f"{t:.1f}", f"{mem3}", f"rc={rc}"))
        else:
            rows.append(("semgrep", "not run", "-", f"{sg} not installed"))
        print(f"target: {wheel.name}  ({len(files)} .py files, {total_lines} lines), cores: {os.cpu_count()}")
    base = cold
    print(f"{'measurement':70} {'wall s':>8} {'peak MiB':>9} {'x cold':>7}  note")
    for name, secs, mem, note in rows:
        try:
            ratio = f"{float(secs) / base:.1f}"
        except ValueError:
            ratio = "-"
        print(f"{name:70} {secs:>8} {mem:>9} {ratio:>7}  {note}")


if __name__ == "__main__":
    main()
