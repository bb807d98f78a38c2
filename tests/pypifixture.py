"""A loopback package index for tests: the PyPI JSON API (``/pypi/<name>/<version>/json``) and the files it names,
served with HTTP range requests (``206 Partial Content``) from real wheels on disk or wheels built in memory; every
request is counted. ``docs`` replaces a release's JSON document (hostile file names, URLs, sizes, digests)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Index:
    """The running index: ``url`` (the JSON API base), ``requests`` (path, range) and ``bytes_served``."""

    url: str
    wheels: dict[tuple[str, str], Path | tuple[str, bytes]]
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    bytes_served: int = 0
    ranges: bool = True
    docs: dict[tuple[str, str], object] = field(default_factory=dict)

    def file_url(self, name: str) -> str:
        """Where the index serves the file ``name``."""
        return f"{self.url.rsplit('/pypi', 1)[0]}/files/{name}"

    def wheel(self, key: tuple[str, str]) -> tuple[str, bytes]:
        """``(file name, bytes)`` of a served wheel."""
        w = self.wheels[key]
        return (w.name, w.read_bytes()) if isinstance(w, Path) else w

    def entry(self, key: tuple[str, str], **over: object) -> dict[str, object]:
        """The JSON API's file entry of a served wheel (``over`` replaces fields)."""
        name, data = self.wheel(key)
        return {"filename": name, "url": self.file_url(name), "packagetype": "bdist_wheel", "size": len(data),
                "digests": {"sha256": hashlib.sha256(data).hexdigest()}, "yanked": False, **over}


def _handler(index: Index) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            index.requests.append((self.path, self.headers.get("Range")))
            m = re.match(r"^/pypi/([^/]+)/([^/]+)/json$", self.path)
            if m:
                return self._json(m.group(1), m.group(2))
            m = re.match(r"^/pypi/([^/]+)/json$", self.path)
            if m:  # the project document: every served release of the package, spelled as served
                releases = {v: [index.entry((n, v))] for n, v in index.wheels if n == m.group(1)}
                return self._send(200, json.dumps({"info": {"name": m.group(1)}, "releases": releases}).encode(), "application/json")
            m = re.match(r"^/files/(.+\.whl)$", self.path)
            wheel = next((index.wheel(k)[1] for k in index.wheels if index.wheel(k)[0] == (m.group(1) if m else None)), None)
            if wheel is None:
                return self._send(404, b"not found")
            return self._file(wheel)

        def _json(self, name: str, version: str) -> None:
            if (name, version) in index.docs:
                doc = index.docs[(name, version)]
                return self._send(200, doc if isinstance(doc, bytes) else json.dumps(doc).encode(), "application/json")
            if (name, version) not in index.wheels:
                return self._send(404, b'{"message": "Not Found"}')
            doc = {"info": {"name": name, "version": version},
                   "urls": [{"filename": f"{name}-{version}.tar.gz", "url": index.file_url("x.tar.gz"),
                             "packagetype": "sdist", "size": 1},
                            index.entry((name, version))]}
            self._send(200, json.dumps(doc).encode(), "application/json")

        def _file(self, wheel: bytes) -> None:
            size = len(wheel)
            rng = self.headers.get("Range")
            m = re.match(r"^bytes=(\d+)-(\d*)$", rng or "")
            if not index.ranges or not m:
                return self._send(200, wheel)
            start, end = int(m.group(1)), int(m.group(2) or size - 1)
            if start >= size:
                return self._send(416, b"")
            end = min(end, size - 1)
            self._send(206, wheel[start:end + 1], extra={"Content-Range": f"bytes {start}-{end}/{size}"})

        def _send(self, status: int, body: bytes, ctype: str = "application/octet-stream", extra: dict[str, str] | None = None) -> None:
            index.bytes_served += len(body)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def serve(wheels: dict[tuple[str, str], Path | tuple[str, bytes]]) -> Iterator[Index]:
    """Serve ``{(name, version): wheel path or (file name, bytes)}`` on 127.0.0.1 for the duration of the block."""
    index = Index(url="", wheels=wheels)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
    index.url = f"http://127.0.0.1:{server.server_address[1]}/pypi"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


SERVER_ARGS = (b"class ServerArgs:\n    speculative_algorithm: str = None\n"
               b"    def __post_init__(self):\n        if self.speculative_algorithm == 'NEXTN':\n"
               b"            self.speculative_algorithm = 'EAGLE'\n")


def build_wheel(version: str = "0.5.99", extra: dict[str, bytes] | None = None, *, name: str | None = None,
                server_args: bytes = SERVER_ARGS) -> tuple[str, bytes]:
    """``(file name, bytes)`` of a small SGLang-shaped wheel built in memory: ``sglang/srt/server_args.py`` (the
    given text), a METADATA, and ``extra`` members (deflated)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("sglang/__init__.py", b"")
        zf.writestr("sglang/srt/server_args.py", server_args)
        zf.writestr(f"sglang-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n".encode())
        for member, data in (extra or {}).items():
            zf.writestr(member, data)
    return name or f"sglang-{version}-py3-none-any.whl", buf.getvalue()
