"""HTTP plumbing for hub audits, on top of huggingface_hub's own HTTP client.

Every request goes through ``huggingface_hub.utils.get_session()`` (the shared ``httpx2.Client`` from huggingface_hub 2.0, ``httpx.Client`` in 1.x
that huggingface_hub builds with its offline-mode guard and request ids, or the client a program
installed with ``huggingface_hub.set_client_factory`` for proxies or certificates). Headers come from
``huggingface_hub.utils.build_hf_headers`` (``HF_TOKEN`` / the stored token, user agent) and file URLs
from ``huggingface_hub.hf_hub_url`` (``HF_ENDPOINT``). Read in huggingface_hub 2.4.0:
``utils/_http.py`` (``get_session``, ``default_client_factory``: ``follow_redirects=True``,
``timeout=None``), ``file_download.py`` (``hf_hub_url``), ``hf_api.py``
(``parse_safetensors_file_metadata``).

Why not ``HfApi.parse_safetensors_file_metadata``: it always asks for ``Range: bytes=0-100000`` first
(hf_api.py, "Fetch first 100kb"), so on a shard whose header is shorter than 100,000 bytes it reads up
to 100 KB of tensor data, and on a tiny file it reads the whole file. mtp-audit promises header-only
reads (never tensor data), so :func:`read_range` asks for exactly the bytes it needs.
It also decodes the header with ``errors="ignore"``, hiding bad UTF-8 and duplicate names that the
strict parser in :mod:`mtp_audit.sources.local` reports.

The shared HTTP policy (:mod:`mtp_audit.sources.netpolicy`, also used by the package index and the metrics
client) applies here through huggingface_hub's client: the run's network time (``MTP_AUDIT_NETWORK_SECONDS``) ends
every request and body (:func:`open_get`, :func:`read_body`), bodies are read raw up to a cap, only http(s) is
followed (httpx refuses other schemes: ``UnsupportedProtocol``), the token goes only to the endpoint's origin
(:func:`same_origin`), and every transport error is one line (:func:`transport_problem`). Redirects are httpx's
(the hub sends file downloads to its CDN on another host).

Counting: :class:`Meter` counts what crosses the wire, not what the code meant to do. Hooks added to
the shared client (:func:`ensure_hooks`) count every HTTP exchange the client performs on behalf of an
active meter, redirect hops and retries included, and wrap each response body so that every byte the
client reads is counted. The meter in force is a :class:`contextvars.ContextVar`, so requests made by
other code that shares the client are not counted.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
import time
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import huggingface_hub
from huggingface_hub.utils import get_session

from mtp_audit.errors import InputError
from mtp_audit.sources import netpolicy
from mtp_audit.sources.huberrors import HubUnavailable
from mtp_audit.sources.local import ReadProblem


def _http_library() -> Any:
    """The HTTP library under huggingface_hub's client: ``httpx2`` from huggingface_hub 2.0, ``httpx`` in 1.x
    (the same names: ``Client``, ``Response``, ``SyncByteStream``, the ``HTTPError`` tree).

    Raises:
        ImportError: huggingface_hub before 1.0 (its client is ``requests``), with the version to install.
    """
    major = int(huggingface_hub.__version__.split(".")[0])
    if major >= 2:
        import httpx2

        return httpx2
    if major == 1:
        # huggingface_hub 1.x's client library: absent where 2.x is installed (httpx2, the names mypy checks against)
        import httpx  # type: ignore[import-not-found]

        return httpx
    raise ImportError(f"huggingface_hub {huggingface_hub.__version__} is too old for hub audits: "
                      "pip install 'huggingface_hub>=1.3'")


if TYPE_CHECKING:  # the same names in httpx (huggingface_hub 1.x) and httpx2 (2.x); mypy checks them against httpx2
    import httpx2 as hx
else:
    hx = _http_library()

#: Status codes retried once (rate limit and transient server errors), as huggingface_hub's
#: ``_DEFAULT_RETRY_ON_STATUS_CODES`` minus 408.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

#: Transport errors retried once. Time-outs are not retried: the time-out already spent the budget.
RETRY_EXCEPTIONS = (hx.ConnectError, hx.RemoteProtocolError, hx.ReadError, hx.WriteError)

#: Seconds to wait before the retry (``Retry-After`` is honoured up to :data:`MAX_RETRY_AFTER`).
RETRY_DELAY = 0.25
MAX_RETRY_AFTER = 5.0

#: Largest model-info answer read (bytes): the hub's answer for a 200,000-file repo is ~20 MB.
MAX_INFO_BYTES = 64 * 1024 * 1024


class RunDeadline(hx.TimeoutException):
    """The run's network time (:class:`mtp_audit.sources.bounded.RunBudget`) is spent: no request starts and
    no body is read any more."""


def _run_deadline() -> float:
    """``time.monotonic()`` past which the run may not use the network (infinity outside a run): the shared
    policy's (:func:`mtp_audit.sources.netpolicy.run_deadline`)."""
    return netpolicy.run_deadline()


