"""The running command's parameters and notes, with or without click.

A command runs either through click (:mod:`mtp_audit.cli.main`) or, for a plain invocation of a command that
declares an argument table, through :mod:`mtp_audit.cli.fastpath`, which does not import click (click alone costs
about as much as the interpreter's start-up). The CLI plumbing (:mod:`mtp_audit.cli.emit`,
:mod:`mtp_audit.cli.config`) reads what it needs from :func:`current`: ``meta`` (what option callbacks and
wrappers leave for later: the settings, the ignores, the display filter), ``params`` (the command's exposed
parameter values, as ``click.Context.params``) and ``command.name``. Under click that is the click context itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any


class _Named:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Invocation:
    """One command run outside click: ``command.name``, ``params`` (exposed parameter -> value, as click would
    have filled ``click.Context.params``) and ``meta`` (empty at the start, as ``click.Context.meta``)."""

    __slots__ = ("command", "meta", "params")

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        self.command = _Named(name)
        self.params = params
        self.meta: dict[str, Any] = {}


_CURRENT: ContextVar[Invocation | None] = ContextVar("mtp_audit_invocation", default=None)


def current() -> Any:
    """The running command's :class:`Invocation`, else click's current context when click runs one, else
    ``None`` (a library call: every reader falls back to its default)."""
    inv = _CURRENT.get()
    if inv is not None:
        return inv
    click = sys.modules.get("click")
    return None if click is None else click.get_current_context(silent=True)


@contextlib.contextmanager
def running(inv: Invocation) -> Iterator[Invocation]:
    """Make ``inv`` the running command's invocation for the ``with`` block."""
    token = _CURRENT.set(inv)
    try:
        yield inv
    finally:
        _CURRENT.reset(token)


def echo_err(text: str) -> None:
    """``text`` and a newline on standard error, flushed (``click.echo(text, err=True)`` for the text this CLI
    prints: escaped, one line, no colour); nothing when the process has no standard error."""
    stream = sys.stderr
    if stream is None:
        return
    stream.write(text + "\n")
    stream.flush()
