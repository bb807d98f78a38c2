"""Locate and read an engine's Python source tree (SGLang, vLLM, ...) without importing or executing any of it.

Which package to look for is an :class:`EnginePackage` (the engine analyzers define theirs). For a package
named ``pkg``, accepted targets are:

- a git checkout: a folder holding ``python/pkg`` or ``pkg/`` beside a ``pyproject.toml`` / ``setup.py``
  (paths are reported as ``python/pkg/...`` or ``pkg/...``);
- a package folder ``.../site-packages/pkg`` or an unpacked wheel (a folder holding ``pkg/``);
  paths are reported as ``pkg/...``;
- a ``.whl`` file, read from the zip in memory (nothing is extracted to disk);
- ``None``: the installed package, located with :func:`importlib.util.find_spec` (which, for a
  top-level package, finds the folder without running its ``__init__``).

Every read is bounded (:data:`MAX_SOURCE_BYTES`); symlinks that leave the tree are not followed and
are reported as notes. Only ``.py`` files of the package are listed; test and benchmark folders are
skipped (they define test-only env vars and argparse scripts, not server behaviour).
"""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import (
    NotRegularFile,
    note_read,
    open_regular,
    read_bytes_bounded,
    resolve_inside,
)

#: Largest source file read (bytes). The biggest .py file in sglang 0.5.23 is ~0.5 MB; a larger
#: one is a generated file and is skipped with a note.
MAX_SOURCE_BYTES = 4 * 1024 * 1024

#: Largest .whl accepted (bytes); sglang 0.5.23's wheel is 39 MB.
MAX_WHEEL_BYTES = 512 * 1024 * 1024

#: Largest total of .py bytes read from one tree (counted as actually inflated for wheels, whatever the
#: members declare): the zip-bomb bound. sglang 0.5.23 holds 65 MB of .py files; past the bound the
#: remaining files are not examined (one note says so).
MAX_TREE_PY_BYTES = 256 * 1024 * 1024

#: Old name of :data:`MAX_TREE_PY_BYTES`.
MAX_WHEEL_PY_BYTES = MAX_TREE_PY_BYTES

#: Largest ratio of inflated to compressed size of a wheel member (beyond :data:`_RATIO_FLOOR` bytes); real
#: Python source deflates 3-6x. A member past it is a zip bomb and is not examined.
MAX_INFLATE_RATIO = 100
_RATIO_FLOOR = 1 << 20

#: Most notes (files not examined) kept per tree; the rest are counted in one last note, so a wheel of
#: 100,000 hostile members cannot make a report of hundreds of MB. Names in notes are cut to :data:`MAX_NOTE_NAME`.
MAX_NOTES = 500
MAX_NOTE_NAME = 300

#: Bytes inflated per step while reading a wheel member (memory stays bounded by the per-file limit).
_CHUNK = 1 << 20

#: What reading a corrupt, truncated, encrypted or exotic zip member can raise (zlib.error for a corrupt
#: deflate stream, NotImplementedError for an unknown compression method, RuntimeError when encrypted).
ZIP_ERRORS: tuple[type[BaseException], ...] = (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, EOFError,
                                               zlib.error, NotImplementedError, ValueError, OverflowError)
try:
    import lzma

    ZIP_ERRORS += (lzma.LZMAError,)
except ImportError:  # pragma: no cover - Python built without lzma
    pass

#: Folder names skipped inside the package (tests, benchmarks, examples).
SKIP_DIRS = frozenset({"test", "tests", "benchmark", "benchmarks", "examples", "__pycache__"})

