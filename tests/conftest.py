"""Shared test helpers: repository paths and the SGLang/PyPI download cache location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The default test run draws the same hypothesis examples on every machine (a clean clone gets the answer CI got);
# MTP_AUDIT_FUZZ_EXAMPLES (the long fuzz runs, docs/fuzzing.md) explores new ones.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile("explore" if os.environ.get("MTP_AUDIT_FUZZ_EXAMPLES") else "repeatable")

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


def sglang_wheel(version: str) -> Path:
    """A real sglang wheel from PyPI in the shared cache folder ``<cache>/sglang-wheels`` (the folder
    and logic of tests/test_sglang_real.py), downloaded once with pip; ``pytest.skip`` when offline."""
    import subprocess
    import sys

    folder = cache_dir() / "sglang-wheels"
    found = sorted(folder.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={version}", "-d", str(folder)],
                          capture_output=True, text=True, timeout=300)
    found = sorted(folder.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        pytest.skip(f"cannot download sglang {version}: {proc.stderr.strip()[-200:]}")
    return found[0]


#: Environment variable that lets the test suite download wheels of more than ~50 MB (vllm, sgl-kernel).
BIG_DOWNLOADS = "MTP_AUDIT_TEST_BIG_DOWNLOADS"


def skip_big_download(what: str, size: str) -> None:
    """Skip a test whose input is a big download not yet in the cache, unless ``MTP_AUDIT_TEST_BIG_DOWNLOADS=1``:
    the default suite downloads only the sglang wheels its tests name and the vLLM release members the README states."""
    if os.environ.get(BIG_DOWNLOADS) != "1":
        pytest.skip(f"{what} ({size}) is not in the test cache; set {BIG_DOWNLOADS}=1 to download it")


#: vLLM releases whose wheel members are fetched by default (about 15 MB by range requests, not the 400 MB wheel): the
#: README's own example names 0.33.0, and its tests read only what the vLLM audit reads.
MEMBER_RELEASES = ("0.33.0",)


def vllm_members(version: str) -> Path:
    """The members of the vllm ``version`` wheel that the vLLM audit reads, fetched once with HTTP range requests into
    ``<cache>/engines`` (:func:`mtp_audit.sources.pypi.release_wheel`, what ``--vllm 0.33.0`` does); ``pytest.skip``
    when the index cannot be reached."""
    from mtp_audit.sources.pypi import IndexUnavailable, release_wheel

    try:
        return release_wheel("vllm", version, cache_dir=cache_dir())
    except IndexUnavailable as exc:
        pytest.skip(f"cannot fetch vllm {version}: {exc}")


def vllm_wheel(version: str) -> Path:
    """A real vllm wheel from PyPI in ``<cache>/vllm-wheels`` (several hundred MB each), downloaded once
    with ``pip download --no-deps`` only when ``MTP_AUDIT_TEST_BIG_DOWNLOADS=1``; ``pytest.skip`` when it
    is not cached and big downloads are off, or when PyPI cannot be reached."""
    import subprocess
    import sys

    folder = cache_dir() / "vllm-wheels"
    found = sorted(folder.glob(f"vllm-{version}-*.whl"))
    if found:
        return found[0]
    if version in MEMBER_RELEASES and os.environ.get(BIG_DOWNLOADS) != "1":
        return vllm_members(version)
    skip_big_download(f"vllm {version}", "250-450 MB")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={version}", "-d", str(folder)],
                              capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        pytest.skip(f"downloading vllm {version} timed out")
    found = sorted(folder.glob(f"vllm-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        pytest.skip(f"cannot download vllm {version}: {proc.stderr.strip()[-200:]}")
    return found[0]
