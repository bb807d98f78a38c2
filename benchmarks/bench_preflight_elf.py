"""Speed and memory of the bounded ELF fatbin reader against the baseline of reading the whole file
(the reference scanner of blackwell_fp4.md Appendix A does ``open(path).read()``), same files, same run.

Usage: PYTHONPATH=. python benchmarks/bench_preflight_elf.py [FILE.so ...]
Default files: fixtures/preflight/elf/*.so plus the cached sgl-kernel 0.3.21 sm100 library if the
network test has downloaded it ($MTP_AUDIT_TEST_CACHE or ~/.cache/mtp-audit-tests).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

from mtp_audit.preflight.elf import sm_targets


def baseline(path: Path) -> int:
    data = path.read_bytes()  # whole file in memory, as the reference scanner does
    return len(data)


def measure(fn, path: Path, reps: int) -> tuple[float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(path)
    dt = (time.perf_counter() - t0) / reps
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dt, peak


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    files = [Path(a) for a in sys.argv[1:]] or sorted((root / "fixtures" / "preflight" / "elf").glob("*.so"))
    cache = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", os.path.expanduser("~/.cache/mtp-audit-tests")))
    big = cache / "sgl-kernel-0.3.21" / "sm100_common_ops.so"
    if not sys.argv[1:] and big.is_file():
        files.append(big)
    print(f"{'file':<28} {'MB':>8} {'reader ms':>10} {'read-all ms':>12} {'time ratio':>10} {'reader peak KB':>15} {'read-all peak KB':>17} {'mem ratio':>10}")
    for f in files:
        reps = 20 if f.stat().st_size < 10_000_000 else 3
        t1, m1 = measure(sm_targets, f, reps)
        t2, m2 = measure(baseline, f, reps)
        print(f"{f.name[:28]:<28} {f.stat().st_size / 1e6:>8.2f} {t1 * 1e3:>10.3f} {t2 * 1e3:>12.3f} {t2 / t1:>10.1f} {m1 / 1024:>15.1f} {m2 / 1024:>17.1f} {m2 / max(m1, 1):>10.1f}")


if __name__ == "__main__":
    main()
