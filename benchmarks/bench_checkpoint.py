"""Speed of ``mtp-audit checkpoint`` against floors measured in the same run (benchmarks/harness.py:
each run a separate process, cases alternated, median with min–max, peak RSS per process).

Inputs, generated from ``fixtures/checkpoint/deepseek-ai--DeepSeek-V3/spec.json`` (91,991 tensors,
real names, dtypes and shapes; an 8.9 MB index; 163 sparse shards, see mtp_audit/synth/shards.py):

1. metadata only (config.json + the index): ``mtp-audit checkpoint`` against a ``json.load`` process on
   the same index. Target: <= 2x.
2. with the 163 shards: ``mtp-audit checkpoint`` against a plain script that reads and JSON-decodes the index and
   every shard header (and nothing else: the two documents any audit that holds the index against the headers must
   decode). Target: <= 2x. Also printed: the ratio to the header floor alone (reading and decoding every header).
3. ``--scale``: synthetic checkpoints of 10k, 100k and 1M tensors in 163 shards (DeepSeek-V3 names
   repeated over more layers), audit against the header floor of the same files; per-tensor time
   and memory should stay flat from 10k to 1M (printed: the 1M per-tensor time over the 100k one, target <= 1.5).
   The run's parsed-JSON bound is raised for these rows (``MTP_AUDIT_MAX_JSON_BYTES``, 8 GiB): at the default
   1.5 GiB the 1M-tensor audit stops parsing after 115 of the 163 headers (a gap per unread shard), which is
   not the audit this row means to time.
4. start-up: ``python -c pass`` and ``mtp-audit --help`` (target <= 2x ``python -c pass``).
5. config-only with an exclude list: ``fixtures/checkpoint/nvidia--Qwen3.5-397B-A17B-NVFP4`` (config.json and
   hf_quant_config.json with 184 ``exclude_modules`` patterns, no index) against ``python -c pass``.
   Target: <= 0.3 s.

With ``--baseline-ref REF`` cases 1, 2 and 5 also time the tool as it was at git ``REF`` (``git archive``), same
input, alternated; ``--baseline-tree DIR`` does the same with a folder holding that ``mtp_audit/`` package already (a
machine without the repository's history). Every table has each case's CPU seconds beside its wall time (benchmarks/harness.py).

Usage: ``python benchmarks/bench_checkpoint.py [--runs 11] [--scale] [--baseline-ref REF | --baseline-tree DIR]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

FIX = ROOT / "fixtures" / "checkpoint" / "deepseek-ai--DeepSeek-V3"

HEADER_FLOOR = r"""
import json, os, struct, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if f.endswith(".safetensors"):
        with open(os.path.join(d, f), "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            json.loads(fh.read(n))
"""
#: The header floor plus ``json.load`` of the index: the two documents any audit that holds the index against the
#: shards must decode (case 2's target is against this; the row of HEADER_FLOOR alone says how much of the gap is
#: the index itself).
BOTH_FLOOR = HEADER_FLOOR + r"""
json.load(open(os.path.join(d, "model.safetensors.index.json")))
"""


def scaled(spec: dict, config: dict, tensors: int) -> tuple[dict, dict]:
    """DeepSeek-V3's spec and config with the MoE layer range (``model.layers.3`` to ``.61``, the last
    one being the MTP layer) stretched to about ``tensors`` tensors; ``num_hidden_layers`` follows, so
    the last layer stays the one MTP layer."""
    from mtp_audit.synth.shards import expand

    out = json.loads(json.dumps(spec))
    out.pop("index_metadata", None)
    block = max((e for e in out["tensors"] if "L" in e.get("for", {})), key=lambda e: e["for"]["L"][1] - e["for"]["L"][0])
    lo, hi = block["for"]["L"]
    per_layer = sum(1 for _ in expand(block["each"], {"L": lo}))
    fixed = sum(1 for _ in expand(out["tensors"])) - per_layer * (hi - lo + 1)
    last = lo + max(1, (tensors - fixed) // per_layer) - 1
    block["for"]["L"] = [lo, last]
    for e in out["tensors"]:  # the MTP layer's own tensors follow the last layer
        if "name" in e:
            e["name"] = e["name"].replace(f"model.layers.{hi}.", f"model.layers.{last}.")
    return out, {**config, "num_hidden_layers": last}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--scale", action="store_true", help="also the 10k/100k/1M-tensor scaling rows")
    ap.add_argument("--baseline-ref", default=None, help="git ref of the tool to compare with in cases 1, 2 and 5")
    ap.add_argument("--baseline-tree", type=Path, default=None, help="or a folder holding that tool's mtp_audit/ package")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from mtp_audit.synth.shards import write_checkpoint

    work = Path(tempfile.mkdtemp(prefix="mtp-audit-bench-"))
    try:
        spec = json.loads((FIX / "spec.json").read_text())
        meta, full = work / "metadata-only", work / "shards"
        write_checkpoint(meta, spec, shards=False)
        write_checkpoint(full, spec, shards=True)
        for d in (meta, full):
            shutil.copy(FIX / "config.json", d / "config.json")
        index = meta / "model.safetensors.index.json"
        env = python_env(work)
        py = sys.executable
        audit = [py, "-m", "mtp_audit", "checkpoint"]
        base_cases = (_baseline(args.baseline_ref, work, audit) if args.baseline_ref else
                      _baseline_tree(args.baseline_tree.resolve(), work, audit) if args.baseline_tree else None)
        print(header(f"DeepSeek-V3 index: {index.stat().st_size:,} bytes, 91,991 tensors", args.runs))
        print("\n1. metadata only\n")
        r = measure([Case("json.load(index) process", [py, "-c", f"import json; json.load(open({str(index)!r}))"], env),
                     Case("mtp-audit checkpoint (config + index)", audit + [str(meta)], env, ok=(0, 1, 3)),
                     *(base_cases("checkpoint (config + index)", meta) if base_cases else [])], args.runs)
        print(table(r, baseline="json.load(index) process", targets={"mtp-audit checkpoint (config + index)": 2.0}))
        print("\n2. with the 163 sparse shards\n")
        both = "header floor + json.load(index)"
        r = measure([Case("header floor (read + json.loads every header)", [py, "-c", HEADER_FLOOR, str(full)], env),
                     Case(both, [py, "-c", BOTH_FLOOR, str(full)], env),
                     Case("mtp-audit checkpoint (163 shards)", audit + [str(full)], env, ok=(0, 1, 3)),
                     *(base_cases("checkpoint (163 shards)", full) if base_cases else [])], args.runs)
        print(table(r, baseline=both, targets={"mtp-audit checkpoint (163 shards)": 2.0}))
        tool, floor = r["mtp-audit checkpoint (163 shards)"], r["header floor (read + json.loads every header)"]
        print(f"\nmtp-audit checkpoint (163 shards) against the header floor alone: {tool.median / floor.median:.2f}x wall, "
              f"{tool.cpu / floor.cpu:.2f}x CPU")
        if args.scale:
            print("\n3. scaling (163 shards, synthetic: DeepSeek-V3 layers repeated)\n")
            print("| tensors | header floor s | mtp-audit s | × floor | mtp-audit µs/tensor | mtp-audit peak RSS MiB | KiB/tensor |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            per_tensor: dict[int, float] = {}
            scale_env = {**env, "MTP_AUDIT_MAX_JSON_BYTES": str(8 << 30)}  # every header parsed at 1M (see case 3)
            for n in (10_000, 100_000, 1_000_000):
                d = work / f"scale-{n}"
                sp, cfg = scaled(spec, json.loads((FIX / "config.json").read_text()), n)
                got = write_checkpoint(d, sp, shards=True)
                (d / "config.json").write_text(json.dumps(cfg))
                runs = max(3, args.runs // (3 if n >= 1_000_000 else 1))
                r = measure([Case("floor", [py, "-c", HEADER_FLOOR, str(d)], env),
                             Case("tool", audit + [str(d)], scale_env, ok=(0, 1, 3))], runs)
                f, t = r["floor"], r["tool"]
                k = got["tensors"]
                print(f"| {k:,} | {f.median:.3f} | {t.median:.3f} (min {min(t.walls):.3f}, max {max(t.walls):.3f}) | "
                      f"{t.median / f.median:.2f}× | {t.median / k * 1e6:.2f} | {t.rss_mib:.0f} | {t.rss_mib * 1024 / k:.2f} |")
                per_tensor[n] = t.median / k
                shutil.rmtree(d)
            lin = per_tensor[1_000_000] / per_tensor[100_000]
            print(f"\nper-tensor time, 1M against 100k: {lin:.2f}x (target <= 1.5: {'met' if lin <= 1.5 else 'MISSED'})")
        print("\n4. start-up\n")
        r = measure([Case("python -c pass", [py, "-c", "pass"], env), Case("mtp-audit --help", [py, "-m", "mtp_audit", "--help"], env)], args.runs)
        print(table(r, baseline="python -c pass", targets={"mtp-audit --help": 2.0}))
        print("\n5. config-only with a 184-pattern exclude list (Qwen3.5-397B-A17B NVFP4)\n")
        qw = ROOT / "fixtures" / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4"
        cfg_only = work / "qwen-config-only"
        cfg_only.mkdir()
        for name in ("config.json", "hf_quant_config.json"):
            shutil.copy(qw / name, cfg_only / name)
        cases = [Case("python -c pass", [py, "-c", "pass"], env),
                 Case("mtp-audit checkpoint (config only)", audit + [str(cfg_only)], env, ok=(0, 1, 3))]
        if base_cases:
            cases += base_cases("checkpoint (config only)", cfg_only)
        r = measure(cases, args.runs)
        print(table(r, baseline="python -c pass", abs_targets={"mtp-audit checkpoint (config only)": 0.3}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _baseline(ref: str, work: Path, audit: list[str]):  # noqa: ANN202 - returns a case factory
    """The tool at git ``ref`` (``git archive`` of ``mtp_audit/`` into ``work/baseline``, run from ``work`` so that
    ``python -m`` does not pick this checkout up from the current folder): ``cases(label, folder)`` gives its row."""
    base = work / "baseline"
    base.mkdir()
    tar = subprocess.run(["git", "archive", ref, "mtp_audit"], cwd=str(ROOT), capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=tar, check=True)
    return _baseline_tree(base, work, audit, ref)


def _baseline_tree(base: Path, work: Path, audit: list[str], name: str | None = None):  # noqa: ANN202 - a case factory
    """The tool whose ``mtp_audit/`` package is in the folder ``base``, run from ``work`` (see :func:`_baseline`); its
    rows are named ``name`` (default: the folder's name)."""
    ref = name or base.name
    benv = python_env(work / "base-pyc", {"PYTHONPATH": str(base)})
    benv["PYTHONPATH"] = str(base)  # only the baseline: not this checkout

    def cases(label: str, folder: Path) -> list[Case]:
        return [Case(f"{ref}: {label}", audit + [str(folder)], benv, ok=(0, 1, 3), cwd=str(work))]

    return cases


if __name__ == "__main__":
    raise SystemExit(main())
