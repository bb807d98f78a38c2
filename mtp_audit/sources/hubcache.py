"""On-disk cache for hub audits: shard headers, file listings, small JSON files and branch -> commit
refs, all keyed by the repo and the commit sha.

A commit sha names immutable content (git objects are content-addressed), so an entry keyed by
``(repo, commit sha, file)`` never goes stale and needs no expiry; a second audit of the same commit
makes no header request ("Cache shard-header results keyed by (repo, commit sha, file) in
the user cache folder"; ``../shared/research/peers.md`` "key on commit sha so entries never go
stale"). Branch and tag names are *not* trusted from this cache while online: they are stored only so
that ``--offline`` can find the commit it audited last time.

Layout under :func:`default_cache_dir` (``$MTP_AUDIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/mtp-audit``, else ``~/.cache/mtp-audit``), one folder per hub endpoint (a mirror's
answers are never served for another hub)::

    hub-v2/<sha256(endpoint)[:16]>/headers/<org>--<name>/<sha>/<sha256(file)>.hdr   8-byte LE file size + the shard's first 8+n bytes
    hub-v2/<sha256(endpoint)[:16]>/hub/<org>--<name>/<sha>/listing.json             {"repo", "commit", "files": [...]}
    hub-v2/<sha256(endpoint)[:16]>/hub/<org>--<name>/<sha>/files/<sha256(file)>     the file's bytes (config.json, the index ...)
    hub-v2/<sha256(endpoint)[:16]>/hub/<org>--<name>/refs/<sha256(revision)>        the commit the revision pointed at, last seen online

Every entry is sealed (:func:`seal`): a magic line, then one JSON line naming what it holds (endpoint,
repo, commit, file or revision) with the SHA-256 and length of the payload, then the payload. On read
(:func:`unseal`) every field must match what is asked for and the hash must match the payload: a truncated
or bit-flipped entry, one copied from another repo, file or endpoint, or a file that is not an entry is a
miss, and the caller fetches again. Entries are opened once without following a symlink and without
blocking (a FIFO, ``/dev/zero`` or a symlink out of the cache is a miss) and read bounded. Small files are
cached only after they parsed (a proxy's HTML "200" is never cached).

Writes are atomic (temporary file + ``os.replace``) so a crash or a signal never leaves a half-written
entry. Failing to write (read-only home) is not an error: the cache is an optimisation.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import tempfile
from pathlib import Path

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import MAX_JSON_BYTES, open_regular, read_fd_bounded

#: First line of every sealed entry.
MAGIC = b"mtp-audit cache entry 2\n"

#: Public hub endpoint, the default of :class:`HubCache`.
DEFAULT_ENDPOINT = "https://huggingface.co"

#: Environment variable that overrides the cache root (tests point it at a temporary folder).
CACHE_ENV = "MTP_AUDIT_CACHE_DIR"

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")

#: Largest cached header entry read back (bytes): the 100 MB header cap of safetensors plus prefixes.
_MAX_HEADER_ENTRY = 100_000_000 + 16


def default_cache_dir() -> Path:
    """The cache root: ``$MTP_AUDIT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtp-audit``, else
    ``~/.cache/mtp-audit``. Nothing is created here."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mtp-audit"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _repo_folder(repo: str) -> str:
    """``org/name`` -> ``org--name`` (the huggingface_hub cache spelling; repo ids cannot contain
    ``--`` themselves, see ``huggingface_hub.utils.validate_repo_id``)."""
    return repo.replace("/", "--")


def seal(fields: dict[str, str], payload: bytes) -> bytes:
    """An entry: :data:`MAGIC`, one JSON line of ``fields`` plus the payload's ``sha256`` and ``length``, the payload."""
    meta = dict(fields, sha256=hashlib.sha256(payload).hexdigest(), length=len(payload))
    return MAGIC + json.dumps(meta, sort_keys=True, allow_nan=False).encode("utf-8") + b"\n" + payload


