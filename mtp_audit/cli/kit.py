"""Shared CLI plumbing for every analyzer command: output options, rendering, atomic writes and
the exit code. Analyzer command modules import this; it imports no analyzer."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mtp_audit.cli.invocation import current, echo_err
from mtp_audit.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

FORMAT_CHOICES = ("text", "json", "markdown", "sarif")
FAIL_ON_CHOICES = ("info", "warning", "error", "never")


#: ``-o`` suffix -> format, when ``-f`` does not name one for that output (longest suffix first).
SUFFIX_FORMATS = ((".sarif.json", "sarif"), (".sarif", "sarif"), (".json", "json"), (".md", "markdown"),
                  (".markdown", "markdown"), (".txt", "text"), (".log", "text"))

#: ``ctx.meta`` key of the display filter (``-q``, ``--severity``, ``--select``).
META_SHOWN = "mtp_audit.shown"
#: ``ctx.meta`` key of ``--sarif-category`` (``None``: the SARIF's own ``mtp-audit/<analyzer>/``).
META_CATEGORY = "mtp_audit.sarif_category"
#: ``ctx.meta`` key of ``(--baseline-findings, --write-baseline)`` (each ``None`` when not given).
META_BASELINE = "mtp_audit.baseline"


def output_options(func: F) -> F:
    """Add the output options to a click command: ``-f/--format`` and ``-o/--output`` (both repeatable,
    paired in order: ``-f sarif -o a.sarif -f json -o b.json``; an ``-o`` without its ``-f`` takes the
    format from its suffix), ``--fail-on``, the display filters ``-q/--quiet``, ``--severity`` and
    ``--select`` (what is listed, never what is computed nor the exit code), ``--sarif-category`` (the SARIF's
    ``automationDetails.id``), ``--baseline-findings`` / ``--write-baseline`` (:mod:`mtp_audit.cli.baseline`), and the
    settings options
    (``--config``, ``--ignore``, ``-v/--verbose``: :func:`mtp_audit.cli.config.config_options`).

    The command receives ``fmt`` and ``output`` as tuples (pass them to :func:`emit` as they are) and
    ``fail_on`` (None when not given, so the settings file's ``fail-on`` can apply); the filters reach
    :func:`emit` through the click context."""
    import click

    from mtp_audit.cli.config import config_options

    out: Any = config_options(with_display_filter(func))
    out = click.option("--write-baseline", "write_baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
                       help="Write the fingerprints of every finding of this run to FILE: the baseline to pass to "
                            "--baseline-findings later (adopting the gate on a project that has findings today).")(out)
    out = click.option("--baseline-findings", "baseline_findings", type=click.Path(dir_okay=False, path_type=Path),
                       default=None, help="Findings whose fingerprints (SARIF partialFingerprints) are in FILE (a "
                                          "--write-baseline file or an earlier SARIF) are ignored: listed, never failing the gate.")(out)
    out = click.option("--sarif-category", "sarif_category", metavar="NAME", default=None,
                       help="SARIF: the code-scanning category (runs[].automationDetails.id = NAME/), to keep the alerts "
                            "of several audits of one repository apart [default: mtp-audit/<analyzer>].")(out)
    out = click.option("--select", "select", multiple=True, metavar="RULE[,RULE...]",
                       help="List only these rules (an id such as MTP209, or a prefix such as MTP2); repeatable. "
                            "The verdict and the exit code still count every finding.")(out)
    out = click.option("--severity", "min_severity", type=click.Choice(("info", "warning", "error"), case_sensitive=False),
                       default=None, help="List only findings at or above this severity (the verdict and the exit code "
                                           "still count every finding).")(out)
    out = click.option("--quiet", "-q", "quiet", is_flag=True, default=False,
                       help="Text and Markdown: only the verdict, the answer and the counts (no finding lines).")(out)
    out = click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON_CHOICES, case_sensitive=False),
        default=None,
        help="Lowest severity that makes the exit code 1 ('never': only 2 and 3 remain possible) "
             "[default: fail-on of [tool.mtp-audit], else error].",
    )(out)
    out = click.option(
        "--output",
        "-o",
        multiple=True,
        type=click.Path(dir_okay=False, writable=False, path_type=Path),
        help="Write the report to FILE (atomically, only once it is complete; never over an input); '-' is stdout. "
             "Repeatable: the Nth -o gets the Nth -f, else the format of its suffix (.sarif, .json, .md, .txt).",
    )(out)
    out = click.option(
        "--format",
        "-f",
        "fmt",
        multiple=True,
        type=click.Choice(FORMAT_CHOICES, case_sensitive=False),
        help="Report format: text, json, markdown or sarif [default: text, or the -o suffix]. Repeatable, paired with -o.",
    )(out)
    return out  # type: ignore[no-any-return]


def with_display_filter(func: F) -> F:
    """``func`` taking the output options' values: the display filters (``quiet``, ``min_severity``,
    ``select``), ``sarif_category``, ``baseline_findings`` and ``write_baseline`` are taken out of its keyword arguments and left in the running command's
    ``meta`` (:func:`mtp_audit.cli.invocation.current`) for :func:`emit`."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        meta = current().meta
        meta[META_SHOWN] = Shown.of(kwargs.pop("quiet", False), kwargs.pop("min_severity", None), kwargs.pop("select", ()))
        meta[META_CATEGORY] = checked_category(kwargs.pop("sarif_category", None))
        meta[META_BASELINE] = (kwargs.pop("baseline_findings", None), kwargs.pop("write_baseline", None))
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def checked_category(category: str | None) -> str | None:
    """``--sarif-category`` as given, checked before any work (:func:`mtp_audit.formats.sarif.automation_id`).

    Raises:
        InputError: an empty category or one with a control character.
    """
    if category is None:
        return None
    from mtp_audit.formats.sarif import automation_id

    try:
        automation_id(category, "")
    except ValueError as exc:
        raise InputError("--sarif-category", str(exc)) from None
    return category


