"""Hub audit speed: the 163-shard DeepSeek-V3 fixture read over the loopback hub with 50 ms of latency
injected per request, ``--jobs 1`` (the baseline) against ``--jobs 8``, in the same run.

Each row reads what the checkpoint analyzer reads (revision + file list, config.json, the index, every
shard header) with a fresh mtp-audit cache, so every header is fetched; the last row repeats the audit
of the same commit with the cache warm. Also shown: the speculative ``prefetch_bytes`` mode (one
request per shard, reads tensor data past each header; see docs/hub.md "Header reads").

Run: ``PYTHONPATH=$PWD python benchmarks/bench_hub.py [--latency 0.05]``. Nothing reaches the internet.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hubfixture import (  # noqa: E402
    DEEPSEEK_SHARDS,
    FakeHub,
    FakeRepo,
    build_deepseek_163,
    header_length,
)

REPO = "deepseek-ai/DeepSeek-V3"


def audit(hub: FakeHub, cache: Path, hf_cache: Path, *, jobs: int, revision: str | None = None, prefetch: int = 0) -> tuple[float, dict[str, int], int]:
    """Read everything the analyzer reads; return (wall seconds, source stats, server-side requests)."""
    from mtp_audit.sources.hub import open_hub_source

    hub.clear_log()
    t0 = time.perf_counter()
    src = open_hub_source(REPO, revision, endpoint=hub.endpoint, cache_dir=cache, hf_cache_dir=hf_cache, jobs=jobs, prefetch_bytes=prefetch)
    src.read_json("config.json")
    src.read_json("model.safetensors.index.json")
    headers = src.read_headers([f for f in src.list_files() if f.endswith(".safetensors")])
    wall = time.perf_counter() - t0
    assert len(headers) == DEEPSEEK_SHARDS and all(hasattr(h, "tensors") for h in headers.values())
    return wall, src.stats(), hub.requests()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every request (default 0.05)")
    args = parser.parse_args()

    from huggingface_hub import constants

    constants.HF_HUB_DISABLE_TELEMETRY = True  # no agent-harness registry fetch during the measurement
    files = build_deepseek_163()
    header_bytes = sum(header_length(b) for n, b in files.items() if n.endswith(".safetensors"))
    repo = FakeRepo(REPO, files)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeHub([repo], latency=args.latency) as hub:
        root = Path(tmp)
        hf_cache = root / "hf"
        audit(hub, root / "warmup", hf_cache, jobs=8)  # imports, connection set-up
        for label, jobs, prefetch in (
            ("exact (default)", 1, 0),
            ("exact (default)", 8, 0),
            ("prefetch 64 KiB", 1, 65536),
            ("prefetch 64 KiB", 8, 65536),
        ):
            wall, stats, served = audit(hub, root / f"c-{jobs}-{prefetch}", hf_cache, jobs=jobs, prefetch=prefetch)
            assert stats["requests"] == served
            rows.append((label, jobs, wall, stats))
        wall, stats, served = audit(hub, root / "c-8-0", hf_cache, jobs=8, revision=repo.commit)
        rows.append(("second run, same commit", 8, wall, stats))

    base = {label: w for label, j, w, _ in rows if j == 1}
    print(f"163-shard DeepSeek-V3 fixture, {args.latency * 1000:.0f} ms injected per request; "
          f"shard headers total {header_bytes:,} bytes; loopback hub (tests/hubfixture.py)")
    print()
    print(f"| mode | --jobs | requests | bytes read | wall s | speed-up vs --jobs 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, jobs, wall, stats in rows:
        ref = base.get(label)
        ratio = f"{ref / wall:.1f}x" if ref and jobs != 1 else ("1.0x (baseline)" if jobs == 1 else "-")
        print(f"| {label} | {jobs} | {stats['requests']} | {stats['bytes_read']:,} | {wall:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