def unseal(data: bytes | None, fields: dict[str, str]) -> bytes | None:
    """The payload of a :func:`seal` ed entry whose fields equal ``fields`` and whose hash and length match,
    else None."""
    if data is None or not data.startswith(MAGIC):
        return None
    line, sep, payload = data[len(MAGIC):].partition(b"\n")
    try:
        meta = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not sep or not isinstance(meta, dict) or any(meta.get(k) != v for k, v in fields.items()):
        return None
    if meta.get("length") != len(payload) or meta.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return payload


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file in the same folder; False on any OS error. The
    temporary file is removed on any failure, a signal included."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            return False
        raise


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO or device) of at most ``limit``
    bytes, read through one descriptor, else None."""
    try:
        fd = open_regular(path, follow=False)
    except OSError:
        return None
    try:
        return read_fd_bounded(fd, limit, str(path))
    except (InputError, OSError):
        return None
    finally:
        os.close(fd)


class HubCache:
    """The mtp-audit cache for one root folder.

    Args:
        root: cache root (see :func:`default_cache_dir`); created on first write.
        endpoint: the hub the entries come from (``HF_ENDPOINT``); each endpoint has its own folder and
            every entry names it.

    Every ``get_*`` returns None when the entry is absent, damaged or not the one asked for; every
    ``put_*`` returns whether the entry was written. ``commit`` arguments must be 40-hex commit shas
    (anything else is refused, so a branch name can never be mistaken for an immutable key).
    """

    def __init__(self, root: Path, endpoint: str = DEFAULT_ENDPOINT) -> None:
        self.root = root
        self.endpoint = endpoint.rstrip("/")
        self.base = root / "hub-v2" / _digest(self.endpoint)[:16]

    def _fields(self, repo: str, commit: str, **more: str) -> dict[str, str]:
        return {"endpoint": self.endpoint, "repo": repo, "commit": commit, **more}

    # -- shard headers -------------------------------------------------------------------------

    def _header_path(self, repo: str, commit: str, file: str) -> Path:
        return self.base / "headers" / _repo_folder(repo) / commit / f"{_digest(file)}.hdr"

    def get_header(self, repo: str, commit: str, file: str) -> tuple[bytes, int] | None:
        """The cached ``(prefix, file_size)`` of a shard: ``prefix`` is the file's first ``8 + n`` bytes
        (length prefix + JSON header) and ``file_size`` its total size in bytes."""
        if not _SHA_RE.match(commit):
            return None
        data = unseal(_read_bounded(self._header_path(repo, commit, file), _MAX_HEADER_ENTRY + 4096),
                      self._fields(repo, commit, kind="header", file=file))
        if data is None or len(data) < 16:
            return None
        (size,) = struct.unpack("<Q", data[:8])
        prefix = data[8:]
        (n,) = struct.unpack("<Q", prefix[:8])
        if len(prefix) != 8 + n or size < len(prefix):
            return None
        return prefix, size

    def put_header(self, repo: str, commit: str, file: str, prefix: bytes, file_size: int) -> bool:
        """Store a shard's ``8 + n`` byte prefix and its file size."""
        if not _SHA_RE.match(commit):
            return False
        payload = struct.pack("<Q", file_size) + prefix
        return _write_atomic(self._header_path(repo, commit, file), seal(self._fields(repo, commit, kind="header", file=file), payload))

    # -- listings --------------------------------------------------------------------------------

    def _commit_dir(self, repo: str, commit: str) -> Path:
        return self.base / "hub" / _repo_folder(repo) / commit

    def get_listing(self, repo: str, commit: str) -> tuple[str, ...] | None:
        """The repo's file list at ``commit`` as last listed from the hub."""
        if not _SHA_RE.match(commit):
            return None
        raw = unseal(_read_bounded(self._commit_dir(repo, commit) / "listing.json", MAX_JSON_BYTES + 4096),
                     self._fields(repo, commit, kind="listing"))
        if raw is None:
            return None
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(obj, dict) or obj.get("repo") != repo or obj.get("commit") != commit:
            return None
        files = obj.get("files")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            return None
        return tuple(files)

    def put_listing(self, repo: str, commit: str, files: tuple[str, ...]) -> bool:
        """Store the repo's file list at ``commit``."""
        if not _SHA_RE.match(commit):
            return False
        doc = {"repo": repo, "commit": commit, "files": sorted(files)}
        data = seal(self._fields(repo, commit, kind="listing"), json.dumps(doc, allow_nan=False).encode("utf-8"))
        return _write_atomic(self._commit_dir(repo, commit) / "listing.json", data)

    # -- small files -----------------------------------------------------------------------------

    def file_path(self, repo: str, commit: str, file: str) -> Path:
        """Where the entry of a small file of ``repo`` at ``commit`` is (or would be) cached."""
        return self._commit_dir(repo, commit) / "files" / _digest(file)

    def get_file(self, repo: str, commit: str, file: str) -> bytes | None:
        """The cached bytes of a small file (at most :data:`MAX_JSON_BYTES`), or None."""
        if not _SHA_RE.match(commit):
            return None
        return unseal(_read_bounded(self.file_path(repo, commit, file), MAX_JSON_BYTES + 4096),
                      self._fields(repo, commit, kind="file", file=file))

    def put_file(self, repo: str, commit: str, file: str, data: bytes) -> bool:
        """Store the bytes of a small file (call it only once they parsed)."""
        if not _SHA_RE.match(commit):
            return False
        return _write_atomic(self.file_path(repo, commit, file), seal(self._fields(repo, commit, kind="file", file=file), data))

    # -- refs --------------------------------------------------------------------------------------

    def _ref_path(self, repo: str, revision: str) -> Path:
        return self.base / "hub" / _repo_folder(repo) / "refs" / _digest(revision)

    def get_ref(self, repo: str, revision: str) -> str | None:
        """The commit ``revision`` (a branch or tag) pointed at when last resolved online."""
        raw = unseal(_read_bounded(self._ref_path(repo, revision), 4096),
                     {"endpoint": self.endpoint, "repo": repo, "kind": "ref", "revision": revision})
        if raw is None:
            return None
        sha = raw.decode("ascii", "replace").strip()
        return sha if _SHA_RE.match(sha) else None

    def put_ref(self, repo: str, revision: str, commit: str) -> bool:
        """Remember that ``revision`` resolved to ``commit`` (used only by offline audits)."""
        if not _SHA_RE.match(commit):
            return False
        fields = {"endpoint": self.endpoint, "repo": repo, "kind": "ref", "revision": revision}
        return _write_atomic(self._ref_path(repo, revision), seal(fields, commit.encode("ascii")))


