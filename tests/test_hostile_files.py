"""Hostile files: outputs over files read implicitly, check-then-open races, stale engine-tree caches,
PEP 263 source encodings, cache entries that are FIFOs or of the wrong shape, signals during a write.

Each test states the invariant it holds; each failed before the fix it names (run on the previous commit).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostilekit import cli

from mtp_audit.synth.shards import shard_bytes, tiny

REPO = Path(__file__).resolve().parents[1]
SERVER_ARGS = (b"class ServerArgs:\n    speculative_algorithm: str = None\n"
               b"    def __post_init__(self):\n        if self.speculative_algorithm == 'NEXTN':\n"
               b"            self.speculative_algorithm = 'EAGLE'\n")


def _sglang_tree(root: Path, server_args: bytes = SERVER_ARGS) -> Path:
    srt = root / "sglang" / "srt"
    srt.mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    (srt / "server_args.py").write_bytes(server_args)
    return root


# --- outputs over files read implicitly ----------------------------------------------------------------


def test_output_never_replaces_a_file_the_live_preflight_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``preflight -o <site-packages>/torch/version.py``: the file the live preflight read is protected."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    version = site / "torch" / "version.py"
    version.write_text("__version__ = '2.9.0+cu130'\ncuda = '13.0'\n")
    monkeypatch.syspath_prepend(str(site))
    code, out, err = cli(["preflight", "-o", str(version)])
    assert code == 2, err
    assert "torch/version.py" in err and err.count("\n") == 1
    assert version.read_text() == "__version__ = '2.9.0+cu130'\ncuda = '13.0'\n"


def test_files_read_registry_is_per_run(tmp_path: Path) -> None:
    """The registry lives in the run: a library call outside any run records nothing, a run records its reads."""
    from mtp_audit.sources.bounded import files_read, read_bytes_bounded, run_budget

    f = tmp_path / "a.txt"
    f.write_text("x")
    read_bytes_bounded(f, 10)
    assert files_read() == []
    with run_budget():
        read_bytes_bounded(f, 10)
        assert files_read() == [str(f)]
    assert files_read() == []


# --- check-then-open races -----------------------------------------------------------------------------


def _strict_shard() -> bytes:
    """A valid shard whose header the fast path does not certify (a backslash in the metadata), so the
    strict reader, safetensors included, judges it."""
    return shard_bytes([("mtp.fc.weight", "BF16", (2, 2))], {"note": "a\\b"})


def test_shard_swapped_after_the_read_is_never_reopened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shard is swapped for a FIFO right after its header was read: the audit neither blocks nor reads
    the FIFO; safetensors judges the bytes already read (it used to reopen the path and block forever)."""
    from mtp_audit.sources import local

    (tmp_path / "model.safetensors").write_bytes(_strict_shard())
    real = local.parse_header_json

    def swap(file: str, raw: bytes):  # type: ignore[no-untyped-def]
        os.unlink(tmp_path / "model.safetensors")
        os.mkfifo(tmp_path / "model.safetensors")
        return real(file, raw)

    monkeypatch.setattr(local, "parse_header_json", swap)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(local.LocalSource(tmp_path).read_header("model.safetensors")), daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the FIFO reader so the test process can end
        fd = os.open(tmp_path / "model.safetensors", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("the audit blocked on a FIFO swapped in after the header was read")
    assert isinstance(result[0], local.ShardHeader) and list(result[0].tensors) == ["mtp.fc.weight"]


def test_shard_swapped_for_a_symlink_out_before_the_open_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the containment check and the open, the shard becomes a symlink out of the folder: not followed."""
    from mtp_audit.sources import local

    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "model.safetensors").write_bytes(_strict_shard())
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(tiny({"secret.weight": ("BF16", [1])}))
    real = local.LocalSource._path

    def checked_then_swapped(self, rel):  # type: ignore[no-untyped-def]
        path = real(self, rel)
        os.unlink(path)
        os.symlink(outside, path)
        return path

    monkeypatch.setattr(local.LocalSource, "_path", checked_then_swapped)
    with pytest.raises(local.ReadProblem, match="symlink"):
        local.LocalSource(ck).read_header("model.safetensors")


# --- stale engine-tree cache ---------------------------------------------------------------------------


def test_same_size_edit_with_the_mtime_kept_changes_the_tree_key(tmp_path: Path) -> None:
    from mtp_audit.engines.sglang.target import open_target

    root = _sglang_tree(tmp_path / "t")
    f = root / "sglang" / "srt" / "server_args.py"
    before = open_target(root).fingerprint()
    st = f.stat()
    f.write_bytes(SERVER_ARGS.replace(b"'EAGLE'", b"'NGRAM'"))  # same length
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert open_target(root).fingerprint() != before


# --- PEP 263 source encodings --------------------------------------------------------------------------


@pytest.mark.parametrize("cookie", [b"# coding: utf-7\n", b"#!/usr/bin/env python\n# -*- coding: utf-16 -*-\n",
                                    b"# vim: set fileencoding=cp037 :\n"])
def test_a_non_utf8_cookie_is_could_not_tell(tmp_path: Path, cookie: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file CPython would decode in another encoding is not examined, and the audit cannot pass."""
    from mtp_audit.engines.sglang import audit_sglang

    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", "")
    # utf-7: '+AAoAIA...' hides a line from a UTF-8 reader that CPython runs
    hidden = b"# coding: utf-7\n" + SERVER_ARGS.replace(b"'EAGLE'", b"'EAGLE' #+AAo-            self.speculative_algorithm = 'NGRAM'")
    root = _sglang_tree(tmp_path / "t", hidden if cookie == b"# coding: utf-7\n" else cookie + SERVER_ARGS)
    report = audit_sglang(root)
    gaps = [g for g in report.gaps if g.path and g.path.endswith("server_args.py")]
    assert gaps and all(g.blocking for g in gaps) and "PEP 263" in gaps[0].message
    assert report.inconclusive


def test_ascii_file_with_a_latin1_cookie_is_read(tmp_path: Path) -> None:
    from mtp_audit.sources.tree import source_encoding_problem

    assert source_encoding_problem(b"# -*- coding: latin-1 -*-\nx = 1\n") is None
    assert source_encoding_problem(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n") is not None
    assert source_encoding_problem(b"# coding: utf-8\nx = 1\n") is None
    assert "not one CPython accepts" in (source_encoding_problem(b"# coding: bogus\n") or "")


# --- signals during a write ----------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_a_write_leaves_no_temporary_file(tmp_path: Path, sig: int) -> None:
    """The CLI is stopped while its report sits in the temporary file beside ``-o``: nothing is left."""
    script = (
        "import os, signal, sys\n"
        "import mtp_audit.cli.outputs as outputs\n"
        "real = os.chmod\n"
        "def slow(path, mode, *a, **k):\n"
        "    real(path, mode, *a, **k)\n"
        f"    os.kill(os.getpid(), {int(sig)})\n"
        "outputs.os.chmod = slow\n"
        "from mtp_audit.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    proc = subprocess.run([sys.executable, "-c", script, "checkpoint", str(REPO / "fixtures/checkpoint/jj8127--mimo_kor"),
                           "-f", "json", "-o", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 128 + int(sig), proc.stderr
    assert sorted(os.listdir(out.parent)) == []
    assert proc.stderr.strip().endswith(f"terminated by {signal.Signals(sig).name}")
    assert "Traceback" not in proc.stderr


# --- the scan cache: wrong shapes, FIFOs, devices, symlinks ----------------------------------------------


def _cache_entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.json") if p.is_file())


def _first_audit_and_its_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict, list[Path]]:
    """A small SGLang tree audited once with a fresh cache: (its root, the report as a dict, the cache entries)."""
    from mtp_audit.engines.sglang import audit_sglang

    cache = tmp_path / "cache"
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(cache))
    root = _sglang_tree(tmp_path / "t")
    first = audit_sglang(root).to_dict()
    entries = _cache_entries(cache)
    assert entries
    return root, first, entries


@pytest.mark.parametrize("entry", ["{}", "[]", '{"facts": 1, "gaps": 2}', '{"facts": {}, "gaps": [{"x": 1}]}',
                                   '{"facts": {"scan": []}, "gaps": []}', "null", "fifo", "dev-zero", "symlink-out"])
def test_scan_cache_entry_of_any_shape_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    """Every scan-cache entry replaced by a hostile one: the next run gives the same report as the first."""
    from mtp_audit.engines.sglang import audit_sglang

    root, first, entries = _first_audit_and_its_entries(tmp_path, monkeypatch)
    (tmp_path / "secret.json").write_text(json.dumps({"facts": {"x": 1}, "gaps": []}))
    for p in entries:
        p.unlink()
        if entry == "fifo":
            os.mkfifo(p)
        elif entry == "dev-zero":
            os.symlink("/dev/zero", p)
        elif entry == "symlink-out":
            os.symlink(tmp_path / "secret.json", p)
        else:
            p.write_text(entry)
    done: list[dict] = []
    t = threading.Thread(target=lambda: done.append(audit_sglang(root).to_dict()), daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "a cache entry blocked the audit"
    again = done[0]
    for d in (first, again):
        d["facts"]["sglang"]["scan"].pop("tree_cache", None)
        for k in ("cache_hits", "cache_misses", "seconds", "workers", "files_scanned", "cached"):
            d["facts"]["sglang"]["scan"].pop(k, None)
    assert again["findings"] == first["findings"] and again["gaps"] == first["gaps"]


@pytest.mark.parametrize("value", [{}, {"env": [], "entry": {}}, {"facts": {"scan": {}}, "gaps": []},
                                   {"facts": {"scan": {}, "cli_arguments": 3}, "gaps": [], "display": "x", "version": None}])
def test_scan_cache_entry_of_a_wrong_shape_with_a_right_hash_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     value: dict) -> None:
    """Every entry rewritten by hand as the envelope ``store`` writes (its SHA-256 right) around a value of a shape the
    analyzer does not read: the audit scans again (same findings and gaps), never a KeyError (exit 4)."""
    import hashlib

    from mtp_audit.engines.sglang import audit_sglang

    root, first, entries = _first_audit_and_its_entries(tmp_path, monkeypatch)
    for p in entries:
        body = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
        head = json.dumps({"entry": 3, "key": p.stem, "sha256": hashlib.sha256(body).hexdigest()}).encode()
        p.write_bytes(head + b"\n" + body)
    again = audit_sglang(root).to_dict()
    assert again["findings"] == first["findings"] and again["gaps"] == first["gaps"]


# --- python -m mtp_audit inside a hostile checkout -----------------------------------------------------


def test_python_m_never_imports_the_current_directory(tmp_path: Path) -> None:
    """``python -m mtp_audit`` run inside a checkout holding json.py / zipfile.py / tokenize.py imports none."""
    mark = tmp_path / "RAN"
    for name in ("json", "zipfile", "tokenize", "typing_extensions", "click"):
        (tmp_path / f"{name}.py").write_text(f"open({str(mark)!r}, 'w').write('x')\nraise SystemExit('hijacked')\n")
    _sglang_tree(tmp_path / "co")
    for argv in (["rules"], ["sglang", "co", "-f", "json"], ["checkpoint", str(REPO / "fixtures/checkpoint/jj8127--mimo_kor")]):
        proc = subprocess.run([sys.executable, "-m", "mtp_audit", *argv], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path, env={**os.environ, "MTP_AUDIT_CACHE_DIR": ""})
        assert not mark.exists(), (argv, proc.stderr)
        assert proc.returncode in (0, 1, 3) and "hijacked" not in proc.stderr, (argv, proc.stderr)


# --- quadratic regexes in the env-dump parsers -----------------------------------------------------------


@pytest.mark.parametrize("text", [
    "sglang: 0.5.9\nGPU 0: x" + " " * 200_000 + "\n",
    "NVIDIA-SMI 550.54\n|   0  " + " " * 200_000 + "x\n",
    "NVIDIA-SMI 550.54 Driver Version: 550.54 CUDA Version: 12.4\n|   0  NVIDIA H200" + " \t" * 100_000 + " On |\n",
], ids=["check-env-gpu-line", "smi-row", "smi-row-tabs"])
def test_long_blank_runs_parse_in_linear_time(text: str) -> None:
    """Before: minutes to hours (a lazy field followed by \\s+ rescans the run). Bound: 5 s with margin."""
    from mtp_audit.errors import InputError
    from mtp_audit.preflight.envdump import parse_dump

    box: list[object] = []

    def run() -> None:
        try:
            box.append(parse_dump(text))
        except InputError as exc:
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "the env-dump parser is still running after 5 s"


# --- a small wheel must not cost minutes, gigabytes or a huge report ---------------------------------------


def test_small_hostile_wheel_is_cheap(tmp_path: Path) -> None:
    """A ~1 MB wheel: thousands of symlink members with long names and a highly compressible member. The
    audit stays fast and its report small (notes are capped; a member inflating >100x is not examined)."""
    import time
    import zipfile

    whl = tmp_path / "sglang-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("sglang/__init__.py", "")
        zf.writestr("sglang/srt/server_args.py", SERVER_ARGS)
        zf.writestr("sglang/srt/bomb.py", b"#" * (60 * 1024 * 1024))
        for i in range(5000):
            info = zipfile.ZipInfo(f"sglang/srt/{'d' * 200}/{i}.py")
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "../../../etc/passwd")
    assert whl.stat().st_size < 4 * 1024 * 1024
    t0 = time.monotonic()
    code, out, err = cli(["sglang", str(whl), "-f", "json"])
    seconds = time.monotonic() - t0
    assert code in (0, 1, 3), err
    assert len(out) < 1_000_000, len(out)
    assert seconds < 30
    doc = json.loads(out)
    assert any("more file(s) not examined" in g["message"] for g in doc["gaps"])
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:  # the bomb alone: its own note
        zf.writestr("sglang/__init__.py", "")
        zf.writestr("sglang/srt/server_args.py", SERVER_ARGS)
        zf.writestr("sglang/srt/bomb.py", b"#" * (3 * 1024 * 1024))  # under the 4 MiB per-file limit, ~1000x
    code, out, err = cli(["sglang", str(whl), "-f", "json"])
    assert any("zip bomb" in g["message"] for g in json.loads(out)["gaps"]), out[:2000]


