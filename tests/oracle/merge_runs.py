"""Merge a second oracle run (some configs again, e.g. after the oracle venv gained a dependency the model registry
needed to inspect their architectures) into the recorded JSON: its cases replace those of the same configs.

    python tests/oracle/merge_runs.py tests/data/oracle/vllm-0.33.0.json second-run.json
"""

from __future__ import annotations

import json
import sys


def merge(recorded: str, extra: str) -> None:
    base = json.load(open(recorded))
    raw = open(extra).read()
    more = json.loads(raw[raw.index("{"):])
    assert base["vllm"] == more["vllm"], (base["vllm"], more["vllm"])
    redone = {c["config"] for c in more["cases"]}
    base["cases"] = [c for c in base["cases"] if c["config"] not in redone] + more["cases"]
    base.setdefault("runs", []).append(f"{len(redone)} configs recorded again: {', '.join(sorted(redone))}")
    with open(recorded, "w") as f:
        json.dump(base, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    merge(sys.argv[1], sys.argv[2])
