"""Hub failures: every one is a single clear line (InputError, exit 2) or a ReadProblem naming the
file (the analyzer's blocking Gap, exit 3), never a traceback. Faults are injected in the loopback
hub (tests/hubfixture.py)."""

from __future__ import annotations

import time

import pytest
from hubfixture import (
    TOKEN,
    FakeHub,
    FakeRepo,
    Fault,
    build_mimo,
    header_length,
    isolate_hf,
    write_tree,
)

from mtp_audit.errors import InputError
from mtp_audit.sources.hub import open_hub_source, parse_spec, shard_header_from_prefix
from mtp_audit.sources.local import LocalSource, ReadProblem

MIMO = "XiaomiMiMo/MiMo-7B-Base"
S1 = "model-00001-of-00004.safetensors"
S2 = "model-00002-of-00004.safetensors"


def _open(hub, paths, repo=MIMO, revision=None, **kw):
    kw.setdefault("timeout", 2.0)
    return open_hub_source(repo, revision, endpoint=hub.endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"], **kw)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("deepseek-ai", "not a hub model id"),
        ("a/b/c", "not a hub model id"),
        ("org/na--me", "not a hub model id"),
        ("-org/name", "not a hub model id"),
        ("org/name.git", "not a hub model id"),
        ("org/name@", "empty revision"),
        ("org/name@a b", "not a valid revision"),
        ("org/name@../../etc", "not a valid revision"),
    ],
)
def test_malformed_spec_is_one_input_error(spec, problem):
    with pytest.raises(InputError) as err:
        parse_spec(spec)
    assert err.value.where == spec and problem in err.value.problem and "\n" not in str(err.value)


def test_well_formed_specs():
    assert parse_spec("deepseek-ai/DeepSeek-V3") == ("deepseek-ai/DeepSeek-V3", None)
    assert parse_spec("nvidia/Qwen3.5-397B-A17B-NVFP4@v1.0") == ("nvidia/Qwen3.5-397B-A17B-NVFP4", "v1.0")
    assert parse_spec("org/name@refs/pr/3") == ("org/name", "refs/pr/3")


@pytest.fixture
def mimo():
    return build_mimo()


def test_missing_repo_and_revision(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        with pytest.raises(InputError) as err:
            _open(hub, paths, "nobody/nothing")
        assert err.value.where == "nobody/nothing"
        assert err.value.problem == f"no model repo nobody/nothing on {hub.endpoint} (or it is private or gated: set HF_TOKEN)"
        with pytest.raises(InputError) as err:
            _open(hub, paths, MIMO, "no-such-branch")
        assert err.value.where == f"{MIMO}@no-such-branch"
        assert err.value.problem == f"no revision 'no-such-branch' in {MIMO} on {hub.endpoint}"


def test_private_repo_needs_a_token(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo, private=True)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        with pytest.raises(InputError, match="or it is private or gated: set HF_TOKEN"):
            _open(hub, paths)
        assert len(_open(hub, paths, token=TOKEN).list_files()) == 7


def test_gated_repo_without_token_stops_after_the_model_info(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo, gated="manual")]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        with pytest.raises(InputError) as err:
            _open(hub, paths)
        assert err.value.problem.startswith("gated repo (manual approval): accept the model's conditions on")
        assert hub.requests() == 1
        # HF_TOKEN is honoured (read by huggingface_hub at call time).
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        src = _open(hub, paths)
        assert src.read_json("config.json")["num_nextn_predict_layers"] == 1


def test_gated_repo_with_a_token_that_has_no_access(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo, gated="auto")]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, token="hf_not_accepted")
        with pytest.raises(InputError) as err:
            src.read_json("config.json")
        assert err.value.problem.startswith("gated repo: HTTP 403 for config.json")
        with pytest.raises(InputError, match="gated repo: HTTP 403"):
            src.read_headers([S1, S2])


