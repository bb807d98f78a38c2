"""Engines by version (``mtp-audit sglang 0.5.23``, ``--sglang``, ``--vllm``): the release resolved through the PyPI
JSON API and only the members the analyzers read fetched with range requests, against a loopback index serving real
wheels from the test cache (tests/pypifixture.py). Nothing here reaches the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cache_dir, sglang_wheel
from pypifixture import build_wheel, serve

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.sources.pypi import IndexUnavailable, is_version, release_wheel


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


# --- hostile index answers: each case failed before the shared HTTP policy and the sealed cache ------------------

def _doc(index, key: tuple[str, str], **over: object) -> dict:  # type: ignore[no-untyped-def]
    return {"info": {"name": key[0], "version": key[1]}, "urls": [index.entry(key, **over)]}


@pytest.mark.parametrize("evil", ["../../../../outside/x.whl", "ABSOLUTE"])
def test_a_wheel_name_from_the_index_is_never_a_path(evil: str, cache: Path, tmp_path: Path) -> None:
    """The JSON API's ``filename`` was joined to the cache folder unchecked: ``../../../../outside/x.whl`` wrote
    outside the cache, an absolute name anywhere. The cache names the file itself."""
    name = str(tmp_path / "abs" / "x.whl") if evil == "ABSOLUTE" else evil
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        index.docs[key] = _doc(index, key, filename=name)
        got = release_wheel(*key, index_url=index.url)
    assert got.resolve().is_relative_to(cache.resolve()) and got.name.startswith("sglang-0.5.99-") and "/" not in got.name
    assert not (tmp_path / "outside").exists() and not (tmp_path / "abs").exists()
    assert {p.name for p in got.parent.iterdir()} == {got.name, "entry.json"}


@pytest.mark.parametrize("scheme", ["file", "ftp", "data"])
def test_a_wheel_url_that_is_not_http_is_never_opened(scheme: str, cache: Path, tmp_path: Path) -> None:
    """Only the index URL was checked for http(s); a wheel ``url`` of ``file:///...`` was opened and read."""
    name, data = build_wheel()
    (tmp_path / name).write_bytes(data)
    url = {"file": f"file://{tmp_path / name}", "ftp": "ftp://127.0.0.1/x.whl", "data": "data:,x"}[scheme]
    key = ("sglang", "0.5.99")
    with serve({key: (name, data)}) as index:
        index.docs[key] = _doc(index, key, url=url)
        with pytest.raises(InputError, match=f"{scheme} URL refused \\(only http and https are read\\)"):
            release_wheel(*key, index_url=index.url)
        assert [p for p, _ in index.requests] == ["/pypi/sglang/0.5.99/json"]
    assert not list(cache.rglob("*.whl"))


def test_the_cache_is_keyed_by_the_index(cache: Path) -> None:
    """After a run against mirror A, a run against index B made no request to B and gave A's answer."""
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel(extra={"sglang/a.py": b"A = 1\n"})}) as a, serve({key: build_wheel(extra={"sglang/b.py": b"B = 2\n"})}) as b:
        from_a = release_wheel(*key, index_url=a.url)
        from_b = release_wheel(*key, index_url=b.url)
        assert b.requests and b.requests[0][0] == "/pypi/sglang/0.5.99/json"
        import zipfile

        assert "sglang/a.py" in zipfile.ZipFile(from_a).namelist() and "sglang/b.py" in zipfile.ZipFile(from_b).namelist()
        n = len(a.requests)
        assert release_wheel(*key, index_url=a.url) == from_a and len(a.requests) == n  # A's entry is still A's


