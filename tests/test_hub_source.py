"""HubSource against a loopback hub: request counts, header-only reads, caches, parity with LocalSource.

The fixture repos are built from real metadata (fixtures/hub/*/SOURCE.txt); the server is
tests/hubfixture.py. Expected numbers are derived by hand from the fixtures:

- DeepSeek-V3: 163 shards named by the index, 91,991 tensors (checkpoint_formats.md §2: the real FP8
  release's header dump), 1,564 of them in ``model.layers.61``; 166 visible files (163 shards,
  config.json, the index, README.md; ``.gitattributes`` is hidden).
- MiMo-7B (jj8127/mimo_kor): 451 tensors in 4 shards, 16 ``model.mtp_layers.0.*``.
"""

from __future__ import annotations

import json

import pytest
from hubfixture import (
    DEEPSEEK_SHARDS,
    FakeHub,
    FakeRepo,
    build_deepseek_163,
    build_mimo,
    header_length,
    isolate_hf,
    write_tree,
)

from mtp_audit.sources.hub import DEFAULT_PREFETCH_BYTES, HubSource, open_hub_source
from mtp_audit.sources.hubcache import HubCache
from mtp_audit.sources.local import LocalSource, ReadProblem

DS = "deepseek-ai/DeepSeek-V3"
MIMO = "XiaomiMiMo/MiMo-7B-Base"


def _open(hub: FakeHub, paths: dict, repo: str, revision: str | None = None, **kw) -> HubSource:
    return open_hub_source(
        repo, revision, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"], **kw
    )


def _audit_like_analyzer(src) -> dict:
    """What the checkpoint analyzer reads: config, index, every listed .safetensors header."""
    src.read_json("config.json")
    src.read_json("model.safetensors.index.json")
    shards = [f for f in src.list_files() if f.endswith(".safetensors")]
    return src.read_headers(shards)


@pytest.fixture(scope="module")
def deepseek_files() -> dict[str, bytes]:
    return build_deepseek_163()


def test_deepseek_fixture_matches_the_real_release_counts(deepseek_files):
    index = json.loads(deepseek_files["model.safetensors.index.json"])
    weight_map = index["weight_map"]
    assert len(weight_map) == 91_991
    assert sum(1 for t in weight_map if t.startswith("model.layers.61.")) == 1_564
    assert len(set(weight_map.values())) == DEEPSEEK_SHARDS


def test_163_shards_default_makes_one_range_request_per_shard(deepseek_files, monkeypatch, tmp_path):
    """The default read (huggingface_hub's first window, bytes=0-100000): shards + 3 requests in all,
    one range per shard, and no more than the window's slack past each header (docs/hub.md)."""
    repo = FakeRepo(DS, deepseek_files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, DS)
        headers = _audit_like_analyzer(src)
        assert all(not isinstance(h, ReadProblem) for h in headers.values())
        assert sum(len(h.tensors) for h in headers.values()) == 91_991
        # 1 model info + config.json + index + 1 range request per shard: N + 3 <= N + 4.
        assert hub.requests() == 1 + 2 + DEEPSEEK_SHARDS
        assert src.stats() == {"requests": hub.requests(), "bytes_read": hub.bytes_sent()}
        past = 0
        for name in headers:
            blob = deepseek_files[name]
            assert hub.served_ranges(DS, name) == [(0, min(DEFAULT_PREFETCH_BYTES, len(blob)) - 1)]
            past += min(DEFAULT_PREFETCH_BYTES, len(blob)) - header_length(blob)
        assert past <= DEEPSEEK_SHARDS * (DEFAULT_PREFETCH_BYTES - 8)


def test_163_shards_exact_reads_never_pass_a_header_and_second_run_is_free(deepseek_files, monkeypatch, tmp_path):
    repo = FakeRepo(DS, deepseek_files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, DS, prefetch_bytes=0)
        assert src.commit == repo.commit
        assert src.display == f"{DS}@{repo.commit}"
        assert len(src.list_files()) == 166
        headers = _audit_like_analyzer(src)
        assert all(not isinstance(h, ReadProblem) for h in headers.values())
        assert sum(len(h.tensors) for h in headers.values()) == 91_991

        # 1 model info + config.json + index + 2 range requests per shard (length, then header).
        assert hub.requests() == 1 + 2 + 2 * DEEPSEEK_SHARDS
        assert src.stats() == {"requests": hub.requests(), "bytes_read": hub.bytes_sent()}
        # No byte past any header was served: every range of a shard ends before 8 + n.
        for name in headers:
            blob = deepseek_files[name]
            ranges = hub.served_ranges(DS, name)
            assert ranges == [(0, 7), (8, header_length(blob) - 1)]
        header_bytes = sum(header_length(deepseek_files[n]) for n in headers)
        json_bytes = len(deepseek_files["config.json"]) + len(deepseek_files["model.safetensors.index.json"])
        info_bytes = [s.nbytes for s in hub.log if s.kind == "info"][0]
        assert src.stats()["bytes_read"] == header_bytes + json_bytes + info_bytes

        # Second audit of the same commit: nothing at all when the revision is the sha ...
        hub.clear_log()
        again = _open(hub, paths, DS, repo.commit, prefetch_bytes=0)
        assert _audit_like_analyzer(again) == headers
        assert hub.requests() == 0
        assert again.stats() == {"requests": 0, "bytes_read": 0}
        # ... and only the revision lookup when it is a branch (a branch can move, so it is asked).
        hub.clear_log()
        on_main = _open(hub, paths, DS, "main", prefetch_bytes=0)
        _audit_like_analyzer(on_main)
        assert hub.requests() == 1 and hub.requests("info") == 1
        assert set(on_main.served_from.values()) == {"mtp-audit-cache"}


