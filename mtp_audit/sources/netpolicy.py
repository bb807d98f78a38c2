"""One HTTP policy for every network client of mtp-audit: the hub (:mod:`mtp_audit.sources.hubhttp`, over
huggingface_hub's own client), the package index (:mod:`mtp_audit.sources.pypi`) and a running engine's metrics
endpoint (:mod:`mtp_audit.runtime.metrics`), the last two through :func:`get` here (the standard library's
:mod:`http.client`, nothing else).

The policy, whatever the client:

* **Time.** Every request ends by a total deadline: the earlier of the caller's own bound (``--timeout`` for
  ``--metrics``) and the run's network time (``MTP_AUDIT_NETWORK_SECONDS``,
  :meth:`mtp_audit.sources.bounded.RunBudget.network_deadline`). Each socket read also has the per-read time-out,
  and a watchdog shuts the socket down when the total deadline passes, so a server that drips one byte every half
  second (in the status line, the headers or the body) ends with the deadline, not with the last byte.
* **Size.** A body is read up to a cap and no further (``Content-Length`` over the cap is refused before reading);
  bodies are asked for and read raw (``Accept-Encoding: identity``, never decompressed). A status that is not the
  one the caller expects has its body left unread.
* **URLs.** Only ``http`` and ``https``, for the URL the user gives and for every URL a server hands back (a
  wheel's ``url`` in the index's JSON, a ``Location``, a ``Link``): :func:`check_url`. ``file://``, ``ftp://``,
  ``data:`` are refused with one line, never opened.
* **Redirects.** :data:`NO_REDIRECTS` (metrics: only the URL the user named is read), :data:`SAME_ORIGIN`, or
  :data:`ANY_HTTP` (the index: a mirror's files on another host); at most :data:`MAX_REDIRECTS` hops, each checked
  with :func:`check_url`. Credentials in the URL (``https://user:pass@mirror/``) go only to that URL's origin.
  The environment's proxy (``https_proxy``/``http_proxy``, less ``no_proxy``, as :mod:`urllib.request` reads
  them) is used as urllib used it, never for a loopback host.
* **Failures.** Every failure is a :class:`NetProblem` with one line and a kind: connection refused, DNS, a
  non-HTTP banner, a broken chunked body, more than 100 header lines (``http.client``'s ``_MAXHEADERS``), TLS
  errors, time-outs. :meth:`NetProblem.raise_as` turns it into "could not tell" (:class:`~mtp_audit.errors.Unavailable`,
  exit 3) for what the server did, or :class:`~mtp_audit.errors.InputError` (exit 2) for what the URL or its
  answer is (too large, not http(s), a redirect out of policy). Never a traceback, never exit 4.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from email.message import Message

from mtp_audit.errors import InputError, Unavailable

__all__ = ["ANY_HTTP", "MAX_REDIRECTS", "NO_REDIRECTS", "SAME_ORIGIN", "SCHEMES", "Answer", "NetProblem", "check_url",
           "get", "request_deadline", "run_deadline", "run_time_spent", "safe_name", "same_origin"]

#: The only URL schemes any client reads.
SCHEMES = ("http", "https")
#: Redirect hops followed at most (huggingface_hub's httpx client follows up to 20; the stdlib clients 5).
MAX_REDIRECTS = 5
#: Redirect policies of :func:`get`.
NO_REDIRECTS, SAME_ORIGIN, ANY_HTTP = "none", "same-origin", "any-http"
#: Read size of one body chunk (bytes).
_CHUNK = 1 << 16
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})

#: Problem kinds that are "could not tell" (the server or the network failed); the rest are the input's fault.
UNAVAILABLE_KINDS = frozenset({"unreachable", "protocol", "deadline", "status"})


class NetProblem(Exception):
    """One network failure, one line.

    Attributes:
        kind: ``unreachable`` (refused, DNS, reset), ``protocol`` (not HTTP, broken framing, too many headers, TLS),
            ``deadline`` (the request's total time or the run's network time is spent), ``status`` (5xx),
            ``too-large``, ``url`` (not http(s), does not parse), ``redirect`` (out of policy).
        problem: what happened, one line, no trailing period.
    """

    def __init__(self, kind: str, problem: str) -> None:
        super().__init__(problem)
        self.kind = kind
        self.problem = problem

    def raise_as(self, where: str, unavailable: type[Unavailable] = Unavailable) -> None:
        """Raise the CLI's error for this problem: ``unavailable(f"{where}: {problem}")`` (exit 3) for the kinds in
        :data:`UNAVAILABLE_KINDS`, else ``InputError(where, problem)`` (exit 2)."""
        if self.kind in UNAVAILABLE_KINDS:
            raise unavailable(f"{where}: {self.problem}") from None
        raise InputError(where, self.problem) from None


@dataclass(frozen=True)
class Answer:
    """One HTTP answer.

    Attributes:
        status: the status code of the last hop.
        headers: its headers (``email.message.Message``: case-insensitive ``get``).
        body: the body, read only when ``status`` is one the caller expected (else ``b""``), at most the cap.
        url: the URL that answered (after redirects).
    """

    status: int
    headers: Message
    body: bytes
    url: str


def run_deadline() -> float:
    """``time.monotonic()`` past which the run in progress may not use the network (infinity outside a run)."""
    from mtp_audit.sources.bounded import current_run

    run = current_run()
    return run.network_deadline() if run is not None else float("inf")


def run_time_spent() -> str:
    """The one line said when the run's network time is spent."""
    from mtp_audit.sources.bounded import current_run

    run = current_run()
    spent = run.network_seconds if run is not None else 0
    return f"this run's {spent:g} s of network time are spent (set MTP_AUDIT_NETWORK_SECONDS to raise the bound)"