def _check_run_deadline() -> float:
    """Seconds of network time left to the run.

    Raises:
        RunDeadline: none left.
    """
    left = _run_deadline() - time.monotonic()
    if left <= 0:
        raise RunDeadline(netpolicy.run_time_spent())
    return left


def same_origin(url: str, endpoint: str) -> bool:
    """Whether ``url`` has the scheme, host and port of ``endpoint`` (the only origin a token goes to).
    A URL that does not parse (``http://[::1``, a port of letters) is another origin: no token goes with it.
    The shared policy's rule (:func:`mtp_audit.sources.netpolicy.same_origin`)."""
    return netpolicy.same_origin(url, endpoint)


def without_credentials(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` less ``Authorization`` and cookies (for a request to another origin than the endpoint)."""
    return {k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")}


_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_CONTENT_RANGE_UNSAT = re.compile(r"^bytes \*/(\d+)$")


class Meter:
    """HTTP counters of one audit.

    Attributes:
        requests: HTTP exchanges attempted (each redirect hop and each retry is one).
        bytes_read: response-body bytes read from the network (after transfer decoding, before
            content decoding; requests ask for ``Accept-Encoding: identity``).
    """

    def __init__(self) -> None:
        self.requests = 0
        self.bytes_read = 0
        self._lock = threading.Lock()

    def add_request(self) -> None:
        """Count one HTTP exchange."""
        with self._lock:
            self.requests += 1

    def add_bytes(self, n: int) -> None:
        """Count ``n`` body bytes."""
        with self._lock:
            self.bytes_read += n

    def snapshot(self) -> dict[str, int]:
        """``{"requests": n, "bytes_read": n}``."""
        with self._lock:
            return {"requests": self.requests, "bytes_read": self.bytes_read}


_ACTIVE: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("mtp_audit_hub_meter", default=None)


@contextlib.contextmanager


def metering(meter: Meter) -> Iterator[Meter]:
    """Count the HTTP traffic of the enclosed block (and of work submitted from it with
    ``contextvars.copy_context().run``) on ``meter``."""
    token = _ACTIVE.set(meter)
    try:
        yield meter
    finally:
        _ACTIVE.reset(token)


class _CountingStream(hx.SyncByteStream):
    """A response body that reports every chunk it yields to a meter."""

    def __init__(self, inner: hx.SyncByteStream, meter: Meter) -> None:
        self._inner = inner
        self._meter = meter

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._meter.add_bytes(len(chunk))
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _on_request(request: hx.Request) -> None:
    meter = _ACTIVE.get()
    if meter is not None:
        meter.add_request()


def _on_response(response: hx.Response) -> None:
    meter = _ACTIVE.get()
    if meter is not None and isinstance(response.stream, hx.SyncByteStream):
        response.stream = _CountingStream(response.stream, meter)


_HOOKED: weakref.WeakSet[hx.Client] = weakref.WeakSet()
_HOOK_LOCK = threading.Lock()


def ensure_hooks() -> hx.Client:
    """Return huggingface_hub's shared client with the counting hooks installed (once per client).

    Called before every request, because huggingface_hub replaces its client after
    ``close_session()`` (it does so on connection errors) or ``set_client_factory``. The hooks are
    inert unless a :func:`metering` block is active in the calling context.
    """
    client = get_session()
    if client not in _HOOKED:
        with _HOOK_LOCK:
            if client not in _HOOKED:
                client.event_hooks["request"].append(_on_request)
                client.event_hooks["response"].append(_on_response)
                _HOOKED.add(client)
    return client


def _retry_after(response: hx.Response) -> float:
    value = response.headers.get("Retry-After", "")
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value)))
    except ValueError:
        return RETRY_DELAY


@contextlib.contextmanager
def open_get(url: str, headers: dict[str, str], timeout: float) -> Iterator[hx.Response]:
    """A streamed ``GET url`` through huggingface_hub's client, retried once on
    :data:`RETRY_STATUS` and :data:`RETRY_EXCEPTIONS`. The body is not read here. No attempt starts once
    the run's network time is spent, and waits (``Retry-After``) end with it.

    Raises:
        hx.HTTPError: transport failure (time-out, connection, too many redirects) after the retry;
            :class:`RunDeadline` when the run's network time is spent.
    """
    attempt = 0
    while True:
        attempt += 1
        delay = RETRY_DELAY
        yielded = False
        left = _check_run_deadline()
        try:
            client = ensure_hooks()
            with client.stream("GET", url, headers=headers, timeout=min(timeout, left)) as response:
                if response.status_code in RETRY_STATUS and attempt == 1:
                    delay = _retry_after(response)
                else:
                    yielded = True
                    yield response
                    return
        except RETRY_EXCEPTIONS:
            if yielded or attempt > 1:
                raise
        time.sleep(min(delay, max(0.0, _run_deadline() - time.monotonic())))


def read_body(response: hx.Response, limit: int, deadline: float, file: str, *, over_kind: str = "network") -> bytes:
    """Read at most ``limit`` bytes of ``response``'s body and stop; stop with a time-out problem
    once ``time.monotonic()`` passes ``deadline`` (a server trickling bytes never trips the per-read
    time-out).

    Raises:
        ReadProblem: the body is longer than ``limit`` (kind ``over_kind``) or the deadline passed
            (``network``).
    """
    chunks: list[bytes] = []
    got = 0
    run_deadline = _run_deadline()
    for chunk in response.iter_raw():  # raw: never decompressed, so a gzip bomb stays its own size
        got += len(chunk)
        if got > limit:
            raise ReadProblem(file, f"the body is longer than {limit} bytes; stopped reading", over_kind)
        chunks.append(chunk)
        now = time.monotonic()
        if now > deadline:
            raise ReadProblem(file, "timed out while reading the response", "network")
        if now > run_deadline:
            raise ReadProblem(file, "the run's network time is spent (MTP_AUDIT_NETWORK_SECONDS); stopped reading", "network")
    return b"".join(chunks)


def check_status(response: hx.Response, file: str, display: str) -> None:
    """Turn an error status into the right exception; return for 2xx.

    401 and hub "gated"/"repo not found" answers concern the whole repo and the user's credentials, so
    they are :class:`InputError` (one line, exit 2). Everything else (404 of one file, 5xx after the
    retry, 403 from a storage host) is a :class:`ReadProblem` of kind ``network`` naming the file.
    Error bodies are never read (huggingface_hub's ``hf_raise_for_status`` reads them unbounded).
    """
    code = response.status_code
    if code < 400:
        return
    error_code = response.headers.get("X-Error-Code", "")
    message = response.headers.get("X-Error-Message", "")
    if error_code == "GatedRepo":
        raise InputError(
            display,
            f"gated repo: HTTP {code} for {file}; accept the model's conditions on its hub page and set "
            "HF_TOKEN to a token of that account",
        )
    if code == 401 or error_code == "RepoNotFound":
        raise InputError(
            display, f"access denied (HTTP {code}) for {file}; the repo is private or gated: set HF_TOKEN"
        )
    detail = f" ({error_code})" if error_code else (f" ({message})" if message else "")
    if code == 404:
        raise ReadProblem(file, f"not found on the hub: HTTP 404{detail}", "network")
    raise ReadProblem(file, f"the hub answered HTTP {code}{detail}", "network")


def transport_problem(file: str, exc: Exception, timeout: float) -> ReadProblem:
    """A :class:`ReadProblem` of kind ``network`` for a transport exception (one line)."""
    if isinstance(exc, RunDeadline):
        return ReadProblem(file, str(exc), "network")
    if isinstance(exc, hx.TimeoutException):
        return ReadProblem(file, f"timed out after {timeout:g} s", "network")
    if isinstance(exc, hx.TooManyRedirects):
        return ReadProblem(file, "too many redirects", "network")
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ReadProblem(file, f"connection failed: {text}", "network")


def read_range(
    url: str, headers: dict[str, str], start: int, end: int, *, file: str, display: str, timeout: float
) -> tuple[bytes, int]:
    """Read bytes ``start..end`` (inclusive) of a hub file with one HTTP Range request.

    Returns:
        ``(body, file_size)``: ``body`` may be shorter than asked when the file ends first; ``file_size``
        comes from ``Content-Range``. A 416 answer (``start`` past the end) returns ``(b"", file_size)``.

    Raises:
        ReadProblem: network failure, a non-206 answer (a server that ignores ``Range`` would send the
            whole file: the connection is closed without reading it), or a ``Content-Range`` that does
            not match the request.
        InputError: the repo is gated or private (see :func:`check_status`).
    """
    want = end - start + 1
    hdrs = {**headers, "Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"}
    deadline = time.monotonic() + timeout
    try:
        with open_get(url, hdrs, timeout) as response:
            if response.status_code == 416:
                m = _CONTENT_RANGE_UNSAT.match(response.headers.get("Content-Range", ""))
                if m is None:
                    raise ReadProblem(file, "HTTP 416 without the file size", "network")
                return b"", int(m.group(1))
            check_status(response, file, display)
            if response.status_code != 206:
                raise ReadProblem(
                    file,
                    f"the server answered HTTP {response.status_code} to a Range request (it would send the "
                    "whole file); not read",
                    "network",
                )
            m = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if m is None or m.group(3) == "*":
                raise ReadProblem(file, "HTTP 206 without a usable Content-Range", "network")
            first, last, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if first != start or last > end or last < first:
                raise ReadProblem(file, f"the server sent bytes {first}-{last}, not {start}-{end}", "network")
            body = read_body(response, want, deadline, file)
    except hx.HTTPError as exc:
        raise transport_problem(file, exc, timeout) from None
    if len(body) != last - first + 1:
        raise ReadProblem(file, f"short read: {len(body)} of {last - first + 1} bytes", "network")
    return body, size


def read_small_file(url: str, headers: dict[str, str], *, limit: int, file: str, display: str, timeout: float) -> bytes:
    """GET a whole small file (``config.json``, the index), refusing more than ``limit`` bytes.

    Raises:
        ReadProblem: network failure or the file is larger than ``limit``.
        InputError: the repo is gated or private.
    """
    hdrs = {**headers, "Accept-Encoding": "identity"}
    deadline = time.monotonic() + max(timeout, 1.0) * 6  # small files, but the index may be ~10 MB
    try:
        with open_get(url, hdrs, timeout) as response:
            check_status(response, file, display)
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise ReadProblem(file, f"file is {length} bytes, over the {limit}-byte limit")
            return read_body(response, limit, deadline, file, over_kind="malformed")
    except hx.HTTPError as exc:
        raise transport_problem(file, exc, timeout) from None


def model_info_error(exc: Exception, *, display: str, endpoint: str, repo: str, revision: str, timeout: float, have_token: bool) -> InputError:
    """Map an exception of ``HfApi.model_info`` to a one-line :class:`InputError`.

    huggingface_hub 2.4 ``hf_raise_for_status`` maps the hub's ``X-Error-Code`` header to
    ``RepositoryNotFoundError`` (also for 401 on ``/api/models/...``), ``RevisionNotFoundError`` and
    ``GatedRepoError``; anything else is an ``HfHubHTTPError``.
    """
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return InputError(display, "gated repo: accept the model's conditions on its hub page and set HF_TOKEN")
    if isinstance(exc, RevisionNotFoundError):
        return InputError(display, f"no revision {revision!r} in {repo} on {endpoint}")
    if isinstance(exc, RepositoryNotFoundError):
        hint = "or your token cannot see it" if have_token else "or it is private or gated: set HF_TOKEN"
        return InputError(display, f"no model repo {repo} on {endpoint} ({hint})")
    if isinstance(exc, HfHubHTTPError):
        code = exc.response.status_code if exc.response is not None else "?"
        if code in (401, 403):
            return InputError(display, f"access denied (HTTP {code}); set HF_TOKEN to a token with access")
        return HubUnavailable(display, f"the hub at {endpoint} answered HTTP {code}; try again later or use --offline")
    if isinstance(exc, RunDeadline):
        return HubUnavailable(display, str(exc))
    if isinstance(exc, hx.TimeoutException):
        return HubUnavailable(display, f"no answer from {endpoint} within {timeout:g} s; try again or use --offline")
    if isinstance(exc, hx.TooManyRedirects):
        return InputError(display, f"too many redirects from {endpoint}")
    if isinstance(exc, hx.HTTPError):
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return HubUnavailable(display, f"cannot reach {endpoint}: {text}; use --offline to audit from the cache")
    return InputError(display, f"unexpected answer from the hub API at {endpoint}: {type(exc).__name__}")


def is_retryable_info_error(exc: Exception) -> bool:
    """Whether a ``model_info`` failure is worth one retry (5xx, 429, connection reset)."""
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return exc.response.status_code in RETRY_STATUS
    return isinstance(exc, RETRY_EXCEPTIONS)



#: Largest page of the tree listing read (bytes); the hub sends at most 1,000 entries per page.
MAX_TREE_PAGE_BYTES = 64 * 1024 * 1024


def list_tree(endpoint: str, repo: str, commit: str, headers: dict[str, str], *, timeout: float, display: str, max_files: int) -> tuple[str, ...]:
    """Every file of ``repo`` at ``commit`` from the hub's tree API, following its ``Link: rel="next"``
    pages (``GET /api/models/{repo}/tree/{commit}?recursive=true``, the request
    ``HfApi.list_repo_files`` makes in huggingface_hub 2.4 ``hf_api.py`` ``_iter_repo_tree_pages``).
    Done here rather than through ``list_repo_files`` because that call takes no time-out and the shared
    client has none (``default_client_factory``: ``timeout=None``), so a stalled server would hang the audit.

    Raises:
        InputError: the listing fails, is not JSON, or holds more than ``max_files`` files.
    """
    import json
    from urllib.parse import quote

    url: str | None = f"{endpoint}/api/models/{repo}/tree/{quote(commit, safe='')}?recursive=true&expand=false"
    files: list[str] = []
    pages = 0
    while url is not None:
        pages += 1
        if pages > max_files // 50 + 2:
            raise InputError(display, "the hub's file listing does not end")
        deadline = time.monotonic() + timeout * 6
        # the next page's URL comes from the answer: the token goes only to the endpoint's own origin
        hdrs = headers if same_origin(url, endpoint) else without_credentials(headers)
        try:
            with open_get(url, {**hdrs, "Accept-Encoding": "identity"}, timeout) as response:
                try:
                    check_status(response, "file listing", display)
                except ReadProblem as exc:
                    raise InputError(display, f"cannot list the repo's files: {exc.problem}") from None
                next_url = response.links.get("next", {}).get("url")
                body = read_body(response, MAX_TREE_PAGE_BYTES, deadline, "file listing")
        except hx.HTTPError as exc:
            raise InputError(display, f"cannot list the repo's files: {transport_problem('', exc, timeout).problem}") from None
        except (hx.InvalidURL, hx.UnsupportedProtocol, ValueError) as exc:
            raise InputError(display, f"cannot list the repo's files: bad next-page link ({type(exc).__name__})") from None
        except ReadProblem as exc:
            raise InputError(display, f"cannot list the repo's files: {exc.problem}") from None
        try:
            page = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise InputError(display, "the hub's file listing is not JSON") from None
        if not isinstance(page, list):
            raise InputError(display, "the hub's file listing is not a JSON list")
        files += [e["path"] for e in page if isinstance(e, dict) and e.get("type") == "file" and isinstance(e.get("path"), str)]
        if len(files) > max_files:
            raise InputError(display, f"more than {max_files} files; not a checkpoint repo?")
        url = next_url
    return tuple(files)


def model_info(endpoint: str, repo: str, revision: str, headers: dict[str, str], *, timeout: float, display: str,
               have_token: bool) -> dict[str, Any]:
    """The hub's model info for ``repo`` at ``revision`` (``GET /api/models/{repo}/revision/{rev}?expand=sha&
    expand=siblings&expand=gated``, the request ``HfApi.model_info`` makes in huggingface_hub 2.4
    ``hf_api.py``), read here under the same bounds as every other request rather than by ``HfApi``: at
    most :data:`MAX_INFO_BYTES` read raw (``Accept-Encoding: identity``, never decompressed, so a gzip bomb
    stays its own size), an overall deadline of six time-outs (a server trickling one byte a second ends),
    the run's network time, one retry on 429/5xx.

    Returns:
        The decoded JSON object (``sha``, ``siblings``, ``gated``, ...).

    Raises:
        InputError: repo or revision not found, gated or private, or the answer is not a JSON object;
            :class:`HubUnavailable` for 5xx, 429, time-outs and connection failures.
    """
    import json
    from urllib.parse import quote

    url = f"{endpoint}/api/models/{repo}/revision/{quote(revision, safe='')}?expand=sha&expand=siblings&expand=gated"
    deadline = time.monotonic() + max(timeout, 1.0) * 6
    try:
        with open_get(url, {**headers, "Accept-Encoding": "identity"}, timeout) as response:
            _info_status(response, endpoint=endpoint, repo=repo, revision=revision, display=display, have_token=have_token)
            body = read_body(response, MAX_INFO_BYTES, deadline, "model info", over_kind="malformed")
            encoding = response.headers.get("Content-Encoding", "identity").lower()
    except ReadProblem as exc:
        raise HubUnavailable(display, f"the hub at {endpoint}: model info: {exc.problem}") from None
    except hx.HTTPError as exc:
        raise model_info_error(exc, display=display, endpoint=endpoint, repo=repo, revision=revision, timeout=timeout,
                               have_token=have_token) from None
    if encoding not in ("identity", ""):
        raise InputError(display, f"the hub at {endpoint} sent the model info {encoding}-encoded although asked not to")
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(display, f"the hub at {endpoint} answered the model info with something that is not JSON") from None
    if not isinstance(doc, dict):
        raise InputError(display, f"the hub at {endpoint} answered the model info with JSON that is not an object")
    return doc


def _info_status(response: hx.Response, *, endpoint: str, repo: str, revision: str, display: str, have_token: bool) -> None:
    """Map a model-info status to the one-line errors of :func:`model_info_error` (the hub's ``X-Error-Code``:
    ``GatedRepo``, ``RepoNotFound``, ``RevisionNotFound``, as huggingface_hub's ``hf_raise_for_status`` reads it)."""
    code = response.status_code
    if code < 400:
        return
    error_code = response.headers.get("X-Error-Code", "")
    if error_code == "GatedRepo":
        raise InputError(display, "gated repo: accept the model's conditions on its hub page and set HF_TOKEN")
    if error_code == "RevisionNotFound":
        raise InputError(display, f"no revision {revision!r} in {repo} on {endpoint}")
    if error_code == "RepoNotFound" or (code in (401, 404) and not error_code):
        hint = "or your token cannot see it" if have_token else "or it is private or gated: set HF_TOKEN"
        raise InputError(display, f"no model repo {repo} on {endpoint} ({hint})")
    if code in (401, 403):
        raise InputError(display, f"access denied (HTTP {code}); set HF_TOKEN to a token with access")
    raise HubUnavailable(display, f"the hub at {endpoint} answered HTTP {code}; try again later or use --offline")
