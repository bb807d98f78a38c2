"""The SGLang oracle: mtp-audit's launch prediction (the public ``audit_launch`` with ``--sglang`` the cached wheel and
the declared machine's environment dump) against what real SGLang's server-argument resolution decided for a grid of
real checkpoint configs x speculative flag forms x declared GPUs (tests/oracle/sglang_grid.py), field by field.

The real results are recorded in tests/data/oracle/sglang-X.json by tests/oracle/build_sglang_oracle.py, run in a
virtual environment with the real ``sglang==X`` (``$MTP_AUDIT_ORACLE_VENVS/sglang-X``, default /work/oracle-venvs); when
that venv exists the test records afresh first (set MTP_AUDIT_ORACLE_NO_RECORD=1 to compare with the stored JSON
only). Marked ``oracle`` (deselected by default: ``pytest -m oracle``).

Every disagreement must be listed in :data:`EXPLAINED` with its reason (docs/sglang.md "Oracle"); the agreement rate of
every compared field, and overall, must be at least 98 %.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from replay_sglang_grid import FIXTURES, RECORDED, compare  # noqa: E402

pytestmark = [pytest.mark.oracle, pytest.mark.network, pytest.mark.slow]

RELEASES = ("0.5.23",)
#: a disagreement line's start -> why the analyzer and real SGLang differ there (docs/sglang.md "Oracle" has the
#: detail). A key is "<config> <form> <gpu> <field>" with any of the first three left out ("<form>" alone: every
#: config and GPU of that form).
EXPLAINED: dict[str, str] = {
    "NEXTN-3-4-8 starts": "topk 4 with page_size > 1 on an attention backend outside (flashinfer, fa3, triton): ValueError "
                          "at speculative_hook.py:1278; the launch replays _handle_eagle_family, but the page_size and the "
                          "attention backend it reads (trtllm_mla on B200, dsa for GLM-5, set by the model overrides and "
                          "get_default_attn_backend / _mla_backend_page_constraints) are not resolved, so that test stays "
                          "unknown and no crash is predicted",
    "NGRAM starts": "NGRAM's default topk 10 with page_size > 1 on a backend other than flashinfer: ValueError at "
                    "speculative_hook.py:1361; _handle_ngram is replayed, the resolved page_size (64 for the MLA/DSA and "
                    "trtllm_mha backends, 128 for MiMo-V2-Flash's fa4) and attention backend are not",
}


def _explained(line: str) -> bool:
    head, _, _rest = line.partition(":")
    words = head.split()
    for key in EXPLAINED:
        want = key.split()
        if all(w in words for w in want):
            return True
    return False


def _record(version: str) -> None:
    venv = Path(os.environ.get("MTP_AUDIT_ORACLE_VENVS", "/work/oracle-venvs")) / f"sglang-{version}" / "bin" / "python"
    if not venv.exists():
        return
    out = subprocess.run([str(venv), str(HERE / "build_sglang_oracle.py"), str(FIXTURES)], cwd=HERE, capture_output=True,
                         text=True, timeout=3600, check=True).stdout
    data = json.loads(out)
    assert data["sglang"] == version
    (RECORDED / f"sglang-{version}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("version", RELEASES)
def test_launch_agrees_with_real_sglang(version: str) -> None:
    if not os.environ.get("MTP_AUDIT_ORACLE_NO_RECORD"):
        _record(version)
    if not (RECORDED / f"sglang-{version}.json").exists():
        pytest.skip(f"no recorded oracle for SGLang {version}")
    res = compare(version)
    unexplained = [line for line in res["lines"] if "not compared" not in line and not _explained(line)]
    assert unexplained == []
    for field, (ok, n) in res["fields"].items():
        assert n > 0 and ok / n >= 0.98, f"SGLang {version} {field}: {ok}/{n} agree"
    ok, n = res["overall"]
    assert ok / n >= 0.98, f"SGLang {version}: {ok}/{n} agree"
