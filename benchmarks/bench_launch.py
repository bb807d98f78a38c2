"""Speed of ``mtp-audit launch`` against baselines measured in the same run (in one process, warm
sglang cache, median of ``--runs`` runs after one warm-up).

Rows:

1. baseline: the three analyzers called one after the other on the incident (sglang 0.5.9 wheel,
   Qwen3.5-397B-A17B-NVFP4 sparse shards, the SM120 env dump of vllm#57932).
2. ``audit_launch`` on the same command: the three analyzers plus parsing and cross-checks.
   Target: <= 1.5x row 1.
3. ``audit_launch`` with ``compare_sglang`` (0.5.9 -> 0.5.23): two evaluations, one checkpoint audit.
4. parsing the 10-option command with the launch parser (x1000) vs 5. Python's argparse built from the
   same 331-option table (x1000, parser construction included, as SGLang does per launch).

Wheels come from ``$MTP_AUDIT_TEST_CACHE/sglang-wheels`` (the test cache); the script exits when they are missing.
Usage: ``python benchmarks/bench_launch.py [--runs 7]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_time(fn, runs: int) -> float:
    """Median wall seconds of ``fn()`` over ``runs`` runs after one warm-up."""
    fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    cache = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", os.path.expanduser("~/.cache/mtp-audit-tests"))) / "sglang-wheels"
    w9 = sorted(cache.glob("sglang-0.5.9-*.whl"))
    w23 = sorted(cache.glob("sglang-0.5.23-*.whl"))
    if not w9 or not w23:
        print(f"missing sglang 0.5.9 / 0.5.23 wheels in {cache} (run the network tests once)")
        return 1
    own_cache = None
    if "MTP_AUDIT_CACHE_DIR" not in os.environ:
        own_cache = tempfile.mkdtemp(prefix="mtp-bench-cache-")
        os.environ["MTP_AUDIT_CACHE_DIR"] = own_cache

    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.engines.sglang import audit_sglang
    from mtp_audit.launch import audit_launch
    from mtp_audit.launch.command import parse_command
    from mtp_audit.preflight import preflight
    from mtp_audit.synth.shards import write_checkpoint

    qw = ROOT / "fixtures" / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
    dump = ROOT / "fixtures" / "preflight" / "envdumps" / "vllm-57932.txt"
    tmp = Path(tempfile.mkdtemp(prefix="mtp-bench-launch-"))
    try:
        write_checkpoint(tmp, json.loads((qw / "spec.json").read_text()), shards=True)
        for f in ("config.json", "hf_quant_config.json"):
            shutil.copy(qw / f, tmp / f)
        cmd = ["python", "-m", "sglang.launch_server", "--model-path", str(tmp), "--moe-runner-backend", "flashinfer_cutlass",
               "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN", "--tp", "8", "--trust-remote-code"]
        audit_sglang(w9[0]), audit_sglang(w23[0])  # fill the tree cache (cold cost is bench_sglang.py's subject)

        def separate():
            sg = audit_sglang(w9[0])
            audit_checkpoint(tmp)
            preflight(env_dumps=[dump], launch=cmd, sglang_facts=sg.facts["sglang"], use_sglang_analyzer=False)

        facts = audit_sglang(w9[0]).facts["sglang"]
        rows = [
            ("three analyzers, separately (baseline)", median_time(separate, args.runs)),
            ("audit_launch", median_time(lambda: audit_launch(cmd, sglang=w9[0], env_dump=dump, environ={}), args.runs)),
            ("audit_launch, 0.5.9 -> 0.5.23 diff", median_time(lambda: audit_launch(cmd, sglang=w9[0], compare_sglang=w23[0], env_dump=dump, environ={}), args.runs)),
        ]

        def ours():
            for _ in range(1000):
                parse_command(cmd, facts)

        def reference():
            for _ in range(1000):
                p = argparse.ArgumentParser()
                for flag, rec in facts["cli_arguments"].items():
                    kw = {"dest": rec["dest"]}
                    if rec.get("action") == "store_true":
                        kw["action"] = "store_true"
                    elif rec.get("nargs") in ("+", "*", "?"):
                        kw["nargs"] = rec["nargs"]
                    p.add_argument(flag, *rec.get("aliases") or [], **kw)
                p.parse_known_args(cmd[3:])

        rows.append(("parse the command x1000 (launch parser)", median_time(ours, max(3, args.runs // 2))))
        rows.append(("argparse from the same table x1000", median_time(reference, max(3, args.runs // 2))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if own_cache:
            shutil.rmtree(own_cache, ignore_errors=True)
    base = rows[0][1]
    print(f"{'measurement':45} {'wall s':>9} {'x baseline':>11}")
    for name, t in rows:
        print(f"{name:45} {t:9.3f} {t / base:11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