class Shown:
    """What the outputs list: all findings, or those at or above ``severity`` and among ``select``
    (rule ids or id prefixes); ``quiet`` drops the finding lines of the text and Markdown reports.
    Never changes the verdict, the status or the exit code."""

    def __init__(self, quiet: bool = False, severity: str | None = None, select: Sequence[str] = ()) -> None:
        from mtp_audit.report import Severity

        self.quiet = quiet
        self.severity = Severity.parse(severity) if severity else None
        self.select = tuple(s.strip().upper() for item in select for s in item.split(",") if s.strip())
        _check_selected(self.select)

    @classmethod
    def of(cls, quiet: bool, severity: str | None, select: Sequence[str]) -> Shown:
        """The filter of the given option values (see the class)."""
        return cls(bool(quiet), severity, select)

    @property
    def active(self) -> bool:
        """Whether anything is filtered."""
        return bool(self.quiet or self.severity or self.select)

    def __call__(self, finding: Any) -> bool:
        if self.severity is not None and finding.severity < self.severity:
            return False
        return not self.select or any(finding.rule_id.startswith(s) for s in self.select)

    def describe(self) -> str:
        """The options that filter, as typed (``--severity warning --select MTP2``)."""
        parts = [f"--severity {self.severity.label}"] if self.severity else []
        parts += [f"--select {s}" for s in self.select]
        return " ".join(parts)


def _check_selected(select: Sequence[str]) -> None:
    """Every ``--select`` value is a rule id or the prefix of one (``MTP2``), as ``--ignore`` requires a known rule.

    Raises:
        InputError: a value no rule id starts with (it would hide every finding without a word).
    """
    if not select:
        return
    from mtp_audit.report.rules import all_rules

    ids = [r.id for r in all_rules()]
    for s in select:
        if not any(i.startswith(s) for i in ids):
            raise InputError("--select", f"{s}: no rule id starts with it (see 'mtp-audit rules')")


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
    suffixed = [None if _is_stdout(out) else format_for(out) for out in ol]
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

#: Most entries walked in one protected folder when looking for a hard link to an output file.
MAX_PROTECTED_WALK = 200_000