def request_deadline(seconds: float | None) -> float:
    """The total deadline of one request starting now: ``seconds`` from now (``None``: no bound of its own), and
    never past :func:`run_deadline`."""
    own = time.monotonic() + seconds if seconds is not None else float("inf")
    return min(own, run_deadline())


def check_url(url: object, where: str = "URL") -> urllib.parse.SplitResult:
    """``url`` split, if it is an ``http(s)`` URL with a host and a numeric port (if any).

    Raises:
        NetProblem: kind ``url`` for anything else (``file://``, ``ftp://``, ``data:``, a relative path, ``http://[::1``,
            a port of letters, control characters, not a string).
    """
    if not isinstance(url, str) or not url or len(url) > 8192:
        raise NetProblem("url", f"{where}: not a URL")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise NetProblem("url", f"{where}: the URL holds spaces or control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise NetProblem("url", f"{where}: not a valid URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        scheme = parts.scheme or "no scheme"
        raise NetProblem("url", f"{where}: {scheme} URL refused (only http and https are read)")
    return parts


def same_origin(a: str, b: str) -> bool:
    """Whether two URLs have the same scheme, host and port (the only origin credentials go to). A URL that does not
    parse is another origin."""
    try:
        x, y = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
        return (x.scheme.lower(), x.hostname, x.port or _port(x.scheme)) == (y.scheme.lower(), y.hostname, y.port or _port(y.scheme))
    except ValueError:
        return False


def _port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme.lower())


def safe_name(text: str, *, keep: str = "") -> str:
    """A file name the cache makes itself: ``keep`` (characters ``[A-Za-z0-9._-]`` only; anything else dropped)
    followed by a hash of ``text``; never a separator, never ``..``, at most 120 characters. Names a server gives are
    never used as paths."""
    kept = "".join(c for c in keep if c.isascii() and (c.isalnum() or c in "._-")).strip(".")[:80]
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{kept}-{digest}" if kept else digest


