"""Hub audit: requests, bytes and time of reading the 163-shard DeepSeek-V3 fixture over the loopback
hub (tests/hubfixture.py, the real HF HTTP API with range requests) with ``--latency`` injected per
request, against huggingface_hub's own ``HfApi.get_safetensors_metadata`` on the same repo (the peer
baseline: it also reads every shard header with range requests), in the same run
(benchmarks/harness.py: each run a separate process with empty caches, alternated, median with
min–max, peak RSS per process).

Rows: the baseline; ``mtp-audit checkpoint org/name`` (the default: one range per shard,
``bytes=0-100000``); the same audit with exact reads (``prefetch_bytes=0``: ``bytes=0-7`` then the
header, two per shard); and a second audit of the same commit (caches warm). Requests and bytes are
counted by the server, for one more run of each case. Target: default requests <= shards + 4.

Run: ``python benchmarks/bench_hub.py [--latency 0.05] [--runs 5]``. Nothing reaches the internet.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness import Case, header, measure, python_env, run_once, table  # noqa: E402
from hubfixture import DEEPSEEK_SHARDS, FakeHub, FakeRepo, build_deepseek_163, child_env, header_length  # noqa: E402

REPO = "deepseek-ai/DeepSeek-V3"

PEER = """
import sys
from huggingface_hub import HfApi
meta = HfApi().get_safetensors_metadata(sys.argv[1])
assert sum(len(f.tensors) for f in meta.files_metadata.values()) == 91991
"""

EXACT = """
import sys
from mtp_audit.checkpoint.analyze import analyze
from mtp_audit.sources.hub import open_hub_source
analyze(open_hub_source(sys.argv[1], None, prefetch_bytes=0))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05, help="seconds added to every request (default 0.05)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    files = build_deepseek_163()
    headers = {n: header_length(b) for n, b in files.items() if n.endswith(".safetensors")}
    repo = FakeRepo(REPO, files)
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp, FakeHub([repo], latency=args.latency) as hub:
        root = Path(tmp)
        env = python_env(root, child_env(hub.endpoint, root))
        env["PYTHONPATH"] = python_env(root)["PYTHONPATH"]
        warm_env = python_env(root, child_env(hub.endpoint, root / "warm"))
        warm_env["PYTHONPATH"] = env["PYTHONPATH"]

        def fresh() -> None:  # empty both caches: a cold audit
            for sub in ("hf-cache", "mtp-audit-cache"):
                shutil.rmtree(root / sub, ignore_errors=True)

        audit = [py, "-m", "mtp_audit", "checkpoint", REPO]
        cases = [
            Case("huggingface_hub get_safetensors_metadata", [py, "-c", PEER, REPO], env, before=fresh),
            Case("mtp-audit checkpoint (default)", audit, env, ok=(0, 1, 3), before=fresh),
            Case("mtp-audit, exact reads (prefetch_bytes=0)", [py, "-c", EXACT, REPO], env, before=fresh),
            # own caches, never emptied: filled by the warm-up run, so every timed run is a repeat
            Case("mtp-audit, second run, same commit", audit[:-1] + [f"{REPO}@{repo.commit}"], warm_env, ok=(0, 1, 3)),
        ]
        results = measure(cases, args.runs)
        counts = {}
        info_bytes = 0  # the model-info answer (file listing), not header bytes
        for c in cases:
            hub.clear_log()
            run_once(c)
            counts[c.label] = (hub.requests(), hub.bytes_sent())
            info_bytes = max([s.nbytes for s in hub.log if s.kind == "info"] or [info_bytes])
    print(header(f"163-shard DeepSeek-V3 fixture on the loopback hub, {args.latency * 1000:.0f} ms injected per request; "
                 f"shard headers total {sum(headers.values()):,} bytes (8 + n each)", args.runs))
    print()
    print(table(results, baseline="huggingface_hub get_safetensors_metadata"))
    print()
    print("| case | requests | target | bytes served | bytes past the headers (served − headers − JSON files − model info) |")
    print("|---|---:|---|---:|---:|")
    json_bytes = len(files["config.json"]) + len(files["model.safetensors.index.json"])
    for label, (n, sent) in counts.items():
        tgt = ""
        if label == "mtp-audit checkpoint (default)":
            tgt = f"<= {DEEPSEEK_SHARDS + 4} {'met' if n <= DEEPSEEK_SHARDS + 4 else 'MISSED'}"
        past = max(sent - sum(headers.values()) - json_bytes - info_bytes, 0) if n else 0
        print(f"| {label} | {n} | {tgt} | {sent:,} | {past:,} |")


if __name__ == "__main__":
    main()
