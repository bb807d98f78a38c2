"""Where reports go: pairing ``-f`` with ``-o``, staging every output before any is put in place, atomic writes,
FIFOs and standard output."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError

#: ``-o`` suffix -> format, when ``-f`` does not name one for that output (longest suffix first).
SUFFIX_FORMATS = ((".sarif.json", "sarif"), (".sarif", "sarif"), (".json", "json"), (".md", "markdown"),
                  (".markdown", "markdown"), (".txt", "text"), (".log", "text"))


def format_for(path: Path | str) -> str | None:
    """The format an output's suffix names (``a.sarif`` -> ``sarif``), or ``None``."""
    name = os.fspath(path).lower()
    return next((fmt for suffix, fmt in SUFFIX_FORMATS if name.endswith(suffix)), None)


def output_plan(fmts: Sequence[str] | str | None, outputs: Sequence[Path | str | None] | Path | str | None) -> list[tuple[str, Path | str]]:
    """Pair formats with outputs: ``[(format, path or "-")]``, in the order of the outputs.

    With as many ``-f`` as ``-o`` they pair in order, and a ``-f`` that contradicts its output's suffix
    (``-f text -o x.sarif``) is refused. Otherwise an ``-o`` with a known suffix (``.sarif``, ``.json``, ``.md``,
    ``.txt``) takes that format, the ``-f`` values go in order to the outputs whose suffix tells nothing (``-``, a plain
    name), and a ``-f`` left over must name the format of one of the suffixed outputs. A single ``-o`` with neither
    ``-f`` nor a known suffix gets text, the default; with no ``-o`` the one format (default text) goes to stdout.
    Nothing is dropped and nothing is written in a format its name contradicts.

    Raises:
        InputError: more formats than outputs, a format left without an output, a format that contradicts its
            output's suffix, or an output whose format cannot be told.
    """
    fl = [f.lower() for f in ([fmts] if isinstance(fmts, str) else [f for f in (fmts or ()) if f])]
    if outputs is None or isinstance(outputs, (str, os.PathLike)):
        ol: list[Path | str] = [outputs] if outputs is not None else []
    else:
        ol = [o for o in outputs if o is not None]
    if not ol:
        if len(fl) > 1:
            raise InputError("--format", f"{len(fl)} formats but no --output: give each format its own -o FILE "
                                         "(one of them may be '-', standard output)")
        return [(fl[0] if fl else "text", STDOUT)]
    if len(fl) > len(ol):
        raise InputError("--format", f"{len(fl)} formats but {len(ol)} output(s): give each -f its own -o FILE")
    suffixed = [None if is_stdout(out) else format_for(out) for out in ol]
    if len(fl) == len(ol):
        return [_paired(fmt, out, told) for fmt, out, told in zip(fl, ol, suffixed)]
    return _by_suffix(fl, ol, suffixed)


def _paired(fmt: str, out: Path | str, told: str | None) -> tuple[str, Path | str]:
    """One ``-f`` with its ``-o``, refused when a structured suffix says another format.

    Raises:
        InputError: ``-f text -o report.sarif`` and the like.
    """
    if told is not None and told != fmt and told != "text":
        raise InputError(os.fspath(out), f"-f {fmt} contradicts the suffix (a {told} name): change the -f or the file name")
    return fmt, out


def _by_suffix(fl: list[str], ol: list[Path | str], suffixed: list[str | None]) -> list[tuple[str, Path | str]]:
    """Fewer formats than outputs: suffixes first, the formats to the outputs whose suffix tells nothing.

    Raises:
        InputError: an output whose format cannot be told, or a format left over that no output takes.
    """
    left = list(fl)
    plan: list[tuple[str, Path | str]] = []
    for out, told in zip(ol, suffixed):
        fmt = told if told is not None else (left.pop(0) if left else ("text" if len(ol) == 1 else None))
        if fmt is None:
            raise InputError(os.fspath(out), "cannot tell the format from the suffix (.sarif, .json, .md, .txt): "
                                             "give it a -f, or a name with one of these suffixes")
        plan.append((fmt, out))
    extra = [f for f in left if f not in {fmt for fmt, _ in plan}]
    if extra:
        raise InputError("--format", f"-f {extra[0]} has no output: give it its own -o FILE")
    return plan


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Output value that means "standard output" (``-o -``), as the ecosystem's tools read it.
STDOUT = "-"


