"""Bounded, contained file access for audited artifacts (checkpoints, SGLang trees, env dumps).

Audited artifacts are data, never code: nothing here imports, executes or unpickles. Every read
has a byte limit, and every relative path taken from an artifact (a ``weight_map`` value, a file
in a wheel) is checked to stay inside the audited root before it is opened.

Every file is opened once (:func:`open_regular`: ``O_NONBLOCK`` so a FIFO cannot block, ``O_NOFOLLOW``
where the caller has already resolved the path, ``fstat`` of the descriptor) and read from that
descriptor only, so a file swapped for a FIFO, a device or a symlink between a check and a read is
never read.

A *run* (one CLI command, one call of a public API function: :func:`run_budget`) has totals on top of the
per-file limits, :class:`RunBudget`: bytes read from files, the estimated memory of the JSON parsed
(:func:`json_memory_estimate`, measured against real memory: 8-15 times the text), and wall time on the network. The run also records every file opened
through this module (:func:`files_read`), so the CLI protects each of them from every output, including
files an analyzer read without being told to (an installed package's ``envs.py``, ``torch/version.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mtp_audit.errors import InputError

#: Largest JSON metadata file read (bytes). A real 163-shard DeepSeek-V3 index is ~9 MB; the
#: REAP Qwen3.5 index is 2.3 MB. 256 MiB leaves room and still bounds memory.
MAX_JSON_BYTES = 256 * 1024 * 1024

#: Largest text file read by the env-dump parsers and source readers (bytes).
MAX_TEXT_BYTES = 64 * 1024 * 1024


#: Default totals of one run (see :class:`RunBudget`); each can be changed with its environment variable.
#: Bytes read from files in one run: sglang 0.5.23 holds 65 MB of .py files, a 163-shard DeepSeek-V3 ~20 MB
#: of metadata. ``MTP_AUDIT_MAX_READ_BYTES``.
MAX_RUN_READ_BYTES = 2 * 1024 * 1024 * 1024
#: Estimated memory (bytes) of the JSON parsed in one run (config files, indexes, shard headers), see
#: :func:`json_memory_estimate`: a 200,000-tensor shard header (27 MB of text) peaks at 0.21 GB and is counted as
#: 0.26 GB, so the default admits about 1.2 million tensors of headers.
#: ``MTP_AUDIT_MAX_JSON_BYTES``.
MAX_RUN_JSON_BYTES = 1536 * 1024 * 1024
#: Wall seconds one run may spend on the network, retries and ``Retry-After`` waits included.
#: ``MTP_AUDIT_NETWORK_SECONDS``.
MAX_RUN_NETWORK_SECONDS = 300.0
#: Most distinct files recorded as read in one run (beyond it the oldest are dropped).
MAX_RECORDED_READS = 1_000_000


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device, symlink or directory: never read (a FIFO would block forever).
    ``entry``: ``"directory"``, ``"symlink"`` or ``"other"`` (a FIFO, socket or device)."""

    def __init__(self, message: str, entry: str = "other") -> None:
        super().__init__(message)
        self.entry = entry


class BudgetSpent(InputError):
    """A total of the run (:class:`RunBudget`) is spent: the read is refused with one line."""


def _env_number(name: str, default: float) -> float:
    """The positive, finite number ``$name`` sets, or ``default`` when it is unset or empty.

    Raises:
        InputError: the variable is set to something else (a word, 0, a negative number, ``inf``, ``nan``).
    """
    import math

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(name, f"expected a positive number (bytes or seconds), got {raw[:40]!r}")
    return value


