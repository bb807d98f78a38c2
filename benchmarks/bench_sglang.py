"""``mtp-audit sglang`` on a real SGLang wheel against semgrep on exactly the files mtp-audit reads, in the
same run (benchmarks/harness.py: each run a separate process, cases alternated, median with min–max,
peak RSS per process).

The files: every member of the wheel that mtp-audit's source tree lists (``open_target(...).files``,
all 3,985 ``.py`` files of 0.5.23), written out unchanged to a folder. semgrep scans that folder with a
three-pattern rule for the NEXTN remap (``--jobs 2``, no size limit, no time-out; a verification run
checks that it scanned every file). mtp-audit runs cold (empty cache) on the same folder and on the
wheel, and warm (second run, cache kept). ``grep -rlE`` on the folder is the I/O floor.

``--baseline-ref REF`` also times the tool as it was at git ``REF`` (exported with ``git archive`` into a
temporary folder, run with the same Python), cold and warm on the same wheel, alternated with the rest, and
compares its result with this checkout's: findings by rule id and the summary counts, so a change of result
between the two is printed, never unnoticed.

Targets: cold <= 1.5 s, >= 20x faster than semgrep; warm <= 0.15 s; peak RSS <= 60 MiB.

Usage: ``python benchmarks/bench_sglang.py [WHEEL_OR_FOLDER_OF_WHEELS] [--semgrep PATH] [--runs 5]
[--baseline-ref REF]``.
semgrep: ``python -m venv /tmp/semgrep-venv && /tmp/semgrep-venv/bin/pip install semgrep`` (its own venv:
its pins clash with ours); the row says so when it is missing.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", Path.home() / ".cache" / "mtp-audit-tests")) / "sglang-wheels"
    ap.add_argument("wheel", nargs="?", default=str(default))
    ap.add_argument("--semgrep", default=shutil.which("semgrep") or "/tmp/semgrep-venv/bin/semgrep")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-ref", default=None, help="git ref of the tool to compare with (e.g. the previous release)")
    a = ap.parse_args()
    wheel = Path(a.wheel)
    if wheel.is_dir():
        wheel = sorted(wheel.glob("sglang-0.5.23-*.whl"))[0]
    sys.path.insert(0, str(ROOT))
    from mtp_audit.engines.sglang.target import open_target

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = open_target(wheel)
        src = root / "src"
        with zipfile.ZipFile(wheel) as zf:
            for rel, info in tree.files.items():
                out = src / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(zf.read(info))  # type: ignore[arg-type]
        tree.close()
        n_files = len(tree.files)
        lines = sum(p.read_bytes().count(b"\n") for p in src.rglob("*.py"))
        cold_cache, warm_cache = root / "cache-cold", root / "cache-warm"
        env = python_env(root, {"MTP_AUDIT_CACHE_DIR": str(cold_cache)})
        warm_env = dict(env, MTP_AUDIT_CACHE_DIR=str(warm_cache))

        def cold() -> None:
            shutil.rmtree(cold_cache, ignore_errors=True)

        audit = [sys.executable, "-m", "mtp_audit", "sglang"]
        out = ["-f", "json", "-o", str(root / "r.json")]
        cases = []
        sg = Path(a.semgrep)
        note = ""
        if sg.exists():
            rule = root / "rule.yml"
            rule.write_text(RULE)
            sg_cmd = [str(sg), "scan", "--config", str(rule), "--metrics=off", "--disable-version-check", "--jobs", "2",
                      "--timeout", "0", "--max-target-bytes", "0", "--no-git-ignore", "--quiet", str(src)]
            sg_env = dict(env, SEMGREP_ENABLE_VERSION_CHECK="0", SEMGREP_SEND_METRICS="off")
            check = subprocess.run(sg_cmd + ["--json"], capture_output=True, text=True, timeout=1800, env=sg_env,
                                   stdin=subprocess.DEVNULL)
            try:
                scanned = len(json.loads(check.stdout)["paths"]["scanned"])
            except (ValueError, KeyError):
                scanned = -1
            note = f"semgrep {subprocess.run([str(sg), '--version'], capture_output=True, text=True).stdout.strip()} scanned {scanned} of the {n_files} files"
            cases.append(Case("semgrep, 3-pattern NEXTN rule, same files", sg_cmd, sg_env, ok=(0, 1)))
        else:
            note = f"semgrep not run: {sg} does not exist"
        cases += [
            Case("mtp-audit sglang, cold, same files (folder)", audit + [str(src)] + out, env, before=cold),
            Case("mtp-audit sglang, cold, the wheel", audit + [str(wheel)] + out, env, before=cold),
            Case("mtp-audit sglang, warm (cache kept)", audit + [str(wheel)] + out, warm_env),
            Case("grep -rlE NEXTN|MTP (I/O floor)", ["grep", "-rlE", "NEXTN|MTP", str(src)], env, ok=(0, 1)),
        ]
        if a.baseline_ref:
            cases += _baseline_cases(a.baseline_ref, root, wheel, audit)
        results = measure(cases, a.runs)
        if a.baseline_ref:
            # the results: this checkout's and the baseline's report on the same wheel, compared
            subprocess.run(audit + [str(wheel), "-f", "json", "-o", str(root / "now.json")], env=env, cwd=str(ROOT),
                           capture_output=True, check=False)
            base_env = _baseline_env(root)
            subprocess.run(audit + [str(wheel), "-f", "json", "-o", str(root / "base.json")], env=base_env,
                           cwd=str(root), capture_output=True, check=False)
            result_note = _compare_results(root / "base.json", root / "now.json", a.baseline_ref)
    print(header(f"target: {wheel.name} ({n_files} .py files, {lines:,} lines); {note}", a.runs))
    print()
    grep_row = "grep -rlE NEXTN|MTP (I/O floor)"
    base = "semgrep, 3-pattern NEXTN rule, same files" if sg.exists() else None
    cold_rows = ("mtp-audit sglang, cold, same files (folder)", "mtp-audit sglang, cold, the wheel")
    print(table(results, baseline=base, targets={r: 0.05 for r in cold_rows} if base else None,
                abs_targets={**{r: 1.5 for r in cold_rows}, "mtp-audit sglang, warm (cache kept)": 0.15},
                mem_targets={r: 60 for r in (*cold_rows, "mtp-audit sglang, warm (cache kept)")}))
    if base:
        print()
        for r in cold_rows:
            print(f"{r}: {results[base].median / results[r].median:.1f}x faster than semgrep (target >= 20x)")
    print()
    for r in cold_rows:
        print(f"{r}: {results[r].median / results[grep_row].median:.1f}x grep -r")
    if a.baseline_ref:
        for now, was in (("mtp-audit sglang, cold, the wheel", f"{a.baseline_ref}: cold, the wheel"),
                         ("mtp-audit sglang, warm (cache kept)", f"{a.baseline_ref}: warm (cache kept)")):
            print(f"{now}: {results[was].median / results[now].median:.2f}x faster than {a.baseline_ref}")
        print(result_note)


def _baseline_env(root: Path) -> dict[str, str]:
    return python_env(root / "base-pyc", {"PYTHONPATH": str(root / "baseline"), "MTP_AUDIT_CACHE_DIR": str(root / "base-cold")})


def _baseline_cases(ref: str, root: Path, wheel: Path, audit: list[str]) -> list[Case]:
    """The tool at git ``ref`` (``git archive`` of ``mtp_audit/``), cold and warm on ``wheel``."""
    dest = root / "baseline"
    dest.mkdir()
    tar = subprocess.run(["git", "archive", ref, "mtp_audit"], cwd=str(ROOT), capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    env = _baseline_env(root)
    env["PYTHONPATH"] = str(dest)  # only the baseline: not this checkout
    warm = dict(env, MTP_AUDIT_CACHE_DIR=str(root / "base-warm"))
    out = ["-f", "json", "-o", str(root / "rb.json")]

    def cold() -> None:
        shutil.rmtree(root / "base-cold", ignore_errors=True)

    return [Case(f"{ref}: cold, the wheel", audit + [str(wheel)] + out, env, before=cold, cwd=str(root)),
            Case(f"{ref}: warm (cache kept)", audit + [str(wheel)] + out, warm, cwd=str(root))]


def _compare_results(base: Path, now: Path, ref: str) -> str:
    """One paragraph: the findings per rule id and the summary counts of both reports, and what differs."""
    try:
        b, n = json.loads(base.read_text()), json.loads(now.read_text())
    except (OSError, ValueError) as exc:
        return f"results not compared: {exc}"
    from collections import Counter

    fb, fn = Counter(f["rule_id"] for f in b["findings"]), Counter(f["rule_id"] for f in n["findings"])
    sb, sn = b["facts"]["sglang"]["summary"], n["facts"]["sglang"]["summary"]
    diffs = [f"{k}: {sb.get(k)} -> {sn.get(k)}" for k in sorted(set(sb) | set(sn)) if sb.get(k) != sn.get(k)]
    same = "same findings" if fb == fn else f"findings {dict(sorted(fb.items()))} -> {dict(sorted(fn.items()))}"
    return f"result against {ref}: {same}; summary changes: {', '.join(diffs) or 'none'}"


if __name__ == "__main__":
    main()
