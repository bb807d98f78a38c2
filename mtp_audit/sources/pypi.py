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
4. The needed members are copied as they are in the wheel (compressed bytes, local headers and central-directory
   records; nothing is inflated here) into a zip of their own, which the analyzers open like any ``.whl``, with the
   same bounds (the 100x inflation guard, the tree's total, each member's CRC-32). The cache names the file itself
   (:func:`cache_name`: the index's wheel name only when it is a plain wheel name of this release) in a folder keyed
   by the index URL, package and version (:func:`entry_folder`), and seals it (``entry.json``: index, release,
   the zip's SHA-256 and size). A later run against the same index finds it there and makes no request (offline
   works from the cache); an entry that fails its seal (cut, damaged, another index's) is not used and is
   replaced by a fresh fetch. The index's own ``digests.sha256`` is compared when every byte of the wheel was fetched.

Every request goes through the shared HTTP policy (:mod:`mtp_audit.sources.netpolicy`): http(s) only, for the
index and every URL it hands back (a wheel ``url`` of ``file://`` is refused, never opened); the run's network
time (``MTP_AUDIT_NETWORK_SECONDS``) bounds the whole fetch; every protocol error is one line.

For sglang 0.5.23 that is about 17.5 MB in 9 requests instead of a 39 MB wheel; for vllm 0.33.0 about 12.5 MB
instead of 336 MB. Bounds: :data:`MAX_JSON_BYTES`, :data:`MAX_FETCH_BYTES` per release, :data:`MAX_MEMBER_BYTES`
per member (a larger member is left out), :data:`TIMEOUT` seconds per socket read, the run's network time in all. The index is
``$MTP_AUDIT_INDEX_URL`` (default ``https://pypi.org/pypi``, a mirror serving the same JSON API works); the
cache root is ``$MTP_AUDIT_CACHE_DIR`` (default ``~/.cache/mtp-audit``; empty: the caller gives a folder).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import struct
import tempfile
import urllib.parse
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError, Unavailable
from mtp_audit.sources import netpolicy
from mtp_audit.sources.netpolicy import Answer

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
#: Largest wheel size taken from the JSON API (bytes); anything else is not a size (the server's ``Content-Range`` is
#: asked instead).
MAX_DECLARED_SIZE = 1 << 48

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
        url: where it is (absolute; checked to be http(s) before it is read).
        size: bytes, as the index states it (0: not stated as a number of bytes).
        sha256: the index's ``digests.sha256`` (64 hex digits), or None.
    """

    filename: str
    url: str
    size: int
    sha256: str | None = None


def is_version(text: str) -> bool:
    """Whether ``text`` reads as a release version (``0.5.23``, ``0.5.5.post1``, ``0.11.0rc1``) rather than a path."""
    return bool(_VERSION.match(text.strip()))


def _cache_root() -> Path | None:
    env = os.environ.get("MTP_AUDIT_CACHE_DIR")
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mtp-audit"


_PROCESS_ROOT: list[Path] = []


def _process_root() -> Path:
    """A folder for the fetched members when caching is off (``MTP_AUDIT_CACHE_DIR`` empty): made once per process
    and removed when it exits, so nothing outlives the run."""
    if not _PROCESS_ROOT:
        import atexit
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="mtp-audit-releases-"))
        atexit.register(shutil.rmtree, folder, True)
        _PROCESS_ROOT.append(folder)
    return _PROCESS_ROOT[0]


def _get(url: str, *, headers: dict[str, str] | None = None, limit: int, expect: tuple[int, ...] = (200,)) -> Answer:
    """One GET under the shared HTTP policy (:mod:`mtp_audit.sources.netpolicy`: http(s) only, the run's network
    time, redirects to http(s) URLs, every protocol error one line), the body read (at most ``limit`` bytes) only
    for a status in ``expect``.

    Returns:
        The answer for a status in ``expect``, 404, 416, or another 2xx (body unread: the caller decides).

    Raises:
        IndexUnavailable: no connection, a time-out, the run's network time spent, a broken answer, 429 or a 5xx.
        InputError: another 4xx or 3xx, a body over ``limit``, a URL that is not http(s).
    """
    try:
        answer = netpolicy.get(url, headers=headers, timeout=TIMEOUT, limit=limit, expect=expect,
                               redirects=netpolicy.ANY_HTTP, where=url)
    except netpolicy.NetProblem as exc:
        if exc.kind == "unreachable":
            raise IndexUnavailable(f"cannot reach the package index: {exc.problem}; the release is not cached: "
                                   "run once online, or give a .whl or a source folder") from None
        exc.raise_as(url, IndexUnavailable)
        raise  # not reached: raise_as raises
    status = answer.status
    if status in expect or status in (404, 416) or 200 <= status < 300:
        return answer
    if status >= 500 or status == 429:
        raise IndexUnavailable(f"{url}: the package index answered {status}; try again later or give a .whl")
    raise InputError(url, f"the package index answered {status}")


def _size_field(value: object, filename: str) -> int:
    """The wheel's size as the JSON API states it: an integer of bytes, or 0 (unknown) for anything else (``"12kB"``,
    ``{}``, ``1e400``, ``[1]``, ``true``, a negative number), with a note in the log; the size then comes from the
    server's ``Content-Range`` (:func:`_size_of`)."""
    if type(value) is int and 0 < value < MAX_DECLARED_SIZE:
        return value
    if value not in (None, 0):
        _LOG.warning("%s: the index states its size as %.40r, not a number of bytes; ignored (the server's "
                     "Content-Range gives it)", filename, value)
    return 0


def _sha256_field(value: object) -> str | None:
    """The ``digests.sha256`` of a JSON API file entry, when it is 64 hexadecimal digits."""
    digest = value.get("sha256") if isinstance(value, dict) else None
    return digest.lower() if isinstance(digest, str) and re.fullmatch(r"[0-9a-fA-F]{64}", digest) else None


def _choose(files: list[dict[str, Any]]) -> WheelFile | None:
    wheels = [f for f in files if isinstance(f.get("filename"), str) and f["filename"].endswith(".whl")
              and isinstance(f.get("url"), str) and not f.get("yanked")]

    def rank(f: dict[str, Any]) -> tuple[int, str]:
        name = f["filename"]
        return (0 if name.endswith("-py3-none-any.whl") else 1 if "x86_64" in name else 2, name)

    if not wheels:
        return None
    best = min(wheels, key=rank)
    return WheelFile(best["filename"], best["url"], _size_field(best.get("size"), best["filename"]),
                     _sha256_field(best.get("digests")))


def _json_of(url: str) -> Any:
    """The JSON document at ``url``, ``None`` on 404.

    Raises:
        InputError: not JSON. IndexUnavailable: as :func:`_get`.
    """
    answer = _get(url, limit=MAX_JSON_BYTES)
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise InputError(url, f"the package index answered {answer.status}, not the JSON API's 200")
    try:
        return json.loads(answer.body)
    except (ValueError, RecursionError):
        raise InputError(url, "not JSON: the index does not serve the PyPI JSON API") from None


def _release_files(base: str, package: str, version: str) -> list[dict[str, Any]] | None:
    """The files of one release: ``/{package}/{version}/json`` ``urls``, else (a mirror that serves only the
    project document) ``/{package}/json`` ``releases[version]``; ``None`` when neither knows the release. Each
    file's ``url`` is made absolute against the document (a mirror may give it relative); one that does not
    parse is dropped."""
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
    out = []
    for f in files:
        if isinstance(f, dict) and isinstance(f.get("url"), str):
            try:
                out.append(dict(f, url=urllib.parse.urljoin(url, f["url"])))
            except ValueError:
                continue
    return out


class NoSuchRelease(InputError):
    """The index knows no release of that exact spelling (404 on ``/{package}/{version}/json`` and in the project
    document): :func:`release_wheel` then looks for the same release under another spelling."""


def same_release(a: str, b: str) -> bool:
    """Whether two version strings name one release under PEP 440 (``0.33`` and ``0.33.0``: packaging's ``Version``
    equality); text that is not a version equals only itself."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _index_spelling(base: str, package: str, version: str) -> str | None:
    """The release key of the project document that names the same release as ``version`` under PEP 440 (the index
    spells ``0.33.0`` where the user typed ``0.33``), or ``None``."""
    doc = _json_of(f"{base}/{package}/json")
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        return None
    return next((k for k in releases if isinstance(k, str) and k != version and _VERSION.match(k) and same_release(k, version)), None)


def _equal_entry(folder: Path, base: str, package: str, version: str) -> Path | None:
    """A sealed cache entry of the same release under another spelling (``0.33.0`` for ``0.33``), or ``None``; at
    most 1,000 sibling entries are looked at."""
    try:
        siblings = [p.name for _, p in zip(range(1000), folder.parent.iterdir())]
    except OSError:
        return None
    for name in sorted(siblings):
        if name != version and _VERSION.match(name) and same_release(name, version):
            hit = _sealed_entry(folder.parent / name, base, package, name)
            if hit is not None:
                return hit
    return None


def _index_base(index_url: str | None) -> str:
    """The JSON API base: ``index_url``, else ``$MTP_AUDIT_INDEX_URL``, else PyPI; an http(s) URL.

    Raises:
        InputError: not an http(s) URL.
    """
    base = (index_url or os.environ.get(INDEX_ENV) or DEFAULT_INDEX).rstrip("/")
    try:
        netpolicy.check_url(base, base[:200])
    except netpolicy.NetProblem as exc:
        raise InputError(INDEX_ENV, exc.problem) from None
    return base


def resolve_wheel(package: str, version: str, *, index_url: str | None = None) -> WheelFile:
    """The wheel of ``package==version`` the analyzers will read, from the index's JSON API.

    Raises:
        InputError: no such release (404), a release without a wheel, an answer that is not the JSON API's, a wheel
            URL that is not http(s) (``file://`` is never opened).
        IndexUnavailable: the index cannot be reached.
    """
    if not _NAME.match(package) or not is_version(version):
        raise InputError(f"{package} {version}", "not a package name and release version")
    base = _index_base(index_url)
    files = _release_files(base, package, version)
    if files is None:
        raise NoSuchRelease(f"{package} {version}", f"no such release on the package index ({base}); give a .whl or a source folder instead")
    wheel = _choose(files)
    if wheel is None:
        raise InputError(f"{package} {version}", "the release has no wheel; give a source folder instead")
    try:
        netpolicy.check_url(wheel.url, "the wheel's url in the index")
    except netpolicy.NetProblem as exc:
        raise InputError(f"{package} {version}", f"{exc.problem}; not read") from None
    return wheel


_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


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
            InputError: the server ignores ranges, answers short or another span or file size than asked, or the
                release grows past :data:`MAX_FETCH_BYTES`.
        """
        if self.fetched + (end - start) > MAX_FETCH_BYTES:
            raise InputError(self.url, f"reading more than {MAX_FETCH_BYTES} bytes of the wheel; refusing")
        answer = _get(self.url, headers={"Range": f"bytes={start}-{end - 1}"}, limit=end - start, expect=(206,))
        self.requests += 1
        if answer.status == 200:
            raise InputError(self.url, "the server did not answer the range request (it sends the whole file); "
                                       "download the wheel and give the .whl instead")
        m = _CONTENT_RANGE.match(answer.headers.get("Content-Range") or "")
        span = (int(m.group(1)), int(m.group(2)) + 1, int(m.group(3))) if m else None
        if answer.status != 206 or len(answer.body) != end - start or span != (start, end, self.size):
            raise InputError(self.url, f"the server did not answer the range request (status {answer.status}, "
                                       f"{len(answer.body)} bytes, Content-Range {(answer.headers.get('Content-Range') or '')[:60]!r})")
        self.fetched += len(answer.body)
        if self.progress is not None:
            self.progress.step(len(answer.body))
        _LOG.debug("%s: bytes %d-%d (%d bytes)", self.url, start, end - 1, len(answer.body))
        return answer.body

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

    def whole(self) -> bytes | None:
        """The whole file when the fetched spans cover it (a wheel smaller than the tail read), else None."""
        pos, parts = 0, []
        for start, data in sorted(self.spans, key=lambda s: s[0]):
            if start > pos:
                return None
            if start + len(data) > pos:
                parts.append(data[pos - start:])
                pos = start + len(data)
        return b"".join(parts) if pos >= self.size else None

    def pread(self, pos: int, n: int) -> bytes:
        """``n`` bytes at ``pos`` (fewer at the end of the file)."""
        self.seek(pos)
        out = bytearray()
        while len(out) < n:
            buf = bytearray(n - len(out))
            got = self.readinto(buf)
            if not got:
                break
            out += buf[:got]
        return bytes(out)

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


@dataclass(frozen=True)
class _Member:
    """One central-directory record of the remote wheel, as its bytes: ``raw`` (46 bytes + name + extra + comment),
    ``name``, ``offset`` (of its local header), ``compressed`` and ``size`` (declared)."""

    raw: bytes
    name: str
    offset: int
    compressed: int
    size: int


_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # zipfile.structCentralDir: 46 bytes
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # zipfile.structFileHeader: 30 bytes


def _central_records(remote: _RangeFile, start: int, count: int) -> list[_Member]:
    """The ``count`` central-directory records from ``start`` (already parsed once by :mod:`zipfile`, which found
    the directory), as bytes to copy.

    Raises:
        InputError: a record does not parse.
    """
    out, pos = [], start
    for _ in range(count):
        head = remote.pread(pos, _CENTRAL.size)
        if len(head) != _CENTRAL.size or head[:4] != b"PK\x01\x02":
            raise InputError(remote.url, "the wheel's central directory does not parse")
        f = _CENTRAL.unpack(head)
        n_name, n_extra, n_comment = f[12], f[13], f[14]
        rest = remote.pread(pos + _CENTRAL.size, n_name + n_extra + n_comment)
        name = rest[:n_name].decode("utf-8" if f[5] & 0x800 else "cp437", "replace")
        out.append(_Member(head + rest, name, f[18], f[10], f[11]))
        pos += _CENTRAL.size + len(rest)
    return out


def _needed(member: _Member) -> bool:
    """A member the analyzers read (``*.py``, ``*.dist-info/METADATA``), within :data:`MAX_MEMBER_BYTES` as declared
    and not a zip64 record (whose offsets this copy does not rewrite)."""
    name = member.name
    return ((name.endswith(".py") or name.endswith(".dist-info/METADATA")) and member.size <= MAX_MEMBER_BYTES
            and 0xFFFFFFFF not in (member.offset, member.compressed, member.size))


def _member_spans(members: list[_Member], dir_start: int) -> list[tuple[int, int]]:
    """Merged ``[start, end)`` spans covering the local header and data of every needed member."""
    ordered = sorted(members, key=lambda m: m.offset)
    spans = []
    for k, member in enumerate(ordered):
        end = ordered[k + 1].offset if k + 1 < len(ordered) else dir_start
        if _needed(member):
            spans.append((member.offset, max(member.offset, min(end, dir_start))))
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a - merged[-1][1] <= MERGE_GAP:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _compiled(member: _Member) -> bool:
    """A compiled extension (``*.so``): kept in the copy by name only, as an empty member, since the vLLM audit reads
    which extensions a wheel ships (``VllmTree.has_compiled``) and never their bytes."""
    return member.name.endswith(".so") and not member.name.endswith("/")


def _empty_member(member: _Member, offset: int) -> tuple[bytes, bytes]:
    """``(local header, central record)`` of an empty stored member named as ``member`` (its date kept), its local
    header at ``offset`` of the copy."""
    name = member.raw[_CENTRAL.size:_CENTRAL.size + _CENTRAL.unpack(member.raw[:_CENTRAL.size])[12]]
    f = _CENTRAL.unpack(member.raw[:_CENTRAL.size])
    flags = f[5] & 0x800  # keep only the UTF-8 name flag
    local = _LOCAL.pack(b"PK\x03\x04", 20, 0, flags, 0, f[7], f[8], 0, 0, 0, len(name), 0) + name
    central = _CENTRAL.pack(b"PK\x01\x02", 20, f[2], 20, 0, flags, 0, f[7], f[8], 0, 0, 0, len(name), 0, 0, 0, 0, 0,
                            offset) + name
    return local, central


def _local_bytes(remote: _RangeFile, member: _Member) -> bytes:
    """The member's local header and its compressed data, as they are in the wheel (cut at the end of the file: the
    analyzers then note a truncated member, as they would in the whole wheel)."""
    head = remote.pread(member.offset, _LOCAL.size)
    if len(head) < _LOCAL.size:
        return head
    n_name, n_extra = _LOCAL.unpack(head)[10:12]
    return head + remote.pread(member.offset + _LOCAL.size, n_name + n_extra + member.compressed)


def _write_members(remote: _RangeFile, members: list[_Member], target: Path) -> int:
    """Write the needed members of the remote wheel to a zip of their own at ``target`` (atomically), each member's
    bytes copied as they are (compressed, never inflated here), with the central directory's records and a new end
    record: the analyzers open it as they open a local ``.whl``, with the same bounds (the 100x inflation guard, the
    tree's total, each member's CRC-32). Returns the count.

    Raises:
        InputError: more than 65,535 members to keep (a zip64 end record would be needed).
    """
    keep = [m for m in members if _needed(m) or _compiled(m)]
    if len(keep) > 0xFFFF:
        raise InputError(remote.url, f"{len(keep)} source members; more than a plain zip holds")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            central = bytearray()
            for member in keep:
                offset = fh.tell()
                if _needed(member):
                    fh.write(_local_bytes(remote, member))
                    central += member.raw[:42] + struct.pack("<L", offset) + member.raw[46:]
                else:
                    local, record = _empty_member(member, offset)
                    fh.write(local)
                    central += record
            start = fh.tell()
            fh.write(central)
            fh.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(keep), len(keep), len(central), start, 0))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(keep)


def release_wheel(package: str, version: str, *, cache_dir: str | os.PathLike[str] | None = None,
                  index_url: str | None = None, offline: bool = False) -> Path:
    """A local zip holding the members of ``package==version``'s wheel the analyzers read (see the module
    docstring), from the cache when a sealed entry for this index is there, else fetched with range requests and
    cached. One run (:func:`mtp_audit.sources.bounded.run_budget`): the requests share the run's network time.

    Args:
        package: ``sglang`` or ``vllm`` (any package on the index works).
        version: the release (``0.5.23``).
        cache_dir: the cache root (default ``$MTP_AUDIT_CACHE_DIR`` or ``~/.cache/mtp-audit``; with
            ``MTP_AUDIT_CACHE_DIR`` empty, cache off: a temporary folder removed when the process exits).
        index_url: the JSON API base (default ``$MTP_AUDIT_INDEX_URL`` or ``https://pypi.org/pypi``).
        offline: use the cache only.

    Raises:
        InputError: no such release, no wheel, a wheel URL that is not http(s), a server that ignores range requests,
            a wheel whose bytes differ from the index's SHA-256.
        IndexUnavailable: not cached, and the index cannot be reached (or ``offline``), or the run's network time is
            spent.
    """
    from mtp_audit.sources.bounded import run_budget

    root = Path(cache_dir) if cache_dir is not None else (_cache_root() or _process_root())
    version = version.strip()
    base = _index_base(index_url)
    folder = entry_folder(root, base, package, version)
    with run_budget():
        hit = _sealed_entry(folder, base, package, version) or _equal_entry(folder, base, package, version)
        if hit is not None:
            return hit
        if offline:
            raise IndexUnavailable(f"{package} {version} from {base} is not in the cache ({folder}) and offline: run "
                                   "once online or give a .whl")
        try:
            wheel = resolve_wheel(package, version, index_url=base)
        except NoSuchRelease:
            spelled = _index_spelling(base, package, version)  # 0.33 typed, 0.33.0 on the index (PEP 440)
            if spelled is None:
                raise
            return release_wheel(package, spelled, cache_dir=root, index_url=base)
        return _fetch_release(wheel, folder, base, package, version)


def _fetch_release(wheel: WheelFile, folder: Path, base: str, package: str, version: str) -> Path:
    """Fetch the needed members of ``wheel`` (the tail with the central directory, then the members' spans), copy
    them into the cache entry and seal it (:func:`_seal`).

    Raises:
        InputError / IndexUnavailable: as :func:`release_wheel`.
    """
    remote_file = _RangeFile(wheel.url, wheel.size or _size_of(wheel.url))
    remote_file.prefetch([(max(0, remote_file.size - TAIL_BYTES), remote_file.size)])  # the central directory
    try:
        remote = zipfile.ZipFile(io.BufferedReader(remote_file, buffer_size=1 << 16))
        start, count = remote.start_dir, len(remote.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error, IndexError,
            KeyError, OverflowError, NotImplementedError) as exc:
        raise InputError(wheel.url, f"not a zip file: {str(exc)[:200] or type(exc).__name__}") from None
    members = _central_records(remote_file, start, count)
    spans = _member_spans(members, start)
    from mtp_audit.progress import Progress

    with Progress(sum(b - a for a, b in spans), f"{package} {version} from the package index", min_total=1, unit="B") as bar:
        remote_file.progress = bar
        remote_file.prefetch(spans)
        remote_file.progress = None
    _check_digest(remote_file, wheel)
    name = cache_name(package, version, wheel.filename)
    try:
        count = _write_members(remote_file, members, folder / name)
        _seal(folder, name, {"index": base, "package": package, "version": version, "wheel": wheel.filename,
                             "url": wheel.url, "index_sha256": wheel.sha256})
    except OSError as exc:
        raise InputError(str(folder), f"cannot write the cache entry ({exc.strerror or exc}); set MTP_AUDIT_CACHE_DIR "
                                      "to another folder") from None
    _LOG.info("%s %s: %d members, %d bytes in %d range requests from %s", package, version, count,
              remote_file.fetched, remote_file.requests, wheel.url)
    return folder / name


def _check_digest(remote: _RangeFile, wheel: WheelFile) -> None:
    """Compare the wheel's bytes with the SHA-256 the index gives, when every byte of the file was fetched (a wheel
    no larger than the tail read); a larger wheel is read in parts, and each member is checked by its CRC-32 when
    the analyzers read it.

    Raises:
        InputError: the digests differ.
    """
    whole = remote.whole() if wheel.sha256 else None
    if whole is not None and hashlib.sha256(whole).hexdigest() != wheel.sha256:
        raise InputError(wheel.url, "the file's SHA-256 is not the one the package index gives for it; not used")


_WHEEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]*-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_]*)?"
                         r"-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl$")


