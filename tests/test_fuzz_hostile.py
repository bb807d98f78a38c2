"""Fuzz kinds for hostile input beyond files: a hostile loopback hub, package index and metrics endpoint, cache
entries of every shape, concurrent runs on one cache, signals during writes, hostile source encodings, TensorRT-LLM
YAMLs (alias bombs, every YAML type) under strict JSON, Markdown values rendered as GitHub renders them (library
misuse: tests/test_hostile_api.py).

Each kind states its invariant. Default: a few examples per kind; the long run before a release:
``MTP_AUDIT_FUZZ_EXAMPLES=2000 python -m pytest -q tests/test_fuzz_hostile.py`` (docs/fuzzing.md).
Everything is loopback or local; every server loop is bounded.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tokenize
from pathlib import Path
from typing import Any

import pytest
from fuzzkit import JSON_VALUES, MARKDOWN_PIECES, Workspace, fuzz_settings, run_cli, trtllm_yaml
from hostilekit import BROKEN_HTTP, HostileServer, raw, send, trickle
from hubfixture import TOKEN, isolate_hf
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
MIMO_DIR = REPO / "fixtures" / "checkpoint" / "jj8127--mimo_kor"
SHA = "c" * 40
SERVER_ARGS = (b"class ServerArgs:\n    speculative_algorithm: str = None\n"
               b"    def __post_init__(self):\n        if self.speculative_algorithm == 'NEXTN':\n"
               b"            self.speculative_algorithm = 'EAGLE'\n")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-hostile")


# --- a hostile loopback hub ---------------------------------------------------------------------------------

INFO_BODIES = ["valid", "valid", "no-siblings", "html", "empty", "truncated", "list", "gzip", "binary", "no-sha", "huge"]
INFO_STATUS = [200, 200, 200, 200, 404, 401, 403, 429, 500, 302]
LINKS = ["none", "same", "foreign", "malformed", "self", "javascript"]
FILE_KINDS = ["ok", "ok", "ok", "html", "truncated", "429", "500", "trickle", "redirect-foreign", "ignore-range", "gzip"]


def _files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in MIMO_DIR.iterdir() if p.is_file() and p.suffix == ".json"}


@st.composite
def hub_plan(draw: Any) -> dict[str, Any]:
    files = _files()
    return {
        "info_status": draw(st.sampled_from(INFO_STATUS)),
        "info_body": draw(st.sampled_from(INFO_BODIES)),
        "link": draw(st.sampled_from(LINKS)),
        "tree_body": draw(st.sampled_from(["valid", "valid", "html", "dict", "huge-names"])),
        "file": {name: draw(st.sampled_from(FILE_KINDS)) for name in sorted(files)},
        "retry_after": draw(st.sampled_from(["", "0", "1", "99999", "-5", "abc"])),
    }


def _info_doc(plan: dict[str, Any], files: dict[str, bytes]) -> bytes:
    kind = plan["info_body"]
    doc: dict[str, Any] = {"id": "org/model", "sha": SHA, "gated": False, "siblings": [{"rfilename": f} for f in sorted(files)]}
    if kind == "no-siblings":
        doc.pop("siblings")
    if kind == "no-sha":
        doc.pop("sha")
    raw = json.dumps(doc).encode()
    return {"html": b"<html><body>proxy login</body></html>", "empty": b"", "truncated": raw[: len(raw) // 2],
            "list": b"[1, 2]", "binary": bytes(range(256)), "huge": b"[" + b"0," * 40_000 + b"0]"}.get(kind, raw)


def _hub_respond(plan: dict[str, Any], files: dict[str, bytes], evil: HostileServer, srv: list[HostileServer]):  # type: ignore[no-untyped-def]
    def respond(h):  # type: ignore[no-untyped-def]
        me = srv[0]
        path = h.path.split("?")[0]
        extra = {"Retry-After": plan["retry_after"]} if plan["retry_after"] else {}
        if path.startswith("/api/models/") and "/tree/" in path:
            _tree(h, plan, files, evil, me)
        elif path.startswith("/api/models/"):
            status = plan["info_status"]
            if status == 302:
                send(h, 302, b"", {"Location": h.path})
            elif status != 200:
                send(h, status, b"", {"X-Error-Code": "RepoNotFound" if status == 404 else "", **extra})
            else:
                body = _info_doc(plan, files)
                headers = {"Content-Type": "application/json"}
                if plan["info_body"] == "gzip":
                    body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
                send(h, 200, body, headers)
        elif "/resolve/" in path:
            _file(h, plan, files, evil, me, path.rsplit("/", 1)[-1], extra)
        else:
            send(h, 404)
    return respond


def _tree(h, plan, files, evil, me) -> None:  # type: ignore[no-untyped-def]
    page = [{"type": "file", "path": f} for f in sorted(files)]
    if plan["tree_body"] == "huge-names":
        page += [{"type": "file", "path": "x" * 5000 + str(i)} for i in range(50)]
    body = {"html": b"<html/>", "dict": b'{"a": 1}'}.get(plan["tree_body"], json.dumps(page).encode())
    headers = {"Content-Type": "application/json"}
    link = plan["link"]
    if "cursor=" not in h.path and link != "none":
        target = {"same": f"{me.endpoint}{h.path.split('?')[0]}?cursor=1", "foreign": f"{evil.endpoint}/steal?cursor=1",
                  "malformed": "http://[::1", "self": f"{me.endpoint}{h.path}", "javascript": "javascript:alert(1)"}[link]
        headers["Link"] = f'<{target}>; rel="next"'
    elif link == "self":
        headers["Link"] = f'<{me.endpoint}{h.path}>; rel="next"'
    send(h, 200, body, headers)


def _file(h, plan, files, evil, me, name, extra) -> None:  # type: ignore[no-untyped-def]
    kind = plan["file"].get(name, "ok")
    blob = files.get(name)
    if blob is None:
        send(h, 404, b"", {"X-Error-Code": "EntryNotFound"})
    elif kind == "html":
        send(h, 200, b"<html>captive portal</html>", {"Content-Type": "text/html"})
    elif kind == "truncated":
        send(h, 200, blob[: len(blob) // 2])
    elif kind in ("429", "500"):
        send(h, int(kind), b"", extra)
    elif kind == "trickle":
        trickle(h, me.stopping, chunk=b" ", pause=0.05, limit_s=8)
    elif kind == "redirect-foreign":
        send(h, 302, b"", {"Location": f"{evil.endpoint}/cdn/{name}"})
    elif kind == "gzip":
        send(h, 200, gzip.compress(blob), {"Content-Encoding": "gzip"})
    else:
        send(h, 200, blob, {"ETag": '"x"'})


@fuzz_settings(25)
@given(plan=hub_plan(), fmt=st.sampled_from(["json", "text", "sarif"]))
def test_fuzz_hostile_hub(base: Path, plan: dict[str, Any], fmt: str) -> None:
    """Invariant: any hub answer ends in exit 0/1/2/3 within the harness bounds (run_cli), exit 2 is one line,
    and no request to another origin than the endpoint carries the token."""
    from huggingface_hub import constants

    files = _files()
    ws = Workspace(base / "hub")
    evil = HostileServer(lambda h: send(h, 200, b"[]", {"Content-Type": "application/json"}))
    holder: list[HostileServer] = []
    srv = HostileServer(_hub_respond(plan, files, evil, holder))
    holder.append(srv)
    with evil, srv, pytest.MonkeyPatch.context() as mp:
        isolate_hf(mp, ws.root, srv.endpoint)
        mp.setenv("HF_TOKEN", TOKEN)
        cache = base / "hub-cache"  # outside the workspace: the harness checks that nothing in it changes
        hf_cache = base / "hf-cache"  # the Hugging Face cache, which a hub audit fills, outside it too
        for folder in (cache, hf_cache):
            if folder.exists():
                shutil.rmtree(folder)
        mp.setenv("MTP_AUDIT_CACHE_DIR", str(cache))
        mp.setattr(constants, "HF_HUB_CACHE", str(hf_cache))
        mp.setenv("MTP_AUDIT_NETWORK_SECONDS", "6")
        mp.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 0.5)
        mp.setattr("mtp_audit.sources.hubhttp.MAX_INFO_BYTES", 64 * 1024)
        mp.setattr("mtp_audit.sources.hubhttp.MAX_RETRY_AFTER", 0.2)
        run_cli(["checkpoint", "org/model", "-f", fmt], ws, json_stdout=fmt == "json")
    assert all("authorization" not in headers for _, headers in evil.seen), evil.seen


# --- cache entries of every shape -------------------------------------------------------------------------

MUTATIONS = ["truncate", "flip", "json", "empty", "fifo", "dev-zero", "symlink-out", "directory", "keep"]


def _strip(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    for facts in doc.get("facts", {}).values():
        if isinstance(facts, dict):
            facts.pop("scan", None)
    return {k: doc.get(k) for k in ("findings", "gaps", "status", "facts")}


@fuzz_settings(25)
@given(data=st.data())
def test_fuzz_cache_entries(base: Path, data: st.DataObject) -> None:
    """Invariant: whatever the scan cache holds (truncated, bit-flipped, any JSON, FIFO, /dev/zero, a symlink
    out, a folder), and after a same-size edit of a source with its mtime put back, a run reports what a run
    without any cache reports."""
    ws = Workspace(base / "cache")
    tree = ws.inputs / "t"
    (tree / "sglang" / "srt").mkdir(parents=True)
    (tree / "sglang" / "__init__.py").write_text("")
    (tree / "sglang" / "srt" / "server_args.py").write_bytes(SERVER_ARGS)
    cache = base / "scan-cache"  # outside the workspace: the harness checks that nothing in it changes
    if cache.exists():
        shutil.rmtree(cache, ignore_errors=True)
        for p in sorted(cache.rglob("*"), reverse=True) if cache.exists() else []:
            p.unlink() if not p.is_dir() or p.is_symlink() else p.rmdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MTP_AUDIT_CACHE_DIR", str(cache))
        run_cli(["sglang", "in/t", "-f", "json"], ws, json_stdout=True)
        if data.draw(st.booleans(), label="same-size edit"):
            f = tree / "sglang" / "srt" / "server_args.py"
            st_ = f.stat()
            f.write_bytes(SERVER_ARGS.replace(b"'EAGLE'", b"'NGRAM'"))
            os.utime(f, ns=(st_.st_atime_ns, st_.st_mtime_ns))
        (base / "secret.json").write_text(json.dumps({"entry": 3, "value": {"facts": {}, "gaps": []}}))
        for p in sorted(q for q in cache.rglob("*.json") if q.is_file()):
            _mutate(p, data.draw(st.sampled_from(MUTATIONS), label=p.name[:8]), data, ws)
        cached = run_cli(["sglang", "in/t", "-f", "json"], ws, json_stdout=True)
        mp.setenv("MTP_AUDIT_CACHE_DIR", "")
        fresh = run_cli(["sglang", "in/t", "-f", "json"], ws, json_stdout=True)
    assert cached.code == fresh.code
    assert _strip(json.loads(cached.out)) == _strip(json.loads(fresh.out))


def _mutate(p: Path, how: str, data: st.DataObject, ws: Workspace) -> None:
    raw = p.read_bytes()
    if how == "keep":
        return
    p.unlink()
    if how == "truncate":
        p.write_bytes(raw[: data.draw(st.integers(0, max(0, len(raw) - 1)))])
    elif how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        p.write_bytes(raw[:i] + bytes([raw[i] ^ (1 << data.draw(st.integers(0, 7)))]) + raw[i + 1:])
    elif how == "json":
        p.write_text(json.dumps(data.draw(JSON_VALUES)))
    elif how == "empty":
        p.write_bytes(b"")
    elif how == "fifo":
        os.mkfifo(p)
    elif how == "dev-zero":
        os.symlink("/dev/zero", p)
    elif how == "symlink-out":
        os.symlink(p.parents[3] / "secret.json", p)
    elif how == "directory":
        p.mkdir()


# --- concurrent runs on one cache -------------------------------------------------------------------------


@fuzz_settings(4)
@given(n=st.integers(2, 4), edit=st.booleans())
def test_fuzz_concurrent_runs_share_a_cache(base: Path, n: int, edit: bool) -> None:
    """Invariant: n processes auditing the same tree (and the same checkpoint) at once with one cache folder
    print the same report as one run without a cache; the cache holds no temporary file afterwards."""
    root = base / "concurrent"
    if root.exists():
        shutil.rmtree(root)
    tree = root / "t"
    (tree / "sglang" / "srt").mkdir(parents=True)
    (tree / "sglang" / "__init__.py").write_text("")
    (tree / "sglang" / "srt" / "server_args.py").write_bytes(SERVER_ARGS.replace(b"'EAGLE'", b"'NGRAM'") if edit else SERVER_ARGS)
    env = {**os.environ, "MTP_AUDIT_CACHE_DIR": str(root / "cache")}
    for argv in (["sglang", str(tree)], ["checkpoint", str(MIMO_DIR)]):
        cmd = [sys.executable, "-m", "mtp_audit", *argv, "-f", "json"]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root) for _ in range(n)]
        outs = [p.communicate(timeout=120) for p in procs]
        solo = subprocess.run(cmd, capture_output=True, env={**env, "MTP_AUDIT_CACHE_DIR": ""}, cwd=root, timeout=120)
        want = _strip(json.loads(solo.stdout))
        for (out, err), p in zip(outs, procs):
            assert p.returncode == solo.returncode, err
            assert _strip(json.loads(out)) == want
    leftovers = [q for q in (root / "cache").rglob(".tmp-*")] if (root / "cache").exists() else []
    assert leftovers == []


# --- signals during writes --------------------------------------------------------------------------------


@fuzz_settings(8)
@given(sig=st.sampled_from([signal.SIGTERM, signal.SIGHUP, signal.SIGINT]), delay=st.floats(0.0, 1.2),
       fmt=st.sampled_from(["json", "sarif"]))
def test_fuzz_signals_during_writes(base: Path, sig: int, delay: float, fmt: str) -> None:
    """Invariant: stopped at any moment, the CLI leaves either no report or a complete one (it parses), never
    a temporary file beside ``-o``; its exit code is a result (0-3) or 128 + the signal; no traceback once
    mtp-audit's own code runs."""
    out_dir = base / "signals"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    out = out_dir / "report.out"
    p = subprocess.Popen([sys.executable, "-m", "mtp_audit", "checkpoint", str(MIMO_DIR), "-f", fmt, "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=out_dir,
                         env={**os.environ, "MTP_AUDIT_CACHE_DIR": ""})
    time.sleep(delay)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode in (0, 1, 2, 3, 128 + int(sig), -int(sig)), err
    names = os.listdir(out_dir)
    assert names in ([], ["report.out"]), names
    if names:
        json.loads(out.read_text())
    # A signal that lands while the interpreter itself starts (importing ``site``, ``runpy``, the standard
    # streams: before any mtp-audit code) gets CPython's own start-up traceback: nothing a program can catch.
    startup = err.startswith((b"Fatal Python error: init_", b"Could not import runpy module")) and b"/mtp_audit/" not in err
    # Ctrl-C swallowed by CPython in an import lock's weakref callback before the package's first line (from there
    # on, mtp_audit.cli.signals records it silently and the run stops): CPython prints "Exception ignored".
    startup |= (err.startswith(b"Exception ignored in: <function ") and b"KeyboardInterrupt" in err and sig == signal.SIGINT
                and b"/mtp_audit/" not in err.split(b"status:")[0] and err.count(b"Traceback") == 1)
    assert b"Traceback" not in err or p.returncode == -int(sig) or startup, err


# --- hostile source encodings -----------------------------------------------------------------------------

ENCODINGS = ["utf-8", "utf8", "utf-8-sig", "latin-1", "iso-8859-15", "cp1252", "ascii", "utf-7", "utf-16", "utf-16-le",
             "cp037", "shift_jis", "euc-jp", "koi8-r", "mac-roman", "bogus", "rot13", "hex", "idna", "punycode"]
COOKIES = ["# coding: {}\n", "# -*- coding: {} -*-\n", "# vim: set fileencoding={} :\n", "#!/usr/bin/python\n# coding={}\n",
           "\n\n# coding: {}\n", "\ufeff# coding: {}\n"]


@fuzz_settings(300)
@given(enc=st.sampled_from(ENCODINGS), cookie=st.sampled_from(COOKIES),
       body=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40), hidden=st.booleans())
