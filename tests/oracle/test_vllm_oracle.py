"""The vLLM oracle: the launch analyzer's replay against what real ``vllm.config.SpeculativeConfig`` decided for a grid
of real checkpoint configs x every ``--speculative-config`` form (tests/oracle/grid.py), per vLLM release.

The real results are recorded in tests/data/oracle/vllm-X.json by tests/oracle/build_vllm_oracle.py, run in a virtual
environment with the real ``vllm==X`` (``$MTP_AUDIT_ORACLE_VENVS/vllm-X``, default /work/oracle-venvs); when that venv
exists the test records afresh first (set MTP_AUDIT_ORACLE_NO_RECORD=1 to compare with the stored JSON only). Marked ``oracle`` (deselected by default: ``pytest -m oracle``).

Every disagreement must be listed in :data:`EXPLAINED` with its reason (docs/vllm.md "Oracle"); the agreement rate of
every release must be at least 98 %.
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

from grid import CONFIGS  # noqa: E402
from replay_grid import CONFIGS as CONFIG_DIR  # noqa: E402
from replay_grid import RECORDED, compare  # noqa: E402

pytestmark = [pytest.mark.oracle, pytest.mark.network, pytest.mark.slow]

RELEASES = ("0.11.0", "0.24.0", "0.33.0", "0.34.0")
#: "(config) (form)" -> why the replay and real vLLM differ there (kept short; docs/vllm.md has the detail)
EXPLAINED: dict[str, str] = {}


def _record(version: str) -> None:
    venv = Path(os.environ.get("MTP_AUDIT_ORACLE_VENVS", "/work/oracle-venvs")) / f"vllm-{version}" / "bin" / "python"
    if not venv.exists():
        return
    # the wider grid (grid.FORMS_WIDE) too: the recorded JSON then holds every form compared
    out = subprocess.run([str(venv), str(HERE / "build_vllm_oracle.py"), *[str(CONFIG_DIR / c) for c in CONFIGS]],
                         cwd=HERE, capture_output=True, text=True, timeout=3600, check=True,
                         env={**os.environ, "MTP_AUDIT_ORACLE_WIDE": "1"}).stdout
    data = json.loads(out)
    assert data["vllm"] == version
    (RECORDED / f"vllm-{version}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("version", RELEASES)
def test_replay_agrees_with_real_vllm(version: str) -> None:
    if not os.environ.get("MTP_AUDIT_ORACLE_NO_RECORD"):
        _record(version)
    if not (RECORDED / f"vllm-{version}.json").exists():
        pytest.skip(f"no recorded oracle for vLLM {version}")
    ok, n, lines = compare(version)
    unexplained = [line for line in lines if not line.startswith(tuple(EXPLAINED)) and "not compared" not in line]
    assert unexplained == []
    assert n > 0 and ok / n >= 0.98, f"vLLM {version}: {ok}/{n} agree"