@dataclass
class RunBudget:
    """The totals of one run, shared by every thread of it (hub reads) through a context variable.

    Attributes:
        max_read_bytes: bytes read from files (:data:`MAX_RUN_READ_BYTES`).
        max_json_bytes: bytes of JSON parsed (:data:`MAX_RUN_JSON_BYTES`).
        network_seconds: wall seconds on the network (:data:`MAX_RUN_NETWORK_SECONDS`), counted from the
            first request of the run.
        read_bytes, json_bytes: spent so far.
        files: every file opened through :func:`open_regular` (absolute paths, in order), plus the roots
            registered with :func:`note_read`.
    """

    max_read_bytes: int = MAX_RUN_READ_BYTES
    max_json_bytes: int = MAX_RUN_JSON_BYTES
    network_seconds: float = MAX_RUN_NETWORK_SECONDS
    read_bytes: int = 0
    json_bytes: int = 0
    files: dict[str, None] = field(default_factory=dict)
    _network_start: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_env(cls) -> RunBudget:
        """The defaults, each overridden by its environment variable when that is a positive number."""
        return cls(max_read_bytes=int(_env_number("MTP_AUDIT_MAX_READ_BYTES", MAX_RUN_READ_BYTES)),
                   max_json_bytes=int(_env_number("MTP_AUDIT_MAX_JSON_BYTES", MAX_RUN_JSON_BYTES)),
                   network_seconds=_env_number("MTP_AUDIT_NETWORK_SECONDS", MAX_RUN_NETWORK_SECONDS))

    def charge_read(self, n: int, name: str) -> None:
        """Count ``n`` bytes read from ``name``.

        Raises:
            BudgetSpent: the run's total is passed (``MTP_AUDIT_MAX_READ_BYTES`` raises it).
        """
        with self._lock:
            self.read_bytes += n
            over = self.read_bytes > self.max_read_bytes
        if over:
            raise BudgetSpent(name, f"this run has read more than {self.max_read_bytes} bytes in all; not read "
                                    "(set MTP_AUDIT_MAX_READ_BYTES to raise the bound)")

    def charge_json(self, n: int, name: str) -> None:
        """Count ``n`` bytes of estimated parsed-JSON memory (:func:`json_memory_estimate`) for ``name``.

        Raises:
            BudgetSpent: the run's total is passed (``MTP_AUDIT_MAX_JSON_BYTES`` raises it).
        """
        with self._lock:
            self.json_bytes += n
            over = self.json_bytes > self.max_json_bytes
        if over:
            raise BudgetSpent(name, f"parsing it would take this run's parsed JSON past {self.max_json_bytes} bytes of "
                                    "memory; not parsed (set MTP_AUDIT_MAX_JSON_BYTES to raise the bound)")

    def network_deadline(self) -> float:
        """``time.monotonic()`` value past which no request starts and no body is read any more (the clock
        starts at the run's first call of this method)."""
        with self._lock:
            if self._network_start is None:
                self._network_start = time.monotonic()
            return self._network_start + self.network_seconds

    def off_network(self, seconds: float) -> None:
        """Do not count ``seconds`` of wall time spent waiting off the network (the pause between the two
        ``--metrics`` reads) against :attr:`network_seconds`: the deadline moves that much later."""
        with self._lock:
            if self._network_start is not None:
                self._network_start += max(0.0, seconds)

    def record(self, path: str) -> None:
        """Remember that ``path`` was read (see :attr:`files`)."""
        with self._lock:
            self.files[path] = None
            if len(self.files) > MAX_RECORDED_READS:
                del self.files[next(iter(self.files))]


_RUN: contextvars.ContextVar[RunBudget | None] = contextvars.ContextVar("mtp_audit_run_budget", default=None)


@contextlib.contextmanager
def run_budget(budget: RunBudget | None = None) -> Iterator[RunBudget]:
    """Run the block as one run with ``budget`` (default :meth:`RunBudget.from_env`). Nested blocks share the
    outer run's budget, so a public function called by another counts once."""
    outer = _RUN.get()
    if outer is not None:
        yield outer
        return
    run = budget or RunBudget.from_env()
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def current_run() -> RunBudget | None:
    """The budget of the run in progress, or None outside :func:`run_budget` (then only per-file limits hold)."""
    return _RUN.get()


def note_read(path: Path | str) -> None:
    """Record ``path`` (a file or a whole folder, such as an engine tree scanned by worker processes) as read
    by the run in progress, so that no output may replace it."""
    run = _RUN.get()
    if run is not None:
        with contextlib.suppress(OSError, ValueError, TypeError):
            run.record(os.path.abspath(os.fspath(path)))


def files_read() -> list[str]:
    """Every file and folder the run in progress read (see :func:`note_read`); ``[]`` outside a run."""
    run = _RUN.get()
    if run is None:
        return []
    with run._lock:
        return list(run.files)


#: Bytes of memory per JSON token, measured with ``tracemalloc`` and the process's peak RSS on CPython 3.11 while
#: :meth:`mtp_audit.sources.local.LocalSource.read_header` reads shard headers of real and hostile shapes
#: (tests/test_json_memory.py): an object costs its dict plus, in a shard header, the records built from it (the
#: column lists, :class:`~mtp_audit.sources.local.TensorInfo`, the shape tuple); an array its list; a ``:`` one dict
#: entry with the table's slack; a ``,`` a pointer and a number object; a string (two ``"``) its object header.
MEMORY_PER_OBJECT = 448
MEMORY_PER_ARRAY = 56
MEMORY_PER_MEMBER = 48
MEMORY_PER_ELEMENT = 40
MEMORY_PER_STRING = 50