def test_fuzz_source_encodings(base: Path, enc: str, cookie: str, body: str, hidden: bool) -> None:
    """Invariant: a source file is examined only if CPython would decode it to exactly the text a UTF-8 reader
    sees; otherwise it is not examined with a note naming PEP 263 (or a bad cookie). Never an exception."""
    from mtp_audit.engines.sglang.target import open_target

    root = base / "enc"
    if root.exists():
        shutil.rmtree(root)
    (root / "sglang" / "srt").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    text = cookie.format(enc) + "x = 1\n" + ("# +AAo-speculative_algorithm = 'NGRAM'\n" if hidden else "") + f"y = {body!r}\n"
    data = text.encode("utf-8")
    (root / "sglang" / "srt" / "server_args.py").write_bytes(data)
    tree = open_target(root)
    try:
        got = tree.read("sglang/srt/server_args.py")
    finally:
        tree.close()
    try:
        cpython_enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        cpython_text: str | None = data.decode(codecs.lookup(cpython_enc).name)
    except (SyntaxError, UnicodeError, LookupError):
        cpython_text = None
    if got is not None:
        utf8 = data.decode("utf-8-sig") if data.startswith(codecs.BOM_UTF8) else data.decode("utf-8")
        assert cpython_text is not None and cpython_text.lstrip("\ufeff") == utf8.lstrip("\ufeff")
    else:
        assert any(("PEP 263" in n or "encoding cookie" in n) for _, n in tree.notes), tree.notes


