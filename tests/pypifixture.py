"""A loopback package index for tests: the PyPI JSON API (``/pypi/<name>/<version>/json``) and the files it names,
served with HTTP range requests (``206 Partial Content``) from real wheels on disk; every request is counted."""

from __future__ import annotations

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
    wheels: dict[tuple[str, str], Path]
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    bytes_served: int = 0
    ranges: bool = True


def _handler(index: Index) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            index.requests.append((self.path, self.headers.get("Range")))
            m = re.match(r"^/pypi/([^/]+)/([^/]+)/json$", self.path)
            if m:
                return self._json(m.group(1), m.group(2))
            m = re.match(r"^/files/(.+\.whl)$", self.path)
            wheel = next((p for p in index.wheels.values() if p.name == (m.group(1) if m else None)), None)
            if wheel is None:
                return self._send(404, b"not found")
            return self._file(wheel)

        def _json(self, name: str, version: str) -> None:
            wheel = index.wheels.get((name, version))
            if wheel is None:
                return self._send(404, b'{"message": "Not Found"}')
            doc = {"info": {"name": name, "version": version},
                   "urls": [{"filename": "%s-%s.tar.gz" % (name, version), "url": f"{index.url.rsplit('/pypi', 1)[0]}/files/x.tar.gz",
                             "packagetype": "sdist", "size": 1},
                            {"filename": wheel.name, "url": f"{index.url.rsplit('/pypi', 1)[0]}/files/{wheel.name}",
                             "packagetype": "bdist_wheel", "size": wheel.stat().st_size, "yanked": False}]}
            self._send(200, json.dumps(doc).encode(), "application/json")

        def _file(self, wheel: Path) -> None:
            size = wheel.stat().st_size
            rng = self.headers.get("Range")
            m = re.match(r"^bytes=(\d+)-(\d*)$", rng or "")
            if not index.ranges or not m:
                data = wheel.read_bytes()
                return self._send(200, data)
            start, end = int(m.group(1)), int(m.group(2) or size - 1)
            if start >= size:
                return self._send(416, b"")
            end = min(end, size - 1)
            with open(wheel, "rb") as fh:
                fh.seek(start)
                data = fh.read(end - start + 1)
            self._send(206, data, extra={"Content-Range": f"bytes {start}-{end}/{size}"})

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
def serve(wheels: dict[tuple[str, str], Path]) -> Iterator[Index]:
    """Serve ``{(name, version): wheel path}`` on 127.0.0.1 for the duration of the block."""
    index = Index(url="", wheels=wheels)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
    index.url = f"http://127.0.0.1:{server.server_address[1]}/pypi"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
