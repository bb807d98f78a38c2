"""The tree passes the project's linter and type checker as configured in pyproject.toml (ruff's rule set; mypy with
its default flags), so a change that breaks either fails here, not in a reviewer's head."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    pytest.importorskip("ruff")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "mtp_audit", "tests", "benchmarks"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.slow
def test_mypy_is_clean(tmp_path: Path) -> None:
    """``mypy mtp_audit`` with default flags (about a minute on 2 cores; its cache goes to a temporary folder)."""
    pytest.importorskip("mypy")
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), "mtp_audit"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