# --- TensorRT-LLM YAMLs and strict JSON ---------------------------------------------------------------------

GLM5 = REPO / "fixtures" / "checkpoint" / "zai-org--GLM-5-FP8"
H200_DUMP = REPO / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
LONG_NUMBERS = ["8", "1" * 5000, "0x" + "f" * 5000, "+" + "9" * 101, "NaN", "-1"]


def strict_json(text: str) -> Any:
    """``json.loads`` refusing bare NaN / Infinity (what ``JSON.parse``, jq and Go's decoder refuse)."""
    def refuse(constant: str) -> Any:
        raise AssertionError(f"bare {constant} in a JSON document")
    return json.loads(text, parse_constant=refuse)


@fuzz_settings(60)
@given(body=trtllm_yaml(), fmt=st.sampled_from(["json", "sarif", "markdown", "text"]),
       option=st.sampled_from(["", "--max_num_tokens", "--tp_size"]), number=st.sampled_from(LONG_NUMBERS))
def test_fuzz_trtllm_yaml(base: Path, body: str, fmt: str, option: str, number: str) -> None:
    """Invariant: any ``--config`` YAML (alias bombs of any width and depth, recursive aliases, integers of thousands
    of digits in any base, every YAML type) and any number on the command line ends in exit 0-3 within the harness's
    time and memory bounds (exit 2: one line); JSON and SARIF are strict JSON."""
    ws = Workspace(base / "yaml")
    (ws.inputs / "x.yaml").write_text(body)
    argv = ["launch", "-f", fmt, "--env-dump", str(H200_DUMP), "--", "trtllm-serve", str(GLM5), "--config", "in/x.yaml"]
    res = run_cli(argv + ([option, number] if option else []), ws, json_stdout=fmt == "json")
    if fmt in ("json", "sarif") and res.out:
        strict_json(res.out)