def _is_stdout(path: Path | str | None) -> bool:
    return path is not None and os.fspath(path) == STDOUT


def _std_stream_of(path: Path) -> Any:
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
    _stage_and_commit((), (("", path, text),))


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
                _write_stream(self.stream, self.text, "stdout" if _is_stdout(self.path) else str(self.path))
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
        stream = _std_stream_of(path)
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


def _stage_and_commit(also_write: Sequence[tuple[str, Any, str]], texts: Sequence[tuple[str, Any, str]]) -> bool:
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
                    staged.append(_Staged(Path(STDOUT), b"", body, stream=_stdout()) if _is_stdout(path)
                                  else stage_write(Path(path), body))
            for _, path, text in texts:
                if _is_stdout(path) or (sys.stdout is not None and _std_stream_of(Path(path)) is sys.stdout):
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


def release_or_path(package: str, target: str | None) -> str | None:
    """A TARGET argument as the analyzer takes it: ``None`` or an existing path as given, a release version (``0.5.23``)
    as the local wheel :func:`mtp_audit.sources.pypi.by_version` fetches. The package-index client is imported only for
    a version, so a path does not pay for it at start-up.

    Raises:
        InputError / IndexUnavailable: as :func:`mtp_audit.sources.pypi.release_wheel`.
    """
    if target is None or os.path.lexists(target):
        return target
    from mtp_audit.sources.pypi import by_version

    return by_version(package, target)


