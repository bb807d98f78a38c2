"""A hostile hub on loopback: credentials, bodies without end, gzip bombs, 429 storms, cache poisoning.

Invariants: the token goes only to the endpoint's origin; every hub answer ends in a result or one line
(InputError / ReadProblem) within the run's network time, with memory bounded by the caps, never exit 4;
a cached entry is used only if it is the entry of this endpoint, repo, commit and file with its hash intact
and it parsed, else it is fetched again.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from hostilekit import HostileServer, cli, send, trickle
from hubfixture import TOKEN, FakeHub, FakeRepo, Fault, build_mimo, isolate_hf

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import run_budget
from mtp_audit.sources.hub import open_hub_source
from mtp_audit.sources.local import ReadProblem

MIMO = "XiaomiMiMo/MiMo-7B-Base"
SHA = "a" * 40


def _open(endpoint: str, paths: dict[str, Path], repo: str = "org/model", **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("timeout", 1.0)
    return open_hub_source(repo, None, endpoint=endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"], **kw)


def _bounded(fn, seconds: float):  # type: ignore[no-untyped-def]
    """Run ``fn`` in a thread; fail if it has not ended after ``seconds``. Returns its result or exception."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    return box[0], time.monotonic() - t0


def test_next_page_on_another_host_gets_no_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def other(h):  # type: ignore[no-untyped-def]
        send(h, 200, b"[]", {"Content-Type": "application/json"})

    with HostileServer(other) as evil:
        def hub(h):  # type: ignore[no-untyped-def]
            if "/tree/" in h.path:
                page = json.dumps([{"type": "file", "path": "config.json"}]).encode()
                send(h, 200, page, {"Link": f'<{evil.endpoint}/steal?cursor=1>; rel="next"'})
            else:
                send(h, 200, json.dumps({"sha": SHA, "gated": False}).encode())

        with HostileServer(hub) as good:
            paths = isolate_hf(monkeypatch, tmp_path)
            monkeypatch.setenv("HF_TOKEN", TOKEN)
            src = _open(good.endpoint, paths)
            assert src.list_files() == ("config.json",)
            assert all(headers.get("authorization") == f"Bearer {TOKEN}" for _, headers in good.seen)
            assert evil.seen and all("authorization" not in headers for _, headers in evil.seen)


@pytest.mark.parametrize("link", ["http://[::1/x", "http://host:port/x"])
def test_a_next_page_link_that_does_not_parse_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, link: str) -> None:
    """Found by the long fuzz run (huggingface_hub 1.33.0): ``Link: <http://[::1/x>; rel="next"`` ended the
    audit in 'internal error: ValueError: Invalid IPv6 URL' (the origin check parsed it outside any handler)."""
    def hub(h):  # type: ignore[no-untyped-def]
        if "/tree/" in h.path:
            page = json.dumps([{"type": "file", "path": "config.json"}]).encode()
            send(h, 200, page, {"Link": f'<{link}>; rel="next"'})
        else:
            send(h, 200, json.dumps({"sha": SHA, "gated": False}).encode())

    with HostileServer(hub) as good:
        paths = isolate_hf(monkeypatch, tmp_path)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        with pytest.raises(InputError, match=r"cannot list the repo's files: bad next-page link \((InvalidURL|ValueError)\)"):
            _open(good.endpoint, paths).list_files()


@pytest.mark.parametrize("kind", ["endless", "one-byte-a-second"])
def test_model_info_without_end_stops_in_bounded_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str) -> None:
    def hub(h):  # type: ignore[no-untyped-def]
        if kind == "endless":
            trickle(h, srv.stopping, chunk=b" " * 65536, pause=0.0, limit_s=30)
        else:
            trickle(h, srv.stopping, chunk=b" ", pause=0.5, limit_s=30)

    with HostileServer(hub) as srv:
        paths = isolate_hf(monkeypatch, tmp_path)
        result, seconds = _bounded(lambda: _open(srv.endpoint, paths, timeout=1.0), 25)
    assert isinstance(result, InputError), result
    assert seconds < 12
    assert ("longer than" in result.problem) if kind == "endless" else ("timed out" in result.problem)


def test_gzip_bomb_model_info_is_not_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bomb = gzip.compress(b"[" + b" " * (256 * 1024 * 1024) + b"]", compresslevel=9)

    def hub(h):  # type: ignore[no-untyped-def]
        send(h, 200, bomb, {"Content-Encoding": "gzip", "Content-Type": "application/json"})

    with HostileServer(hub) as srv:
        paths = isolate_hf(monkeypatch, tmp_path)
        tracemalloc.start()
        try:
            result, _ = _bounded(lambda: _open(srv.endpoint, paths), 60)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert isinstance(result, InputError), result
    assert peak < 64 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB: the body was decompressed"