# --- Markdown values as GitHub renders them -----------------------------------------------------------------


@fuzz_settings(200)
@given(parts=st.lists(MARKDOWN_PIECES, min_size=1, max_size=24))
def test_fuzz_markdown_values_render_as_text(parts: list[str]) -> None:
    """Invariant: any value made of Markdown and HTML syntax (tags, links, images, code fences, table pipes, entities,
    bare URLs) renders on GitHub as its exact text in every place of a Markdown report, and adds no element."""
    pytest.importorskip("cmarkgfm")
    from test_markdown_forgery import check_renders_as_text

    value = "".join(parts)
    if value.strip() != value or "  " in value:  # GitHub collapses white space at a cell's edges and inside text
        value = "x" + value.replace(" ", "") + "x"
    check_renders_as_text(value)
# --- a hostile loopback package index (engines by version) ---------------------------------------------------------

INDEX_JSON = ["ok", "ok", "ok", "html", "truncated", "list", "deep", "404", "500", "429", "redirect-loop", "redirect-file",
              "drip", *sorted(BROKEN_HTTP)]
FILENAMES = ["ok", "ok", "traversal", "absolute", "slash", "nul", "long", "dotdot-only", "not-a-string"]
WHEEL_URLS = ["ok", "ok", "ok", "file", "ftp", "data", "relative", "bad-ipv6", "zone-id", "javascript", "not-a-string"]
SIZES = ["ok", "ok", '"12kB"', "{}", "1e400", "[1]", "-5", "true", "null", "1000000000000000000000000000000", "7"]
DIGESTS = ["ok", "ok", "wrong", "missing", "not-hex"]
WHEEL_FILE = ["ok", "ok", "ok", "no-range", "drip", "wrong-range", "416", "500", "redirect-same", "redirect-file",
              "garbage", "cut", *sorted(BROKEN_HTTP)]
