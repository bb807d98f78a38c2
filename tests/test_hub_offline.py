"""Offline hub audits (``--offline`` / ``HF_HUB_OFFLINE=1``) and the environment variables read by
huggingface_hub (``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``) in a child
process, where huggingface_hub reads them at import exactly as it does for a user."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hubfixture import TOKEN, FakeHub, FakeRepo, build_mimo, child_env, isolate_hf

from mtp_audit.errors import InputError
from mtp_audit.sources.hub import (
    OFFLINE_PROBLEM,
    audit_source_for,
    hub_settings,
    open_hub_source,
)
from mtp_audit.sources.local import ReadProblem

MIMO = "XiaomiMiMo/MiMo-7B-Base"
S1 = "model-00001-of-00004.safetensors"
S2 = "model-00002-of-00004.safetensors"
SHARDS = [f"model-0000{i}-of-00004.safetensors" for i in range(1, 5)]


def _open(hub_endpoint, paths, revision=None, **kw):
    return open_hub_source(MIMO, revision, endpoint=hub_endpoint, cache_dir=paths["cache"], hf_cache_dir=paths["hf_cache"], **kw)


def test_offline_after_an_online_audit_makes_no_request(monkeypatch, tmp_path):
    files = build_mimo()
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        online = _open(hub.endpoint, paths)
        online.read_json("config.json")
        online.read_json("model.safetensors.index.json")
        seen = online.read_headers(SHARDS[:3])  # the 4th shard is never fetched
        hub.clear_log()
        offline = _open(hub.endpoint, paths, offline=True)
        assert offline.commit == repo.commit  # "main" found in the mtp-audit cache's refs
        assert offline.list_files() == online.list_files() and offline.listing_complete
        assert offline.read_json("config.json")["num_nextn_predict_layers"] == 1
        got = offline.read_headers(SHARDS)
        assert {s: got[s] for s in SHARDS[:3]} == seen
        problem = got[SHARDS[3]]
        assert isinstance(problem, ReadProblem)
        assert (problem.file, problem.kind, problem.problem) == (SHARDS[3], "network", OFFLINE_PROBLEM)
        assert offline.gaps() == ()
        assert hub.requests() == 0
        assert offline.stats() == {"requests": 0, "bytes_read": 0}


def test_hf_hub_offline_constant_means_offline(monkeypatch, tmp_path):
    from huggingface_hub import constants

    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        _open(hub.endpoint, paths).read_json("config.json")
        hub.clear_log()
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        src = _open(hub.endpoint, paths)
        assert src.offline and src.read_json("config.json")["model_type"] == "mimo"
        with pytest.raises(ReadProblem, match="offline: not in the Hugging Face cache"):
            src.read_json("model.safetensors.index.json")
        assert hub.requests() == 0


def test_offline_with_nothing_cached_is_one_line(monkeypatch, tmp_path):
    paths = isolate_hf(monkeypatch, tmp_path)
    with pytest.raises(InputError) as err:
        _open("http://127.0.0.1:9", paths, offline=True)
    assert err.value.where == MIMO
    assert err.value.problem.startswith("offline, and revision 'main' was never resolved on this machine")
    sha = "0" * 40
    with pytest.raises(InputError) as err:
        _open("http://127.0.0.1:9", paths, sha, offline=True)
    assert err.value.problem.startswith(f"offline, and nothing of commit {sha} is cached")


def test_offline_from_a_partial_hf_cache_says_what_it_cannot_see(monkeypatch, tmp_path):
    """Only config.json and the index were downloaded with huggingface_hub: the index's shards are
    listed (so they are not reported missing) but unreadable, and the listing itself is a gap."""
    from huggingface_hub import hf_hub_download

    files = build_mimo("sidecar")
    repo = FakeRepo(MIMO, files)
    with FakeHub([repo]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        for rel in ("config.json", "model.safetensors.index.json"):
            hf_hub_download(MIMO, rel, cache_dir=paths["hf_cache"], endpoint=hub.endpoint)
        hub.clear_log()
        src = open_hub_source(MIMO, offline=True, endpoint=hub.endpoint, use_cache=False, hf_cache_dir=paths["hf_cache"])
        assert src.commit == repo.commit  # from the HF cache's refs/main
        assert src.list_files() == tuple(sorted(["config.json", "model.safetensors.index.json", *SHARDS]))
        assert "mtp.safetensors" not in src.list_files()  # the un-indexed sidecar is invisible offline ...
        ((path, message),) = src.gaps()  # ... and the source says so
        assert path is None and "un-indexed shard" in message and "mtp.safetensors" in message
        assert src.read_json("model.safetensors.index.json")["metadata"]["total_size"] == 15666819072
        assert src.read_headers(SHARDS)[S1].problem == OFFLINE_PROBLEM
        assert hub.requests() == 0


def test_hub_settings_apply_to_audit_source_for(monkeypatch, tmp_path):
    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        isolate_hf(monkeypatch, tmp_path, endpoint=hub.endpoint)
        first = audit_source_for(MIMO)
        assert first.jobs == 8 and not first.offline
        hub.clear_log()
        with hub_settings(offline=True, jobs=3):
            src = audit_source_for(MIMO)
        assert src.offline and src.jobs == 3 and src.commit == first.commit
        assert hub.requests() == 0
        with pytest.raises(InputError, match="--jobs"), hub_settings(jobs=99):
            audit_source_for(MIMO)


_CHILD = """
import json, sys
from mtp_audit.sources.hub import audit_source_for
src = audit_source_for(sys.argv[1])
src.read_json("config.json")
hs = src.read_headers([f for f in src.list_files() if f.endswith(".safetensors")])
print(json.dumps({"display": src.display, "endpoint": src.endpoint, "tensors": sum(len(h.tensors) for h in hs.values()),
                  "stats": src.stats(), "offline": src.offline}))
