"""Helpers shared by tests/test_hostile_*.py: the CLI run in-process outside hypothesis, and the
test that a string carries no character a person must not read raw."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from pathlib import Path

from mtp_audit.formats.escape import UNSAFE


def cli(argv: Sequence[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """``mtp-audit argv`` in this process: ``(exit code, stdout, stderr)``."""
    from mtp_audit.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def raw_unsafe(text: str, *, allow: str = "") -> list[str]:
    """The :data:`~mtp_audit.formats.escape.UNSAFE` characters of ``text`` not in ``allow``, as ``U+XXXX``."""
    return sorted({f"U+{ord(c):04X}" for c in text if ord(c) in UNSAFE and c not in allow})


# --- a hostile loopback hub ----------------------------------------------------------------------------

import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a time-out, a refused redirect) is part of every hostile exchange: the server
    thread says nothing about it, so the CLI's own stderr (checked for tracebacks) holds only the CLI's words."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class HostileServer:
    """A loopback HTTP server whose every answer is written by ``respond(handler)``; each request's path and
    headers are logged in :attr:`seen`. Loopback only; answers that never end are cut when the server stops
    (:attr:`stopping` is set), so no test loop is unbounded."""

    def __init__(self, respond: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.respond = respond
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802
                outer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                try:
                    outer.respond(self)
                except (ConnectionError, TimeoutError, OSError):
                    self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def send(h: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    """One whole answer with a Content-Length."""
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def trickle(h: BaseHTTPRequestHandler, stop: threading.Event, *, chunk: bytes = b" ", pause: float = 0.2,
            limit_s: float = 60.0, headers: dict[str, str] | None = None) -> None:
    """A 200 whose chunked body never ends on its own: ``chunk`` every ``pause`` seconds until the client
    goes away, the server stops or ``limit_s`` passes (the loop is bounded)."""
    h.send_response(200)
    for k, v in (headers or {"Content-Type": "application/json"}).items():
        h.send_header(k, v)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    t_end = time.monotonic() + limit_s
    while not stop.is_set() and time.monotonic() < t_end:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        h.wfile.flush()
        if pause:
            time.sleep(pause)


def raw(h: BaseHTTPRequestHandler, data: bytes) -> None:
    """Write ``data`` as the whole answer, whatever it is (a banner, a broken framing), and close the connection."""
    h.wfile.write(data)
    h.wfile.flush()
    h.close_connection = True


#: Answers that break HTTP, by name (a non-HTTP banner, broken chunked framing, 101 header lines, a bad status line,
#: a body shorter than its Content-Length, no answer at all).
BROKEN_HTTP = {
    "banner": b"SSH-2.0-OpenSSH_9.6\r\n",
    "broken-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n",
    "101-headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: y\r\n" % i for i in range(101)) + b"Content-Length: 2\r\n\r\n{}",
    "bad-status": b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}",
    "short-body": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{}",
    "no-answer": b"",
    "long-header": b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
}
