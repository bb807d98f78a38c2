"""A hub audit fills the standard Hugging Face cache with the whole files it fetched (config.json, the index), as
huggingface_hub lays them out, so ``hf cache scan``, ``try_to_load_from_cache`` and a later offline audit (the
mtp-audit cache off) find them; shard headers (partial bytes) are never put there. Against the loopback hub of
tests/hubfixture.py, configured as the hub huggingface_hub uses (``HF_ENDPOINT``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hubfixture import FakeHub, FakeRepo, build_mimo, isolate_hf

from mtp_audit.sources.hub import open_hub_source
from mtp_audit.sources.hubcache import fill_hf_cache, git_blob_sha1

MIMO = "XiaomiMiMo/MiMo-7B-Base"
SHARDS = [f"model-0000{i}-of-00004.safetensors" for i in range(1, 5)]


def test_an_online_audit_fills_the_hf_cache_with_whole_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache

    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path, endpoint=hub.endpoint)
        src = open_hub_source(MIMO, None, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"])
        src.read_json("config.json")
        src.read_json("model.safetensors.index.json")
        src.read_headers(SHARDS)
        info = scan_cache_dir(paths["hf_cache"])
        assert info.warnings == []
        (cached,) = info.repos
        (rev,) = cached.revisions
        assert (cached.repo_id, rev.commit_hash, set(rev.refs)) == (MIMO, repo.commit, {"main"})
        assert sorted(f.file_name for f in rev.files) == ["config.json", "model.safetensors.index.json"]  # no shard
        for f in rev.files:
            assert f.blob_path.read_bytes() == files[f.file_name] and f.blob_path.name == git_blob_sha1(files[f.file_name])
        assert try_to_load_from_cache(MIMO, "config.json", cache_dir=paths["hf_cache"]) == str(
            paths["hf_cache"] / f"models--XiaomiMiMo--MiMo-7B-Base/snapshots/{repo.commit}/config.json")
        hub.clear_log()
        offline = open_hub_source(MIMO, None, offline=True, use_cache=False, endpoint=hub.endpoint, hf_cache_dir=paths["hf_cache"])
        assert offline.commit == repo.commit  # refs/main written by the fill
        assert offline.read_json("config.json") == src.read_json("config.json")
        assert offline.served_from["config.json"] == "hf-cache" and hub.requests() == 0


def test_another_endpoint_does_not_fill_the_hf_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Hugging Face cache has no notion of endpoint: a mirror's answers stay out of it (only the mtp-audit cache,
    which is per endpoint, keeps them)."""
    with FakeHub([FakeRepo(MIMO, build_mimo())]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)  # huggingface_hub's endpoint stays huggingface.co
        open_hub_source(MIMO, None, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"]).read_json("config.json")
        assert not (paths["hf_cache"] / "models--XiaomiMiMo--MiMo-7B-Base").exists()


def test_fill_refuses_paths_that_leave_the_cache(tmp_path: Path) -> None:
    sha = "a" * 40
    assert not fill_hf_cache(tmp_path, "org/name", sha, "../../x", b"{}")
    assert not fill_hf_cache(tmp_path, "org/name", sha, "/etc/x", b"{}")
    assert not fill_hf_cache(tmp_path, "org/name", "main", "config.json", b"{}")  # not a commit sha
    assert not fill_hf_cache(tmp_path, "../name", sha, "config.json", b"{}")
    assert list(tmp_path.iterdir()) == []
    assert fill_hf_cache(tmp_path, "org/name", sha, "sub/config.json", b"{}", "v1.0")
    link = tmp_path / "models--org--name" / "snapshots" / sha / "sub" / "config.json"
    assert link.is_symlink() and link.read_bytes() == b"{}" and (tmp_path / "models--org--name/refs/v1.0").read_text() == sha
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    try:
        assert fill_hf_cache(ro, "org/name", sha, "config.json", b"{}") is (__import__("os").geteuid() == 0)
    finally:
        ro.chmod(0o700)