def installed_package_folder(name: str) -> list[str]:
    """``[folder]`` of the installed top-level package ``name`` (located with ``find_spec``, which does not
    run its ``__init__``), or ``[]``: what an engine command with no TARGET audits, protected like any input."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [str(p) for p in (spec.submodule_search_locations or [])][:1] if spec is not None else []


def input_paths(report: Any, *, extra: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """Every existing local path the running command reads: ``extra`` (what the command module knows
    it reads), every target of ``report``, and each parameter value of the running click command
    (``--env-dump``, ``--sglang``, ``--facts``, ``--baseline``, the tokens of a launch command and the
    ``VALUE`` of its ``--option=VALUE`` tokens), except the output options themselves. A checkpoint
    target that is a file (an index, a shard, a ``config.json``) stands for its folder: the audit reads
    its siblings. Names are returned as given (relative names stay relative)."""
    names: list[str] = [os.fspath(x) for x in extra]
    ctx = current()
    if ctx is not None:
        for key, value in ctx.params.items():
            if key in OUTPUT_PARAMS:
                continue
            values = value if isinstance(value, (list, tuple)) else (value,)
            for v in values:
                if not isinstance(v, (str, os.PathLike)):
                    continue
                text = os.fspath(v)
                names.append(text)
                if text.startswith("-") and "=" in text:
                    names.append(text.partition("=")[2])
                if key in ("target", "base", "derived") and _is_file(text):
                    names.append(os.path.dirname(text) or ".")
    for t in report.targets:  # after the names the user typed, so messages name the input as typed
        names.append(t.name)
        if t.analyzer in ("checkpoint", "compare") and _is_file(t.name):
            names.append(os.path.dirname(t.name) or ".")
    out: list[str] = []
    for name in names:
        try:
            if name and name != STDOUT and os.path.lexists(name) and name not in out:
                out.append(name)
        except (OSError, ValueError, TypeError):
            continue
    return out


def _is_file(name: str) -> bool:
    try:
        return os.path.isfile(name)
    except (OSError, ValueError, TypeError):
        return False


#: click parameter names of output options: never "inputs" themselves.
OUTPUT_PARAMS = frozenset({"output", "save_facts"})


def check_outputs(protected: Iterable[str | os.PathLike[str]], outputs: Mapping[str, Path | str | None], *,
                  read: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before anything is written, an output plan that would destroy an input or collide.

    Args:
        protected: files and folders the command read or audited. A file is protected itself; a
            folder protects every file already inside it (a new file beside them is allowed).
            Identity is checked by real path (symlinks resolved) and by ``(st_dev, st_ino)``, so a
            symlink or a hard link to a protected file is refused too.
        outputs: option name (``"--output"``, ``"--save-facts"``) -> the path it will write, ``"-"`` for
            standard output, or ``None`` (not given). Devices and FIFOs (``/dev/null``, a pipe) are
            written through and are never "protected" nor "colliding".
        read: every file and folder the run read on its own (:func:`mtp_audit.sources.bounded.files_read`:
            an installed package's files, ``torch/version.py``), protected like ``protected``; checked after
            it, so a refusal names the input as the user typed it when it can.

    Raises:
        InputError: ``<output>: is the audited input X ...`` / ``would overwrite a file of the audited
            input X ...``; two outputs naming the same file (or both ``-``); an output whose name
            cannot even be examined (too long, a loop of symlinks).
    """
    files, real_files, folders = _protected_index(protected)
    _protect_stdin(files)
    read_index = _protected_index(read)
    seen: dict[object, str] = {}
    for option, out in outputs.items():
        if out is None:
            continue
        what = "the facts" if option == "--save-facts" else "the report"
        keys: set[object]
        if _is_stdout(out):
            keys = {"stdout"}
        else:
            path = os.fspath(out)
            try:
                st_out: os.stat_result | None = os.stat(path)
            except FileNotFoundError:
                st_out = None
            except (OSError, ValueError) as exc:
                raise InputError(path, f"cannot write: {getattr(exc, 'strerror', None) or exc}") from None
            if st_out is not None and stat.S_ISDIR(st_out.st_mode):
                raise InputError(path, f"is a directory, cannot write {what} there")
            if st_out is not None and not stat.S_ISREG(st_out.st_mode):
                if _std_stream_of(Path(path)) is not sys.stdout:
                    continue  # a device or FIFO other than our stdout: written through, nothing to lose
                keys = {"stdout"}
            else:
                real = os.path.realpath(path)
                hit = real_files.get(real)
                if hit is None and st_out is not None:
                    hit = files.get((st_out.st_dev, st_out.st_ino))
                if hit is not None:
                    raise InputError(path, f"is the audited input {hit}; refusing to write {what} there")
                if st_out is not None:
                    _refuse_inside(path, real, st_out, folders, what)
                    _refuse_read(path, real, st_out, read_index, what)
                keys = {real} | ({(st_out.st_dev, st_out.st_ino)} if st_out is not None else set())
        clash = next((seen[k] for k in keys if k in seen), None)
        if clash is not None:
            if keys == {"stdout"}:
                raise InputError(option, f"{clash} and {option} both go to standard output; send one of them to a file")
            raise InputError(os.fspath(out), f"{clash} and {option} name the same file; give them different files")
        seen.update(dict.fromkeys(keys, option))


def _protect_stdin(files: dict[tuple[int, int], str]) -> None:
    """The regular file behind this process's standard input (``< my.log``) is an input too: ``-o /dev/stdin`` (or any
    other name of it) must not replace it."""
    try:
        st = os.fstat(0)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        files.setdefault((st.st_dev, st.st_ino), "standard input")


def _protected_index(items: Iterable[str | os.PathLike[str]]) -> tuple[dict[tuple[int, int], str], dict[str, str], list[tuple[str, str]]]:
    """``(files by (st_dev, st_ino), files by real path, [(folder real path, name)])`` of the existing
    ``items``; the first name given for a file is kept."""
    files: dict[tuple[int, int], str] = {}
    real_files: dict[str, str] = {}
    folders: list[tuple[str, str]] = []
    real_dirs: dict[str, str] = {}
    for item in items:
        name = os.fspath(item)
        try:
            lst = os.lstat(name)  # not a symlink (4,000 files of an engine tree): this is os.stat's answer too
            st = os.stat(name) if stat.S_ISLNK(lst.st_mode) else lst
        except (OSError, ValueError):
            continue
        real = _realpath(name, real_dirs, lst)
        if stat.S_ISDIR(st.st_mode):
            folders.append((real, name))
        elif stat.S_ISREG(st.st_mode):
            files.setdefault((st.st_dev, st.st_ino), name)
            real_files.setdefault(real, name)
    return files, real_files, folders