"""


def _child(env, spec=MIMO):
    proc = subprocess.run([sys.executable, "-c", _CHILD, spec], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_environment_variables_in_a_child_process(tmp_path):
    files = build_mimo()
    repo = FakeRepo(MIMO, files, gated="auto")
    with FakeHub([repo]) as hub:
        env = child_env(hub.endpoint, tmp_path, HF_TOKEN=TOKEN)
        out = _child(env)
        assert out["endpoint"] == hub.endpoint and out["display"] == f"{MIMO}@{repo.commit}"
        assert out["tensors"] == 451 and not out["offline"]
        # model info, config.json, 1 per shard
        assert out["stats"]["requests"] == hub.requests() == 1 + 1 + 4
        hub.clear_log()
        offline = _child({**env, "HF_HUB_OFFLINE": "1"})
        assert offline["offline"] and offline["tensors"] == 451 and offline["stats"]["requests"] == 0
        assert hub.requests() == 0
        no_token = {k: v for k, v in env.items() if k != "HF_TOKEN"}
        proc = subprocess.run([sys.executable, "-c", _CHILD, MIMO], env=no_token, capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "gated repo (auto approval)" in proc.stderr


def test_offline_audit_with_nothing_cached_is_inconclusive(monkeypatch, tmp_path, capsys):
    """Issue 5: --offline never touches the network and says what it could not see (exit 3), also
    when nothing at all of the repo is cached."""
    from mtp_audit.cli.main import main

    isolate_hf(monkeypatch, tmp_path)
    assert main(["checkpoint", MIMO, "--offline", "-f", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "inconclusive"
    assert doc["findings"] == []
    assert doc["gaps"][0]["message"].startswith("offline, and revision 'main' was never resolved on this machine")


def test_offline_config_not_cached_is_a_gap_not_an_input_error(monkeypatch, tmp_path):
    """A metadata file the transport cannot deliver is a blocking gap (exit 3), not the user's mistake."""
    from mtp_audit.checkpoint import audit_checkpoint

    files = build_mimo()
    with FakeHub([FakeRepo(MIMO, files)]) as hub:
        paths = isolate_hf(monkeypatch, tmp_path)
        online = _open(hub.endpoint, paths)
        online.read_json("model.safetensors.index.json")  # the index is cached, config.json is not
        online.list_files()
        hub.clear_log()
        report = audit_checkpoint(_open(hub.endpoint, paths, offline=True))
        assert hub.requests() == 0
    assert report.status.value == "inconclusive"
    assert any(g.path == "config.json" and g.blocking for g in report.gaps)
    assert report.facts["checkpoint"]["source"]["kind"] == "hub"
