"""Add the oracle environment's relevant packages (:data:`build_vllm_oracle.PACKAGES`, ``"packages"``) to recorded
oracle JSON files without re-recording their cases.

Run with the interpreter of the oracle's virtual environment (the one that recorded the files):

    /work/oracle-venvs/vllm-0.33.0/bin/python tests/oracle/record_packages.py tests/data/oracle/vllm-0.33.0*.json

A file whose ``vllm`` is not this environment's vLLM is refused (its cases were recorded elsewhere).
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

from build_vllm_oracle import packages  # noqa: E402  (tests/oracle/build_vllm_oracle.py: imports no vllm at module level)


def main(paths: list[str]) -> None:
    here = metadata.version("vllm")
    for p in paths:
        text = Path(p).read_text()
        data = json.loads(text)
        if data.get("vllm") != here:
            raise SystemExit(f"{p}: recorded with vLLM {data.get('vllm')}, this environment has vLLM {here}")
        data["packages"] = packages()
        # the file keeps its form (indent 1, sorted keys, with or without a final line end): only the record is added
        Path(p).write_text(json.dumps(data, indent=1, sort_keys=True) + ("\n" if text.endswith("\n") else ""))
        print(p, data["packages"])


if __name__ == "__main__":
    main(sys.argv[1:])
