"""On-disk cache for hub audits: shard headers, file listings, small JSON files and branch -> commit
refs, all keyed by the repo and the commit sha.

A commit sha names immutable content (git objects are content-addressed), so an entry keyed by
``(repo, commit sha, file)`` never goes stale and needs no expiry; a second audit of the same commit
makes no header request (issue 5: "Cache shard-header results keyed by (repo, commit sha, file) in
the user cache folder"; ``../shared/research/peers.md`` "key on commit sha so entries never go
stale"). Branch and tag names are *not* trusted from this cache while online: they are stored only so
that ``--offline`` can find the commit it audited last time.

Layout under :func:`default_cache_dir` (``$MTP_AUDIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/mtp-audit``, else ``~/.cache/mtp-audit``)::

    headers/<org>--<name>/<sha>/<sha256(file)>.hdr   8-byte LE file size + the shard's first 8+n bytes
    hub/<org>--<name>/<sha>/listing.json             {"repo", "commit", "files": [...]}
    hub/<org>--<name>/<sha>/files/<sha256(file)>     the file's bytes (config.json, the index ...)
    hub/<org>--<name>/refs/<sha256(revision)>        the commit the revision pointed at, last seen online

Writes are atomic (temporary file + ``os.replace``) so a crash never leaves a half-written entry, and
every read is bounded and validated; a damaged entry is ignored (and overwritten by the next fetch),
never trusted. Failing to write (read-only home) is not an error: the cache is an optimisation.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import tempfile
from pathlib import Path

from mtp_audit.sources.bounded import MAX_JSON_BYTES

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


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file in the same folder; False on any OS error."""
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
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, else None."""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > limit:
                return None
            data = fh.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


class HubCache:
    """The mtp-audit cache for one root folder.

    Args:
        root: cache root (see :func:`default_cache_dir`); created on first write.

    Every ``get_*`` returns None when the entry is absent or damaged; every ``put_*`` returns whether
    the entry was written. ``commit`` arguments must be 40-hex commit shas (anything else is refused,
    so a branch name can never be mistaken for an immutable key).
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    # -- shard headers -------------------------------------------------------------------------

    def _header_path(self, repo: str, commit: str, file: str) -> Path:
        return self.root / "headers" / _repo_folder(repo) / commit / f"{_digest(file)}.hdr"

    def get_header(self, repo: str, commit: str, file: str) -> tuple[bytes, int] | None:
        """The cached ``(prefix, file_size)`` of a shard: ``prefix`` is the file's first ``8 + n`` bytes
        (length prefix + JSON header) and ``file_size`` its total size in bytes."""
        if not _SHA_RE.match(commit):
            return None
        data = _read_bounded(self._header_path(repo, commit, file), _MAX_HEADER_ENTRY)
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
        return _write_atomic(self._header_path(repo, commit, file), struct.pack("<Q", file_size) + prefix)

    # -- listings --------------------------------------------------------------------------------

    def _commit_dir(self, repo: str, commit: str) -> Path:
        return self.root / "hub" / _repo_folder(repo) / commit

    def get_listing(self, repo: str, commit: str) -> tuple[str, ...] | None:
        """The repo's file list at ``commit`` as last listed from the hub."""
        if not _SHA_RE.match(commit):
            return None
        raw = _read_bounded(self._commit_dir(repo, commit) / "listing.json", MAX_JSON_BYTES)
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
        return _write_atomic(self._commit_dir(repo, commit) / "listing.json", json.dumps(doc).encode("utf-8"))

    # -- small files -----------------------------------------------------------------------------

    def file_path(self, repo: str, commit: str, file: str) -> Path:
        """Where the bytes of a small file of ``repo`` at ``commit`` are (or would be) cached."""
        return self._commit_dir(repo, commit) / "files" / _digest(file)

    def has_file(self, repo: str, commit: str, file: str) -> bool:
        """Whether a small file is cached."""
        return _SHA_RE.match(commit) is not None and self.file_path(repo, commit, file).is_file()

    def put_file(self, repo: str, commit: str, file: str, data: bytes) -> bool:
        """Store the bytes of a small file."""
        if not _SHA_RE.match(commit):
            return False
        return _write_atomic(self.file_path(repo, commit, file), data)

    # -- refs --------------------------------------------------------------------------------------

    def _ref_path(self, repo: str, revision: str) -> Path:
        return self.root / "hub" / _repo_folder(repo) / "refs" / _digest(revision)

    def get_ref(self, repo: str, revision: str) -> str | None:
        """The commit ``revision`` (a branch or tag) pointed at when last resolved online."""
        raw = _read_bounded(self._ref_path(repo, revision), 64)
        if raw is None:
            return None
        sha = raw.decode("ascii", "replace").strip()
        return sha if _SHA_RE.match(sha) else None

    def put_ref(self, repo: str, revision: str, commit: str) -> bool:
        """Remember that ``revision`` resolved to ``commit`` (used only by offline audits)."""
        if not _SHA_RE.match(commit):
            return False
        return _write_atomic(self._ref_path(repo, revision), commit.encode("ascii"))