# --- totals across files -----------------------------------------------------------------------------------


def test_parsed_json_memory_is_a_run_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is under its own limit, but together (or as ``[{},{},...]``, ~25x in memory) they pass the
    run's parsed-JSON bound: the rest are 'could not tell' problems, one line each, never MemoryError."""
    from mtp_audit.sources.bounded import run_budget
    from mtp_audit.sources.local import LocalSource, ReadProblem

    monkeypatch.setenv("MTP_AUDIT_MAX_JSON_BYTES", str(100 * 1024 * 1024))
    (tmp_path / "config.json").write_bytes(b"[" + b"{}," * 2_000_000 + b"{}]")
    src = LocalSource(tmp_path)
    with run_budget():
        with pytest.raises(ReadProblem, match="MTP_AUDIT_MAX_JSON_BYTES"):
            src.read_json("config.json")
    names = []
    for i in range(6):  # six shards of ~3 MB headers: 18 MB of text, ~80 MB estimated each (~60 MB real peak)
        name = f"model-{i}.safetensors"
        tensors = [(f"t{j}", "BF16", (1,)) for j in range(60_000)]
        (tmp_path / name).write_bytes(shard_bytes(tensors, {}))
        names.append(name)
    monkeypatch.setenv("MTP_AUDIT_MAX_JSON_BYTES", str(200 * 1024 * 1024))
    with run_budget():
        out = src.read_headers(names)
    bad = [v for v in out.values() if isinstance(v, ReadProblem)]
    assert bad and all("MTP_AUDIT_MAX_JSON_BYTES" in b.problem for b in bad)
    assert not isinstance(out[names[0]], ReadProblem)


