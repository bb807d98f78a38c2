"""Speed of ``mtp-audit launch`` against the analyzers it combines, on the same incident, in the same
run (benchmarks/harness.py: each run a separate process, cases alternated, median with min–max, peak
RSS per process; the sglang tree cache is warm in every case, filled by the warm-up round).

Rows:

1. baseline: the three analyzers called one after the other on the incident (sglang 0.5.9 wheel,
   Qwen3.5-397B-A17B-NVFP4 sparse shards, the SM120 env dump of vllm#57932).
2. ``audit_launch`` on the same command: the three analyzers plus parsing and cross-checks.
   Target: <= 1.5x row 1.
3. ``audit_launch`` with ``compare_sglang`` (0.5.9 -> 0.5.23): two evaluations, one checkpoint audit.
4. parsing the 10-option command with the launch parser (x1000) vs 5. Python's argparse built from the
   same 331-option table (x1000, parser construction included, as SGLang does per launch); both
   processes first load the same (cached) sglang facts.

Wheels come from ``$MTP_AUDIT_TEST_CACHE/sglang-wheels`` (the test cache); the script exits when they are missing.
Usage: ``python benchmarks/bench_launch.py [--runs 7]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

CHILD = r"""
import argparse, sys
from pathlib import Path
mode, w9, w23, ckpt, dump = sys.argv[1:6]
cmd = ["python", "-m", "sglang.launch_server", "--model-path", ckpt, "--moe-runner-backend", "flashinfer_cutlass",
       "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN", "--tp", "8", "--trust-remote-code"]
if mode == "separate":
    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.engines.sglang import audit_sglang
    from mtp_audit.preflight import preflight
    sg = audit_sglang(w9)
    audit_checkpoint(ckpt)
    preflight(env_dumps=[Path(dump)], launch=cmd, engine_facts={"sglang": sg.facts["sglang"]}, use_engine_analyzer=False)
elif mode in ("launch", "diff"):
    from mtp_audit.launch import audit_launch
    extra = {"compare_sglang": w23} if mode == "diff" else {}
    audit_launch(cmd, sglang=w9, env_dump=Path(dump), environ={}, **extra)
else:
    from mtp_audit.engines.sglang import audit_sglang
    facts = audit_sglang(w9).facts["sglang"]
    if mode == "parse":
        from mtp_audit.engines.sglang.launch.command import parse_command
        for _ in range(1000):
            parse_command(cmd, facts)
    else:
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
"""


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
    sys.path.insert(0, str(ROOT))
    from mtp_audit.synth.shards import write_checkpoint

    qw = ROOT / "fixtures" / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
    dump = ROOT / "fixtures" / "preflight" / "envdumps" / "vllm-57932.txt"
    tmp = Path(tempfile.mkdtemp(prefix="mtp-bench-launch-"))
    try:
        ckpt = tmp / "ckpt"
        write_checkpoint(ckpt, json.loads((qw / "spec.json").read_text()), shards=True)
        for f in ("config.json", "hf_quant_config.json"):
            shutil.copy(qw / f, ckpt / f)
        env = python_env(tmp, {"MTP_AUDIT_CACHE_DIR": str(tmp / "cache")})
        argv = [sys.executable, "-c", CHILD]
        rest = [str(w9[0]), str(w23[0]), str(ckpt), str(dump)]
        base = "three analyzers, separately (baseline)"
        r = measure([Case(base, argv + ["separate", *rest], env),
                     Case("audit_launch", argv + ["launch", *rest], env),
                     Case("audit_launch, 0.5.9 -> 0.5.23 diff", argv + ["diff", *rest], env)], args.runs)
        print(header("mtp-audit launch on the vllm#57932 incident (sglang 0.5.9, Qwen3.5-397B-A17B-NVFP4 shards, SM120 dump)", args.runs))
        print()
        print(table(r, baseline=base, targets={"audit_launch": 1.5}))
        ref = "argparse from the same table x1000"
        r = measure([Case(ref, argv + ["argparse", *rest], env), Case("launch parser x1000", argv + ["parse", *rest], env)],
                    max(3, args.runs // 2))
        print()
        print(table(r, baseline=ref))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
