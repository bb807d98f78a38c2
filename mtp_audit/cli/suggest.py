""""Did you mean" for the CLI: the closest known names to a mistyped option, rule id or rule name (:mod:`difflib`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

import click


def closest(word: str, known: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``word`` (case-insensitive), best first."""
    names = sorted(set(known))
    lowered = {k.lower(): k for k in names}
    return [lowered[m] for m in difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=cutoff)]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean A, B?"`` or ``""`` when nothing is close."""
    hits = closest(word, known)
    return f"; did you mean {', '.join(hits)}?" if hits else ""


def reject_leading_option(tokens: Sequence[str]) -> None:
    """For commands whose trailing tokens are an engine command (``launch``, ``preflight``): a first token that starts
    with ``-`` is no program, so it is one of this command's options mistyped (click passed it on as an unknown
    option). No-op outside a click context or when the first token is a program.

    Raises:
        InputError: ``TOKEN: no such option; did you mean ...?``.
    """
    from mtp_audit.errors import InputError

    ctx = click.get_current_context(silent=True)
    if not tokens or not tokens[0].startswith("-") or tokens[0] == "-" or ctx is None:
        return
    opts = [o for p in ctx.command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)]
    word = tokens[0].split("=", 1)[0]
    raise InputError(word, "no such option" + did_you_mean(word, opts) + " (an engine command goes after --)")