def test_launch_output_never_replaces_a_file_of_the_installed_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``launch -o <installed vllm>/envs.py -- vllm serve ...`` (no --vllm): the installed vllm's files it read
    are protected like the ones ``mtp-audit vllm`` reads."""
    site = tmp_path / "site"
    pkg = site / "vllm"
    (pkg / "config").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    envs = pkg / "envs.py"
    envs.write_text("environment_variables = {\n    'VLLM_USE_V2_MODEL_RUNNER': lambda: None,\n}\n")
    (pkg / "config" / "speculative.py").write_text("class SpeculativeConfig:\n    method: str = None\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", "")
    before = envs.read_bytes()
    code, out, err = cli(["launch", "-o", str(envs), "--", "vllm", "serve", str(REPO / "fixtures/checkpoint/jj8127--mimo_kor")])
    assert code == 2, err
    assert "envs.py" in err and err.count("\n") == 1
    assert envs.read_bytes() == before


def test_same_size_wheel_rewrite_with_the_mtime_kept_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel audited once (warm cache) is rewritten in place with the same size and its mtime put back: the
    next audit sees the new content, not the cached verdict."""
    import zipfile

    from mtp_audit.engines.sglang import audit_sglang

    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    whl = tmp_path / "sglang-0.0.0-py3-none-any.whl"

    def write(server_args: bytes) -> None:
        with zipfile.ZipFile(whl, "w", zipfile.ZIP_STORED) as zf:
            info = zipfile.ZipInfo("sglang/srt/server_args.py", date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info, server_args)
            zf.writestr(zipfile.ZipInfo("sglang/__init__.py", date_time=(2020, 1, 1, 0, 0, 0)), "")

    write(SERVER_ARGS)
    first = audit_sglang(whl).to_dict()
    st = whl.stat()
    write(SERVER_ARGS.replace(b"'EAGLE'", b"'NGRAM'"))
    os.utime(whl, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert whl.stat().st_size == st.st_size and whl.stat().st_mtime_ns == st.st_mtime_ns
    second = audit_sglang(whl).to_dict()
    assert second["facts"]["sglang"]["scan"]["tree_cache"] == "miss"
    assert json.dumps(second["facts"]["sglang"], sort_keys=True) != json.dumps(first["facts"]["sglang"], sort_keys=True)


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "abc", "0", "-1"])
def test_a_budget_variable_that_is_not_a_positive_number_is_exit_2(monkeypatch, capsys, value):
    """MTP_AUDIT_MAX_READ_BYTES=inf gave a traceback (OverflowError) on every command; garbage was silently ignored."""
    from mtp_audit.cli.main import main

    monkeypatch.setenv("MTP_AUDIT_MAX_READ_BYTES", value)
    assert main(["rules"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MTP_AUDIT_MAX_READ_BYTES: expected a positive number" in err


@pytest.mark.parametrize(("module", "args"), [("mtp_audit.cli.main", ["rules"]),  # click's path
                                             ("mtp_audit.cli.fastpath", ["checkpoint", "x"])])  # the click-free one
def test_ctrl_c_while_the_cli_loads_is_one_line_and_exit_130(module: str, args: list[str], monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the long fuzz run: SIGINT 0.19 s after start landed in the import of the CLI and printed a
    traceback; it now ends like Ctrl-C during a run."""
    import importlib.abc
    import sys

    from mtp_audit.cli import fast

    class Interrupt(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: object, target: object = None) -> None:
            if name == module:
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupt(), *sys.meta_path])
    assert fast.main(args) == 130
    assert capsys.readouterr().err == "mtp-audit: interrupted\n"


def test_a_signal_python_swallows_still_ends_the_run(tmp_path: Path) -> None:
    """Found by the long fuzz run: SIGHUP landing in a weakref callback during an import was printed as
    'Exception ignored ... Traceback' and the run went on to write its report and exit 0. The signal is
    recorded, the message silenced, and the run ends with 128 + the signal and nothing written."""
    script = (
        "import signal, sys\n"
        "import mtp_audit.checkpoint.analyze as an\n"
        "real = an.analyze\n"
        "class Swallowed:\n"
        "    def __del__(self):\n"
        "        signal.getsignal(signal.SIGHUP)(signal.SIGHUP, None)\n"
        "def analyze(*a, **k):\n"
        "    Swallowed()\n"
        "    return real(*a, **k)\n"
        "an.analyze = analyze\n"
        "from mtp_audit.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    proc = subprocess.run([sys.executable, "-c", script, "checkpoint", str(REPO / "fixtures/checkpoint/jj8127--mimo_kor"),
                           "-f", "json", "-o", str(out)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 128 + int(signal.SIGHUP), proc.stderr
    assert os.listdir(out.parent) == []
    assert proc.stderr == "mtp-audit: terminated by SIGHUP\n"
