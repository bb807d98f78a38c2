"""Engines by version (``mtp-audit sglang 0.5.23``, ``--sglang``, ``--vllm``): the release resolved through the PyPI
JSON API and only the members the analyzers read fetched with range requests, against a loopback index serving real
wheels from the test cache (tests/pypifixture.py). Nothing here reaches the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cache_dir, sglang_wheel
from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.sources.pypi import IndexUnavailable, is_version, release_wheel
from pypifixture import serve


def _same(doc: dict) -> dict:
    """A report without the facts that say how the analyzer's result caches were used (whether the whole-tree
    entry was hit; how many files came from the per-file cache: a wheel's tree key hashes the whole .whl, so the
    same members zipped by the index fixture are a different tree entry, served file by file from the cache)."""
    for facts in doc["facts"].values():
        if isinstance(facts, dict) and isinstance(facts.get("scan"), dict):
            for key in ("tree_cache", "cached", "parsed"):
                facts["scan"].pop(key, None)
    return doc


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("text, ok", [("0.5.23", True), ("0.5.5.post1", True), ("0.11.0rc1", True), ("./0.5.9", False),
                                      ("sglang-0.5.9-py3-none-any.whl", False), ("main", False)])
def test_is_version(text: str, ok: bool) -> None:
    assert is_version(text) is ok


@pytest.mark.network
def test_sglang_by_version_reads_only_the_members(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """sglang 0.5.9 (5.2 MB wheel) by version: the same report as from the whole wheel, fewer bytes, cached."""
    whl = sglang_wheel("0.5.9")
    with serve({("sglang", "0.5.9"): whl}) as index:
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", index.url)
        assert main(["sglang", "0.5.9", "-f", "json"]) == 0
        by_version = json.loads(capsys.readouterr().out)
        first = list(index.requests)
        assert first[0] == ("/pypi/sglang/0.5.9/json", None)
        assert all(rng is not None for path, rng in first[1:])  # every file read is a range request
        assert index.bytes_served < whl.stat().st_size
        assert main(["sglang", "0.5.9", "-f", "json"]) == 0  # from the cache: no request at all
        capsys.readouterr()
        assert index.requests == first
    assert main(["sglang", str(whl), "-f", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert by_version["findings"] == whole["findings"] and _same(by_version)["facts"] == _same(whole)["facts"]
    assert by_version["targets"] == whole["targets"]  # the cached zip keeps the wheel's name


@pytest.mark.network
def test_vllm_0_33_by_version_reads_megabytes_not_the_wheel(cache: Path) -> None:
    """vllm 0.33.0's wheel is 336 MB; the analyzer reads its .py members, about 13 MB. Runs only when the wheel
    is already in the test cache (it is never downloaded for this test)."""
    wheels = sorted((cache_dir() / "vllm-wheels").glob("vllm-0.33.0-*.whl"))
    if not wheels:
        pytest.skip("vllm 0.33.0 is not in the test cache")
    from mtp_audit import audit_vllm

    with serve({("vllm", "0.33.0"): wheels[0]}) as index:
        part = release_wheel("vllm", "0.33.0", index_url=index.url)
        assert index.bytes_served < 20_000_000 and len(index.requests) < 40
    assert _same(audit_vllm(part).to_dict()) == _same(audit_vllm(wheels[0]).to_dict())


@pytest.mark.network
def test_launch_takes_versions(cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    whl = sglang_wheel("0.5.9")
    cmd = ["--env-dump", "fixtures/preflight/envdumps/sglang-13198.txt", "-f", "json", "--", "python", "-m", "sglang.launch_server",
           "--model-path", "fixtures/checkpoint/bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding", "--speculative-algorithm", "NEXTN"]
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    with serve({("sglang", "0.5.9"): whl}) as index:
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", index.url)
        assert main(["launch", "--sglang", "0.5.9", *cmd]) == 1
    by_version = json.loads(capsys.readouterr().out)
    assert main(["launch", "--sglang", str(whl), *cmd]) == 1
    assert json.loads(capsys.readouterr().out)["findings"] == by_version["findings"]


def test_unknown_release_is_an_input_error(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with serve({}) as index:
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", index.url)
        assert main(["sglang", "9.9.9"]) == 2
    assert "sglang 9.9.9: no such release on the package index" in capsys.readouterr().err


def test_unreachable_index_is_could_not_tell(cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MTP_AUDIT_INDEX_URL", "http://127.0.0.1:9/pypi")  # discard port: nothing listens
    assert main(["vllm", "0.33.0"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("INCONCLUSIVE: could not tell: cannot reach the package index") and "give a .whl" in err
    with pytest.raises(IndexUnavailable, match="offline"):
        release_wheel("vllm", "0.33.0", offline=True)


@pytest.mark.network
def test_a_server_without_range_requests_is_refused(cache: Path) -> None:
    whl = sglang_wheel("0.5.4")
    with serve({("sglang", "0.5.4"): whl}) as index:
        index.ranges = False
        with pytest.raises(InputError, match="did not answer the range request"):
            release_wheel("sglang", "0.5.4", index_url=index.url)
    assert not list(cache.rglob("*.whl"))  # nothing half-written is left in the cache
