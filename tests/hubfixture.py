"""Test support for hub audits: fixture repos built from real metadata, and a loopback HTTP server
that answers the requests huggingface_hub 2.4 makes, the way huggingface.co answers them.

Used by tests/test_hub_*.py and benchmarks/bench_hub.py. Nothing here reaches the internet.

Endpoints served (shapes read from huggingface_hub 2.4 ``hf_api.py`` ``model_info`` /
``ModelInfo.__init__``, ``file_download.py`` ``hf_hub_url`` / ``get_hf_file_metadata`` and
``utils/_http.py`` ``hf_raise_for_status``):

- ``GET /api/models/{org}/{name}[/revision/{rev}]``: ``{"_id", "id", "sha", "siblings": [{"rfilename"}],
  "gated", "private"}``; unknown repo -> 404 ``X-Error-Code: RepoNotFound``; private repo without a
  token -> 401 ``RepoNotFound`` (the hub hides private repos); unknown revision -> 404
  ``RevisionNotFound``.
- ``GET|HEAD /{org}/{name}/resolve/{rev}/{file}``: the file, honouring ``Range: bytes=a-b`` (206 +
  ``Content-Range``; 416 + ``bytes */size`` past the end), with ``X-Repo-Commit``, ``ETag`` and, for
  ``.safetensors`` files (LFS on the hub), ``X-Linked-Size`` / ``X-Linked-Etag``; gated repo without a
  token -> 401 ``GatedRepo``, with an unauthorised token -> 403 ``GatedRepo``; unknown file -> 404
  ``EntryNotFound``.
- Redirect mode: ``resolve`` of a ``.safetensors`` file answers 302 to ``/cdn/...`` (as the hub
  redirects LFS files to its storage host), which serves the bytes.

Every request is logged (:class:`Served`), including the byte range actually sent, so tests can
assert request counts and that no byte past a header was served.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hub"

TOKEN = "hf_mtp_audit_test_token"

_BITS = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "U8": 8, "I32": 32}


# --------------------------------------------------------------------------------------------------
# safetensors files, written by hand: 8-byte little-endian header length, the JSON header padded
# with spaces to a multiple of 8 (as safetensors' own serializer does), then the tensor data.
# --------------------------------------------------------------------------------------------------


def safetensors_bytes(tensors: Iterable[tuple[str, str, tuple[int, ...]]], metadata: dict[str, str] | None = None) -> bytes:
    """A valid ``.safetensors`` file holding ``(name, dtype, shape)`` tensors (data: a byte pattern)."""
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, dtype, shape in sorted(tensors):
        size = math.ceil(math.prod(shape) * _BITS[dtype] / 8)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    data = bytes(i % 251 for i in range(offset))
    return struct.pack("<Q", len(raw)) + raw + data


def header_length(blob: bytes) -> int:
    """``8 + n``: the size of a safetensors file's length prefix plus JSON header."""
    return 8 + struct.unpack("<Q", blob[:8])[0]


# --------------------------------------------------------------------------------------------------
# DeepSeek-V3, 163 shards (fixtures/hub/deepseek-ai--DeepSeek-V3/SOURCE.txt)
# --------------------------------------------------------------------------------------------------

DEEPSEEK_SHARDS = 163
_W = (4, 4)  # every linear weight
_S = (1, 1)  # its 128x128-block weight_scale_inv


def _fp8_linear(prefix: str) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(f"{prefix}.weight", "F8_E4M3", _W), (f"{prefix}.weight_scale_inv", "F32", _S)]


