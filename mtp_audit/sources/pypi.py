"""Engine releases by version: ``sglang 0.5.23`` -> the members of its wheel the analyzers read, fetched from
the package index with HTTP range requests and cached by version.

How (no wheel is downloaded whole):

1. ``GET {index}/{package}/{version}/json`` (the PyPI JSON API, https://docs.pypi.org/api/json/; on a 404,
   ``{index}/{package}/json`` and its ``releases``, which some mirrors serve alone): the release's files; one
   wheel is chosen (``py3-none-any`` first, then ``manylinux``/``x86_64``, then any).
2. The zip's end of central directory and its central directory are read with a range request for the last
   bytes of the file (the central directory is at the end of a zip: APPNOTE.TXT 4.3.6), one more if the
   directory is larger than that tail.
3. The byte spans of the needed members (every ``*.py`` and the ``*.dist-info/METADATA``; the analyzers read
   nothing else) are merged when less than :data:`MERGE_GAP` apart and fetched with one range request each.
4. The members are checked (each member's CRC-32, by :mod:`zipfile` while reading) and written to a zip of
   their own, ``<cache>/engines-v2/<package>/<version>/<wheel file name>``, which the analyzers open like any
   ``.whl``; each compiled extension of the wheel (``*.so``) is kept there by name only, as an empty member, since
   the vLLM audit reads which extensions a wheel ships (``VllmTree.has_compiled``) and never their bytes. A later
   run finds it there and makes no request (offline works from the cache).

For sglang 0.5.23 that is about 17.5 MB in 9 requests instead of a 39 MB wheel; for vllm 0.33.0 about 12.5 MB
instead of 336 MB. Bounds: :data:`MAX_JSON_BYTES`, :data:`MAX_FETCH_BYTES` per release, :data:`MAX_MEMBER_BYTES`
per member (a larger member is left out), :data:`TIMEOUT` seconds per request. The index is
``$MTP_AUDIT_INDEX_URL`` (default ``https://pypi.org/pypi``, a mirror serving the same JSON API works); the
cache root is ``$MTP_AUDIT_CACHE_DIR`` (default ``~/.cache/mtp-audit``; empty: the caller gives a folder).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import tempfile
import urllib.parse
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError, Unavailable

__all__ = ["IndexUnavailable", "WheelFile", "by_version", "is_version", "release_wheel", "resolve_wheel"]

_LOG = logging.getLogger(__name__)
# the package's only logger: the library prints nothing unless its caller configures logging (a NullHandler on
# ``mtp_audit``, set here so that the rest of the package does not import logging at start-up)
if not any(isinstance(h, logging.NullHandler) for h in logging.getLogger("mtp_audit").handlers):
    logging.getLogger("mtp_audit").addHandler(logging.NullHandler())

DEFAULT_INDEX = "https://pypi.org/pypi"
INDEX_ENV = "MTP_AUDIT_INDEX_URL"
MAX_JSON_BYTES = 16 << 20
MAX_FETCH_BYTES = 256 << 20
MAX_MEMBER_BYTES = 8 << 20
TAIL_BYTES = 1 << 20
MERGE_GAP = 64 << 10
MAX_REQUEST_BYTES = 16 << 20
TIMEOUT = 30.0

_VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class IndexUnavailable(Unavailable):
    """The package index could not be reached (or answered 5xx) and the release is not cached: "could not
    tell", not the user's mistake. ``problem`` is one line saying what to do."""


@dataclass(frozen=True)
class WheelFile:
    """One wheel of a release, from the JSON API.

    Attributes:
        filename: the wheel's file name.
        url: where it is.
        size: bytes, as the index states it.
    """

    filename: str
    url: str
    size: int


def is_version(text: str) -> bool:
    """Whether ``text`` reads as a release version (``0.5.23``, ``0.5.5.post1``, ``0.11.0rc1``) rather than a path."""
    return bool(_VERSION.match(text.strip()))


def _cache_root() -> Path | None:
    env = os.environ.get("MTP_AUDIT_CACHE_DIR")
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mtp-audit"