def entry_folder(root: Path, base: str, package: str, version: str) -> Path:
    """The cache folder of one release from one index: ``<root>/engines-v3/<host>-<sha256(index URL)>/<package>/
    <version>`` (package and version already checked against their patterns), so two indexes never share an entry
    (v3: compiled extensions kept by name)."""
    host = urllib.parse.urlsplit(base).hostname or ""
    return root / "engines-v3" / netpolicy.safe_name(base, keep=host) / package / version


def cache_name(package: str, version: str, filename: str) -> str:
    """The cached zip's file name: the index's wheel name when it is a plain wheel file name of this release (PEP 427
    characters, no separator, at most 200 characters: the reports name the wheel as the index does), else one the
    cache makes (``<package>-<version>-<hash>.whl``). Never a path from the server."""
    prefix = f"{package.replace('-', '_').lower()}-{version}-"
    if len(filename) <= 200 and _WHEEL_NAME.match(filename) and filename.lower().startswith(prefix):
        return filename
    return f"{netpolicy.safe_name(filename, keep=f'{package}-{version}')}.whl"


_SEAL = "entry.json"
_MAX_SEAL_BYTES = 1 << 16


def _seal(folder: Path, name: str, meta: dict[str, Any]) -> None:
    """Write the entry's seal (atomically, after the zip): what it holds, from where, and the zip's SHA-256 and size."""
    digest, size = _digest_of(folder / name)
    doc = json.dumps({"entry": 1, "name": name, "sha256": digest, "bytes": size, **meta}, sort_keys=True).encode()
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(doc)
        os.replace(tmp, folder / _SEAL)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest_of(path: Path) -> tuple[str | None, int]:
    """``(sha256, bytes)`` of a regular file (``(None, 0)`` for anything else: a FIFO, a symlink, a folder)."""
    from mtp_audit.sources.bounded import NotRegularFile, open_regular

    h, size = hashlib.sha256(), 0
    try:
        fd = open_regular(path, follow=False)
    except (NotRegularFile, OSError):
        return None, 0
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _sealed_entry(folder: Path, base: str, package: str, version: str) -> Path | None:
    """The cached zip of this release from this index when its seal matches it (index, package, version, name, the
    zip's SHA-256 and size); otherwise None: the entry is not used, and the fetch that follows replaces the zip and
    the seal (each with ``os.replace``; nothing is deleted, so a run fetching the same release at the same time never
    loses its files, and both write the same bytes)."""
    from mtp_audit.sources.bounded import NotRegularFile, open_regular

    try:
        with os.fdopen(open_regular(folder / _SEAL, follow=False), "rb") as fh:
            seal = json.loads(fh.read(_MAX_SEAL_BYTES))
    except (NotRegularFile, OSError, ValueError, RecursionError):
        seal = None
    ok = (isinstance(seal, dict) and seal.get("entry") == 1 and seal.get("index") == base and seal.get("package") == package
          and seal.get("version") == version and isinstance(seal.get("name"), str)
          and seal["name"] in (cache_name(package, version, str(seal.get("wheel"))),))
    if ok:
        path = folder / seal["name"]
        if _digest_of(path) == (seal.get("sha256"), seal.get("bytes")):
            return path
    return None


def _size_of(url: str) -> int:
    """The file's size from a one-byte range request's ``Content-Range`` (when the JSON API does not state it).

    Raises:
        InputError: the server does not answer ranges. IndexUnavailable: as :func:`_get`.
    """
    answer = _get(url, headers={"Range": "bytes=0-0"}, limit=1, expect=(206,))
    total = (answer.headers.get("Content-Range") or "").rpartition("/")[2]
    if answer.status != 206 or not total.isdigit() or not 0 < int(total) < MAX_DECLARED_SIZE:
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
