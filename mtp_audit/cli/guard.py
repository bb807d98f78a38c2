"""How a command run ends: every error as one line on stderr and an exit code, never a traceback (unless
``MTP_AUDIT_DEBUG=1``), with or without click (:mod:`mtp_audit.cli.main`, :mod:`mtp_audit.cli.fastpath`).

Exit codes (README "Exit codes"): 0 nothing at or above ``--fail-on``; 1 findings at or above it; 2 usage or input
error (one line on stderr, nothing written); 3 inconclusive; 4 internal error (a bug in mtp-audit, one line on
stderr); 128 + N a signal (130 Ctrl-C).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from mtp_audit.cli.invocation import echo_err
from mtp_audit.errors import InputError, Unavailable

#: A bug in mtp-audit (never a verdict about the audited input). 0-3: see mtp_audit.report.
EXIT_INTERNAL = 4


def one_line(text: str) -> str:
    """``text`` with control characters (a newline in a file name, a carriage return, an escape
    sequence, C1 controls, line separators, bidi overrides) written as visible escapes
    (:func:`mtp_audit.formats.escape.escape`), so every error message is exactly one line."""
    from mtp_audit.formats.escape import escape

    return escape(text)


def aborted() -> int:
    """Ctrl-C (or the end of input) during the command, after click's empty line on stderr: our line; 130."""
    echo_err("mtp-audit: aborted")
    return 130


def guarded(call: Callable[[], int]) -> int:
    """Run ``call`` (which parses the command line and runs the command, returning its exit code) as one run
    (:func:`mtp_audit.sources.bounded.run_budget`: totals of bytes read, JSON parsed and network time; the files
    read are protected from the outputs) with SIGTERM and SIGHUP ending it like Ctrl-C (exit 128 + the signal
    number, no temporary file left: :mod:`mtp_audit.cli.signals`), and map what it raises to one line and an exit
    code. Never raises."""
    import signal

    from mtp_audit.cli import signals

    try:
        from mtp_audit.sources.bounded import run_budget  # inside: Ctrl-C during this import is one line too

        with signals.installed(), run_budget():
            rv = _mapped(call)
            signals.raise_pending()  # a signal whose exception Python swallowed still ends the run
            return rv
    except InputError as exc:  # a budget variable that is not a positive number
        echo_err(f"mtp-audit: error: {one_line(str(exc))}")
        return 2
    except signals.Signalled as exc:
        echo_err(f"mtp-audit: terminated by {signal.Signals(exc.signum).name}")
        return 128 + exc.signum
    except KeyboardInterrupt:
        echo_err("mtp-audit: interrupted")
        return 130


def _mapped(call: Callable[[], int]) -> int:
    try:
        return call()
    except InputError as exc:
        echo_err(f"mtp-audit: error: {one_line(str(exc))}")
        return 2
    except Unavailable as exc:  # a source that cannot be reached and is not cached: could not tell
        echo_err(one_line(f"INCONCLUSIVE: could not tell: {exc.problem} (exit 3)"))
        return 3
    except KeyboardInterrupt:
        echo_err("mtp-audit: interrupted")
        return 130
    except MemoryError:  # past every budget: still one line, exit 2, never a traceback
        echo_err("mtp-audit: error: out of memory while auditing; lower MTP_AUDIT_MAX_JSON_BYTES or audit fewer files "
                 "at once")
        return 2
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - a bug in mtp-audit: say so in one line, with its own exit code
        if os.environ.get("MTP_AUDIT_DEBUG") == "1":
            import traceback  # only here: it imports linecache, tokenize and textwrap

            traceback.print_exc()
        echo_err(one_line(f"mtp-audit: internal error: {type(exc).__name__}: {exc} "
                          "(set MTP_AUDIT_DEBUG=1 for the traceback and report it)"))
        return EXIT_INTERNAL
