"""The ``mtp-audit`` command line: a click group whose analyzer commands load lazily.

Exit codes (README "Exit codes"): 0 nothing at or above ``--fail-on``; 1 findings at or above it;
2 usage or input error (one line on stderr, nothing written); 3 inconclusive; 4 internal error (a bug
in mtp-audit, one line on stderr).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Any

import click

from mtp_audit import __version__
from mtp_audit.errors import InputError

#: A bug in mtp-audit (never a verdict about the audited input). 0-3: see mtp_audit.report.
EXIT_INTERNAL = 4

#: Command name -> "module:attribute" of its click command; imported only when used or listed.
COMMANDS: dict[str, str] = {
    "checkpoint": "mtp_audit.cli.checkpoint:checkpoint",
    "sglang": "mtp_audit.cli.sglang:sglang",
    "vllm": "mtp_audit.cli.vllm:vllm",
    "preflight": "mtp_audit.cli.preflight:preflight",
    "compare": "mtp_audit.cli.compare:compare",
    "launch": "mtp_audit.cli.launch:launch",
    "rules": "mtp_audit.cli.rules:rules",
    "explain": "mtp_audit.cli.rules:explain",
}


class LazyGroup(click.Group):
    """A click group that imports each subcommand's module on first use (keeps start-up fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mtp-audit")
def cli() -> None:
    """Audit an MoE deployment before a 30-minute model load: does the checkpoint carry MTP/NextN
    heads, what will SGLang do with your flags, and can this GPU stack run its FP4 kernels?

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or input error, 3 inconclusive,
    4 internal error.
    """


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (never raises, never prints a traceback unless
    ``MTP_AUDIT_DEBUG=1``)."""
    try:
        rv: Any = cli.main(args=argv, prog_name="mtp-audit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:  # bad command, option or value: one line, like every input error
        ctx = exc.ctx
        where = ctx.command_path if ctx is not None else "mtp-audit"
        click.echo(f"mtp-audit: error: {exc.format_message()} (see '{where} --help')", err=True)
        return 2
    except click.ClickException as exc:  # e.g. click.BadParameter raised by a callback
        click.echo(f"mtp-audit: error: {exc.format_message()}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("mtp-audit: aborted", err=True)
        return 130
    except InputError as exc:
        click.echo(f"mtp-audit: error: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("mtp-audit: interrupted", err=True)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        except OSError:
            pass
        return 0
    except Exception as exc:  # a bug in mtp-audit: say so in one line, with its own exit code
        if os.environ.get("MTP_AUDIT_DEBUG") == "1":
            traceback.print_exc()
        click.echo(
            f"mtp-audit: internal error: {type(exc).__name__}: {exc} "
            "(set MTP_AUDIT_DEBUG=1 for the traceback and report it)",
            err=True,
        )
        return EXIT_INTERNAL
    return int(rv or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