def _realpath(name: str, real_dirs: dict[str, str], lst: os.stat_result | None = None) -> str:
    """``os.path.realpath(name)`` of an existing path, with the real path of its folder memoised in ``real_dirs``: a
    last component that is not a symlink resolves to itself, so the 4,000 files of an engine tree cost one
    ``lstat`` each (``lst``, when the caller has it: none) instead of one per path component."""
    head, tail = os.path.split(name)
    if not head or tail in ("", ".", ".."):
        return os.path.realpath(name)
    if lst is None:
        try:
            lst = os.lstat(name)
        except (OSError, ValueError):
            return os.path.realpath(name)
    if stat.S_ISLNK(lst.st_mode):
        return os.path.realpath(name)
    return os.path.join(_real_folder(head, real_dirs), tail)


def _real_folder(folder: str, real_dirs: dict[str, str]) -> str:
    """``os.path.realpath(folder)``, memoised in ``real_dirs`` and built from its parent's: a component that is not a
    symlink resolves to itself, so each folder of a tree costs one ``lstat`` instead of one per path component."""
    got = real_dirs.get(folder)
    if got is None:
        parent, base = os.path.split(folder)
        try:
            plain = bool(parent) and parent != folder and base not in ("", ".", "..") \
                and not stat.S_ISLNK(os.lstat(folder).st_mode)
        except (OSError, ValueError):
            plain = False
        got = real_dirs[folder] = os.path.join(_real_folder(parent, real_dirs), base) if plain else os.path.realpath(folder)
    return got


def _refuse_inside(path: str, real: str, st_out: os.stat_result, folders: list[tuple[str, str]], what: str) -> None:
    for folder_real, folder_name in folders:
        if _under(real, folder_real) or (st_out.st_nlink > 1 and _linked_inside(folder_real, st_out)):
            raise InputError(path, f"would overwrite a file of the audited input {folder_name}; "
                                   f"refusing to write {what} there")


def _refuse_read(path: str, real: str, st_out: os.stat_result, index: tuple[dict[tuple[int, int], str], dict[str, str],
                 list[tuple[str, str]]], what: str) -> None:
    """Refuse an output over a file (or into a folder) the run read without being told to."""
    files, real_files, folders = index
    hit = real_files.get(real) or files.get((st_out.st_dev, st_out.st_ino))
    if hit is not None:
        raise InputError(path, f"is {hit}, a file this audit read; refusing to write {what} there")
    for folder_real, folder_name in folders:
        if _under(real, folder_real):
            raise InputError(path, f"would overwrite a file of {folder_name}, which this audit read; refusing to write {what} there")


