"""Signals during a CLI run: SIGTERM and SIGHUP end it like Ctrl-C, and never in the middle of writing an output.

Three things the long fuzz run (10,000 signals 0-1.2 s into ``checkpoint -o FILE``) showed and this module closes:

- a signal raised as an exception inside a weakref callback or a ``__del__`` is swallowed by Python
  ("Exception ignored in ...", a traceback on stderr) and the run went on as if nothing had arrived:
  :func:`installed` records every signal, silences that message for these exceptions, and :func:`pending`
  tells the CLI that one arrived, so the run still ends with 128 + the signal and writes nothing;
- a signal between ``mkstemp`` and the ``try`` that removes the temporary file left a ``.mtp-audit-*`` file
  beside ``-o``: :func:`deferred` blocks SIGTERM, SIGHUP and SIGINT while outputs are staged and put in
  place; one that arrived while staging (:func:`held`) discards the staged files, one that arrives while they
  are put in place waits for the last of them, so a run stopped by a signal leaves no report or a complete one;
- Ctrl-C (SIGINT) keeps Python's own ``KeyboardInterrupt``.

Only the main thread installs handlers or masks signals (a library caller's threads are left alone).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: The signals that end a run (Ctrl-C is SIGINT, Python's own KeyboardInterrupt).
ENDING = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))

_received: list[int] = []


class Signalled(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so every staged output's temporary file is removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum: int, _frame: Any) -> None:
    _received.append(signum)
    raise Signalled(signum)


def _unraisable(previous: Any) -> Any:
    def hook(args: Any) -> None:
        if isinstance(args.exc_value, Signalled):
            return  # already recorded by the handler; the run stops at the next pending() check
        if isinstance(args.exc_value, KeyboardInterrupt):
            _received.append(int(signal.SIGINT))
            return
        previous(args)

    hook._mtp_audit = True  # type: ignore[attr-defined]  # a marker on our own function (functions take attributes)
    return hook


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def watch() -> None:
    """From process start (the console script, ``python -m mtp_audit``): record a Ctrl-C that Python swallows
    while the CLI's modules load, so the run that follows stops at once (:func:`raise_pending`)."""
    if _main_thread() and not getattr(sys.unraisablehook, "_mtp_audit", False):
        sys.unraisablehook = _unraisable(sys.unraisablehook)


def ignore_from_now() -> None:
    """The run is over and its outputs are written: a signal during interpreter shutdown (``threading._shutdown``,
    logging's flush at exit) would only print a traceback, so SIGTERM, SIGHUP and SIGINT are ignored from here.
    Console script only: never called when the CLI runs inside another program."""
    if _main_thread():
        for num in ENDING:
            signal.signal(num, signal.SIG_IGN)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """For the length of a run: SIGTERM and SIGHUP raise :class:`Signalled`; a signal swallowed where Python
    cannot raise it is recorded quietly (see :func:`pending`). The previous handlers come back afterwards, and
    what was recorded is forgotten (the next run in the same process starts clean)."""
    if not _main_thread():
        yield
        return
    old = {num: signal.signal(num, _raise_signalled) for num in ENDING if num != signal.SIGINT}
    old_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(old_hook)
    try:
        yield
    finally:
        sys.unraisablehook = old_hook
        _received.clear()
        for num, handler in old.items():
            signal.signal(num, handler)


def pending() -> int | None:
    """The first signal that arrived during this run, or None."""
    return _received[0] if _received else None


def raise_pending() -> None:
    """Stop here if a signal arrived but its exception was swallowed.

    Raises:
        KeyboardInterrupt: SIGINT arrived. Signalled: SIGTERM or SIGHUP arrived.
    """
    num = pending()
    if num is None:
        return
    if num == signal.SIGINT:
        raise KeyboardInterrupt
    raise Signalled(num)


def held() -> bool:
    """Whether SIGTERM, SIGHUP or SIGINT arrived while :func:`deferred` holds them back (delivered at its end)."""
    if not _main_thread() or not hasattr(signal, "sigpending"):
        return False
    return bool(signal.sigpending() & set(ENDING))


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGTERM, SIGHUP and SIGINT back while the block runs (outputs staged and put in place); one that
    arrives meanwhile is delivered when the block ends. Does nothing off the main thread or without
    ``signal.pthread_sigmask`` (Windows)."""
    if not _main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