@pytest.mark.parametrize("damage", ["cut", "flip", "seal-json", "no-seal", "fifo", "seal-fifo"])
def test_a_damaged_cache_entry_is_dropped_and_fetched_again(damage: str, cache: Path) -> None:
    """A cached release cut in half was exit 2 on every run and never fetched again."""
    import os
    import zipfile

    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        got = release_wheel(*key, index_url=index.url)
        good = got.read_bytes()
        seal = got.parent / "entry.json"
        if damage == "cut":
            got.write_bytes(good[: len(good) // 2])
        elif damage == "flip":
            got.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
        elif damage == "seal-json":
            seal.write_text("{")
        elif damage == "no-seal":
            seal.unlink()
        elif damage == "seal-fifo":
            seal.unlink()
            os.mkfifo(seal)
        else:
            got.unlink()
            os.mkfifo(got)
        n = len(index.requests)
        again = release_wheel(*key, index_url=index.url)
        assert len(index.requests) > n  # fetched again
    assert again == got and again.read_bytes() == good and zipfile.ZipFile(again).testzip() is None


def test_the_index_sha256_is_compared(cache: Path) -> None:
    """The JSON API's sha256 digests were never compared (a wheel smaller than the tail read is fetched whole)."""
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        index.docs[key] = _doc(index, key, digests={"sha256": "0" * 64})
        with pytest.raises(InputError, match="SHA-256 is not the one the package index gives"):
            release_wheel(*key, index_url=index.url)
    assert not list(cache.rglob("*.whl"))


@pytest.mark.parametrize("size", ['"12kB"', "{}", "1e400", "[1]", "true", "-5"])
def test_a_size_that_is_not_a_number_of_bytes_is_ignored(size: str, cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``size`` of "12kB", [1] or 1e400 was exit 4 (int() of it); the server's Content-Range gives the size."""
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        doc = json.dumps(_doc(index, key, size="SIZE")).replace('"SIZE"', size)
        index.docs[key] = doc.encode()
        with caplog.at_level("WARNING", logger="mtp_audit"):
            got = release_wheel(*key, index_url=index.url)
        assert index.requests[1][1] == "bytes=0-0"  # the size asked from the server
    assert got.is_file()
    assert size in ("{}",) or "not a number of bytes; ignored" in caplog.text


def test_a_wheel_fetched_by_version_has_the_inflation_guard(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A wheel whose members inflate over 100x: the members were inflated at fetch time (a 33 MB wheel inflating to
    32 GiB ran without the guard); they are now copied compressed, and the report by version equals the report of
    the same .whl given as a path, zip-bomb notes included."""
    import zipfile

    name, data = build_wheel(server_args=b"#" * (3 << 20))
    key = ("sglang", "0.5.99")
    whl = tmp_path / name
    whl.write_bytes(data)
    with serve({key: (name, data)}) as index:
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", index.url)
        got = release_wheel(*key)
        code = main(["sglang", "0.5.99", "-f", "json"])
    by_version = json.loads(capsys.readouterr().out)
    original = {i.filename: (i.compress_size, i.CRC) for i in zipfile.ZipFile(whl).infolist()}
    assert {i.filename: (i.compress_size, i.CRC) for i in zipfile.ZipFile(got).infolist()} == original
    assert main(["sglang", str(whl), "-f", "json"]) == code
    whole = json.loads(capsys.readouterr().out)
    assert by_version["gaps"] == whole["gaps"] and by_version["findings"] == whole["findings"]
    assert sum("inflates more than 100 times" in json.dumps(g) for g in whole["gaps"]) >= 1


RAW_ANSWERS = {
    "banner": b"SSH-2.0-OpenSSH_9.6\r\n",
    "broken-chunked": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n",
    "101-headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: y\r\n" % i for i in range(101)) + b"Content-Length: 2\r\n\r\n{}",
    "no-answer": b"",
    "bad-status": b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}",
    "short-body": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{}",
}


@pytest.mark.parametrize("kind", sorted(RAW_ANSWERS))
def test_a_protocol_error_of_the_index_is_one_line_could_not_tell(kind: str, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A non-HTTP banner, a broken chunked body, 101 headers: http.client's errors went through (exit 4)."""
    from hostilekit import HostileServer

    def respond(h):  # type: ignore[no-untyped-def]
        h.wfile.write(RAW_ANSWERS[kind])
        h.wfile.flush()
        h.close_connection = True

    with HostileServer(respond) as srv:
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", srv.endpoint + "/pypi")
        assert main(["sglang", "0.5.99"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("INCONCLUSIVE: could not tell: ") and err.count("\n") == 1 and "internal error" not in err


def test_the_network_budget_bounds_a_dripping_index(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``MTP_AUDIT_NETWORK_SECONDS=5`` and an index answering 1 byte/s ran on past 40 s: each socket read had its
    30 s time-out, nothing bounded the whole. Now the run's network time ends it (here 0.5 s, a byte every 0.2 s)."""
    import time

    from hostilekit import HostileServer, trickle

    srv_box: list = []
    with HostileServer(lambda h: trickle(h, srv_box[0].stopping, pause=0.2, limit_s=10)) as srv:
        srv_box.append(srv)
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", srv.endpoint + "/pypi")
        monkeypatch.setenv("MTP_AUDIT_NETWORK_SECONDS", "0.5")
        t0 = time.monotonic()
        assert main(["sglang", "0.5.99"]) == 3
        took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert took < 3 and "0.5 s of network time are spent" in err and err.count("\n") == 1


def test_the_environment_proxy_is_used_as_urllib_used_it(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The index client moved from urllib to http.client: ``http_proxy`` still carries a request for another host
    (the absolute URL in the request line, credentials as Proxy-Authorization), as urllib's ProxyHandler did."""
    from hostilekit import HostileServer, send

    with HostileServer(lambda h: send(h, 404, b"{}")) as proxy:
        monkeypatch.setenv("http_proxy", proxy.endpoint.replace("http://", "http://u:p@"))
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.setenv("MTP_AUDIT_INDEX_URL", "http://index.example/pypi")
        assert main(["sglang", "0.5.99"]) == 2
    assert proxy.seen[0][0] == "http://index.example/pypi/sglang/0.5.99/json"
    assert proxy.seen[0][1]["proxy-authorization"] == "Basic dTpw"
    assert "no such release on the package index (http://index.example/pypi)" in capsys.readouterr().err


def test_two_runs_fetching_one_release_at_once_both_succeed(cache: Path) -> None:
    """A run that finds no valid entry replaces it, never deletes it: a run fetching the same release at the same
    time keeps its files (4 threads, one cache)."""
    import threading
    import zipfile

    key = ("sglang", "0.5.99")
    got: list[object] = []
    with serve({key: build_wheel()}) as index:
        def one() -> None:
            try:
                got.append(release_wheel(*key, index_url=index.url))
            except Exception as exc:  # noqa: BLE001 - recorded, asserted below
                got.append(exc)
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len({str(p) for p in got}) == 1 and all(isinstance(p, Path) for p in got), got
        n = len(index.requests)
        assert release_wheel(*key, index_url=index.url) == got[0] and len(index.requests) == n  # sealed
    assert zipfile.ZipFile(got[0]).testzip() is None  # type: ignore[arg-type]


def test_a_folder_where_the_cached_zip_goes_is_one_line(cache: Path) -> None:
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        got = release_wheel(*key, index_url=index.url)
        got.unlink()
        got.mkdir()
        with pytest.raises(InputError, match="cannot write the cache entry"):
            release_wheel(*key, index_url=index.url)


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]/pypi", "http://" + "a" * 300 + ".example/pypi", "file:///etc",
                                 "http://a b/pypi"])
def test_an_index_url_http_client_cannot_open_is_one_line(url: str, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``http.client.InvalidURL`` (a zone id it reads as a port) was raised outside the policy's handlers: exit 4."""
    monkeypatch.setenv("MTP_AUDIT_INDEX_URL", url)
    assert main(["sglang", "0.5.99"]) in (2, 3)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err


def test_a_version_names_its_release_under_pep_440(cache: Path) -> None:
    """``0.5.99.0`` is the release the index spells ``0.5.99`` (packaging's ``Version`` equality): found through the
    project document, then from the cache under either spelling without asking the index again."""
    key = ("sglang", "0.5.99")
    with serve({key: build_wheel()}) as index:
        got = release_wheel("sglang", "0.5.99.0", index_url=index.url)
        assert got.name.startswith("sglang-0.5.99-") and ("/pypi/sglang/json", None) in index.requests
        again = release_wheel("sglang", "0.5.99", index_url=index.url)
        asked = len(index.requests)
        assert release_wheel("sglang", "0.5.99.0", index_url=index.url) == got and len(index.requests) == asked
    assert again.name == got.name
    with serve({key: build_wheel()}) as index, pytest.raises(InputError, match="no such release"):
        release_wheel("sglang", "0.5.98", index_url=index.url)


@pytest.mark.network
def test_cache_off_fetches_into_a_folder_that_does_not_outlive_the_process(tmp_path: Path) -> None:
    """``MTP_AUDIT_CACHE_DIR=`` turns caches off (README): a release by version still works, its members go to a
    temporary folder removed when the process exits (was: exit 2 "give cache_dir", a library parameter)."""
    import os
    import subprocess
    import sys

    whl = sglang_wheel("0.5.9")
    code = ("import json, sys\n"
            "from pypifixture import serve\n"
            "from pathlib import Path\n"
            "import os\n"
            "with serve({('sglang', '0.5.9'): Path(sys.argv[1])}) as index:\n"
            "    os.environ['MTP_AUDIT_INDEX_URL'] = index.url\n"
            "    from mtp_audit.cli.main import main\n"
            "    import mtp_audit.sources.pypi as p\n"
            "    rc = main(['sglang', '0.5.9', '-f', 'json', '-o', sys.argv[2]])\n"
            "    print(rc, p._PROCESS_ROOT[0])\n")
    env = {**os.environ, "MTP_AUDIT_CACHE_DIR": "", "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code, str(whl), str(tmp_path / "r.json")], capture_output=True,
                         text=True, timeout=300, env=env)
    rc, folder = out.stdout.split()
    assert rc == "0", out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["facts"]["sglang"]["version"] == "0.5.9"
    assert not Path(folder).exists()