def is_stdout(path: Path | str | None) -> bool:
    return path is not None and os.fspath(path) == STDOUT


def std_stream_of(path: Path) -> Any:
    """``sys.stdout`` / ``sys.stderr`` when ``path`` (``/dev/stdout``, ``/proc/self/fd/1``, ...) is the
    file this process's fd 1 / 2 already has open, else ``None``. Writing to the stream rather than
    reopening the path keeps ``>>`` appends and pipes working."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            if os.path.samestat(st, os.fstat(fd)):
                return stream
        except OSError:
            continue
    return None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a failure never leaves a half-written or truncated
    report: a regular file (or a new one) is replaced through a temporary file in the same folder and
    ``os.replace``, with the permissions a plain ``open`` would give (0666 & ~umask); a symlink is
    followed and its target replaced; a device, FIFO or pipe (``/dev/null``, ``/dev/stdout`` on a pipe)
    is written through, never replaced; a path naming this process's own stdout or stderr
    (``/dev/stdout`` redirected to a file, even with ``>>``) is written to that stream. Characters that
    cannot be encoded (file names that are not UTF-8) are written as ``\\udcxx`` escapes, which JSON and
    SARIF readers decode.

    Raises:
        InputError: the folder does not exist or is not writable, ``path`` is a directory, its name is
            too long, or the write fails (disk full). Never any other exception.
    """
    stage_and_commit((), (("", path, text),))


