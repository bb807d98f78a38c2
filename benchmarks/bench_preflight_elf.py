"""Speed and memory of the bounded ELF fatbin reader (``mtp_audit.preflight.elf.sm_targets``) against the
baseline of reading the whole file (the reference scanner of blackwell_fp4.md Appendix A does
``open(path).read()``), same files, same run (benchmarks/harness.py: each run a separate process, cases
alternated, median with min–max, peak RSS per process; both processes import the same modules, so
the RSS difference is the read itself).

Usage: ``python benchmarks/bench_preflight_elf.py [--runs 7] [FILE.so ...]``
Default files: fixtures/preflight/elf/*.so plus the cached sgl-kernel 0.3.21 sm100 library if the
network test has downloaded it ($MTP_AUDIT_TEST_CACHE or ~/.cache/mtp-audit-tests).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

READER = "import sys; from pathlib import Path; from mtp_audit.preflight.elf import sm_targets; sm_targets(Path(sys.argv[1]))"
BASELINE = ("import sys; from pathlib import Path; import mtp_audit.preflight.elf; "
            "data = Path(sys.argv[1]).read_bytes(); assert len(data) >= 0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("files", nargs="*", type=Path)
    a = ap.parse_args()
    files = a.files or sorted((ROOT / "fixtures" / "preflight" / "elf").glob("*.so"))
    cache = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", os.path.expanduser("~/.cache/mtp-audit-tests")))
    big = cache / "sgl-kernel-0.3.21" / "sm100_common_ops.so"
    if not a.files and big.is_file():
        files.append(big)
    with tempfile.TemporaryDirectory() as tmp:
        env = python_env(Path(tmp))
        print(header("ELF fatbin SM targets: bounded reader vs read-the-whole-file", a.runs))
        for f in files:
            print(f"\n{f.name}: {f.stat().st_size:,} bytes\n")
            r = measure([Case("read the whole file (baseline)", [sys.executable, "-c", BASELINE, str(f)], env),
                         Case("sm_targets (bounded reader)", [sys.executable, "-c", READER, str(f)], env)], a.runs)
            print(table(r, baseline="read the whole file (baseline)"))


if __name__ == "__main__":
    main()