#: ``(raw.count(b"["), raw.count(b":"), raw.count(b'"'))``: the byte counts :func:`json_memory_estimate` takes that the
#: safetensors header reader needs too (:func:`mtp_audit.sources.local.fast_header`), so each is counted once.
JsonCounts = tuple[int, int, int]


#: Every byte but the five :func:`json_memory_estimate` counts (``{``, ``[``, ``:``, ``,``, ``"``).
_NOT_COUNTED = bytes(sorted(set(range(256)) - set(b'{[:,"')))
#: The same and the letter ``e`` (:func:`header_counts`).
_NOT_COUNTED_E = bytes(sorted(set(range(256)) - set(b'{[:,"e')))

#: ``(raw.count(b"["), raw.count(b":"), raw.count(b'"'), raw.count(b"e"))``: :data:`JsonCounts` and the ``e`` count,
#: which tells the safetensors header reader whether a ``true`` or ``false`` may sit outside the strings
#: (:func:`mtp_audit.sources.local.fast_header`); taken in the same pass as the estimate's counts
#: (:func:`charge_header_json`).
HeaderCounts = tuple[int, int, int, int]


def _token_counts(raw: bytes) -> tuple[int, int, int, int, int]:
    """``raw``'s ``{``, ``[``, ``:``, ``,`` and ``"`` counts: one C pass keeps only those bytes
    (``bytes.translate`` with a delete table; in JSON they are a fifth of the text or less), then the counts over what is
    left (:func:`_split_counts`), instead of five ``bytes.count`` over the whole text (measured 2-2.5x faster on an
    8.9 MB index and on 163 shard headers). The copies are at most ``len(raw)`` and are freed before parsing."""
    return _split_counts(raw.translate(None, _NOT_COUNTED), _NOT_QUOTED)


def _token_counts_e(raw: bytes) -> tuple[tuple[int, int, int, int, int], int]:
    """``(_token_counts(raw), raw.count(b"e"))`` from one ``bytes.translate`` pass that keeps ``e`` too."""
    kept = raw.translate(None, _NOT_COUNTED_E)
    counts = _split_counts(kept, _NOT_QUOTED_E)
    return counts, len(kept) - sum(counts)


#: The structural bytes but ``"`` (:func:`_split_counts`); with ``e`` too for the header's kept bytes.
_NOT_QUOTED, _NOT_QUOTED_E = b'"', b'"e'


def _split_counts(kept: bytes, drop: bytes) -> tuple[int, int, int, int, int]:
    """The ``{``, ``[``, ``:``, ``,`` and ``"`` counts of ``kept`` (bytes holding those and, beside them, only bytes of
    ``drop``, which holds ``"``): the ``"`` count over ``kept``, then the ``"`` and the other ``drop`` bytes deleted
    (one more ``translate``) and three counts over the rest, a third of ``kept`` or less in JSON (``"`` is a third to
    two thirds of the structural bytes, ``e`` as frequent in tensor names), whose length gives the ``,`` count: about
    two thirds of the byte visits of five counts over ``kept``."""
    quotes = kept.count(b'"')
    rest = kept.translate(None, drop)
    objects, brackets, colons = rest.count(b"{"), rest.count(b"["), rest.count(b":")
    return objects, brackets, colons, len(rest) - objects - brackets - colons, quotes


def json_counts(raw: bytes) -> JsonCounts:
    """``raw``'s ``[``, ``:`` and ``"`` counts (C speed): see :data:`JsonCounts`."""
    _, brackets, colons, _, quotes = _token_counts(raw)
    return brackets, colons, quotes


def header_counts(raw: bytes) -> HeaderCounts:
    """``raw``'s ``[``, ``:``, ``"`` and ``e`` counts (C speed): see :data:`HeaderCounts`."""
    (_, brackets, colons, _, quotes), es = _token_counts_e(raw)
    return brackets, colons, quotes, es


