"""Rebuild an oracle JSON from build_vllm_oracle.py's progress log (stderr: one ``config form {result}`` line per case),
for a run stopped before it wrote its JSON; the specs come from tests/oracle/grid.py.

    python tests/oracle/log_to_json.py 0.33.0 run.log > tests/data/oracle/vllm-0.33.0-grid3.json
"""

from __future__ import annotations

import ast
import json
import re
import sys

from grid import FORMS, FORMS_4, FORMS_NEW, FORMS_WIDE

LINE = re.compile(r"^(\S+--\S+) (\S+) (\{.*\})$")


def convert(version: str, log: str) -> dict:
    """The recorded-oracle dict (``vllm``, ``cases``, ``runs``) of every complete case line of ``log``."""
    every = {**FORMS, **FORMS_WIDE, **FORMS_NEW, **FORMS_4}
    cases = []
    for line in open(log, encoding="utf-8", errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if m and m.group(2) in every:
            cases.append({"config": m.group(1), "form": m.group(2), "spec": every[m.group(2)], "result": ast.literal_eval(m.group(3))})
    return {"vllm": version, "cases": cases, "runs": [f"{len(cases)} cases rebuilt from the progress log of a run stopped early"]}


if __name__ == "__main__":
    json.dump(convert(sys.argv[1], sys.argv[2]), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