WHEEL_BODY = ["plain", "plain", "bomb", "not-a-zip"]


@st.composite
def index_plan(draw: Any) -> dict[str, Any]:
    """One index's behaviour: each part hostile one time in four (else as PyPI answers), so that whole fetches and
    cache hits are drawn too."""
    parts = {"json": INDEX_JSON, "filename": FILENAMES, "url": WHEEL_URLS, "size": SIZES, "digest": DIGESTS,
             "file": WHEEL_FILE, "body": WHEEL_BODY}
    return {k: draw(st.sampled_from(v)) if draw(st.integers(0, 3), label=f"hostile {k}") == 0 else v[0]
            for k, v in parts.items()}


def _index_doc(plan: dict[str, Any], name: str, data: bytes, me: HostileServer, ws: Workspace) -> bytes:
    import hashlib

    fname = {"ok": name, "traversal": "../../../../outside/x.whl", "absolute": str(ws.root / "abs.whl"),
             "slash": "sub/dir/sglang-0.5.99-py3-none-any.whl", "nul": "sglang-0.5.99\x00-py3-none-any.whl",
             "long": "sglang-0.5.99-" + "x" * 5000 + "-py3-none-any.whl", "dotdot-only": "..", "not-a-string": 7}[plan["filename"]]
    url = {"ok": f"{me.endpoint}/files/w.whl", "file": f"file://{ws.root / 'in' / 'w.whl'}", "ftp": "ftp://127.0.0.1/w.whl",
           "data": "data:,x", "relative": "../../files/w.whl", "bad-ipv6": "http://[::1/w.whl", "javascript": "javascript:1",
           "zone-id": "http://[fe80::1%25eth0]/w.whl",
           "not-a-string": ["x"]}[plan["url"]]
    digest = {"ok": hashlib.sha256(data).hexdigest(), "wrong": "0" * 64, "not-hex": "zz"}.get(plan["digest"])
    entry = {"filename": fname, "url": url, "size": "SIZE", "packagetype": "bdist_wheel", "yanked": False}
    if digest is not None:
        entry["digests"] = {"sha256": digest}
    size = str(len(data)) if plan["size"] == "ok" else plan["size"]
    return json.dumps({"info": {"name": "sglang", "version": "0.5.99"}, "urls": [entry]}).replace('"SIZE"', size).encode()