def test_429_storm_ends_with_the_run_network_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every shard answers 429 with Retry-After: the run ends within its network time, the shards are
    'could not tell' (network problems), never a hang."""
    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = open_hub_source(MIMO, None, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"],
                              timeout=2.0, jobs=1)
        shards = [f for f in files if f.endswith(".safetensors")]
        for f in shards:
            hub.fault(MIMO, f, Fault(status=429))
        monkeypatch.setattr("mtp_audit.sources.hubhttp._retry_after", lambda response: 5.0)
        monkeypatch.setenv("MTP_AUDIT_NETWORK_SECONDS", "1.5")
        t0 = time.monotonic()
        with run_budget():
            out = src.read_headers(shards)
        seconds = time.monotonic() - t0
    assert seconds < 4, seconds
    assert all(isinstance(v, ReadProblem) and v.kind == "network" for v in out.values())


def test_proxy_html_200_is_not_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        real = files["config.json"]
        repo.files["config.json"] = b"<html>captive portal</html>"
        with pytest.raises(ReadProblem, match="invalid JSON|not"):
            open_hub_source(MIMO, None, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"]).read_json("config.json")
        repo.files["config.json"] = real
        src = open_hub_source(MIMO, None, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"])
        assert src.read_json("config.json") == json.loads(real)
        assert src.served_from["config.json"] == "hub"


def test_cache_is_per_endpoint_and_entries_are_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A mirror's config.json is never served for another endpoint; a bit-flipped entry is fetched again."""
    files = build_mimo()
    mirror_files = dict(files, **{"config.json": json.dumps({"architectures": ["Evil"], "num_nextn_predict_layers": 0}).encode()})
    repo = FakeRepo(MIMO, files)
    mirror_repo = FakeRepo(MIMO, mirror_files, commit=repo.commit)  # same commit sha, other bytes
    with FakeHub([mirror_repo]) as mirror, FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = open_hub_source(MIMO, repo.commit, endpoint=mirror.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"])
        assert src.read_json("config.json")["architectures"] == ["Evil"]
        src = open_hub_source(MIMO, repo.commit, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"])
        assert src.read_json("config.json") == json.loads(files["config.json"])
        # flip one byte of every cached small file of the real hub: refetched, not trusted
        from mtp_audit.sources.hubcache import HubCache

        entry = HubCache(paths["cache"], hub.endpoint).file_path(MIMO, repo.commit, "config.json")
        raw = bytearray(entry.read_bytes())
        raw[-3] ^= 0x01
        entry.write_bytes(bytes(raw))
        hub.clear_log()
        src = open_hub_source(MIMO, repo.commit, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"])
        assert src.read_json("config.json") == json.loads(files["config.json"])
        assert src.served_from["config.json"] == "hub"


def test_revision_dot_is_refused() -> None:
    code, out, err = cli(["checkpoint", "org/name@."])
    assert code == 2 and out == "" and "not a valid revision" in err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "symlink-out", "directory", "plain-old-format"])
def test_hub_cache_entries_that_are_not_entries_are_misses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str) -> None:
    """Every hub-cache entry replaced by a FIFO, a symlink to /dev/zero or out, a folder, or raw bytes without a
    seal (the old format): the audit neither blocks nor trusts them; it fetches again and gets the same headers."""
    import os

    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    shards = sorted(f for f in files if f.endswith(".safetensors"))
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        first = open_hub_source(MIMO, repo.commit, endpoint=hub.endpoint, cache_dir=paths["cache"],
                                hf_cache_dir=paths["hf_cache"]).read_headers(shards)
        (tmp_path / "outside").write_bytes(b"\x00" * 64)
        entries = [p for p in paths["cache"].rglob("*") if p.is_file()]
        assert entries
        for p in entries:
            raw = p.read_bytes()
            p.unlink()
            if kind == "fifo":
                os.mkfifo(p)
            elif kind == "dev-zero":
                os.symlink("/dev/zero", p)
            elif kind == "symlink-out":
                os.symlink(tmp_path / "outside", p)
            elif kind == "directory":
                p.mkdir()
            else:
                p.write_bytes(raw.split(b"\n", 2)[-1])  # the payload alone
        result, seconds = _bounded(lambda: open_hub_source(MIMO, repo.commit, endpoint=hub.endpoint, cache_dir=paths["cache"],
                                                           hf_cache_dir=paths["hf_cache"]).read_headers(shards), 30)
    assert result == first


@pytest.mark.parametrize("argv, env", [
    (["log", "--metrics", "http://[::1"], {}),
    (["log", "--metrics", "http://127.0.0.1:xx/"], {}),
    (["sglang", "0.5.4"], {"MTP_AUDIT_INDEX_URL": "http://[::1"}),
])
def test_a_url_that_does_not_parse_is_exit_2(monkeypatch, capsys, argv, env):
    """urllib's ValueError ('Invalid IPv6 URL') was an internal error (exit 4)."""
    from mtp_audit.cli.main import main

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a valid URL" in err