_VERSION_RE = re.compile(rb"""^\s*(?:__version__|version)\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)
_METADATA_VERSION_RE = re.compile(rb"^Version:\s*(\S+)\s*$", re.M)
_PYPROJECT_VERSION_RE = re.compile(rb'^version\s*=\s*"([^"]+)"', re.M)


@dataclass(frozen=True)
class EnginePackage:
    """What identifies an engine's source tree.

    Attributes:
        name: the import package (``"sglang"``).
        title: the engine's name in messages (``"SGLang"``).
        inner: a sub-folder that marks a package folder as this engine's (``"srt"``).
        marker: the file (relative to the package folder) every release has (``"srt/server_args.py"``);
            a tree without it is refused.
        marker_what: what that file is, for the refusal message.
        article: ``"a"`` or ``"an"`` before the title, as it is spoken (``"an SGLang tree"``).
    """

    name: str
    title: str
    inner: str
    marker: str
    marker_what: str
    article: str = "a"


class BoundedNotes(list):
    """A list of ``(path, message)`` notes that keeps at most :data:`MAX_NOTES`; later ones are counted in a
    last ``("...", "N more file(s) not examined ...")`` entry. Long names are cut to :data:`MAX_NOTE_NAME`."""

    def append(self, item: tuple[str, str]) -> None:
        rel, note = item
        if len(rel) > MAX_NOTE_NAME:
            rel = rel[:MAX_NOTE_NAME] + f"...({len(rel)} characters)"
        if len(self) < MAX_NOTES:
            super().append((rel, note[:2 * MAX_NOTE_NAME + 200]))
            return
        over = int(self[-1][1].split(" ", 1)[0]) + 1 if len(self) > MAX_NOTES else 1
        entry = ("...", f"{over} more file(s) not examined (only the first {MAX_NOTES} notes are listed)")
        if len(self) > MAX_NOTES:
            self[-1] = entry
        else:
            super().append(entry)


@dataclass
class SourceTree:
    """A readable engine source tree.

    Attributes:
        display: what the user named (folder, wheel file name, or ``"installed sglang (<path>)"``).
        kind: ``"checkout"``, ``"package"``, ``"wheel"`` or ``"installed"``.
        files: relative POSIX path (as reported, e.g. ``"sglang/srt/server_args.py"``) -> opaque
            handle used by :meth:`read`.
        version: SGLang version read as text (``_version.py``, ``version.py``, wheel ``METADATA`` or a
            checkout's ``python/pyproject.toml``); ``None`` when none was found.
        notes: ``(path, message)`` pairs for files not examined (symlinks leaving the tree, oversize).
        prefix: the package folder as reported (``"sglang"`` or ``"python/sglang"``).
        package: which engine's package this is.
    """

    display: str
    kind: str
    files: dict[str, object] = field(default_factory=dict)
    version: str | None = None
    notes: list[tuple[str, str]] = field(default_factory=BoundedNotes)
    prefix: str = ""
    package: EnginePackage | None = None
    _zip: zipfile.ZipFile | None = None
    _root: Path | None = None
    _read_total: int = 0
    _over_budget: int = 0
    _digest: str | None = None
    _fh: IO[bytes] | None = None
    _stamps: dict[str, str] | None = None
    _stamp_notes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def marker_path(self) -> str:
        """Where the package's marker file must be: ``<prefix>/<marker>`` (``sglang/srt/server_args.py``)."""
        assert self.package is not None
        return f"{self.prefix}/{self.package.marker}"

    def read(self, rel: str) -> bytes | None:
        """Bytes of ``rel`` (at most :data:`MAX_SOURCE_BYTES`), or ``None`` when it is not examined (a note
        says why: unreadable, corrupt, over the per-file limit, or the tree's :data:`MAX_TREE_PY_BYTES`
        already spent). Wheel members are inflated lazily in chunks and the bytes actually inflated are
        counted (a member's declared size can lie); reading stops at the bound. Never raises for a
        defect of the tree."""
        handle = self.files[rel]
        if self._read_total >= MAX_TREE_PY_BYTES:
            self._budget_spent(rel)
            return None
        try:
            if self._zip is not None:
                info = handle
                assert isinstance(info, zipfile.ZipInfo)
                if info.file_size > MAX_SOURCE_BYTES:
                    self.notes.append((rel, f"{info.file_size} bytes, over the {MAX_SOURCE_BYTES}-byte limit; not examined"))
                    return None
                inflated = self._inflate(rel, info)
                return None if inflated is None else self._decodable(rel, inflated)
            assert isinstance(handle, Path)
            data = read_bytes_bounded(handle, MAX_SOURCE_BYTES, display=rel)
            self._read_total += len(data)
            if self._stamps is not None:
                self._stamps[rel] = _stamp_of(data)
            return self._decodable(rel, data)
        except InputError as exc:
            self.notes.append((rel, f"{exc.problem}; not examined"))
        except ZIP_ERRORS as exc:  # corrupt member, bad CRC, corrupt deflate stream, unsupported method
            self.notes.append((rel, f"cannot read ({type(exc).__name__}: {exc}); not examined"))
        return None

    def _decodable(self, rel: str, data: bytes) -> bytes | None:
        """``data``, or None with a note when CPython would decode it otherwise than UTF-8
        (:func:`source_encoding_problem`)."""
        problem = source_encoding_problem(data)
        if problem is None:
            return data
        self.notes.append((rel, problem))
        return None

    def _inflate(self, rel: str, info: zipfile.ZipInfo) -> bytes | None:
        assert self._zip is not None
        ratio_bound = max(_RATIO_FLOOR, MAX_INFLATE_RATIO * info.compress_size)
        direct = self._inflate_direct(info, ratio_bound)
        if direct is not None:
            return direct
        chunks: list[bytes] = []
        size = 0
        with self._zip.open(info) as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                self._read_total += len(chunk)
                if size > ratio_bound:
                    self.notes.append((rel, f"inflates more than {MAX_INFLATE_RATIO} times its compressed size "
                                            f"({info.compress_size} bytes; a zip bomb?); not examined"))
                    return None
                if size > MAX_SOURCE_BYTES:
                    self.notes.append((rel, f"inflates to more than the {MAX_SOURCE_BYTES}-byte limit "
                                            f"(declares {info.file_size}); not examined"))
                    return None
                if self._read_total > MAX_TREE_PY_BYTES:
                    self._budget_spent(rel)
                    return None
                chunks.append(chunk)
        return b"".join(chunks)

    def _inflate_direct(self, info: zipfile.ZipInfo, ratio_bound: int) -> bytes | None:
        """``info``'s bytes inflated straight from the wheel file (``os.pread`` of its local header and of its deflate
        stream, one ``zlib`` call), where that gives what :mod:`zipfile`'s reader gives: an unencrypted deflated member
        of 1 byte or more, within the per-file, ratio and tree bounds, whose local header names it as the central
        directory does (and ends before the next member where :mod:`zipfile` records that), and whose stream ends
        after exactly its declared size with that size's CRC-32. ``None`` for anything else: the caller then reads it
        with :mod:`zipfile`, which gives the bytes or the note of a defective member as before. Saves about a quarter
        of the reading of SGLang 0.5.23's 3,985 members (zipfile's per-member set-up and chunked reads)."""
        size = info.file_size
        if (info.compress_type != zipfile.ZIP_DEFLATED or info.flag_bits & 0x61 or not 0 < size <= ratio_bound
                or size > MAX_SOURCE_BYTES or self._read_total + size > MAX_TREE_PY_BYTES or self._fh is None):
            return None  # 0x61: encrypted, compressed patched data, strong encryption
        try:
            fd = self._fh.fileno()
            head = os.pread(fd, 30, info.header_offset)
            if len(head) != 30 or head[:4] != b"PK\x03\x04":
                return None
            flags, n_name, n_extra = int.from_bytes(head[6:8], "little"), int.from_bytes(head[26:28], "little"), \
                int.from_bytes(head[28:30], "little")
            name = os.pread(fd, n_name, info.header_offset + 30).decode("utf-8" if flags & 0x800 else "cp437")
            start = info.header_offset + 30 + n_name + n_extra
            end = getattr(info, "_end_offset", None)  # zipfile's overlapped-entries check, where it has one
            if name != info.orig_filename or (end is not None and start + info.compress_size > end):
                return None
            raw = os.pread(fd, info.compress_size, start)
            inflater = zlib.decompressobj(-15)
            data = inflater.decompress(raw, size + 1)
        except (OSError, ValueError, zlib.error):  # ValueError: UnicodeDecodeError, io.UnsupportedOperation
            return None
        if len(raw) != info.compress_size or len(data) != size or not inflater.eof or zlib.crc32(data) != info.CRC:
            return None
        self._read_total += size
        return data

    def _budget_spent(self, rel: str) -> None:
        """Record that ``rel`` (and every later file) is not examined: the tree's byte bound is spent."""
        self._over_budget += 1
        note = (f"the tree's .py files exceed {MAX_TREE_PY_BYTES} bytes (zip-bomb bound); this file and "
                f"{self._over_budget - 1} later one(s) not examined")
        for i, (r, n) in enumerate(self.notes):
            if n.startswith("the tree's .py files exceed"):
                self.notes[i] = (r, note)
                return
        self.notes.append((rel, note))

    def fingerprint(self) -> str:
        """SHA-1 over every listed file's path and a hash of its content (:func:`content_stamp`; for a wheel,
        the SHA-256 of the whole ``.whl`` read when it was opened), plus the notes. Used as the whole-tree
        cache key: any edit changes it, whatever the file's size and mtime (a same-size edit with the mtime
        put back, a CRC-32 collision in a wheel)."""
        return self._fingerprint(self.notes, lambda rel, handle: content_stamp(handle))

    def _fingerprint(self, notes: list[tuple[str, str]], stamp_of: Any) -> str:
        import hashlib

        h = hashlib.sha1(f"{self.kind}\0{self.version}\0{self._digest or ''}\0".encode("utf-8", "surrogatepass"))
        for rel in sorted(self.files):
            handle = self.files[rel]
            stamp = f"{handle.file_size}:{handle.CRC}" if isinstance(handle, zipfile.ZipInfo) else stamp_of(rel, handle)
            h.update(f"{rel}\0{stamp}\n".encode("utf-8", "surrogatepass"))
        for rel, note in notes:
            h.update(f"note {rel} {note}\n".encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def start_stamps(self) -> None:
        """From now on, :meth:`read` keeps the content stamp of each folder file it reads, so that
        :meth:`fingerprint_after` can give what :meth:`fingerprint` gives now without reading every file a second
        time (a cold audit of a folder reads each file once instead of twice)."""
        self._stamps = {}
        self._stamp_notes = list(self.notes)

    def fingerprint_after(self) -> str:
        """:meth:`fingerprint` as it was when :meth:`start_stamps` was called: the stamps :meth:`read` kept, and
        :func:`content_stamp` for any file it did not read whole (not read, or a read that failed); the notes of
        that moment."""
        stamps = self._stamps or {}
        return self._fingerprint(self._stamp_notes, lambda rel, handle: stamps.get(rel) or content_stamp(handle))

    def close(self) -> None:
        """Release the zip file handle, if any."""
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


#: Source encodings (PEP 263 cookies) whose decoding of pure-ASCII bytes is the ASCII text itself, so a
#: file that declares one and holds only ASCII reads the same as UTF-8 (``codecs.lookup`` names).
_ASCII_SAFE = frozenset({"ascii", "latin-1", "iso8859-1", "iso8859-15", "cp1252"})


def source_encoding_problem(data: bytes) -> str | None:
    """Why ``data`` cannot be read as CPython would read it, or None when UTF-8 decoding gives the text
    CPython runs. CPython decodes a source file in the encoding its PEP 263 cookie names
    (``tokenize.detect_encoding``: a ``# coding: ...`` comment on line 1 or 2); a ``utf-7`` (or any
    non-ASCII-compatible) cookie can hide a line from a UTF-8 reader that CPython runs. Such a file is not
    examined (the caller records "could not tell"): accepted are no cookie, a UTF-8 cookie, and an
    ASCII-compatible one (latin-1, cp1252, ...) on a file that is pure ASCII."""
    import io
    import tokenize

    if b"coding" not in data[:1024]:
        return None  # the cookie must sit on line 1 or 2 (short lines by PEP 263); no cookie: UTF-8
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return f"its source encoding cookie is not one CPython accepts ({exc.msg}); not examined"
    import codecs

    name = codecs.lookup(encoding).name
    if name in ("utf-8", "utf-8-sig") or (name in _ASCII_SAFE and data.isascii()):
        return None
    return (f"declares the source encoding {encoding!r} (PEP 263), in which CPython may read other code than a "
            "UTF-8 reader sees; not examined")


def content_stamp(path: Path | str) -> str:
    """A stamp of a source file's content for cache keys: ``size:sha1`` of its bytes (read bounded by
    :data:`MAX_SOURCE_BYTES`, through one descriptor), or ``"?"`` when it cannot be read. Size and mtime
    are not used: both can be kept across an edit."""
    try:
        data = read_bytes_bounded(Path(path), MAX_SOURCE_BYTES)
    except InputError as exc:
        return "?" + exc.problem
    return _stamp_of(data)


def _stamp_of(data: bytes) -> str:
    """:func:`content_stamp` of bytes already read: ``size:sha1``."""
    import hashlib

    return f"{len(data)}:{hashlib.sha1(data).hexdigest()}"


def open_tree(target: str | Path | None, package: EnginePackage) -> SourceTree:
    """Open ``target`` (see module docstring) as ``package``'s source and list its ``.py`` files.

    Raises:
        InputError: the path does not exist, is not a tree of ``package`` (no package folder, or no
            ``<prefix>/<marker>`` in it), is a corrupt or non-wheel zip, or (for ``None``) the package is
            not installed.
    """
    if target is None:
        return _installed(package)
    p = Path(target)
    shown = str(target)
    name, inner = package.name, package.inner
    if not os.path.lexists(p):
        raise InputError(shown, "no such file or folder")
    if p.is_file():
        if p.suffix != ".whl" and not zipfile.is_zipfile(p):
            raise InputError(shown, f"{_not_a(package)} tree: expected a folder or a .whl file")
        return _wheel(p, shown, package)
    if not p.is_dir():
        raise InputError(shown, "not a regular file or folder")
    if (p / "python" / name).is_dir():
        return _folder(p, p / "python" / name, f"python/{name}", shown, "checkout", package)
    if (p / name).is_dir() and ((p / name / inner).is_dir() or (p / name / "__init__.py").is_file()):
        kind = "checkout" if ((p / "pyproject.toml").is_file() or (p / "setup.py").is_file()) and (p / ".git").exists() else "package"
        return _folder(p, p / name, name, shown, kind, package)
    if p.name == name and ((p / inner).is_dir() or (p / "__init__.py").is_file()):
        return _folder(p, p, name, shown, "package", package)
    raise InputError(shown, f"{_not_a(package)} tree: no python/{name}, {name}/ or {name}/{inner} folder found")


def _not_a(package: EnginePackage) -> str:
    return f"not {package.article} {package.title}"


def _installed(package: EnginePackage) -> SourceTree:
    name = package.name
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise InputError(name, f"cannot locate the installed package: {exc}") from None
    if spec is None or not spec.submodule_search_locations:
        raise InputError(name, "not installed in this Python; pass a checkout, package folder or .whl")
    pkg = Path(list(spec.submodule_search_locations)[0])
    return _folder(pkg, pkg, name, f"installed {name} ({pkg})", "installed", package)


def _walk(pkg: Path, prefix: str, tree: SourceTree) -> Iterator[tuple[str, Path]]:
    """Every ``.py`` file of the package folder ``pkg`` as ``(reported path, path)``: a top-down walk, each folder's
    sub-folders and files in sorted order (what ``os.walk`` with sorted names gives), one ``os.scandir`` listing per
    folder and one ``lstat`` per ``.py`` file. Skipped: :data:`SKIP_DIRS` and hidden folders; symlinked folders
    (a note each); a file that cannot be examined or a symlink that leaves the tree (a note each); a folder that
    cannot be listed (silently, as ``os.walk`` does). A symlink to a file inside the tree is kept."""
    real_pkg = pkg.resolve()
    stack = [(os.fspath(pkg), prefix)]
    while stack:
        folder, rel_folder = stack.pop()
        dirs, files = _listing(folder)
        keep = []
        for d in sorted(dirs):
            if d in SKIP_DIRS or d.startswith("."):
                continue
            entry = dirs[d]
            if _is_symlink(entry):
                rel = f"{rel_folder}/{d}"
                if resolve_inside(real_pkg, os.path.relpath(entry.path, pkg)) is None:
                    tree.notes.append((rel, "symlinked folder leaves the tree; not followed"))
                else:
                    tree.notes.append((rel, "symlinked folder; not followed (its target is scanned in place)"))
                continue
            keep.append((entry.path, f"{rel_folder}/{d}"))
        for f in sorted(files):
            if f.endswith(".py"):
                found = _py_file(files[f], f"{rel_folder}/{f}", pkg, real_pkg, tree)
                if found is not None:
                    yield found
        stack.extend(reversed(keep))


def _listing(folder: str) -> tuple[dict[str, os.DirEntry[str]], dict[str, os.DirEntry[str]]]:
    """``(sub-folders, other entries)`` of ``folder`` by name, as ``os.walk`` splits them (``is_dir()`` following
    symlinks; an entry that cannot be examined is not a folder); both empty when the folder cannot be listed."""
    dirs: dict[str, os.DirEntry[str]] = {}
    files: dict[str, os.DirEntry[str]] = {}
    try:
        with os.scandir(folder) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                (dirs if is_dir else files)[entry.name] = entry
    except OSError:
        return {}, {}
    return dirs, files


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _py_file(entry: os.DirEntry[str], rel: str, pkg: Path, real_pkg: Path, tree: SourceTree) -> tuple[str, Path] | None:
    """``(rel, path)`` of one listed ``.py`` entry, or ``None`` with a note (cannot ``lstat`` it; a symlink leaving
    the tree)."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        tree.notes.append((rel, f"cannot stat ({exc.strerror}); not examined"))
        return None
    if stat.S_ISLNK(st.st_mode) and resolve_inside(real_pkg, os.path.relpath(entry.path, pkg)) is None:
        tree.notes.append((rel, "symlink leaves the tree; not followed"))
        return None
    return rel, Path(entry.path)


def _folder(root: Path, pkg: Path, prefix: str, shown: str, kind: str, package: EnginePackage) -> SourceTree:
    note_read(pkg)  # scanned partly in worker processes: the whole package folder counts as read
    tree = SourceTree(display=shown, kind=kind, prefix=prefix, package=package, _root=root)
    for rel, full in _walk(pkg, prefix, tree):
        tree.files[rel] = full
    tree.version = _folder_version(root, pkg, package.name)
    if not tree.files:
        raise InputError(shown, f"{_not_a(package)} tree: the {package.name} folder holds no .py files")
    _require_marker(tree, shown)
    return tree


def _require_marker(tree: SourceTree, shown: str) -> None:
    """A folder without the package's marker file (``sglang/srt/server_args.py``) is some other package
    that happens to hold a folder of that name (e.g. ``mtp_audit/engines/sglang`` itself): auditing it
    would state "no speculative decoding" about something that is not the engine.

    Raises:
        InputError: ``<prefix>/<marker>`` is not among the listed files.
    """
    assert tree.package is not None
    if tree.marker_path in tree.files:
        return
    tree.close()
    bad = _not_a(tree.package)
    if any(rel == tree.marker_path for rel, _ in tree.notes):
        raise InputError(shown, f"{bad} tree: {tree.marker_path} is a symlink leaving the tree; not followed")
    raise InputError(shown, f"{bad} tree: no {tree.marker_path} ({tree.package.marker_what})")


def _folder_version(root: Path, pkg: Path, name: str) -> str | None:
    for name in ("_version.py", "version.py"):
        f = pkg / name
        if f.is_file():
            try:
                m = _VERSION_RE.search(read_bytes_bounded(f, 65536))
            except InputError:
                m = None
            if m:
                return m.group(1).decode("ascii", "replace")
    for meta in sorted(pkg.parent.glob(f"{name}-*.dist-info/METADATA")):
        try:
            m = _METADATA_VERSION_RE.search(read_bytes_bounded(meta, 1 << 20))
        except InputError:
            m = None
        if m:
            return m.group(1).decode("ascii", "replace")
    pyproject = root / "python" / "pyproject.toml"
    if pyproject.is_file():
        try:
            m = _PYPROJECT_VERSION_RE.search(read_bytes_bounded(pyproject, 1 << 20))
        except InputError:
            m = None
        if m:
            return m.group(1).decode("ascii", "replace")
    return None


def _wheel(path: Path, shown: str, package: EnginePackage) -> SourceTree:
    zf, digest = open_wheel(path, shown)
    pkg_name = package.name
    tree = SourceTree(display=path.name, kind="wheel", prefix=pkg_name, package=package, _zip=zf, _digest=digest, _fh=zf.fp)
    infos = zf.infolist()
    for info in infos:
        name = info.filename
        if info.is_dir() or not name.endswith(".py"):
            continue
        parts = name.split("/")
        if parts[0] != pkg_name or any(x in SKIP_DIRS for x in parts[1:-1]):
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            tree.notes.append((name, "symlink entry in the wheel; not followed"))
            continue
        if ".." in parts or name.startswith("/"):
            tree.notes.append((name, "entry path leaves the tree; not examined"))
            continue
        tree.files[name] = info  # sizes are bounded when read (declared sizes can lie)
    if not tree.files:
        tree.close()
        raise InputError(shown, f"{_not_a(package)} wheel: no {pkg_name}/*.py files inside")
    _require_marker(tree, shown)
    for info in infos:
        if info.filename.endswith(".dist-info/METADATA") and info.file_size < (1 << 20):
            try:
                m = _METADATA_VERSION_RE.search(zf.read(info))  # stops at the declared size (< 1 MiB)
            except ZIP_ERRORS:
                m = None
            if m:
                tree.version = m.group(1).decode("ascii", "replace")
                break
    return tree


def open_wheel(path: Path, shown: str, limit: int = MAX_WHEEL_BYTES) -> tuple[zipfile.ZipFile, str]:
    """Open a wheel once (:func:`open_regular`: a FIFO or device swapped in is refused, never blocks) and
    return the zip read from that descriptor with the SHA-256 of its bytes (the tree's cache key). The zip
    does not own the file object: close ``zf.fp`` after ``zf.close()``.

    Raises:
        InputError: not a regular file, over ``limit`` bytes (:data:`MAX_WHEEL_BYTES`), unreadable or not a zip.
    """
    import hashlib

    try:
        fd = open_regular(path)
    except NotRegularFile as exc:
        raise InputError(shown, str(exc)) from None
    except OSError as exc:
        raise InputError(shown, f"cannot read: {exc.strerror or exc}") from None
    fh = os.fdopen(fd, "rb")
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise InputError(shown, f"wheel is {size} bytes, over the {limit}-byte limit")
        h = hashlib.sha256()
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
        fh.seek(0)
        zf = zipfile.ZipFile(fh)
        zf.infolist()
    except InputError:
        fh.close()
        raise
    except ZIP_ERRORS as exc:
        fh.close()
        raise InputError(shown, f"not a readable wheel (zip): {exc}") from None
    return zf, h.hexdigest()