def test_163_shards_prefetch_mode_fits_shards_plus_4_requests(deepseek_files, monkeypatch, tmp_path):
    """prefetch_bytes trades header-only reads for one request per shard (docs/hub.md)."""
    repo = FakeRepo(DS, deepseek_files)
    window = 65_536
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, DS, prefetch_bytes=window)
        headers = _audit_like_analyzer(src)
        assert sum(len(h.tensors) for h in headers.values()) == 91_991
        assert hub.requests() <= DEEPSEEK_SHARDS + 4
        assert src.stats()["requests"] == hub.requests()
        past = expected_past = 0
        for name in headers:
            blob = deepseek_files[name]
            end = header_length(blob)
            ranges = hub.served_ranges(DS, name)
            assert ranges[0] == (0, min(window, len(blob)) - 1)
            past += sum(max(0, last + 1 - end) for _, last in ranges)
            # Header inside the window: one request, the rest of the window is tensor data.
            # Header longer than the window: a second, exact request; nothing past the header.
            expected_past += min(window, len(blob)) - end if end <= window else 0
            assert len(ranges) == (1 if end <= window else 2)
        assert past == expected_past > 0


def test_hub_reads_the_same_files_and_headers_as_local(deepseek_files, monkeypatch, tmp_path):
    for name, files in (("deepseek", deepseek_files), ("mimo", build_mimo()), ("sidecar", build_mimo("sidecar"))):
        repo = FakeRepo(f"org/{name}", files)
        local = LocalSource(write_tree(tmp_path / name, files))
        with FakeHub([repo]) as hub:
            paths = isolate_hf(monkeypatch, tmp_path / f"{name}-env")
            src = _open(hub, paths, repo.repo_id, jobs=4)
            assert src.list_files() == local.list_files()
            assert src.read_json("model.safetensors.index.json") == local.read_json("model.safetensors.index.json")
            shards = [f for f in local.list_files() if f.endswith(".safetensors")]
            remote = src.read_headers(shards)
            for shard in shards:
                assert remote[shard] == local.read_header(shard), shard


def test_unindexed_mtp_sidecar_is_listed_and_read(monkeypatch, tmp_path):
    files = build_mimo("sidecar")
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, MIMO)
        index = src.read_json("model.safetensors.index.json")
        assert "mtp.safetensors" not in set(index["weight_map"].values())
        assert "mtp.safetensors" in src.list_files()
        header = src.read_header("mtp.safetensors")
        assert len(header.tensors) == 16
        assert all(t.startswith("model.mtp_layers.0.") for t in header.tensors)
        assert header.tensors["model.mtp_layers.0.input_proj.weight"].dtype == "BF16"


def test_files_in_the_hf_cache_cost_no_request(monkeypatch, tmp_path):
    """A user who ran ``hf_hub_download`` before: those files are read from HF_HUB_CACHE."""
    from huggingface_hub import hf_hub_download

    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path, endpoint=None)
        for rel in ("config.json", "model.safetensors.index.json", "model-00001-of-00004.safetensors"):
            hf_hub_download(MIMO, rel, revision=repo.commit, cache_dir=paths["hf_cache"], endpoint=hub.endpoint)
        hub.clear_log()
        src = _open(hub, paths, MIMO, repo.commit, use_cache=False)
        assert hub.requests() == 1  # the model info: the revision is resolved and the files listed
        src.read_json("config.json")
        src.read_json("model.safetensors.index.json")
        h1 = src.read_header("model-00001-of-00004.safetensors")
        assert hub.requests() == 1
        assert src.served_from == {
            "config.json": "hf-cache",
            "model.safetensors.index.json": "hf-cache",
            "model-00001-of-00004.safetensors": "hf-cache",
        }
        src.read_header("model-00002-of-00004.safetensors")
        assert hub.requests() == 2  # the uncached shard: one range request (first window)
        assert h1 == LocalSource(write_tree(tmp_path / "local", files)).read_header("model-00001-of-00004.safetensors")