class _Staged:
    """One prepared write: a temporary file beside its target (replaced into place by :meth:`commit`),
    or a stream / device written at commit time."""

    def __init__(self, path: Path, data: bytes, text: str, *, tmp: str | None = None, target: Path | None = None,
                 stream: Any = None, device: bool = False, fd: int | None = None) -> None:
        self.path, self.data, self.text = path, data, text
        self.tmp, self.target, self.stream, self.device, self.fd = tmp, target, stream, device, fd

    def commit(self) -> None:
        try:
            if self.stream is not None:
                _write_stream(self.stream, self.text, "stdout" if is_stdout(self.path) else str(self.path))
            elif self.fd is not None:  # a FIFO, opened with its reader present when staged
                fd, self.fd = self.fd, None
                with os.fdopen(fd, "wb") as fh:
                    fh.write(self.data)
            elif self.device:
                with open(self.path, "wb") as fh:
                    fh.write(self.data)
            else:
                assert self.tmp is not None and self.target is not None
                os.replace(self.tmp, self.target)
                self.tmp = None
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise InputError(str(self.path), f"cannot write: {getattr(exc, 'strerror', None) or exc}") from None

    def discard(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None


def _open_fifo(path: Path) -> int:
    """A FIFO opened for writing only if a reader has it open (``O_NONBLOCK``: without one, ``open`` would wait for
    ever, with the run's signals held back), then switched to blocking writes.

    Raises:
        InputError: no process is reading the FIFO."""
    import errno

    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise InputError(str(path), "is a FIFO that no process is reading; nothing written") from None
        raise
    os.set_blocking(fd, True)
    return fd


def stage_write(path: Path, text: str) -> _Staged:
    """Prepare writing ``text`` to ``path`` (see :func:`write_atomic`): the bytes are already in a
    temporary file beside the target when this returns, so only an ``os.replace`` is left.

    Raises:
        InputError: as :func:`write_atomic`; nothing is left behind.
    """
    data = text.encode("utf-8", errors="backslashreplace")
    try:
        stream = std_stream_of(path)
        if stream is not None:
            return _Staged(path, data, text, stream=stream)
        try:
            st: os.stat_result | None = os.stat(path)  # follows symlinks
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise InputError(str(path), "is a directory, cannot write the report there")
        if st is not None and stat.S_ISFIFO(st.st_mode):
            return _Staged(path, data, text, device=True, fd=_open_fifo(path))
        if st is not None and not stat.S_ISREG(st.st_mode):  # a device: written through at commit
            return _Staged(path, data, text, device=True)
        target = Path(os.path.realpath(path)) if os.path.islink(path) else path
        folder = target.parent if str(target.parent) else Path(".")
        if not folder.is_dir():
            raise InputError(str(path), f"folder {folder} does not exist")
        import tempfile  # only when a file is written (start-up: tempfile imports shutil, random)

        fd, tmp = tempfile.mkstemp(prefix=".mtp-audit-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o666 & ~_umask())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return _Staged(path, data, text, tmp=tmp, target=target)
    except InputError:
        raise
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot write: {getattr(exc, 'strerror', None) or exc}") from None


def stage_and_commit(also_write: Sequence[tuple[str, Any, str]], texts: Sequence[tuple[str, Any, str]]) -> bool:
    """Stage every output, then put them all in place, with SIGTERM/SIGHUP/SIGINT held back meanwhile (a signal
    lands before anything is written or after all of it is). Returns whether the report went to stdout.

    Raises:
        InputError: a write fails (nothing is left behind). Signalled / KeyboardInterrupt: a signal arrived
            earlier in the run and its exception was swallowed (:func:`mtp_audit.cli.signals.raise_pending`).
    """
    from mtp_audit.cli.signals import deferred, held, raise_pending

    staged: list[_Staged] = []
    to_stdout = False
    with deferred():
        raise_pending()
        try:  # every file is staged before any is put in place: a failing output leaves nothing written
            for _option, path, body in also_write:
                if path is not None:
                    staged.append(_Staged(Path(STDOUT), b"", body, stream=_stdout()) if is_stdout(path)
                                  else stage_write(Path(path), body))
            for _, path, text in texts:
                if is_stdout(path) or (sys.stdout is not None and std_stream_of(Path(path)) is sys.stdout):
                    to_stdout = True
                    staged.append(_Staged(Path(STDOUT), b"", text, stream=_stdout()))
                else:
                    staged.append(stage_write(Path(path), text))
        except BaseException:
            for item in staged:
                item.discard()
            raise
        if held():  # stopped while staging: nothing is written; the signal is delivered as the block ends
            for item in staged:
                item.discard()
            return to_stdout
        commit_all(staged)
    return to_stdout


def _stdout() -> Any:
    """``sys.stdout``, the stream a report for ``-`` goes to.

    Raises:
        InputError: standard output is closed (the process was started with ``>&-``: Python has no ``sys.stdout``).
    """
    if sys.stdout is None:
        raise InputError("stdout", "cannot write the report: standard output is closed")
    return sys.stdout


def commit_all(staged: Sequence[_Staged]) -> None:
    """Write devices and FIFOs first (they cannot be staged: ``/dev/full`` fails only when written), then
    replace every staged file into place, then write stdout/stderr; on a failure the writes not yet committed
    are discarded (their temporary files removed), so a device that refuses the report leaves no file written."""
    try:
        for item in sorted(staged, key=lambda x: 0 if x.device else 2 if x.stream is not None else 1):
            item.commit()
    finally:
        for item in staged:
            item.discard()


def _write_stream(stream: Any, text: str, where: str = "stdout") -> None:
    """Write ``text`` to a text stream (through its binary buffer when it has one, so that
    undecodable file names come out as ``\\udcxx`` escapes, not as an encoding error).

    Raises:
        InputError: the stream is closed or the write fails (``/dev/full``). ``BrokenPipeError``
            propagates (the CLI exits quietly on it).
    """
    try:
        if stream is None:
            raise ValueError("stream is closed")
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            stream.flush()
            buffer.write(text.encode(getattr(stream, "encoding", None) or "utf-8", errors="backslashreplace"))
        else:
            stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(where, f"cannot write the report: {getattr(exc, 'strerror', None) or exc}") from None