def json_memory_estimate(raw: bytes) -> int:
    """An upper estimate of the memory (bytes) parsing ``raw`` takes at its peak: the bytes themselves, the decoded
    text and the strings' characters (each ``len(raw)``; four times for text that is not ASCII, which CPython may
    store four bytes a character), plus per token: :data:`MEMORY_PER_OBJECT` per ``{``, :data:`MEMORY_PER_ARRAY`
    per ``[``, :data:`MEMORY_PER_MEMBER` per ``:``, :data:`MEMORY_PER_ELEMENT` per ``,`` and
    :data:`MEMORY_PER_STRING` per pair of ``"``. Counted at C speed (:func:`_token_counts`), before parsing.

    Peak RSS growth against this estimate, both as multiples of the text, for one header read by
    :meth:`~mtp_audit.sources.local.LocalSource.read_header` (200,000 real-shaped records: 8.5x / 12.0x;
    400,000 ``{"tN": {"dtype": "BOOL", "shape": [0], ...}}`` records: 14.5x / 22.5x; a ``__metadata__`` of a million
    one-letter strings: 10.8x / 16.5x; a shape of 3 million ones: 9.3x / 23.0x; names with an emoji: 14.4x / 27.3x).
    The estimate before (text + 64 per ``{`` / ``[`` + 32 per ``,``) came to 3.3-6.4x, so 290 MB of headers peaked at
    2.6 GB while it counted under 1.5 GiB. What a run counts is never given back (:meth:`RunBudget.charge_json`),
    while the memory of one header's parse is reused by the next: a whole ``checkpoint`` run over 4 shards of 100,000
    records each counted 698 MiB for a peak RSS of 385 MiB (the estimate before: 195 MiB)."""
    return _estimate(raw, _token_counts(raw))


