"""Check that a speed change leaves results alone: the JSON reports of ``mtp-audit sglang`` (every cached
SGLang wheel, and the 0.5.23 wheel's source tree unpacked to a folder) and of ``mtp-audit checkpoint`` (every
folder under ``fixtures/checkpoint``, plus, for those with a ``spec.json``, the synthetic metadata-only and
header-only-shard checkpoints the benchmarks use; with ``--realdata DIR`` also every folder of ``DIR`` holding a
``config.json``, such as the real checkpoint metadata in the shared realdata folder) from two checkouts, compared byte
for byte.

Each report is taken cold (a fresh ``MTP_AUDIT_CACHE_DIR``), in its own process, with ``PYTHONPATH`` set to
the checkout. The inputs are written once under ``WORK/inputs`` so both checkouts see the same paths.

Usage::

    python benchmarks/same_results.py snapshot WORK NAME [--tree CHECKOUT] [--realdata DIR] [--analyzer checkpoint]
                                                [--all-formats]   # also text, Markdown and SARIF, from the same run
    python benchmarks/same_results.py diff WORK NAME_A NAME_B               # exit 1 when any report differs

``git archive REF mtp_audit | tar -x -C DIR`` gives a checkout of an earlier commit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CKPT = ROOT / "fixtures" / "checkpoint"


def _wheels() -> list[Path]:
    cache = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", Path.home() / ".cache" / "mtp-audit-tests"))
    return sorted((cache / "sglang-wheels").glob("sglang-*.whl"))


def _inputs(work: Path, realdata: Path | None = None) -> list[tuple[str, str, Path]]:
    """``(report name, analyzer, input path)`` for every input, written under ``work/inputs`` once (``realdata``: a
    folder whose subfolders holding a ``config.json`` are audited as they are)."""
    sys.path.insert(0, str(ROOT))
    inp = work / "inputs"
    out: list[tuple[str, str, Path]] = [(f"sglang-{w.name}", "sglang", w) for w in _wheels()]
    tree = inp / "sglang-0.5.23-tree"
    w23 = [w for w in _wheels() if w.name.startswith("sglang-0.5.23-")]
    if w23 and not tree.exists():
        from mtp_audit.engines.sglang.target import open_target

        t = open_target(w23[0])
        with zipfile.ZipFile(w23[0]) as zf:
            for rel, info in t.files.items():
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_bytes(zf.read(info))  # type: ignore[arg-type]
        t.close()
    if w23:
        out.append(("sglang-0.5.23-tree", "sglang", tree))
    for d in sorted(CKPT.iterdir()):
        out.append((f"checkpoint-{d.name}", "checkpoint", d))
        if (d / "spec.json").exists():
            out += _synthetic(inp, d)
    if realdata is not None:
        out += [(f"realdata-{d.name}", "checkpoint", d) for d in sorted(realdata.iterdir()) if (d / "config.json").is_file()]
    return out


def _synthetic(inp: Path, fix: Path) -> list[tuple[str, str, Path]]:
    from mtp_audit.synth.shards import write_checkpoint

    got = []
    for kind, shards in (("meta", False), ("shards", True)):
        d = inp / f"{fix.name}-{kind}"
        if not d.exists():
            write_checkpoint(d, json.loads((fix / "spec.json").read_text()), shards=shards)
            for name in ("config.json", "hf_quant_config.json"):
                if (fix / name).exists():
                    shutil.copy(fix / name, d / name)
        got.append((f"checkpoint-{fix.name}-{kind}", "checkpoint", d))
    return got


#: The outputs ``--all-formats`` asks each run for (``-f`` and ``-o`` pairs): every report format the CLI writes.
ALL_FORMATS = (("json", "json"), ("text", "txt"), ("markdown", "md"), ("sarif", "sarif"))


def snapshot(work: Path, name: str, tree: Path, realdata: Path | None = None, analyzers: list[str] | None = None,
             formats: tuple[tuple[str, str], ...] = ALL_FORMATS[:1]) -> None:
    """Write every report of the checkout ``tree`` into ``work/name`` (``NAME.json`` and ``NAME.rc``, and ``NAME.txt``,
    ``NAME.md``, ``NAME.sarif`` with ``formats=ALL_FORMATS``: one run writes them all); ``analyzers``: only those
    inputs (default: all)."""
    dest = work / name
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(tree))
    for label, analyzer, path in _inputs(work, realdata):
        if analyzers and analyzer not in analyzers:
            continue
        with tempfile.TemporaryDirectory() as cache:
            env["MTP_AUDIT_CACHE_DIR"] = cache
            outs = [a for fmt, ext in formats for a in ("-f", fmt, "-o", str(dest / f"{label}.{ext}"))]
            r = subprocess.run([sys.executable, "-m", "mtp_audit", analyzer, str(path), *outs], env=env, cwd=str(work),
                               capture_output=True, text=True)
        (dest / f"{label}.rc").write_text(f"{r.returncode}\n{r.stderr[-2000:]}".replace(str(dest), "OUT"))
        print(f"{label}: exit {r.returncode}", flush=True)


def diff(work: Path, a: str, b: str) -> int:
    """Compare two snapshots file by file (reports byte for byte; exit code and stderr with the snapshot's own folder
    named ``OUT``); print each difference; 1 when any."""
    fa, fb = {p.name for p in (work / a).iterdir()}, {p.name for p in (work / b).iterdir()}
    bad = sorted(fa ^ fb)
    for n in sorted(fa & fb):  # the exit code and stderr too, where the report's folder is named OUT
        if (work / a / n).read_bytes().replace(str(work / a).encode(), b"OUT") != \
                (work / b / n).read_bytes().replace(str(work / b).encode(), b"OUT"):
            bad.append(n)
    for n in bad:
        print(f"DIFFERS: {n}")
    print(f"{len(bad)} of {len(fa | fb)} files differ" if bad else f"all {len(fa)} files identical")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("work", type=Path)
    s.add_argument("name")
    s.add_argument("--tree", type=Path, default=ROOT)
    s.add_argument("--realdata", type=Path, default=None, help="also audit every folder of DIR holding a config.json")
    s.add_argument("--analyzer", action="append", choices=("sglang", "checkpoint"), help="only these inputs (repeatable)")
    s.add_argument("--all-formats", action="store_true", help="also the text, Markdown and SARIF reports of each run")
    d = sub.add_parser("diff")
    d.add_argument("work", type=Path)
    d.add_argument("a")
    d.add_argument("b")
    a = ap.parse_args()
    if a.cmd == "snapshot":
        snapshot(a.work.resolve(), a.name, a.tree.resolve(), a.realdata.resolve() if a.realdata else None, a.analyzer,
                 ALL_FORMATS if a.all_formats else ALL_FORMATS[:1])
        return 0
    return diff(a.work.resolve(), a.a, a.b)


if __name__ == "__main__":
    raise SystemExit(main())
