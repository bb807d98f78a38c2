"""Shared test helpers: repository paths and the SGLang/PyPI download cache location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared"


def cache_dir() -> Path:
    """Download cache for network-marked tests (SGLang wheels, kernel wheels), reused across runs.

    ``MTP_AUDIT_TEST_CACHE`` overrides the default ``~/.cache/mtp-audit-tests``.
    """
    p = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", os.path.expanduser("~/.cache/mtp-audit-tests")))
    p.mkdir(parents=True, exist_ok=True)
    return p


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point mtp-audit's own result cache at a per-session temp folder, so tests never read or
    write the user's ``~/.cache/mtp-audit``."""
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "mtp-audit-cache"))