def _estimate(raw: bytes, counts: tuple[int, int, int, int, int]) -> int:
    """:func:`json_memory_estimate` from ``raw``'s :func:`_token_counts`."""
    objects, brackets, colons, commas, quotes = counts
    text = len(raw) * (3 if raw.isascii() else 9)  # the bytes, the decoded text, the strings' characters
    return (text + MEMORY_PER_OBJECT * objects + MEMORY_PER_ARRAY * brackets
            + MEMORY_PER_MEMBER * colons + MEMORY_PER_ELEMENT * commas
            + MEMORY_PER_STRING * (quotes // 2))


def charge_json(raw: bytes, name: str) -> JsonCounts | None:
    """Count the estimated memory of parsing ``raw`` (:func:`json_memory_estimate`) against the run's total
    (no-op outside a run). Returns the :func:`json_counts` taken for the estimate (the safetensors header reader
    needs them too), or ``None`` outside a run, where nothing is counted.

    Raises:
        BudgetSpent: see :meth:`RunBudget.charge_json`.
    """
    run = _RUN.get()
    if run is None:
        return None
    counts = _token_counts(raw)
    run.charge_json(_estimate(raw, counts), name)
    return counts[1], counts[2], counts[4]


def charge_header_json(raw: bytes, name: str) -> HeaderCounts | None:
    """:func:`charge_json` for a safetensors header: the same estimate counted the same way, from one pass that also
    counts ``e`` (:func:`_token_counts_e`); returns the :data:`HeaderCounts` taken, or ``None`` outside a run.

    Raises:
        BudgetSpent: see :meth:`RunBudget.charge_json`.
    """
    run = _RUN.get()
    if run is None:
        return None
    counts, es = _token_counts_e(raw)
    run.charge_json(_estimate(raw, counts), name)
    return counts[1], counts[2], counts[4], es


def charge_read(n: int, name: str) -> None:
    """Count ``n`` bytes read against the run's total (no-op outside a run).

    Raises:
        BudgetSpent: see :meth:`RunBudget.charge_read`.
    """
    run = _RUN.get()
    if run is not None:
        run.charge_read(n, name)


def open_regular(path: Path | str, *, follow: bool = True) -> int:
    """Open ``path`` read-only without blocking and return the file descriptor, only if it is a
    regular file. ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer;
    the descriptor is switched back to blocking mode for normal reads. With ``follow=False``
    (``O_NOFOLLOW``) a path whose last component is a symlink is refused: callers that resolved and
    checked the path first pass it, so a symlink swapped in after the check is never followed. Read
    only from the returned descriptor (never reopen the path). The file is recorded as read by the
    run in progress (:func:`note_read`).

    Raises:
        NotRegularFile: a directory, FIFO, socket, device, or (``follow=False``) a symlink (the
            descriptor is closed).
        OSError: the usual open errors (FileNotFoundError, PermissionError, ...).
    """
    import errno
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile("is a symlink (swapped in after it was checked?); not followed", "symlink") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            raise NotRegularFile(f"is {kind}, expected a regular file; not read", "directory" if stat.S_ISDIR(mode) else "other")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    note_read(path)
    return fd


def read_fd_bounded(fd: int, limit: int, name: str) -> bytes:
    """Read the whole regular file open on ``fd`` (from its start), at most ``limit`` bytes, and count them
    against the run's total. The descriptor stays open.

    Raises:
        InputError: the file is larger than ``limit`` or grew past it while read; :class:`BudgetSpent`.
        OSError: a read error.
    """
    size = os.fstat(fd).st_size
    if size > limit:
        raise InputError(name, f"file is {size} bytes, over the {limit}-byte limit")
    charge_read(size, name)
    # Ask for the file's own size (+1 to notice growth), not the limit: read(n) allocates n bytes up front,
    # which for a 64 MiB limit on a 2 KB source file dominated a tree scan.
    chunks = _pread_upto(fd, 0, size + 1)
    got = sum(map(len, chunks))
    if got > size:  # it grew since fstat: read on, still bounded
        chunks += _pread_upto(fd, got, limit + 1)
        got = sum(map(len, chunks))
        if got > limit:
            raise InputError(name, f"file grew past the {limit}-byte limit while being read")
        charge_read(got - size, name)
    return b"".join(chunks)


def _pread_upto(fd: int, start: int, end: int) -> list[bytes]:
    """Bytes ``start..end-1`` of ``fd`` (fewer at the end of the file), as chunks."""
    chunks: list[bytes] = []
    pos = start
    while pos < end:
        chunk = os.pread(fd, end - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return chunks


def read_bytes_bounded(path: Path, limit: int, *, display: str | None = None, follow: bool = True) -> bytes:
    """Read at most ``limit`` bytes of ``path`` through one descriptor (:func:`open_regular`).

    Args:
        path: file to read.
        limit: maximum size in bytes; a larger file is refused, not truncated.
        display: name used in error messages (defaults to ``str(path)``).
        follow: False refuses a path whose last component is a symlink (``O_NOFOLLOW``).

    Raises:
        InputError: the file is missing, unreadable, not a regular file, or larger than ``limit``;
            :class:`BudgetSpent` when the run's total is spent.
    """
    name = display or str(path)
    try:
        fd = open_regular(path, follow=follow)
        try:
            data = read_fd_bounded(fd, limit, name)
        finally:
            os.close(fd)
    except InputError:
        raise
    except NotRegularFile as exc:
        raise InputError(name, str(exc)) from None
    except FileNotFoundError:
        raise InputError(name, "no such file") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, expected a file") from None
    except PermissionError:
        raise InputError(name, "permission denied") from None
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    return data


def read_json_bounded(path: Path, *, limit: int = MAX_JSON_BYTES, display: str | None = None, follow: bool = True) -> Any:
    """Parse a JSON file (UTF-8; NaN/Infinity accepted as transformers writes them) with a size bound.

    Raises:
        InputError: unreadable, too large, not UTF-8, or not valid JSON (message gives line and column);
            :class:`BudgetSpent` when the run's totals are spent.
    """
    name = display or str(path)
    raw = read_bytes_bounded(path, limit, display=name, follow=follow)
    return parse_json_bytes(raw, name)


def parse_json_bytes(raw: bytes, name: str) -> Any:
    """Parse JSON bytes read from ``name`` (see :func:`read_json_bounded`), counted against the run's JSON total.

    Raises:
        InputError: not UTF-8 or not valid JSON; :class:`BudgetSpent`.
    """
    charge_json(raw, name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, f"not UTF-8 (byte {exc.start})") from None

    try:
        # NaN / Infinity are accepted: transformers writes them (e.g. nvidia Nemotron-3-Super config.json).
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(name, f"invalid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(name, f"invalid JSON: {exc}") from None


def contained_relpath(name: str) -> PurePosixPath | None:
    """Validate a relative path taken from an artifact (e.g. a ``weight_map`` shard name).

    Returns the normalised POSIX path when it is relative and stays inside its root; ``None`` when it
    is absolute, has a drive or URL scheme, contains ``..`` or a NUL, or is empty. Nothing is opened.
    """
    if not name or "\x00" in name or "\\" in name or "://" in name:
        return None
    p = PurePosixPath(name)
    if p.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return None
    if any(part == ".." for part in p.parts) or not p.parts:
        return None
    return p


def resolve_inside(root: Path, rel: PurePosixPath | str) -> Path | None:
    """Join ``rel`` to ``root`` and return it only if the real path (symlinks resolved) stays inside
    the real ``root``. Returns ``None`` for a path that escapes, including through a symlink, or for a
    symlink loop. The file need not exist.
    """
    try:
        real_root = root.resolve(strict=False)
        target = (root / str(rel)).resolve(strict=False)
    except (OSError, RuntimeError):  # RuntimeError: symlink loop on older Pythons
        return None
    if target != real_root and real_root not in target.parents:
        return None
    return target
