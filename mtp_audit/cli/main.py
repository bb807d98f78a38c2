"""The ``mtp-audit`` command line: a click group whose analyzer commands load lazily.

Exit codes (README "Exit codes"): 0 nothing at or above ``--fail-on``; 1 findings at or above it;
2 usage or input error (one line on stderr, nothing written); 3 inconclusive; 4 internal error (a bug
in mtp-audit, one line on stderr).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from mtp_audit import __version__
from mtp_audit.cli.guard import EXIT_INTERNAL, aborted, one_line

__all__ = ["COMMANDS", "EXIT_INTERNAL", "cli", "main", "one_line", "usage_error_parts"]

#: Command name -> "module:attribute" of its click command; imported only when used or listed.
COMMANDS: dict[str, str] = {
    "checkpoint": "mtp_audit.cli.checkpoint:checkpoint",
    "sglang": "mtp_audit.cli.sglang:sglang",
    "vllm": "mtp_audit.cli.vllm:vllm",
    "preflight": "mtp_audit.cli.preflight:preflight",
    "compare": "mtp_audit.cli.compare:compare",
    "launch": "mtp_audit.cli.launch:launch",
    "log": "mtp_audit.cli.log:log",
    "rules": "mtp_audit.cli.rules:rules",
    "explain": "mtp_audit.cli.rules:explain",
    "hook": "mtp_audit.cli.hook:hook",
}


class LazyGroup(click.Group):
    """A click group that imports each subcommand's module on first use (keeps start-up fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand with progress bars requested (drawn on a terminal only; the library draws none
        unless its caller asks, :func:`mtp_audit.progress.requested`)."""
        from mtp_audit.cli.logs import scoped
        from mtp_audit.progress import requested

        with requested(), scoped():
            return super().invoke(ctx)

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
    heads, what will the engine (SGLang, vLLM, TensorRT-LLM) do with your flags, and can this GPU stack run its FP4 kernels?

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or input error, 3 inconclusive,
    4 internal error.
    """


def _one_line(text: str) -> str:
    return " ".join(str(text).split()).rstrip(".")


def _hint_of(exc: click.ClickException) -> str | None:
    """The option or argument a click error is about (``--fail-on``, ``-o``, ``PATH``), or ``None``."""
    hint = getattr(exc, "param_hint", None)
    if hint:
        return " / ".join(hint) if isinstance(hint, (list, tuple)) else str(hint).strip("'\"")
    param = getattr(exc, "param", None)
    if param is not None:
        if isinstance(param, click.Argument):
            return param.human_readable_name
        return " / ".join(param.opts) or param.name
    name = getattr(exc, "option_name", None)
    return str(name) if name else None


def usage_error_parts(exc: click.ClickException) -> tuple[str, str]:
    """``(where, problem)`` for a click error, so that it prints as every input error does:
    ``mtp-audit: error: <file or option>: <problem>``, one line.

    ``NoSuchCommand`` -> (the command name, "no such command"); ``NoSuchOption`` -> (the option,
    "no such option[; did you mean ...]"); ``BadParameter`` / ``MissingParameter`` -> (the option or
    argument, click's own explanation); ``FileError`` -> (the file, the reason); anything else ->
    (the command path, the message).
    """
    if isinstance(exc, click.exceptions.NoSuchCommand) or (
        isinstance(exc, click.UsageError) and exc.message.startswith("No such command")
    ):
        name = getattr(exc, "cmd_name", None) or exc.message.partition("'")[2].rpartition("'")[0] or "command"
        return name, "no such command" + _command_hint(exc, name)
    if isinstance(exc, click.exceptions.NoSuchOption):
        extra = f"; did you mean {', '.join(exc.possibilities)}?" if exc.possibilities else ""
        return exc.option_name, "no such option" + extra
    if isinstance(exc, click.exceptions.FileError):
        return str(exc.ui_filename), _one_line(exc.message)
    where = _hint_of(exc)
    if isinstance(exc, click.exceptions.MissingParameter):
        ptype = exc.param_type or (exc.param.param_type_name if exc.param is not None else "")
        kind = {"argument": "argument", "option": "option"}.get(ptype, "parameter")
        extra = f": {_one_line(exc.message)}" if exc.message else ""
        return where or "mtp-audit", f"missing {kind}{extra}"
    if isinstance(exc, click.BadParameter):
        return where or "mtp-audit", _one_line(exc.message) + _choice_hint(exc)
    if where:
        message = _one_line(exc.message)
        for prefix in (f"Option '{where}' ", f"Option {where} "):
            if message.startswith(prefix):
                message = message[len(prefix):]
        return where, message
    ctx = getattr(exc, "ctx", None)
    return (ctx.command_path if ctx is not None else "mtp-audit"), _one_line(exc.format_message())


def _command_hint(exc: click.ClickException, name: str) -> str:
    """``"; did you mean X?"`` for a mistyped command: the commands of the group that refused ``name``."""
    from mtp_audit.cli.suggest import did_you_mean

    ctx = getattr(exc, "ctx", None)
    group = ctx.command if isinstance(ctx, click.Context) else None
    if ctx is None or not isinstance(group, click.Group) or name == "command":
        return ""
    return did_you_mean(name, [c for c in group.list_commands(ctx) if not getattr(group.get_command(ctx, c), "hidden", False)])


def _choice_hint(exc: click.BadParameter) -> str:
    """``"; did you mean X?"`` for a value outside a :class:`click.Choice` (the value as click's message quotes it)."""
    from mtp_audit.cli.suggest import did_you_mean

    choices = getattr(getattr(exc.param, "type", None), "choices", None)
    value = exc.message.partition("'")[2].partition("'")[0] if exc.message.startswith("'") else ""
    return did_you_mean(value, [str(c) for c in choices]) if choices and value else ""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (never raises, never prints a traceback unless
    ``MTP_AUDIT_DEBUG=1``; see :func:`mtp_audit.cli.guard.guarded`)."""
    from mtp_audit.cli.guard import guarded

    return guarded(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    """Parse and run with click; click's own errors become one line and exit 2 (the rest is mapped by
    :func:`mtp_audit.cli.guard.guarded`)."""
    try:
        rv: Any = cli.main(args=argv, prog_name="mtp-audit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:  # bad command, option or value: one line, like every input error
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare 'mtp-audit' (click >= 8.2): the help, as click lays it out
            click.echo(exc.format_message(), err=True)
            return 2
        where, problem = usage_error_parts(exc)
        hint = f" (see '{exc.ctx.command_path} --help')" if isinstance(exc, click.UsageError) and exc.ctx is not None else ""
        click.echo(one_line(f"mtp-audit: error: {where}: {problem}{hint}"), err=True)
        return 2
    except click.exceptions.Abort:
        return aborted()
    return int(rv or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