def test_lfs_redirects_are_followed_and_counted(monkeypatch, tmp_path):
    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)], redirect_lfs=True) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, MIMO)
        headers = _audit_like_analyzer(src)
        assert len(headers) == 4 and sum(len(h.tensors) for h in headers.values()) == 451
        # Each range request (one per shard: the small shards fit the first window) is a 302 from
        # /resolve plus the 206 from /cdn: both are counted.
        assert hub.requests("resolve") == 2 + 4
        assert hub.requests("cdn") == 4
        assert src.stats()["requests"] == hub.requests() == 1 + 2 + 2 * 4


def test_damaged_cache_entry_is_refetched_not_trusted(monkeypatch, tmp_path):
    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        first = _open(hub, paths, MIMO).read_header("model-00001-of-00004.safetensors")
        cache = HubCache(paths["cache"], hub.endpoint)
        path = cache._header_path(MIMO, repo.commit, "model-00001-of-00004.safetensors")
        raw = path.read_bytes()
        path.write_bytes(raw[:-5])  # truncated entry
        hub.clear_log()
        src = _open(hub, paths, MIMO, repo.commit)
        assert src.read_header("model-00001-of-00004.safetensors") == first
        assert hub.requests() == 1  # refetched: one range request (first window)
        assert cache.get_header(MIMO, repo.commit, "model-00001-of-00004.safetensors")[1] == len(files["model-00001-of-00004.safetensors"])


def test_jobs_is_validated_and_progress_stays_off_without_a_terminal(monkeypatch, tmp_path, capsys):
    from mtp_audit.errors import InputError

    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        with pytest.raises(InputError, match="between 1 and 64"):
            _open(hub, paths, MIMO, jobs=0)
        _audit_like_analyzer(_open(hub, paths, MIMO, jobs=1))
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("ci", [None, "true"])
def test_progress_only_on_a_terminal_without_ci(monkeypatch, tmp_path, ci):
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        if ci:
            monkeypatch.setenv("CI", ci)
        fake = Tty()
        monkeypatch.setattr(sys, "stderr", fake)
        from mtp_audit.progress import requested

        with requested():  # as the CLI runs it (the library draws no bar unless asked)
            _audit_like_analyzer(_open(hub, paths, MIMO))
    out = fake.getvalue()
    if ci:
        assert out == ""
    else:
        # click's bar: label, bar, position; finished with a newline (the cursor shown again)
        assert "mtp-audit: shard headers" in out and "4/4" in out and out.endswith("\n")


def test_mirror_without_siblings_is_listed_through_the_tree_api(monkeypatch, tmp_path):
    files = build_mimo("sidecar")  # 8 files: 4 shards, mtp.safetensors, config, index, README.md
    with FakeHub([FakeRepo(MIMO, files, info_siblings=False)], tree_page=3) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, MIMO)
        assert src.list_files() == tuple(sorted(files))
        assert "mtp.safetensors" in src.list_files()
        assert hub.requests("info") == 1 and hub.requests("tree") == 3  # 8 files, 3 per page
        assert src.stats()["requests"] == 4


def test_source_facts_report_the_commit_and_the_traffic(monkeypatch, tmp_path):
    from mtp_audit.sources.hub import source_facts

    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, MIMO, "main")
        src.read_json("config.json")
        assert source_facts(src) == {
            "kind": "hub",
            "repo": MIMO,
            "revision": "main",
            "commit": repo.commit,
            "endpoint": hub.endpoint,
            "offline": False,
            "listing": "complete",
            "requests": 2,
            "bytes_read": hub.bytes_sent(),
        }
    assert source_facts(LocalSource(write_tree(tmp_path / "l", files))) == {"kind": "local"}


@pytest.mark.parametrize(("version", "module"), [("2.4.0", "httpx2"), ("1.33.0", "httpx"), ("0.36.2", None)])
def test_the_http_library_follows_huggingface_hub(monkeypatch: pytest.MonkeyPatch, version: str, module: str | None) -> None:
    """huggingface_hub 1.x builds its client on httpx, 2.x on httpx2 (the long fuzz run on a machine with 1.33.0
    found every hub audit ending in 'internal error: No module named httpx2'); before 1.0 it is refused by name."""
    import huggingface_hub

    from mtp_audit.sources import hubhttp

    monkeypatch.setattr(huggingface_hub, "__version__", version)
    if module is None:
        with pytest.raises(ImportError, match=r"huggingface_hub 0\.36\.2 is too old .*>=1\.3"):
            hubhttp._http_library()
        return
    pytest.importorskip(module)
    assert hubhttp._http_library().__name__ == module