def test_shard_404_is_a_network_problem_for_that_file_only(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        hub.fault(MIMO, S2, Fault(status=404, error_code="EntryNotFound"))
        paths = isolate_hf(monkeypatch, tmp_path)
        out = _open(hub, paths).read_headers([S1, S2])
        assert len(out[S1].tensors) == len(LocalSource(write_tree(tmp_path / "l", mimo)).read_header(S1).tensors)
        assert isinstance(out[S2], ReadProblem)
        assert (out[S2].file, out[S2].kind, out[S2].problem) == (S2, "network", "not found on the hub: HTTP 404 (EntryNotFound)")


def test_5xx_is_retried_once(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        hub.fault(MIMO, S1, Fault(status=503, times=1))
        hub.fault(MIMO, S2, Fault(status=502))
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths)
        hub.clear_log()
        out = src.read_headers([S1, S2])
        assert not isinstance(out[S1], ReadProblem)
        assert isinstance(out[S2], ReadProblem) and out[S2].problem == "the hub answered HTTP 502"
        # S1: 503, then the retry (first window, header included); S2: 502 twice.
        assert hub.requests() == 2 + 2
        assert src.stats()["requests"] == 1 + 4


def test_slow_server_times_out_per_file(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        hub.fault(MIMO, S2, Fault(sleep=2.0))
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths, timeout=0.4)
        t0 = time.monotonic()
        out = src.read_headers([S1, S2])
        assert time.monotonic() - t0 < 1.9
        assert not isinstance(out[S1], ReadProblem)
        assert (out[S2].kind, out[S2].problem) == ("network", "timed out after 0.4 s")


def test_slow_model_info_is_one_line(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        hub.fault(MIMO, "<info>", Fault(sleep=1.5))
        paths = isolate_hf(monkeypatch, tmp_path)
        with pytest.raises(InputError) as err:
            _open(hub, paths, timeout=0.3)
        assert err.value.problem == f"no answer from {hub.endpoint} within 0.3 s; try again or use --offline"


def test_model_info_5xx_is_retried_then_one_line(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        hub.fault(MIMO, "<info>", Fault(status=503, times=1))
        assert _open(hub, paths).commit
        hub.fault(MIMO, "<info>", Fault(status=500))
        with pytest.raises(InputError) as err:
            _open(hub, paths)
        assert err.value.problem == f"the hub at {hub.endpoint} answered HTTP 500; try again later or use --offline"


def test_unreachable_hub_is_one_line(monkeypatch, tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    paths = isolate_hf(monkeypatch, tmp_path)
    with pytest.raises(InputError) as err:
        open_hub_source(MIMO, endpoint=f"http://127.0.0.1:{port}", cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"], timeout=1)
    assert err.value.problem.startswith(f"cannot reach http://127.0.0.1:{port}: ")
    assert err.value.problem.endswith("use --offline to audit from the cache")


def test_redirect_loop_and_ignored_range(monkeypatch, tmp_path, mimo):
    with FakeHub([FakeRepo(MIMO, mimo)]) as hub:
        hub.fault(MIMO, S1, Fault(redirect_loop=True))
        hub.fault(MIMO, S2, Fault(ignore_range=True))
        paths = isolate_hf(monkeypatch, tmp_path)
        src = _open(hub, paths)
        before = src.stats()["bytes_read"]
        out = src.read_headers([S1, S2])
        assert (out[S1].kind, out[S1].problem) == ("network", "too many redirects")
        assert out[S2].kind == "network"
        assert out[S2].problem == "the server answered HTTP 200 to a Range request (it would send the whole file); not read"
        assert src.stats()["bytes_read"] == before  # the body of the 200 was never read


def test_malformed_shards_get_the_same_problem_text_as_locally(monkeypatch, tmp_path):
    """The remote validator restates safetensors' checks, so local and hub reports agree."""
    import json
    import struct

    def shard(header: dict, data: int) -> bytes:
        raw = json.dumps(header).encode()
        raw += b" " * (-len(raw) % 8)
        return struct.pack("<Q", len(raw)) + raw + b"\0" * data

    f32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    bad = {
        "gap.safetensors": shard({"a": {**f32, "data_offsets": [4, 12]}}, 12),
        "short.safetensors": shard({"a": f32}, 4),
        "long.safetensors": shard({"a": f32}, 16),
        "size.safetensors": shard({"a": {**f32, "shape": [3]}}, 8),
        "overlap.safetensors": shard({"a": f32, "b": {**f32, "data_offsets": [4, 12]}}, 12),
        "subbyte.safetensors": shard({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, 2),
        "dup.safetensors": struct.pack("<Q", 16) + b'{"a":{},"a":{}} ',
        "tiny.safetensors": b"\x01\x02\x03",
        "huge.safetensors": struct.pack("<Q", 1 << 40) + b"{}",
        "toolong.safetensors": struct.pack("<Q", 64) + b"{}      ",
        "utf8.safetensors": struct.pack("<Q", 8) + b'{"\xff":1}',
        "ok.safetensors": shard({"a": f32}, 8),
        # usize overflow: in the element count before a 0 dimension, in the bit count, over many dimensions
        "overflow0.safetensors": shard({"a": {"dtype": "F32", "shape": [2**40, 2**40, 0], "data_offsets": [0, 0]}}, 0),
        "overflowbits.safetensors": shard({"a": {"dtype": "F32", "shape": [2**62], "data_offsets": [0, 0]}}, 0),
        "overflowrank.safetensors": shard({"a": {"dtype": "U8", "shape": [2**32] * 3000, "data_offsets": [0, 0]}}, 0),
    }
    files = {**bad, "config.json": b"{}"}
    local = LocalSource(write_tree(tmp_path / "local", files))
    with FakeHub([FakeRepo("org/bad", files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        remote = _open(hub, paths, "org/bad").read_headers(sorted(bad))
    for name in sorted(bad):
        try:
            expected = local.read_header(name)
        except ReadProblem as exc:
            expected = exc
        got = remote[name]
        if isinstance(expected, ReadProblem):
            assert isinstance(got, ReadProblem), name
            assert (got.file, got.kind, got.problem) == (expected.file, expected.kind, expected.problem), name
        else:
            assert got == expected, name
    # and the cached prefix gives the same answer as the network read
    blob = bad["ok.safetensors"]
    assert shard_header_from_prefix("ok.safetensors", blob[: header_length(blob)], len(blob)) == local.read_header("ok.safetensors")