def _index_json(h, plan, name, data, me, ws) -> None:  # type: ignore[no-untyped-def]
    kind = plan["json"]
    doc = _index_doc(plan, name, data, me, ws)
    if kind in BROKEN_HTTP:
        raw(h, BROKEN_HTTP[kind])
    elif kind == "drip":
        trickle(h, me.stopping, chunk=b" ", pause=0.1, limit_s=8)
    elif kind in ("404", "500", "429"):
        send(h, int(kind), b"{}")
    elif kind.startswith("redirect"):
        send(h, 302, b"", {"Location": h.path if kind == "redirect-loop" else "file:///etc/passwd"})
    else:
        body = {"html": b"<html>login</html>", "truncated": doc[: len(doc) // 2], "list": b"[1, 2]",
                "deep": b"[" * 100_000 + b"]" * 100_000}.get(kind, doc)
        send(h, 200, body, {"Content-Type": "application/json"})


def _index_file(h, plan, data, me) -> None:  # type: ignore[no-untyped-def]
    import re as _re

    kind = plan["file"]
    m = _re.match(r"^bytes=(\d+)-(\d+)$", h.headers.get("Range") or "")
    if kind in BROKEN_HTTP:
        return raw(h, BROKEN_HTTP[kind])
    if kind == "drip":
        return trickle(h, me.stopping, chunk=b"P", pause=0.1, limit_s=8)
    if kind in ("416", "500"):
        return send(h, int(kind))
    if kind.startswith("redirect") and "/moved" not in h.path:
        return send(h, 302, b"", {"Location": "/files/moved/w.whl" if kind == "redirect-same" else "file:///etc/passwd"})
    body = bytes(range(256)) * 64 if kind == "garbage" else data
    if kind == "no-range" or m is None:
        return send(h, 200, body)
    start, end = int(m.group(1)), min(int(m.group(2)), len(body) - 1)
    if start >= len(body):
        return send(h, 416, b"", {"Content-Range": f"bytes */{len(body)}"})
    part = body[start:end + 1]
    span = f"bytes {start}-{end}/{len(body)}" if kind != "wrong-range" else f"bytes 0-{len(part) - 1}/{len(body) + 9}"
    send(h, 206, part[: len(part) // 2] if kind == "cut" else part, {"Content-Range": span})


@fuzz_settings(5)
@given(plan=index_plan())
def test_fuzz_hostile_index(base: Path, plan: dict[str, Any]) -> None:
    """Invariant: whatever the package index answers (its JSON, file names, URLs, sizes, digests, the wheel's bytes
    and framing), ``mtp-audit sglang VERSION`` ends in exit 0/1/2/3 within the harness bounds (run_cli), writes
    nothing outside the cache's ``engines-v3`` folder (and the analyzer's scan cache), and a second run either repeats the first from the cache
    with no request or fetches again."""
    from pypifixture import build_wheel

    ws = Workspace(base / "index")
    name, data = build_wheel(server_args=b"#" * (3 << 20)) if plan["body"] == "bomb" else build_wheel()
    if plan["body"] == "not-a-zip":
        data = b"PK\x05\x06" + bytes(200)
    (ws.inputs / "w.whl").write_bytes(data)
    holder: list[HostileServer] = []

    def respond(h):  # type: ignore[no-untyped-def]
        if h.path.startswith("/pypi/"):
            _index_json(h, plan, name, data, holder[0], ws)
        else:
            _index_file(h, plan, data, holder[0])

    cache = base / "index-cache"
    if cache.exists():
        shutil.rmtree(cache)
    with HostileServer(respond) as srv, pytest.MonkeyPatch.context() as mp:
        holder.append(srv)
        mp.setenv("MTP_AUDIT_INDEX_URL", srv.endpoint + "/pypi")
        mp.setenv("MTP_AUDIT_CACHE_DIR", str(cache))
        mp.setenv("MTP_AUDIT_NETWORK_SECONDS", "2")
        mp.setattr("mtp_audit.sources.pypi.TIMEOUT", 0.5)
        mp.setattr("mtp_audit.sources.pypi.MAX_JSON_BYTES", 1 << 20)
        first = run_cli(["sglang", "0.5.99", "-f", "json"], ws, json_stdout=True)
        assert first.seconds < 6, first.seconds  # the 2 s of network time, and the audit
        n = len(srv.seen)
        second = run_cli(["sglang", "0.5.99", "-f", "json"], ws, json_stdout=True)
        if first.code in (0, 1):
            assert len(srv.seen) == n and second.code == first.code  # from the cache, no request
            assert _strip(json.loads(second.out)) == _strip(json.loads(first.out))
    written = [p for p in cache.rglob("*") if not p.is_dir()] if cache.exists() else []
    assert all(p.relative_to(cache).parts[0] == "engines-v3" or "-scan-v" in p.relative_to(cache).parts[0] for p in written), written
    assert not (base / "outside").exists() and not (ws.root / "abs.whl").exists()


# --- a hostile loopback metrics endpoint (log --metrics) -----------------------------------------------------------

COUNTS = st.one_of(st.integers(0, 10**6), st.sampled_from(["NaN", "+Inf", "-Inf", "-3", "1e308", "1e999", "0x10", "7e-3"]))
METRICS_KINDS = ["vllm", "vllm", "llama", "llama", "sglang", "garbage", "empty", "binary", "huge", "404", "500",
                 "redirect-file", "drip", *sorted(BROKEN_HTTP)]


@st.composite
def metrics_answer(draw: Any) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(METRICS_KINDS))
    return kind, {k: draw(COUNTS) for k in ("drafts", "drafted", "accepted", "pos0", "length", "rate")}


def _exposition(kind: str, v: dict[str, Any]) -> bytes:
    if kind == "vllm":
        lbl = 'engine="0",model_name="m"'
        return "".join(f"# TYPE vllm:spec_decode_num_{n}_total counter\nvllm:spec_decode_num_{n}_total{{{lbl}}} {v[k]}\n"
                       for n, k in (("drafts", "drafts"), ("draft_tokens", "drafted"), ("accepted_tokens", "accepted"))).encode() + (
            f"# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
            f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lbl},position=\"0\"}} {v['pos0']}\n").encode()
    if kind == "llama":
        return "".join(f"# TYPE llamacpp:spec_decode_num_{n}_total counter\nllamacpp:spec_decode_num_{n}_total {v[k]}\n"
                       for n, k in (("drafts", "drafts"), ("draft_tokens", "drafted"), ("accepted_tokens", "accepted"))).encode()
    if kind == "sglang":
        return (f"# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{{model_name=\"m\"}} {v['length']}\n"
                f"# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate{{model_name=\"m\"}} {v['rate']}\n").encode()
    return {"garbage": b"vllm:spec_decode_num_drafts_total{engine=\"0\" 3\n", "empty": b"", "binary": bytes(range(256)),
            "huge": b"# x\n" * 100_000}[kind]


def _metrics_respond(answers: list[tuple[str, dict[str, Any]]], srv: list[HostileServer]):  # type: ignore[no-untyped-def]
    def respond(h):  # type: ignore[no-untyped-def]
        kind, values = answers[min(len(srv[0].seen), len(answers)) - 1]
        if kind in BROKEN_HTTP:
            raw(h, BROKEN_HTTP[kind])
        elif kind == "drip":
            trickle(h, srv[0].stopping, chunk=b"#", pause=0.1, limit_s=8, headers={"Content-Type": "text/plain"})
        elif kind in ("404", "500"):
            send(h, int(kind))
        elif kind == "redirect-file":
            send(h, 302, b"", {"Location": "file:///etc/passwd"})
        else:
            send(h, 200, _exposition(kind, values), {"Content-Type": "text/plain; version=0.0.4"})
    return respond


def _finite_counts(kind: str, v: dict[str, Any]) -> bool:
    """Whether the values the verdict depends on are finite, non-negative numbers (counters: drafts, drafted,
    accepted; SGLang: the accept length; the per-position counter and the accept rate decide nothing)."""
    import math

    keys = {"vllm": ("drafts", "drafted", "accepted"), "llama": ("drafts", "drafted", "accepted"),
            "sglang": ("length",)}.get(kind, ())
    return all(math.isfinite(float(v[k])) and float(v[k]) >= 0 for k in keys)


@fuzz_settings(5)
@given(before=metrics_answer(), after=metrics_answer(), fmt=st.sampled_from(["json", "text"]))
def test_fuzz_hostile_metrics(base: Path, before: tuple[str, dict[str, Any]], after: tuple[str, dict[str, Any]], fmt: str) -> None:
    """Invariant: whatever the endpoint answers (counters of any value, NaN, infinities, resets, garbage, broken HTTP,
    a drip, a redirect to a file), ``log --metrics`` ends in exit 0/1/2/3 within ``--timeout`` per read (run_cli's
    bounds), its JSON is strict (no NaN, no Infinity), and a value that is not a finite count is never a verdict."""
    ws = Workspace(base / "metrics")
    holder: list[HostileServer] = []
    with HostileServer(_metrics_respond([before, after], holder)) as srv, pytest.MonkeyPatch.context() as mp:
        holder.append(srv)
        mp.setenv("MTP_AUDIT_NETWORK_SECONDS", "3")
        mp.setattr("mtp_audit.runtime.metrics.MAX_BYTES", 64 * 1024)
        res = run_cli(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "--timeout", "0.5", "-f", fmt],
                      ws, json_stdout=fmt == "json")
    assert res.seconds < 4, res.seconds
    if fmt == "json" and res.out.strip():
        doc = json.loads(res.out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
        if after[0] in ("vllm", "llama", "sglang") and not _finite_counts(*after):
            assert doc["facts"]["log"]["verdict"] == "could-not-tell", doc["facts"]["log"]