def _get(url: str, *, headers: dict[str, str] | None = None, limit: int) -> tuple[int, bytes]:
    """``(status, body)`` of one GET, the body bounded by ``limit`` bytes.

    Raises:
        IndexUnavailable: no connection, a time-out or a 5xx answer.
        InputError: a 4xx answer other than 404 and 416 (returned as statuses), or a body over ``limit``.
    """
    import urllib.error  # imported when the index is asked, not at CLI start-up
    import urllib.request

    try:
        req = urllib.request.Request(url, headers={"User-Agent": "mtp-audit", **(headers or {})})
    except ValueError as exc:  # an index URL that does not parse ('http://[::1')
        raise InputError(url, f"not a valid URL ({exc}); check MTP_AUDIT_INDEX_URL") from None
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - http(s) URLs only, checked by the caller
            status = resp.status
            if headers and "Range" in headers and status == 200:
                raise InputError(url, "the server did not answer the range request (it sends the whole file); "
                                      "download the wheel and give the .whl instead")
            body = resp.read(limit + 1)
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 416):
            return exc.code, b""
        if exc.code >= 500:
            raise IndexUnavailable(f"{url}: the package index answered {exc.code}") from None
        raise InputError(url, f"the package index answered {exc.code} {exc.reason}") from None
    except ValueError as exc:
        raise InputError(url, f"not a URL the index can serve: {exc}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise IndexUnavailable(f"cannot reach the package index ({reason}) and the release is not cached: "
                               f"run once online, or give a .whl or a source folder") from None
    if len(body) > limit:
        raise InputError(url, f"answer larger than {limit} bytes")
    return status, body


def _choose(files: list[dict[str, Any]]) -> WheelFile | None:
    wheels = [f for f in files if isinstance(f, dict) and str(f.get("filename", "")).endswith(".whl")
              and isinstance(f.get("url"), str) and not f.get("yanked")]

    def rank(f: dict[str, Any]) -> tuple[int, str]:
        name = f["filename"]
        return (0 if name.endswith("-py3-none-any.whl") else 1 if "x86_64" in name else 2, name)

    if not wheels:
        return None
    best = min(wheels, key=rank)
    return WheelFile(best["filename"], best["url"], int(best.get("size") or 0))


def _json_of(url: str) -> Any:
    """The JSON document at ``url``, ``None`` on 404.

    Raises:
        InputError: not JSON. IndexUnavailable: as :func:`_get`.
    """
    status, body = _get(url, limit=MAX_JSON_BYTES)
    if status == 404:
        return None
    try:
        return json.loads(body)
    except ValueError:
        raise InputError(url, "not JSON: the index does not serve the PyPI JSON API") from None


def _release_files(base: str, package: str, version: str) -> list[dict[str, Any]] | None:
    """The files of one release: ``/{package}/{version}/json`` ``urls``, else (a mirror that serves only the
    project document) ``/{package}/json`` ``releases[version]``; ``None`` when neither knows the release."""
    url = f"{base}/{package}/{version}/json"
    doc = _json_of(url)
    files = doc.get("urls") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        url = f"{base}/{package}/json"
        doc = _json_of(url)
        releases = doc.get("releases") if isinstance(doc, dict) else None
        files = releases.get(version) if isinstance(releases, dict) else None
    if not isinstance(files, list) or not files:
        return None
    # a mirror may give file URLs relative to the document
    return [dict(f, url=urllib.parse.urljoin(url, f["url"])) for f in files if isinstance(f, dict) and isinstance(f.get("url"), str)]