def _deepseek_layer(i: int, moe: bool, experts: int) -> list[tuple[str, str, tuple[int, ...]]]:
    p = f"model.layers.{i}"
    out: list[tuple[str, str, tuple[int, ...]]] = []
    for proj in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"):
        out += _fp8_linear(f"{p}.self_attn.{proj}")
    out += [(f"{p}.self_attn.q_a_layernorm.weight", "BF16", (4,)), (f"{p}.self_attn.kv_a_layernorm.weight", "BF16", (4,))]
    out += [(f"{p}.input_layernorm.weight", "BF16", (4,)), (f"{p}.post_attention_layernorm.weight", "BF16", (4,))]
    if not moe:
        for proj in ("gate_proj", "up_proj", "down_proj"):
            out += _fp8_linear(f"{p}.mlp.{proj}")
        return out
    out += [(f"{p}.mlp.gate.weight", "BF16", (experts, 4)), (f"{p}.mlp.gate.e_score_correction_bias", "F32", (experts,))]
    for e in range(experts):
        for proj in ("gate_proj", "up_proj", "down_proj"):
            out += _fp8_linear(f"{p}.mlp.experts.{e}.{proj}")
    for proj in ("gate_proj", "up_proj", "down_proj"):
        out += _fp8_linear(f"{p}.mlp.shared_experts.{proj}")
    return out


def deepseek_v3_tensors(experts: int = 256) -> list[tuple[str, str, tuple[int, ...]]]:
    """The DeepSeek-V3 FP8 release's tensor list in checkpoint order (91,991 tensors for 256 experts)."""
    out: list[tuple[str, str, tuple[int, ...]]] = [("model.embed_tokens.weight", "BF16", (8, 4))]
    for i in range(61):
        out += _deepseek_layer(i, moe=i >= 3, experts=experts)
    mtp = "model.layers.61"
    out += [
        (f"{mtp}.embed_tokens.weight", "BF16", (8, 4)),
        (f"{mtp}.enorm.weight", "BF16", (4,)),
        (f"{mtp}.hnorm.weight", "BF16", (4,)),
        (f"{mtp}.eh_proj.weight", "BF16", (4, 8)),
        (f"{mtp}.shared_head.norm.weight", "BF16", (4,)),
        (f"{mtp}.shared_head.head.weight", "BF16", (8, 4)),
    ]
    out += _deepseek_layer(61, moe=True, experts=experts)
    out += [("model.norm.weight", "BF16", (4,)), ("lm_head.weight", "BF16", (8, 4))]
    return out


def _sharded(tensors: list[tuple[str, str, tuple[int, ...]]], shards: int) -> tuple[dict[str, bytes], dict]:
    names = [f"model-{k:05d}-of-{shards:06d}.safetensors" for k in range(1, shards + 1)]
    per = math.ceil(len(tensors) / shards)
    files: dict[str, bytes] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for k, name in enumerate(names):
        chunk = tensors[k * per : (k + 1) * per]
        files[name] = safetensors_bytes(chunk, {"format": "pt"})
        for t, dtype, shape in chunk:
            weight_map[t] = name
            total += math.ceil(math.prod(shape) * _BITS[dtype] / 8)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    return files, index


_BUILT: dict[str, dict[str, bytes]] = {}


def build_deepseek_163() -> dict[str, bytes]:
    """All files of the 163-shard DeepSeek-V3 fixture repo (config.json is the real one)."""
    if "deepseek" not in _BUILT:
        files, index = _sharded(deepseek_v3_tensors(), DEEPSEEK_SHARDS)
        files["config.json"] = (FIXTURES / "deepseek-ai--DeepSeek-V3" / "config.json").read_bytes()
        files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode("utf-8")
        files["README.md"] = b"# DeepSeek-V3 (mtp-audit test fixture)\n"
        files[".gitattributes"] = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
        _BUILT["deepseek"] = files
    return dict(_BUILT["deepseek"])


# --------------------------------------------------------------------------------------------------
# MiMo-7B from jj8127/mimo_kor (fixtures/hub/jj8127--mimo_kor/SOURCE.txt)
# --------------------------------------------------------------------------------------------------


def _mimo_shape(name: str) -> tuple[int, ...]:
    if name.endswith(("norm.weight", ".bias")):
        return (4,)
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return (8, 4)
    return (4, 4)


