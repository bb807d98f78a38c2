"""Bounded, contained file access for audited artifacts (checkpoints, SGLang trees, env dumps).

Audited artifacts are data, never code: nothing here imports, executes or unpickles. Every read
has a byte limit, and every relative path taken from an artifact (a ``weight_map`` value, a file
in a wheel) is checked to stay inside the audited root before it is opened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

from mtp_audit.errors import InputError

#: Largest JSON metadata file read (bytes). A real 163-shard DeepSeek-V3 index is ~9 MB; the
#: REAP Qwen3.5 index is 2.3 MB. 256 MiB leaves room and still bounds memory.
MAX_JSON_BYTES = 256 * 1024 * 1024

#: Largest text file read by the env-dump parsers and source readers (bytes).
MAX_TEXT_BYTES = 64 * 1024 * 1024


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory: never read (a FIFO would block forever)."""


def open_regular(path: Path | str) -> int:
    """Open ``path`` read-only without blocking and return the file descriptor, only if it is a
    regular file. ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer;
    the descriptor is switched back to blocking mode for normal reads.

    Raises:
        NotRegularFile: a directory, FIFO, socket or device (the descriptor is closed).
        OSError: the usual open errors (FileNotFoundError, PermissionError, ...).
    """
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
            raise NotRegularFile(f"is {kind}, expected a regular file; not read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes_bounded(path: Path, limit: int, *, display: str | None = None) -> bytes:
    """Read at most ``limit`` bytes of ``path``.

    Args:
        path: file to read.
        limit: maximum size in bytes; a larger file is refused, not truncated.
        display: name used in error messages (defaults to ``str(path)``).

    Raises:
        InputError: the file is missing, unreadable, not a regular file, or larger than ``limit``.
    """
    name = display or str(path)
    try:
        fd = open_regular(path)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise InputError(name, f"file is {size} bytes, over the {limit}-byte limit")
            # Ask for the file's own size (+1 to notice growth), not the limit: read(n) allocates n
            # bytes up front, which for a 64 MiB limit on a 2 KB source file dominated a tree scan.
            data = fh.read(size + 1)
            if len(data) > size:  # it grew since fstat: read on, still bounded
                data += fh.read(limit + 1 - len(data))
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
    if len(data) > limit:
        raise InputError(name, f"file grew past the {limit}-byte limit while being read")
    return data


def read_json_bounded(path: Path, *, limit: int = MAX_JSON_BYTES, display: str | None = None) -> Any:
    """Parse a JSON file (UTF-8; NaN/Infinity accepted as transformers writes them) with a size bound.

    Raises:
        InputError: unreadable, too large, not UTF-8, or not valid JSON (message gives line and column).
    """
    name = display or str(path)
    raw = read_bytes_bounded(path, limit, display=name)
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