#: A revision stored as ``refs/<name>`` in the Hugging Face cache (a branch or tag name; ``refs/pr/N`` as huggingface_hub
#: nests it).
_REF_NAME = re.compile(r"^(?:[A-Za-z0-9_.-]+|pr/[0-9]+)$")


def git_blob_sha1(data: bytes) -> str:
    """The git blob id of ``data`` (``sha1(b"blob <len>\\0" + data)``): the hub's ETag of a file stored in git, which
    huggingface_hub names the file's blob by (``config.json``, a quantization config, a safetensors index under 10 MB)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fill_hf_cache(root: Path, repo: str, commit: str, rel: str, data: bytes, revision: str | None = None) -> bool:
    """Put one whole file fetched from the hub into the Hugging Face cache at ``root`` (``HF_HUB_CACHE``), laid out as
    huggingface_hub lays it out (docs "Manage huggingface_hub cache-system"): the bytes in
    ``models--<org>--<name>/blobs/<etag>`` (the git blob id, :func:`git_blob_sha1`), the file as a relative symlink
    ``snapshots/<commit>/<rel>`` to it, and ``refs/<revision>`` holding the commit when ``revision`` is a branch or tag
    it was resolved from. So ``hf cache scan``, ``try_to_load_from_cache``, transformers' offline mode and the next
    ``--offline`` audit find it. Only whole files: never a shard's header bytes.

    Existing entries are kept (a blob is content-addressed; an existing snapshot file is huggingface_hub's); every
    write is atomic. A file the hub stores in LFS (an index over 10 MB) is named by its git blob id here, not by its
    LFS oid: huggingface_hub then fetches its own copy when asked, which is harmless.

    Returns:
        Whether the file is in the cache now (``False``: a path that does not fit, a read-only or symlink-less
        file system; never an error, like every cache write).
    """
    if not _SHA_RE.match(commit) or "/" not in repo or ".." in repo.split("/") or not _relative_parts(rel):
        return False
    folder = Path(root) / f"models--{_repo_folder(repo)}"
    blob = folder / "blobs" / git_blob_sha1(data)
    link = folder / "snapshots" / commit / Path(*_relative_parts(rel))
    try:
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.is_file():
            _atomic_write(blob, data)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(link):
            tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
            os.symlink(os.path.relpath(blob, link.parent), tmp)
            os.replace(tmp, link)
        if revision and revision != commit and _REF_NAME.match(revision):
            ref = folder / "refs" / revision
            ref.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(ref, commit.encode())
    except OSError:
        return False
    return True


def _relative_parts(rel: str) -> tuple[str, ...]:
    """The parts of a relative POSIX path inside a folder, or ``()`` for one that is absolute or leaves it."""
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
    if rel.startswith("/") or not parts or any(p == ".." or "\\" in p or "\0" in p for p in parts):
        return ()
    return parts


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in its folder and ``os.replace``.

    Raises:
        OSError: the write fails (the temporary file is removed).
    """
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