def _under(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder and path != folder
    except ValueError:
        return False


def _linked_inside(folder: str, st_out: os.stat_result) -> bool:
    """Whether a file inside ``folder`` is a hard link to ``st_out`` (bounded walk, symlinks not followed)."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for f in filenames:
            seen += 1
            if seen > MAX_PROTECTED_WALK:
                return True  # cannot tell within the bound: refuse rather than risk an input
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (st_out.st_dev, st_out.st_ino):
                return True
    return False


def use_color(stream: Any) -> bool:
    """Colour and symbols for ``stream``: only a terminal, never with ``NO_COLOR`` set (https://no-color.org);
    ``FORCE_COLOR`` (non-empty) forces them on, ``NO_COLOR`` wins over it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream is not None and stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def emit(
    report: Any,
    fmt: Sequence[str] | str | None,
    output: Sequence[Path | str | None] | Path | str | None,
    fail_on: str | None,
    *,
    protected: Iterable[str | os.PathLike[str]] = (),
    also_write: Sequence[tuple[str, Path | None, str]] = (),
) -> int:
    """Apply the settings (ignores, ``fail-on``: :func:`mtp_audit.cli.config.settings_for`), render
    ``report`` once per output, check every planned output, write them, and return the exit code.

    Args:
        report: the audit result.
        fmt: ``-f`` values (``text`` / ``json`` / ``markdown`` / ``sarif``), one or several.
        output: ``-o`` values (``None`` or ``"-"``: stdout), paired with ``fmt`` by :func:`output_plan`.
        fail_on: the ``--fail-on`` value, None when not given.
        protected: paths the command read beyond what :func:`input_paths` finds on its own (every file
            opened through :mod:`mtp_audit.sources.bounded` in this run is added too: an installed
            package's files, ``torch/version.py`` read by the live preflight).
        also_write: further outputs ``(option, path, text)`` (``--save-facts``), written with the report.

    Nothing is written unless every output passes :func:`check_outputs` against :func:`input_paths`, and
    every file is staged before any is put in place. When no report goes to stdout, its first line
    (verdict and answer) and the counts go to stderr, so CI logs still show them (not with ``-q``).
    Expired ignores are reported on stderr after the report is written. The display filters
    (:class:`Shown`) change what is listed, never the exit code: see :func:`mtp_audit.report.exit_code`.

    Raises:
        InputError: an output would overwrite an input or collides with another output, formats and
            outputs do not pair up, or a write fails.
    """
    from mtp_audit.cli.config import config_files, settings_for, warn_expired
    from mtp_audit.formats.summary import verdict_line
    from mtp_audit.report import Severity, exit_code

    pairs = output_plan(fmt, output)
    resolved = settings_for(report, fail_on.lower() if fail_on else None)
    report = report.ignore(resolved.suppressions)
    report, also_write, baseline_in = _with_baseline(report, also_write)
    threshold = None if resolved.fail_on == "never" else Severity.parse(resolved.fail_on)
    plan: dict[str, Path | str | None] = {}
    for i, (_, path) in enumerate(pairs):
        plan["--output" if i == 0 else f"--output #{i + 1}"] = path
    for option, path, _ in also_write:
        plan[option] = path
    from mtp_audit.sources.bounded import files_read

    check_outputs(input_paths(report, extra=[*protected, *config_files(), *baseline_in]), plan, read=files_read())
    texts = [(fmt_i, path, _render_for(report, fmt_i, path, threshold)) for fmt_i, path in pairs]
    to_stdout = _stage_and_commit(also_write, texts)
    shown = _shown()
    if not to_stdout and not shown.quiet:
        from mtp_audit.formats import render

        head = render(report, "text", fail_on=threshold)
        written = ", ".join(os.fspath(p) for _, p in pairs)
        echo_err(head.split("\n", 1)[0])
        echo_err(f"{verdict_line(report)} (report written to {written})")
    warn_expired(resolved)
    return exit_code(report, threshold)


def _with_baseline(report: Any, also_write: Sequence[tuple[str, Path | None, str]]) -> tuple[Any, list[tuple[str, Path | None, str]], list[Path]]:
    """``(report, outputs, inputs)`` after ``--baseline-findings`` (known findings moved to the ignored ones) and
    ``--write-baseline`` (one more output: the fingerprints of every finding); see :mod:`mtp_audit.cli.baseline`.

    Raises:
        InputError: an unreadable or malformed baseline file.
    """
    ctx = current()
    given, write = (ctx.meta.get(META_BASELINE) if ctx is not None else None) or (None, None)
    if given is None and write is None:
        return report, list(also_write), []
    import json

    from mtp_audit.cli import baseline as bl
    from mtp_audit.formats import render

    prints = bl.fingerprints(report, json.loads(render(report, "sarif", **_sarif_extra(report))))
    if given is not None:
        active = prints[:len(report.findings)]
        report = bl.apply_baseline(report, active, bl.read_baseline(Path(given)), f"--baseline-findings {given}")
    extra = [("--write-baseline", Path(write), bl.baseline_text(report, bl.fingerprints(report, json.loads(
        render(report, "sarif", **_sarif_extra(report))))))] if write is not None else []
    return report, [*also_write, *extra], [Path(given)] if given is not None else []


def _sarif_extra(report: Any) -> dict[str, Any]:
    """The keyword arguments of the SARIF renderer for this run: the roots of its inputs, the settings file's
    ``[tool.mtp-audit]`` line as the anchor, the ``--sarif-category``."""
    extra: dict[str, Any] = {"roots": sarif_roots(report)}
    anchor = _config_anchor()
    if anchor is not None:
        extra["anchor"], extra["anchor_line"] = anchor
    ctx = current()
    extra["category"] = ctx.meta.get(META_CATEGORY) if ctx is not None else None
    return extra


def _shown() -> Shown:
    ctx = current()
    found = ctx.meta.get(META_SHOWN) if ctx is not None else None
    return found if isinstance(found, Shown) else Shown()


def _render_for(report: Any, fmt: str, path: Path | str, threshold: Any) -> str:
    """``report`` in ``fmt`` for ``path``: colour only for a UTF-8 terminal on stdout; SARIF locations
    relative to the inputs the command read (:func:`sarif_roots`)."""
    from mtp_audit.cli.config import verbose
    from mtp_audit.formats import render

    on_stdout = _is_stdout(path) or _std_stream_of(Path(path)) is sys.stdout
    color = (on_stdout and fmt == "text" and use_color(sys.stdout)
             and (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") == "utf8")
    extra: dict[str, Any] = _sarif_extra(report) if fmt == "sarif" else {}
    shown = _shown()
    width = _terminal_width() if on_stdout and fmt == "text" else None
    return render(report, fmt, verbose=verbose(), color=color, fail_on=threshold,
                  shown=shown if shown.active else None, width=width, **extra)


def _terminal_width() -> int | None:
    """The width of the terminal stdout is (``COLUMNS`` wins), or ``None`` for a file, a pipe or a CI log."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil  # a terminal only (shutil imports bz2 and lzma)

    return shutil.get_terminal_size((100, 24)).columns


#: click parameter -> the analyzer whose finding paths are relative to it, per command.
_ROOT_PARAMS = {
    "checkpoint": {"target": "checkpoint"},
    "compare": {"derived": "compare"},
    "sglang": {"targets": "sglang"},
    "vllm": {"targets": "vllm"},
    "preflight": {"env_dumps": "preflight", "facts_file": "preflight"},
    "launch": {"sglang_targets": "sglang", "compare_sglang": "sglang", "vllm_target": "vllm", "env_dumps": "preflight",
               "facts_file": "preflight", "launch_file": "launch"},
}


def sarif_roots(report: Any) -> dict[str, str]:
    """Analyzer -> the local file or folder its finding paths are relative to, from the running
    command's parameters (the last of several: NEW of OLD NEW) and the report's targets; only paths
    that exist (a hub id or the live machine has none)."""
    roots: dict[str, str] = {}
    for t in report.targets:
        if _exists(t.name):
            roots[t.analyzer] = t.name
    ctx = current()
    if ctx is None or ctx.command is None:
        return roots
    for key, analyzer in _ROOT_PARAMS.get(ctx.command.name or "", {}).items():
        value = ctx.params.get(key)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        local = [os.fspath(v) for v in values if isinstance(v, (str, os.PathLike)) and _exists(os.fspath(v))]
        if local:
            roots[analyzer] = local[-1]
    return roots


def _config_anchor() -> tuple[str, int | None] | None:
    """The settings file the command read and the line of its ``[tool.mtp-audit]`` table, where findings
    with no file of their own are shown in code scanning when no input file fits."""
    from mtp_audit.cli.config import config_files

    files = config_files()
    if not files:
        return None
    line = None
    try:
        with open(files[0], encoding="utf-8", errors="replace") as fh:
            for n, text in enumerate(fh, 1):
                if text.strip().startswith("[tool.mtp-audit"):
                    line = n
                    break
                if n > 100_000:
                    break
    except OSError:
        pass
    return os.fspath(files[0]), line


def _exists(name: str) -> bool:
    try:
        return bool(name) and name != STDOUT and os.path.exists(name)
    except (OSError, ValueError, TypeError):
        return False
