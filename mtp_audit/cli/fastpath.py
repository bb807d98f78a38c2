"""Plain invocations of ``checkpoint`` and ``sglang``, parsed and run without importing click.

Importing click costs about 20 ms, as much as the interpreter's own start-up and more than a warm SGLang audit's
own work (``benchmarks/bench_sglang.py``, ``benchmarks/bench_checkpoint.py``). For the two commands whose speed
is measured, :func:`parse` reads the command line from :data:`TABLES` (each parameter as the command's click
declaration has it: ``tests/test_fastpath.py`` asserts the two are equal, and that both paths give the same
parameters, output and exit code) and runs the command's callback as click would: the same parameter values in
the same order in ``params``, the option callbacks of ``--config``, ``--ignore`` and ``--verbose``, the same
errors. It answers only what it can prove click would accept the same way; anything else (``--help``, an unknown
or abbreviated option, grouped short flags, ``--``, a value that is not one of the choices or out of range, a
value starting with ``-``, a missing or extra argument, an output path that click's ``Path`` type would refuse)
returns ``None`` and click parses the command line, with its own messages.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from mtp_audit.cli.hubopts import DEFAULT_JOBS, MAX_JOBS
from mtp_audit.cli.options import FAIL_ON_CHOICES, FORMAT_CHOICES

#: A parameter: (name, option strings or () for an argument, kind, extra). Kinds: "flag"; "str"; "path"
#: (``click.Path(dir_okay=False, path_type=Path)``); "choice" (extra: the choices, case-insensitive); "jobs"
#: (``click.IntRange(1, MAX_JOBS)``, default ``DEFAULT_JOBS``); "count" (``count=True``: how many times given); "arg" (one
#: required argument); "args" (``nargs=-1``).
#: A ``*`` after the kind: ``multiple=True``; a ``!`` before it: ``expose_value=False`` (its value goes to a callback).
Param = tuple[str, tuple[str, ...], str, Any]

_HUB: tuple[Param, ...] = (
    ("offline", ("--offline",), "flag", None), ("jobs", ("--jobs", "-j"), "jobs", None),
    ("revision", ("--revision",), "str", None), ("token", ("--token",), "str", None),
    ("hf_cache_dir", ("--cache-dir",), "str", None), ("no_cache", ("--no-cache",), "flag", None),
)
_OUTPUT: tuple[Param, ...] = (
    ("fmt", ("--format", "-f"), "choice*", FORMAT_CHOICES), ("output", ("--output", "-o"), "path*", None),
    ("fail_on", ("--fail-on",), "choice", FAIL_ON_CHOICES), ("quiet", ("--quiet", "-q"), "flag", None),
    ("min_severity", ("--severity",), "choice", ("info", "warning", "error")), ("select", ("--select",), "str*", None),
    ("sarif_category", ("--sarif-category",), "str", None), ("baseline_findings", ("--baseline-findings",), "path", None),
    ("write_baseline", ("--write-baseline",), "path", None),
    ("config_file", ("--config",), "!path", None), ("ignore_rules", ("--ignore",), "!str*", None),
    ("verbose", ("--verbose", "-v"), "!count", None),
)

#: Command -> (the module holding its ``callback``, its parameters in click's declaration order).
TABLES: dict[str, tuple[str, tuple[Param, ...]]] = {
    "checkpoint": ("mtp_audit.cli.checkpoint", (("target", (), "arg", None), *_HUB, *_OUTPUT)),
    "sglang": ("mtp_audit.cli.sglang", (("targets", (), "args", None), ("baseline", ("--baseline",), "path", None),
                                        *_OUTPUT)),
}

#: Options click treats as eager: processed (their callbacks run) before every other parameter.
_EAGER = frozenset({"config_file"})


class _Refuse(Exception):
    """Something only click should answer."""


def run(parsed: tuple[str, dict[str, Any], dict[str, Any]]) -> int:
    """Run what :func:`parse` returned and give the exit code; errors become one line and an exit code as under
    click (:func:`mtp_audit.cli.guard.guarded`)."""
    from mtp_audit.cli.guard import guarded

    return guarded(lambda: _invoke(*parsed))


def parse(args: list[str]) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """``(command, params, hidden)`` for ``args`` (the command name first), or ``None`` where click must parse:
    ``params`` holds every exposed parameter in the order click fills ``click.Context.params`` (eager first, then
    those given in the order first given, then the rest as declared), ``hidden`` the values of ``--config``,
    ``--ignore`` and ``--verbose``."""
    if not args or args[0] not in TABLES:
        return None
    table = TABLES[args[0]][1]
    try:
        given, order, positional = _scan(args[1:], table)
        values = {p[0]: _value(p, given.get(p[0]), positional) for p in table}
    except _Refuse:
        return None
    hidden_names = {p[0] for p in table if p[2].startswith("!")}
    ordered = _click_order(table, order)
    params = {n: values[n] for n in ordered if n not in hidden_names}
    hidden = {n: values[n] for n in ordered if n in hidden_names}
    return args[0], params, hidden


def _scan(tokens: list[str], table: tuple[Param, ...]) -> tuple[dict[str, list[Any]], list[str], list[str]]:
    """Options given (name -> raw values in order), the names in the order given, and the positional tokens."""
    flags = {o: p for p in table for o in p[1]}
    given: dict[str, list[Any]] = {}
    order: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if "\x00" in tok or tok in ("-h", "--help", "--"):
            raise _Refuse
        if not tok.startswith("-") or tok == "-":
            positional.append(tok)
            continue
        opt, eq, attached = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        p = flags.get(opt)
        if p is None:
            raise _Refuse  # unknown, abbreviated, or grouped short flags: click's errors and rules
        if p[2].lstrip("!").startswith(("flag", "count")):
            if eq:
                raise _Refuse
            value: Any = True
        elif eq:
            value = attached
        elif i < len(tokens):
            value, i = tokens[i], i + 1
        else:
            raise _Refuse  # "requires an argument"
        given.setdefault(p[0], []).append(value)
        order.append(p[0])
    return given, order, positional


def _value(p: Param, raw: list[Any] | None, positional: list[str]) -> Any:
    """The converted value of parameter ``p`` from its raw values (``None``: not given)."""
    _, _, kind, extra = p
    kind = kind.lstrip("!")
    if kind == "arg":
        if len(positional) != 1:
            raise _Refuse
        return positional[0]
    if kind == "args":
        return tuple(positional)
    if kind == "count":
        return len(raw or ())
    if kind.endswith("*"):
        return tuple(_convert(kind[:-1], v, extra) for v in raw or ())
    if raw is None:
        return {"flag": False, "jobs": DEFAULT_JOBS}.get(kind)
    return _convert(kind, raw[-1], extra)


def _convert(kind: str, value: Any, extra: Any) -> Any:
    """One value as click's parameter type converts it (``_Refuse`` where click would fail or where the answer is
    not certain)."""
    if kind == "flag":
        return value
    if not isinstance(value, str) or not value or (value.startswith("-") and value != "-"):
        raise _Refuse
    if kind == "str":
        return value
    if kind == "choice":
        return next((c for c in extra if c.casefold() == value.casefold()), None) or _refuse()
    if kind == "jobs":
        try:
            n = int(value)
        except ValueError:
            raise _Refuse from None
        return n if 1 <= n <= MAX_JOBS else _refuse()
    return _path(value)


def _path(value: str) -> Any:
    """``click.Path(dir_okay=False, path_type=Path)``: an existing folder or an unreadable file is refused."""
    from pathlib import Path

    try:
        st = os.stat(value)
    except OSError:
        return Path(value)
    except ValueError:
        raise _Refuse from None
    if stat.S_ISDIR(st.st_mode) or not os.access(value, os.R_OK):
        raise _Refuse
    return Path(value)


def _refuse() -> Any:
    raise _Refuse


def _click_order(table: tuple[Param, ...], order: list[str]) -> list[str]:
    """Parameter names in click's processing order (``click.core.iter_params_for_processing``): eager first; within
    each, the options in the order first given, then the arguments (click's parser records them after every
    option), then the rest as declared."""
    invoked = list(dict.fromkeys(order)) + [p[0] for p in table if p[2].lstrip("!").startswith("arg")]

    def key(p: Param) -> tuple[bool, float]:
        return p[0] not in _EAGER, float(invoked.index(p[0])) if p[0] in invoked else float("inf")

    return [p[0] for p in sorted(table, key=key)]


def _invoke(command: str, params: dict[str, Any], hidden: dict[str, Any]) -> int:
    """Run ``command``'s callback as click's ``LazyGroup`` would: progress bars requested, the option callbacks in
    click's order (``--config`` first: eager), then the callback with ``params``; Ctrl-C as click reports it."""
    import importlib

    from mtp_audit.cli import collector, config
    from mtp_audit.cli.guard import aborted
    from mtp_audit.cli.invocation import Invocation, echo_err, running
    from mtp_audit.cli.logs import scoped
    from mtp_audit.progress import requested

    callback = importlib.import_module(TABLES[command][0]).callback
    with requested(), scoped(), running(Invocation(command, params)) as inv:
        collector.resume()  # loaded: the command runs with the collector as the caller had it
        try:
            config._config_callback(inv, None, hidden["config_file"])
            config._ignore_callback(inv, None, hidden["ignore_rules"])
            config._verbose_callback(inv, None, hidden["verbose"])
            rv = callback(**params)
        except (EOFError, KeyboardInterrupt):
            echo_err("")
            return aborted()
    return int(rv or 0)