def resolve_wheel(package: str, version: str, *, index_url: str | None = None) -> WheelFile:
    """The wheel of ``package==version`` the analyzers will read, from the index's JSON API.

    Raises:
        InputError: no such release (404), a release without a wheel, or an answer that is not the JSON API's.
        IndexUnavailable: the index cannot be reached.
    """
    if not _NAME.match(package) or not is_version(version):
        raise InputError(f"{package} {version}", "not a package name and release version")
    base = (index_url or os.environ.get(INDEX_ENV) or DEFAULT_INDEX).rstrip("/")
    if not base.startswith(("https://", "http://")):
        raise InputError(INDEX_ENV, f"not an http(s) URL: {base}")
    files = _release_files(base, package, version)
    if files is None:
        raise InputError(f"{package} {version}", f"no such release on the package index ({base}); give a .whl or a source folder instead")
    wheel = _choose(files)
    if wheel is None:
        raise InputError(f"{package} {version}", "the release has no wheel; give a source folder instead")
    return wheel


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file whose bytes come from HTTP range requests: spans fetched
    ahead with :meth:`prefetch`, anything else read on demand (counted in ``requests`` and ``fetched``)."""

    def __init__(self, url: str, size: int) -> None:
        super().__init__()
        self.url, self.size, self.pos = url, size, 0
        self.spans: list[tuple[int, bytes]] = []
        self.requests = 0
        self.fetched = 0
        self.progress: Any = None  # a mtp_audit.progress.Progress stepped by the bytes of each answer

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def _fetch(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` in one request.

        Raises:
            InputError: the server ignores ranges, answers short, or the release grows past :data:`MAX_FETCH_BYTES`.
        """
        if self.fetched + (end - start) > MAX_FETCH_BYTES:
            raise InputError(self.url, f"reading more than {MAX_FETCH_BYTES} bytes of the wheel; refusing")
        status, body = _get(self.url, headers={"Range": f"bytes={start}-{end - 1}"}, limit=end - start)
        self.requests += 1
        if status != 206 or len(body) != end - start:
            raise InputError(self.url, f"the server did not answer the range request (status {status}, {len(body)} bytes)")
        self.fetched += len(body)
        if self.progress is not None:
            self.progress.step(len(body))
        _LOG.debug("%s: bytes %d-%d (%d bytes)", self.url, start, end - 1, len(body))
        return body

    def _held_until(self, pos: int) -> int:
        """The end of the fetched bytes that cover ``pos`` (``pos`` itself when none do)."""
        return max((start + len(data) for start, data in self.spans if start <= pos < start + len(data)), default=pos)

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Fetch each ``[start, end)`` span (already merged) ahead of the reads that need it, less what is held."""
        for start, end in spans:
            start = self._held_until(start)
            held = [s for s, _ in self.spans if start < s < end]
            end = min([end, *held])
            for a in range(start, end, MAX_REQUEST_BYTES):
                b = min(end, a + MAX_REQUEST_BYTES)
                self.spans.append((a, self._fetch(a, b)))
        self.spans.sort(key=lambda s: s[0])

    def readinto(self, buf: Any) -> int:
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        for start, data in self.spans:  # a short read of what is held is fine for a raw stream
            if start <= self.pos < start + len(data):
                n = min(n, start + len(data) - self.pos)
                buf[:n] = data[self.pos - start:self.pos - start + n]
                self.pos += n
                return n
        following = [s for s, _ in self.spans if s > self.pos]
        n = min([n, *(s - self.pos for s in following)])
        data = self._fetch(self.pos, self.pos + n)
        self.spans.append((self.pos, data))
        buf[:n] = data
        self.pos += n
        return n


def _needed(info: zipfile.ZipInfo) -> bool:
    name = info.filename
    return (name.endswith(".py") or name.endswith(".dist-info/METADATA")) and info.file_size <= MAX_MEMBER_BYTES


def _member_spans(infos: list[zipfile.ZipInfo], dir_start: int) -> list[tuple[int, int]]:
    """Merged ``[start, end)`` spans covering the local header and data of every needed member."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    spans = []
    for k, info in enumerate(ordered):
        end = ordered[k + 1].header_offset if k + 1 < len(ordered) else dir_start
        if _needed(info):
            spans.append((info.header_offset, end))
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a - merged[-1][1] <= MERGE_GAP:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _write_members(remote: zipfile.ZipFile, target: Path) -> int:
    """Copy the needed members of ``remote`` into a new zip at ``target`` (atomically); returns their count.

    Raises:
        InputError: a member fails its CRC check or does not inflate.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    count = 0
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
            for info in remote.infolist():
                if _needed(info):
                    try:
                        data = remote.read(info)
                    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                        raise InputError(f"{target.name}:{info.filename}", f"corrupt member: {exc}") from None
                    out.writestr(info.filename, data)
                    count += 1
                elif info.filename.endswith(".so") and not info.is_dir():
                    out.writestr(info.filename, b"")  # the name says the wheel ships it; its bytes are never read
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def release_wheel(package: str, version: str, *, cache_dir: str | os.PathLike[str] | None = None,
                  index_url: str | None = None, offline: bool = False) -> Path:
    """A local zip holding the members of ``package==version``'s wheel the analyzers read (see the module
    docstring), from the cache when it is there, else fetched with range requests and cached.

    Args:
        package: ``sglang`` or ``vllm`` (any package on the index works).
        version: the release (``0.5.23``).
        cache_dir: the cache root (default ``$MTP_AUDIT_CACHE_DIR`` or ``~/.cache/mtp-audit``); required when
            ``MTP_AUDIT_CACHE_DIR`` is empty (cache off).
        index_url: the JSON API base (default ``$MTP_AUDIT_INDEX_URL`` or ``https://pypi.org/pypi``).
        offline: use the cache only.

    Raises:
        InputError: no such release, no wheel, a server that ignores range requests, a corrupt member, no cache
            folder to write to.
        IndexUnavailable: not cached, and the index cannot be reached (or ``offline``).
    """
    root = Path(cache_dir) if cache_dir is not None else _cache_root()
    if root is None:
        raise InputError("MTP_AUDIT_CACHE_DIR", "is empty (cache off): give cache_dir to keep the fetched members")
    folder = root / "engines-v2" / package / version  # v2: compiled members kept by name (v1 zips lack them)
    cached = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if cached:
        return cached[0]
    if offline:
        raise IndexUnavailable(f"{package} {version} is not in the cache ({folder}) and offline: run once online "
                               f"or give a .whl")
    wheel = resolve_wheel(package, version, index_url=index_url)
    remote_file = _RangeFile(wheel.url, wheel.size or _size_of(wheel.url))
    remote_file.prefetch([(max(0, remote_file.size - TAIL_BYTES), remote_file.size)])  # the central directory
    try:
        remote = zipfile.ZipFile(io.BufferedReader(remote_file, buffer_size=1 << 16))
    except zipfile.BadZipFile as exc:
        raise InputError(wheel.url, f"not a zip file: {exc}") from None
    spans = _member_spans(remote.infolist(), remote.start_dir)
    from mtp_audit.progress import Progress

    _LOG.info("%s %s: fetching %d bytes of the %d-byte wheel %s", package, version, sum(b - a for a, b in spans),
              remote_file.size, wheel.filename)
    with Progress(sum(b - a for a, b in spans), f"{package} {version} from the package index", min_total=1, unit="B") as bar:
        remote_file.progress = bar
        remote_file.prefetch(spans)
        remote_file.progress = None
    count = _write_members(remote, folder / wheel.filename)
    _LOG.info("%s %s: %d members, %d bytes in %d range requests from %s", package, version, count,
              remote_file.fetched, remote_file.requests, wheel.url)
    return folder / wheel.filename


def _size_of(url: str) -> int:
    """The file's size from a one-byte range request's ``Content-Range`` (the JSON API usually states it).

    Raises:
        InputError: the server does not answer ranges.
    """
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"User-Agent": "mtp-audit", "Range": "bytes=0-0"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310
            total = (resp.headers.get("Content-Range") or "").rpartition("/")[2]
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise IndexUnavailable(f"cannot reach {url} ({getattr(exc, 'reason', exc)})") from None
    if not total.isdigit():
        raise InputError(url, "the server does not answer range requests")
    return int(total)


def by_version(package: str, target: str | None) -> str | None:
    """``target`` as given when it is ``None`` or an existing path; a release version (``0.5.23``) is replaced by
    the local zip of :func:`release_wheel`. What ``mtp-audit sglang 0.5.23``, ``--sglang 0.5.23`` and
    ``--vllm 0.33.0`` do with their argument.

    Raises:
        InputError / IndexUnavailable: as :func:`release_wheel`.
    """
    if target is None or os.path.lexists(target) or not is_version(target):
        return target
    return str(release_wheel(package, target.strip()))
