"""The vLLM oracle: the launch analyzer's replay against what real ``vllm.config.SpeculativeConfig`` decided for a grid
of real checkpoint configs x every ``--speculative-config`` form (tests/oracle/grid.py), per vLLM release.

The real results are recorded in tests/data/oracle/vllm-X.json by tests/oracle/build_vllm_oracle.py, run in a virtual
environment with the real ``vllm==X`` (``$MTP_AUDIT_ORACLE_VENVS/vllm-X``, default /work/oracle-venvs). With
``MTP_AUDIT_ORACLE_RECORD=1`` and that venv the test records afresh first; by default it compares with the stored JSON
only (a venv that lost a dependency would silently drop recorded cases). Marked ``oracle`` (deselected by default:
``pytest -m oracle``).

The third grid (:func:`grid.grid3`: forms and configs the first two lacked) is recorded apart in
tests/data/oracle/vllm-X-grid3.json (``MTP_AUDIT_ORACLE_GRID3=1 build_vllm_oracle.py``, or rebuilt from its progress log
by log_to_json.py) and compared by :func:`test_replay_agrees_on_the_third_grid`; the fourth (:func:`grid.grid4`, new real
configs and forms) likewise in vllm-X-grid4.json (``MTP_AUDIT_ORACLE_GRID4=1``), by
:func:`test_replay_agrees_on_the_fourth_grid`.

Every disagreement where the replay decides must be listed in :data:`EXPLAINED` with its reason (docs/vllm.md
"Oracle"), none may refuse a config real vLLM builds, at least 98 % of the decided cases agree, and at most 10 % are
"could not tell" (the replay leaves the question open: counted apart, never as a pass or a refusal).
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
EXPLAINED: dict[str, str] = {
}


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
    if os.environ.get("MTP_AUDIT_ORACLE_RECORD") == "1":
        _record(version)
    if not (RECORDED / f"vllm-{version}.json").exists():
        pytest.skip(f"no recorded oracle for vLLM {version}")
    ok, n, lines = compare(version)
    # "could not tell" (the replay leaves the question open) is an honest separate answer, never a wrong one: it is
    # counted apart; every case where both decide and differ must be explained
    undecided = [line for line in lines if ": replay undecided: " in line]
    wrong = [line for line in lines if "not compared" not in line and line not in undecided]
    assert [line for line in wrong if not line.startswith(tuple(EXPLAINED))] == []
    assert not [line for line in wrong if "real runs" in line], "a config vLLM builds is reported as refused"
    decided = n - len(undecided)
    assert decided > 0 and ok / decided >= 0.98, f"vLLM {version}: {ok}/{decided} decided cases agree"
    assert len(undecided) <= 0.10 * n, f"vLLM {version}: {len(undecided)}/{n} not decided"


#: the third grid, per release: (at least this share of the decided cases agree, at most this share is "could not tell")
GRID3 = {"0.24.0": (0.99, 0.06), "0.33.0": (0.99, 0.06), "0.34.0": (0.99, 0.03)}


def _check_grid(version: str, grid: str, least: float, most: float) -> None:
    """The recorded grid ``grid`` of ``version``: no config vLLM builds reported as refused, every case decided
    differently explained, at least ``least`` of the decided cases agree, at most ``most`` of all are "could not tell"."""
    if not (RECORDED / f"vllm-{version}-{grid}.json").exists():
        pytest.skip(f"no recorded {grid} for vLLM {version}")
    ok, n, lines = compare(version, grid)
    undecided = [line for line in lines if ": replay undecided: " in line]
    wrong = [line for line in lines if "not compared" not in line and line not in undecided]
    assert not [line for line in wrong if "real runs" in line], "a config vLLM builds is reported as refused"
    assert [line for line in wrong if not line.startswith(tuple(EXPLAINED))] == []
    decided = n - len(undecided)
    assert decided > 0 and ok / decided >= least, f"vLLM {version}: {ok}/{decided} decided cases agree"
    assert len(undecided) <= most * n, f"vLLM {version}: {len(undecided)}/{n} not decided"


@pytest.mark.parametrize("version", sorted(GRID3))
def test_replay_agrees_on_the_third_grid(version: str) -> None:
    _check_grid(version, "grid3", *GRID3[version])


#: the fourth grid (:func:`grid.grid4`: real configs and forms no earlier grid had, recorded in vllm-X-grid4.json)
GRID4 = {"0.24.0": (0.99, 0.01), "0.33.0": (0.99, 0.01), "0.34.0": (0.99, 0.01)}


@pytest.mark.parametrize("version", sorted(GRID4))
def test_replay_agrees_on_the_fourth_grid(version: str) -> None:
    _check_grid(version, "grid4", *GRID4[version])