def build_mimo(variant: str = "base") -> dict[str, bytes]:
    """Files of the MiMo-7B fixture repo. ``variant``: ``"base"`` (the real index, 4 shards),
    ``"sidecar"`` (MTP tensors in an un-indexed ``mtp.safetensors``), ``"dropped"`` (MTP tensors gone,
    config still declares them)."""
    src = FIXTURES / "jj8127--mimo_kor"
    index_raw = (src / "model.safetensors.index.json").read_bytes()
    index = json.loads(index_raw)
    weight_map: dict[str, str] = index["weight_map"]
    mtp = sorted(t for t in weight_map if t.startswith("model.mtp_layers."))
    by_shard: dict[str, list[str]] = {}
    for t, shard in weight_map.items():
        if variant != "base" and t in mtp:
            continue
        by_shard.setdefault(shard, []).append(t)
    files = {
        shard: safetensors_bytes([(t, "BF16", _mimo_shape(t)) for t in names], {"format": "pt"})
        for shard, names in by_shard.items()
    }
    files["config.json"] = (src / "config.json").read_bytes()
    if variant == "base":
        files["model.safetensors.index.json"] = index_raw
    else:
        index = {**index, "weight_map": {t: s for t, s in weight_map.items() if t not in mtp}}
        files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode("utf-8")
    if variant == "sidecar":
        files["mtp.safetensors"] = safetensors_bytes([(t, "BF16", _mimo_shape(t)) for t in mtp], {"format": "pt"})
    files["README.md"] = b"# MiMo-7B (mtp-audit test fixture)\n"
    return files


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` under ``root`` (a local copy of a fixture repo) and return ``root``."""
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def commit_of(files: dict[str, bytes], salt: str = "") -> str:
    """A deterministic 40-hex "commit sha" for a file set."""
    h = hashlib.sha1(salt.encode())
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha1(files[rel]).digest())
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------
# The loopback hub
# --------------------------------------------------------------------------------------------------


@dataclass
class FakeRepo:
    """A model repo served by :class:`FakeHub`.

    Attributes:
        repo_id: ``org/name``.
        files: path -> bytes at :attr:`commit`.
        commit: 40-hex sha; ``refs`` maps branch/tag names to it (``main`` always).
        gated: ``False``, ``"auto"`` or ``"manual"``: files need :data:`TOKEN`.
        private: the repo is invisible without :data:`TOKEN`.
        info_siblings: include the file list in the model info (as huggingface.co does); False makes
            clients use the tree API, as with a mirror that leaves it out.
    """

    repo_id: str
    files: dict[str, bytes]
    commit: str = ""
    refs: dict[str, str] = field(default_factory=dict)
    gated: str | bool = False
    private: bool = False
    info_siblings: bool = True

    def __post_init__(self) -> None:
        if not self.commit:
            self.commit = commit_of(self.files, self.repo_id)
        self.refs.setdefault("main", self.commit)


@dataclass
class Fault:
    """A misbehaviour for one file (or ``"<info>"`` for the model-info call) of one repo.

    Attributes:
        status: answer this HTTP status instead (with ``error_code`` as ``X-Error-Code``).
        times: how many requests the fault applies to (None: all).
        sleep: seconds to wait before answering (longer than the client time-out = a slow server).
        redirect_loop: answer 302 to the same URL forever.
        ignore_range: answer 200 with the whole file, as a server without Range support would.
    """

    status: int | None = None
    error_code: str = ""
    times: int | None = None
    sleep: float = 0.0
    redirect_loop: bool = False
    ignore_range: bool = False


@dataclass(frozen=True)
class Served:
    """One request as the server saw it.

    Attributes:
        method: ``GET``/``HEAD``.
        kind: ``"info"``, ``"tree"``, ``"resolve"``, ``"cdn"`` or ``"other"``.
        repo: ``org/name`` or ``""``.
        file: file path for resolve/cdn requests.
        status: status code sent.
        sent: ``(first, last)`` byte offsets of the file actually sent in the body, or None.
        nbytes: body bytes sent.
    """

    method: str
    kind: str
    repo: str
    file: str
    status: int
    sent: tuple[int, int] | None
    nbytes: int


class FakeHub:
    """A loopback HTTP server speaking the hub's API (see the module docstring).

    Use as a context manager; :attr:`endpoint` is ``http://127.0.0.1:<port>``.

    Args:
        repos: repos to serve.
        latency: seconds added to every request (benchmarks inject 0.05).
        redirect_lfs: answer ``resolve`` of ``.safetensors`` files with a 302 to ``/cdn/...``.
    """

    def __init__(self, repos: Iterable[FakeRepo] = (), *, latency: float = 0.0, redirect_lfs: bool = False, tree_page: int = 1000) -> None:
        self.repos: dict[str, FakeRepo] = {r.repo_id: r for r in repos}
        self.tree_page = tree_page
        self.latency = latency
        self.redirect_lfs = redirect_lfs
        self.faults: dict[tuple[str, str], Fault] = {}
        self.log: list[Served] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------------

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            server_hub = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def endpoint(self) -> str:
        """Base URL to use as ``HF_ENDPOINT``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fault(self, repo: str, file: str, fault: Fault) -> None:
        """Inject ``fault`` for ``file`` of ``repo`` (``"<info>"`` for the model-info call)."""
        self.faults[(repo, file)] = fault

    def clear_log(self) -> None:
        """Forget the requests served so far."""
        with self._lock:
            self.log.clear()

    def requests(self, kind: str | None = None) -> int:
        """Requests served (of one kind)."""
        with self._lock:
            return sum(1 for s in self.log if kind is None or s.kind == kind)

    def bytes_sent(self) -> int:
        """Body bytes sent."""
        with self._lock:
            return sum(s.nbytes for s in self.log)

    def served_ranges(self, repo: str, file: str) -> list[tuple[int, int]]:
        """Byte ranges of ``file`` sent in bodies."""
        with self._lock:
            return [s.sent for s in self.log if s.repo == repo and s.file == file and s.sent is not None]

    # -- request handling ----------------------------------------------------------------------

    def _take_fault(self, repo: str, file: str) -> Fault | None:
        with self._lock:
            f = self.faults.get((repo, file))
            if f is None:
                return None
            if f.times is not None:
                if f.times <= 0:
                    return None
                f.times -= 1
            return f

    def _record(self, s: Served) -> None:
        with self._lock:
            self.log.append(s)

    def handle(self, h: _Handler, method: str) -> None:
        if self.latency:
            time.sleep(self.latency)
        path = urlsplit(h.path).path
        parts = path.split("/")
        authorized = h.headers.get("Authorization") == f"Bearer {TOKEN}"
        if len(parts) >= 7 and parts[1] == "api" and parts[2] == "models" and parts[5] == "tree":
            self._tree(h, method, f"{parts[3]}/{parts[4]}", unquote(parts[6]), urlsplit(h.path).query, authorized)
        elif len(parts) >= 5 and parts[1] == "api" and parts[2] == "models":
            repo = f"{parts[3]}/{parts[4]}"
            rev = unquote("/".join(parts[6:])) if len(parts) > 6 and parts[5] == "revision" else "main"
            self._info(h, method, repo, rev, authorized)
        elif len(parts) >= 6 and parts[1] == "cdn":
            repo = f"{parts[2]}/{parts[3]}"
            file = unquote("/".join(parts[5:]))
            r = self.repos.get(repo)
            if r is None or parts[4] != r.commit or file not in r.files:
                self._send(h, method, 404, {}, b"", "cdn", repo, file)
                return
            self._file(h, method, r, file, "cdn")
        elif len(parts) >= 6 and parts[3] == "resolve":
            repo = f"{parts[1]}/{parts[2]}"
            rev = unquote(parts[4])
            file = unquote("/".join(parts[5:]))
            self._resolve(h, method, repo, rev, file, authorized)
        else:
            self._send(h, method, 404, {}, b"", "other", "", path)

    def _info(self, h: _Handler, method: str, repo: str, rev: str, authorized: bool) -> None:
        r = self.repos.get(repo)
        fault = self._take_fault(repo, "<info>")
        if fault is not None and self._apply_fault(h, method, fault, "info", repo, ""):
            return
        if r is None or (r.private and not authorized):
            code = 401 if r is not None else 404
            self._send(h, method, code, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"},
                       b'{"error":"Repository not found"}', "info", repo, "")
            return
        commit = r.refs.get(rev) or (rev if rev == r.commit else None)
        if commit is None:
            self._send(h, method, 404, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"},
                       b'{"error":"Invalid rev id"}', "info", repo, "")
            return
        doc = {
            "_id": hashlib.sha1(repo.encode()).hexdigest()[:24],
            "id": repo,
            "sha": commit,
            "private": r.private,
            "gated": r.gated,
        }
        if r.info_siblings:
            doc["siblings"] = [{"rfilename": f} for f in sorted(r.files)]
        self._send(h, method, 200, {"Content-Type": "application/json"}, json.dumps(doc).encode(), "info", repo, "")

    def _tree(self, h: _Handler, method: str, repo: str, rev: str, query: str, authorized: bool) -> None:
        """``/api/models/{repo}/tree/{rev}?recursive=true``: file entries, ``tree_page`` per page, the
        next page in a ``Link: <...>; rel="next"`` header (cursor = offset here)."""
        r = self.repos.get(repo)
        if r is None or (r.private and not authorized):
            self._send(h, method, 404, {"X-Error-Code": "RepoNotFound"}, b"", "tree", repo, "")
            return
        if r.refs.get(rev, rev) != r.commit:
            self._send(h, method, 404, {"X-Error-Code": "RevisionNotFound"}, b"", "tree", repo, "")
            return
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        start = int(params.get("cursor", "0"))
        names = sorted(r.files)
        page = [
            {"type": "file", "oid": hashlib.sha1(r.files[f]).hexdigest(), "size": len(r.files[f]), "path": f}
            for f in names[start : start + self.tree_page]
        ]
        headers = {"Content-Type": "application/json"}
        if start + self.tree_page < len(names):
            nxt = f"{self.endpoint}/api/models/{repo}/tree/{quote(rev, safe='')}?recursive=true&expand=false&cursor={start + self.tree_page}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._send(h, method, 200, headers, json.dumps(page).encode(), "tree", repo, "")

    def _resolve(self, h: _Handler, method: str, repo: str, rev: str, file: str, authorized: bool) -> None:
        r = self.repos.get(repo)
        fault = self._take_fault(repo, file)
        if fault is not None and self._apply_fault(h, method, fault, "resolve", repo, file):
            return
        if r is None or (r.private and not authorized):
            self._send(h, method, 401, {"X-Error-Code": "RepoNotFound"}, b"", "resolve", repo, file)
            return
        if r.gated and not authorized:
            code = 403 if h.headers.get("Authorization") else 401
            self._send(h, method, code, {"X-Error-Code": "GatedRepo",
                                         "X-Error-Message": f"Access to model {repo} is restricted."},
                       b"", "resolve", repo, file)
            return
        if r.refs.get(rev, rev) != r.commit:
            self._send(h, method, 404, {"X-Error-Code": "RevisionNotFound"}, b"", "resolve", repo, file)
            return
        if file not in r.files:
            self._send(h, method, 404, {"X-Error-Code": "EntryNotFound"}, b"", "resolve", repo, file)
            return
        if self.redirect_lfs and file.endswith(".safetensors"):
            blob = r.files[file]
            headers = {
                "Location": f"/cdn/{repo}/{r.commit}/{quote(file)}",
                "X-Repo-Commit": r.commit,
                "X-Linked-Size": str(len(blob)),
                "X-Linked-Etag": f'"{hashlib.sha256(blob).hexdigest()}"',
            }
            self._send(h, method, 302, headers, b"", "resolve", repo, file)
            return
        self._file(h, method, r, file, "resolve")

    def _apply_fault(self, h: _Handler, method: str, fault: Fault, kind: str, repo: str, file: str) -> bool:
        if fault.sleep:
            time.sleep(fault.sleep)
        if fault.redirect_loop:
            self._send(h, method, 302, {"Location": h.path}, b"", kind, repo, file)
            return True
        if fault.status is not None:
            headers = {"X-Error-Code": fault.error_code} if fault.error_code else {}
            self._send(h, method, fault.status, headers, b"", kind, repo, file)
            return True
        if fault.ignore_range:
            r = self.repos[repo]
            blob = r.files[file]
            self._send(h, method, 200, {"X-Repo-Commit": r.commit}, blob, kind, repo, file, sent=(0, len(blob) - 1))
            return True
        return False  # sleep only: answer normally afterwards

    def _file(self, h: _Handler, method: str, r: FakeRepo, file: str, kind: str) -> None:
        blob = r.files[file]
        size = len(blob)
        lfs = file.endswith(".safetensors")
        headers = {
            "X-Repo-Commit": r.commit,
            "Accept-Ranges": "bytes",
            "ETag": f'"{hashlib.sha256(blob).hexdigest() if lfs else hashlib.sha1(blob).hexdigest()}"',
        }
        if lfs:
            headers["X-Linked-Size"] = str(size)
            headers["X-Linked-Etag"] = headers["ETag"]
        rng = h.headers.get("Range")
        if rng is None:
            self._send(h, method, 200, headers, blob, kind, r.repo_id, file, sent=(0, size - 1) if size else None)
            return
        spec = rng.strip()
        if not spec.startswith("bytes=") or "," in spec:
            self._send(h, method, 400, {}, b"", kind, r.repo_id, file)
            return
        a_text, _, b_text = spec[6:].partition("-")
        first = int(a_text)
        last = min(int(b_text), size - 1) if b_text else size - 1
        if first >= size:
            self._send(h, method, 416, {**headers, "Content-Range": f"bytes */{size}"}, b"", kind, r.repo_id, file)
            return
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        self._send(h, method, 206, headers, blob[first : last + 1], kind, r.repo_id, file, sent=(first, last))

    def _send(self, h: _Handler, method: str, status: int, headers: dict[str, str], body: bytes,
              kind: str, repo: str, file: str, sent: tuple[int, int] | None = None) -> None:
        head_only = method == "HEAD"
        # Record before answering: the client may check the log as soon as it has the response.
        self._record(Served(method, kind, repo, file, status, None if head_only else sent,
                            0 if head_only else len(body)))
        try:
            h.send_response(status)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if not head_only and body:
                h.wfile.write(body)
        except OSError:  # the client gave up (time-out test)
            pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the second waits for the client's
    # delayed ACK (~40 ms on Linux loopback), which would dwarf everything measured here.
    disable_nagle_algorithm = True
    server_hub: FakeHub

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self.server_hub.handle(self, "GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self.server_hub.handle(self, "HEAD")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output clean
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True


def isolate_hf(monkeypatch, tmp_path: Path, endpoint: str | None = None) -> dict[str, Path]:
    """Point huggingface_hub and mtp-audit at folders under ``tmp_path`` for one test: no stored token,
    no ``HF_TOKEN``, telemetry off (huggingface_hub 2.4 ``build_hf_headers`` otherwise fetches
    ``{ENDPOINT}/api/agent-harnesses`` once a day), online, a private HF cache and mtp-audit cache, and
    (optionally) ``endpoint`` as ``HF_ENDPOINT``. huggingface_hub reads its environment at import, so
    the module constants are patched. Returns the folders used."""
    from huggingface_hub import constants

    paths = {"hf_cache": tmp_path / "hf-cache", "cache": tmp_path / "mtp-audit-cache", "hf_home": tmp_path / "hf-home"}
    paths["hf_home"].mkdir(parents=True, exist_ok=True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(paths["cache"]))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(paths["hf_home"] / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(paths["hf_home"] / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(paths["hf_cache"]))
    monkeypatch.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 5)
    if endpoint is not None:
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    return paths


def child_env(endpoint: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a child process that audits against ``endpoint`` through the real environment
    variables (``HF_ENDPOINT``, ``HF_HUB_CACHE``, ``HF_HOME``, ``MTP_AUDIT_CACHE_DIR``)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "MTP_AUDIT_", "CI"))}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_CACHE=str(tmp_path / "hf-cache"),
        HF_HUB_DISABLE_TELEMETRY="1",
        MTP_AUDIT_CACHE_DIR=str(tmp_path / "mtp-audit-cache"),
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    env.update(extra)
    return env
