"""Entry point of the ``mtp-audit`` console script and of ``python -m mtp_audit``.

A bare ``mtp-audit --help`` / ``-h`` is answered from :data:`mtp_audit.cli.help_text.TEXT`, the group's help as
click renders it at 78 columns, without importing click or any command module (click alone costs more than the
interpreter's own start-up; ``benchmarks/bench_checkpoint.py`` measures it). ``tests/test_cli.py`` renders the
help with click and asserts it equals that text, so the two cannot drift. On a terminal narrower than 80
columns, or for anything else, a plain invocation of ``checkpoint`` or ``sglang`` runs without click
(:mod:`mtp_audit.cli.fastpath`), and the click group runs the rest (:func:`mtp_audit.cli.main.main`).
"""

from __future__ import annotations

import os
import sys


def _columns() -> int:
    """Terminal width as ``shutil.get_terminal_size`` (which click's help formatter uses) computes it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            stdout = sys.__stdout__
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (see :func:`mtp_audit.cli.main.main`)."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--help"], ["-h"]) and _columns() >= 80:
        from mtp_audit.cli.help_text import TEXT

        try:
            sys.stdout.write(TEXT)
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        return 0
    from mtp_audit.cli import collector

    collector.pause()  # while the CLI loads (mtp_audit.cli.collector); resumed when the command's own work starts
    try:
        return _run(args, argv)
    finally:
        collector.resume()


def _run(args: list[str], argv: list[str] | None) -> int:
    """:func:`main` past the bare ``--help``."""
    from mtp_audit.cli import collector, signals

    if argv is None:  # the console script ends with leave() (os._exit): large structures need not be freed first
        from mtp_audit import keepalive

        keepalive.until_exit()
    signals.watch()
    try:  # Ctrl-C while the CLI loads: the same one line and exit code as during a run
        from mtp_audit.cli.fastpath import parse, run

        signals.raise_pending()
        parsed = parse(args)
        if parsed is None:  # not a plain invocation of a command with an argument table: click parses it
            from mtp_audit.cli.main import main as full

            collector.resume()  # click's commands run with the collector as the caller had it
            signals.raise_pending()
    except KeyboardInterrupt:
        sys.stderr.write("mtp-audit: interrupted\n")
        return 130
    code = run(parsed) if parsed is not None else full(argv)
    if argv is None:  # the console script: the run is over, a late signal must not print a traceback at exit
        signals.ignore_from_now()
        leave(code)
    return code


def leave(code: int) -> None:
    """End the process now with ``code``, once standard output and standard error are flushed, without the
    interpreter's teardown: freeing a 92k-tensor checkpoint's or a 0.9 MB SGLang report's objects one by one took
    0.02-0.03 s, 10-20 % of a metadata-only audit (``benchmarks/bench_checkpoint.py``). Only the process's own entry
    point calls it, after every output is written and put in place (no temporary file is left to a finaliser:
    outputs are staged and committed inside the run, :func:`mtp_audit.cli.emit.emit`). Returns (and the interpreter
    exits as usual) when a flush fails, so a closed pipe or a full disk is reported the way Python reports it."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the process was started with that descriptor closed
                stream.flush()
    except Exception:  # noqa: BLE001 - a stream that cannot be flushed: the interpreter's own exit reports it
        return
    if "logging" in sys.modules:  # a handler a caller's configuration added: flushed and closed as at exit
        sys.modules["logging"].shutdown()
    os._exit(code)
