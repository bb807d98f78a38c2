"""Speed of ``mtp-audit checkpoint`` against baselines measured in the same run.

Rows (each a fresh process, median of ``--runs`` runs after one warm-up):

1. ``python -c "import json; json.load(open(INDEX))"`` on the 91,991-tensor DeepSeek-V3 index
   (8.9 MB, generated from ``fixtures/checkpoint/deepseek-ai--DeepSeek-V3/spec.json``): the baseline.
2. ``mtp-audit checkpoint DIR`` on config.json + that index (metadata-only). Target: <= 2x row 1.
3. ``mtp-audit checkpoint DIR`` with the 163 sparse shards present (every header read through
   safetensors). Informational.
4. ``python -c pass`` and 5. ``mtp-audit --help``: start-up. Target: --help <= 150 ms.

Bytecode: the repository is run with a private ``PYTHONPYCACHEPREFIX`` (compiled once during the
warm-up), as an installed package would be; ``PYTHONDONTWRITEBYTECODE`` is cleared for the runs.

Usage: ``python benchmarks/bench_checkpoint.py [--runs 15]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3"


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` executions of ``cmd`` (after one warm-up); stdout discarded."""
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        out.append(time.perf_counter() - t0)
        if rc.returncode not in (0, 1, 3):
            raise SystemExit(f"{cmd} failed ({rc.returncode}): {rc.stderr.decode()[-500:]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from mtp_audit.synth.shards import write_checkpoint

    work = Path(tempfile.mkdtemp(prefix="mtp-audit-bench-"))
    try:
        spec = json.loads((FIX / "spec.json").read_text())
        meta = work / "metadata-only"
        write_checkpoint(meta, spec, shards=False)
        shutil.copy(FIX / "config.json", meta / "config.json")
        full = work / "shards"
        write_checkpoint(full, spec, shards=True)
        shutil.copy(FIX / "config.json", full / "config.json")
        index = meta / "model.safetensors.index.json"

        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        py = sys.executable
        rows = [
            ("json.load(index) process", [py, "-c", f"import json; json.load(open({str(index)!r}))"], None, None),
            ("mtp-audit checkpoint (config + index)", [py, "-m", "mtp_audit", "checkpoint", str(meta)], 0, 2.0),
            ("mtp-audit checkpoint (163 sparse shards)", [py, "-m", "mtp_audit", "checkpoint", str(full)], 0, None),
            ("python -c pass", [py, "-c", "pass"], None, None),
            ("mtp-audit --help", [py, "-m", "mtp_audit", "--help"], 3, None),
        ]
        results = [(name, statistics.median(timed(cmd, env, args.runs)), base, target) for name, cmd, base, target in rows]
        print(f"DeepSeek-V3 index: {index.stat().st_size:,} bytes, 91,991 tensors; {args.runs} runs each, median wall time")
        print(f"{'case':<42} {'ms':>8} {'ratio':>16} {'target':>10}")
        for name, sec, base, target in results:
            ratio = ""
            if base is not None:
                ratio = f"{sec / results[base][1]:.2f}x {'json' if base == 0 else 'pass'}"
            tgt = f"<= {target:.1f}x" if target else ""
            if name == "mtp-audit --help":
                tgt = "<= 150 ms"
                ok = "ok" if sec * 1000 <= 150 else "MISSED"
            elif target:
                ok = "ok" if sec / results[base][1] <= target else "MISSED"
            else:
                ok = ""
            print(f"{name:<42} {sec * 1000:8.1f} {ratio:>16} {tgt:>10} {ok}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