class _Watchdog:
    """Shuts a connection's socket down when the total deadline passes, so a blocked read returns at once whatever
    the server drips. ``fired`` says whether it did."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn = conn
        self.fired = False
        self.timer = threading.Timer(max(0.0, seconds), self._cut)
        self.timer.daemon = True

    def _cut(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the OS socket under TLS too
            except OSError:
                pass

    def __enter__(self) -> _Watchdog:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()


def _proxy_for(parts: urllib.parse.SplitResult) -> urllib.parse.SplitResult | None:
    """The proxy the environment names for this URL (``https_proxy`` / ``http_proxy``, less ``no_proxy``, as
    :mod:`urllib.request` reads them), never for a loopback host; ``None`` for none or one that is not http(s)."""
    import ipaddress
    import urllib.request

    host = parts.hostname or ""
    try:
        if host == "localhost" or ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    proxy = urllib.request.getproxies().get(parts.scheme.lower())
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    try:
        return check_url(proxy if "://" in proxy else f"http://{proxy}", "the proxy")
    except NetProblem:
        return None


def _connection(parts: urllib.parse.SplitResult, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
    """A connection for ``parts`` (through the environment's proxy, if any: a CONNECT tunnel for https) and whether
    the request line must carry the absolute URL (plain http through a proxy)."""
    host, port = parts.hostname or "", parts.port
    proxy = _proxy_for(parts)
    https = parts.scheme.lower() == "https"
    if proxy is None:
        if https:
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context()), False
        return http.client.HTTPConnection(host, port, timeout=timeout), False
    auth = {}
    if proxy.username is not None:
        pair = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
        auth = {"Proxy-Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    if https:
        tunnel = http.client.HTTPSConnection(proxy.hostname or "", proxy.port, timeout=timeout, context=ssl.create_default_context())
        tunnel.set_tunnel(host, port, headers=auth)
        return tunnel, False
    conn = http.client.HTTPConnection(proxy.hostname or "", proxy.port, timeout=timeout)
    # our own attribute on the connection, not http.client's: _send reads it back with getattr to add the proxy's
    # credentials to each request sent through a plain-HTTP proxy
    conn.proxy_headers = auth  # type: ignore[attr-defined]
    return conn, True


def _request_headers(parts: urllib.parse.SplitResult, headers: dict[str, str], origin: str) -> dict[str, str]:
    out = {"User-Agent": "mtp-audit", "Accept-Encoding": "identity", **headers}
    if parts.username is not None and same_origin(urllib.parse.urlunsplit(parts), origin):
        user = urllib.parse.unquote(parts.username)
        word = urllib.parse.unquote(parts.password or "")
        out["Authorization"] = "Basic " + base64.b64encode(f"{user}:{word}".encode()).decode()
    return out


def _target(parts: urllib.parse.SplitResult, absolute: bool) -> str:
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{path}" if absolute else path


def _read_body(resp: http.client.HTTPResponse, limit: int, deadline: float, timeout: float,
               conn: http.client.HTTPConnection) -> bytes:
    length = resp.getheader("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise NetProblem("too-large", f"the answer is {int(length)} bytes, more than {limit} bytes allowed; not read")
    chunks: list[bytes] = []
    got = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise NetProblem("deadline", "the time allowed for the request ran out while reading the body")
        if conn.sock is not None:
            conn.sock.settimeout(min(timeout, left))
        chunk = resp.read1(min(_CHUNK, limit + 1 - got))
        if not chunk:
            if not resp.chunked and length is not None and length.strip().isdigit() and got != int(length):
                raise NetProblem("protocol", f"the body ended after {got} of the {int(length)} bytes its Content-Length states")
            return b"".join(chunks)
        got += len(chunk)
        if got > limit:
            raise NetProblem("too-large", f"the answer is more than {limit} bytes allowed; stopped reading")
        chunks.append(chunk)


def _protocol_words(exc: BaseException) -> str:
    """One line for an :mod:`http.client` / :mod:`ssl` failure."""
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(exc, http.client.BadStatusLine):
        return "the server's answer is not HTTP (no status line)"
    if isinstance(exc, http.client.IncompleteRead):
        return f"the body ended early or its chunked framing is broken ({len(exc.partial)} bytes read)"
    if isinstance(exc, http.client.LineTooLong):
        return "a header or chunk line is longer than http.client reads (65,536 bytes)"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or type(exc).__name__})"
    text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    if "headers" in text:
        return f"the answer has too many header lines ({text})"
    return f"the answer breaks HTTP ({type(exc).__name__}: {text})"


def _deadline_words(deadline: float) -> str:
    """Why a request stopped at ``deadline``: the run's network time, or the request's own bound."""
    if deadline >= run_deadline():
        return run_time_spent()
    return "no complete answer within the time allowed for the request"


def _once(url: str, parts: urllib.parse.SplitResult, headers: dict[str, str], *, origin: str, deadline: float,
          timeout: float, limit: int, expect: frozenset[int]) -> Answer:
    """One exchange under the policy (see :func:`get`)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise NetProblem("deadline", _deadline_words(deadline))
    try:
        conn, absolute = _connection(parts, min(timeout, left))
    except (http.client.HTTPException, ValueError, UnicodeError) as exc:  # InvalidURL: a port http.client cannot read
        raise NetProblem("url", f"not a URL http.client can open ({str(exc)[:100]})") from None
    dog = _Watchdog(conn, left)
    try:
        with dog:
            extra = getattr(conn, "proxy_headers", {})
            conn.request("GET", _target(parts, absolute), headers={**_request_headers(parts, headers, origin), **extra})
            resp = conn.getresponse()
            body = _read_body(resp, limit, deadline, timeout, conn) if resp.status in expect else b""
            return Answer(resp.status, resp.msg, body, url)
    except NetProblem as exc:
        if exc.kind == "deadline":
            raise NetProblem("deadline", _deadline_words(deadline)) from None
        raise
    except (http.client.HTTPException, ssl.SSLError, ValueError, UnicodeError) as exc:
        if dog.fired:
            raise NetProblem("deadline", _deadline_words(deadline)) from None
        raise NetProblem("protocol", _protocol_words(exc)) from None
    except (TimeoutError, OSError) as exc:
        if dog.fired or time.monotonic() >= deadline:
            raise NetProblem("deadline", _deadline_words(deadline)) from None
        if isinstance(exc, TimeoutError):
            raise NetProblem("deadline", f"no answer within {min(timeout, left):g} s") from None
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise NetProblem("unreachable", f"the connection failed ({reason})") from None
    finally:
        conn.close()


def get(url: str, *, headers: dict[str, str] | None = None, timeout: float, seconds: float | None = None, limit: int,
        expect: tuple[int, ...] = (200,), redirects: str = NO_REDIRECTS, where: str = "URL") -> Answer:
    """GET ``url`` under the policy of this module.

    Args:
        url: an ``http(s)`` URL.
        headers: extra request headers (``Range``, ``Accept``).
        timeout: seconds each socket read (and the connection) may wait.
        seconds: the request's total time, redirects included (``None``: only the run's network time bounds it).
        limit: the most body bytes read.
        expect: statuses whose body is read; any other status is returned with ``body=b""``.
        redirects: :data:`NO_REDIRECTS`, :data:`SAME_ORIGIN` or :data:`ANY_HTTP`.
        where: what the URL is, for messages (``--metrics``, the wheel's URL).

    Returns:
        The :class:`Answer` of the last hop.

    Raises:
        NetProblem: see the module docstring; never an :mod:`http.client`, :mod:`ssl` or socket exception.
    """
    deadline = request_deadline(seconds)
    origin = url
    parts = check_url(url, where)
    for _hop in range(MAX_REDIRECTS + 1):
        answer = _once(url, parts, headers or {}, origin=origin, deadline=deadline, timeout=timeout, limit=limit,
                       expect=frozenset(expect))
        if answer.status not in _REDIRECT_STATUS or answer.status in expect:
            return answer
        location = answer.headers.get("Location") or ""
        if redirects == NO_REDIRECTS:
            raise NetProblem("redirect", f"HTTP {answer.status}: redirect to {location[:200]} not followed")
        try:
            nxt = urllib.parse.urljoin(url, location)
        except ValueError:
            raise NetProblem("redirect", f"HTTP {answer.status}: a redirect that does not parse") from None
        parts = check_url(nxt, f"{where} (redirected)")
        if redirects == SAME_ORIGIN and not same_origin(nxt, origin):
            raise NetProblem("redirect", f"HTTP {answer.status}: redirect to another host ({parts.hostname}) not followed")
        url = nxt
    raise NetProblem("redirect", f"more than {MAX_REDIRECTS} redirects")
