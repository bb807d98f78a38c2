"""Launch commands inside a log, read by the engine's own command parser.

A pasted log often starts with the command that launched the server: after a shell prompt, continued over several
lines with backslashes, behind ``NAME=VALUE`` assignments, inside ``docker run IMAGE ...`` or ``numactl ... --``.
:class:`CommandReader` joins such a command (bounded: :data:`MAX_LINES` lines, :data:`MAX_CHARS` characters), splits
it like a POSIX shell and hands the tokens, from each position in turn, to every engine's dialect
(:func:`mtp_audit.engines.registry.log_dialects`); the first engine whose parser recognises its program reads it.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

from mtp_audit.engines.base import LogCommand, LogDialect

#: Most lines one command may be continued over, most characters kept, most tokens tried as the program's start,
#: most tokens read.
MAX_LINES = 64
MAX_CHARS = 16 * 1024
MAX_STARTS = 256
MAX_TOKENS = 4096

#: Shell prompts and trace marks before a command: ``$ ``, ``# ``, ``> ``, ``+ `` (``set -x``), ``user@host:~/dir$ ``.
PROMPT = re.compile(r"^\s{0,16}(?:[\w.-]{1,64}@[\w.-]{1,64}(?::[^\s$#]{0,256})?[$#]\s{1,4}|[$#>+]\s{1,4})")


@lru_cache(maxsize=1)
def dialects() -> tuple[LogDialect, ...]:
    """Every engine's log dialect (from the registry, read once)."""
    from mtp_audit.engines.registry import log_dialects

    return log_dialects()


@lru_cache(maxsize=1)
def command_words() -> tuple[str, ...]:
    """The substrings that may start a launch command, over all engines."""
    return tuple(w for d in dialects() for w in d.command_words)


def may_hold_command(text: str) -> bool:
    """True when ``text`` names a program some engine starts."""
    return any(w in text for w in command_words())


def read_command(body: str) -> LogCommand | None:
    """The launch command in ``body`` (one line, continuations already joined), read by its engine's parser, or None.

    The tokens are tried from each position (past a prompt, ``env``/``NAME=VALUE`` prefixes, ``docker run ...``,
    ``numactl ...``, ``nohup``), at most :data:`MAX_STARTS`; a parser that raises is taken as "not this engine".
    """
    toks = _tokens(body)[:MAX_TOKENS]
    for i in range(min(len(toks), MAX_STARTS)):
        for d in dialects():
            try:
                got = d.command(toks[i:])
            except (ValueError, TypeError, KeyError, IndexError):
                continue
            if got is not None:  # the first program an engine recognises decides (one parse per line)
                # a program named in prose ("llama-server process has terminated") has no options: no command
                return got if any(t.startswith("-") for t in toks[i + 1:]) else None
    return None


def _tokens(body: str) -> list[str]:
    text = PROMPT.sub("", body, count=1)[:MAX_CHARS]
    try:
        return shlex.split(text, comments=False)
    except ValueError:  # an unbalanced quote (a cut paste): split on blanks
        return text.split()


class CommandReader:
    """Joins a command continued with trailing backslashes, one line at a time.

    Attributes:
        line: the line the command starts on; body: the text so far; open: more lines are wanted.
    """

    def __init__(self, line: int, text: str) -> None:
        self.line = line
        self.body = ""
        self.lines = 0
        self.open = True
        self.add(text)

    def add(self, text: str) -> None:
        """Take one more line; the command stays open while a line ends with a backslash (and within the bounds)."""
        stripped = text.rstrip()
        self.lines += 1
        cont = stripped.endswith("\\")
        self.body = (self.body + " " + (stripped[:-1] if cont else stripped))[:MAX_CHARS]
        self.open = cont and self.lines < MAX_LINES and len(self.body) < MAX_CHARS


def describe(cmd: LogCommand, line: int) -> str:
    """The command in one line: ``vllm serve (line 3): method deepseek_mtp -> mtp, draft X, k 3``."""
    parts = []
    if cmd.method is None:
        parts.append("no speculative method")
    elif cmd.typed is not None and cmd.typed != cmd.method:
        parts.append(f"method {cmd.typed} -> {cmd.method} (the engine's alias, {cmd.alias})" if cmd.alias
                     else f"method {cmd.typed} -> {cmd.method}")
    else:
        parts.append(f"method {cmd.method}")
    if cmd.draft is not None:
        parts.append(f"draft {cmd.draft}")
    if cmd.num_speculative_tokens is not None:
        parts.append(f"k {cmd.num_speculative_tokens}")
    if cmd.config_file is not None:
        parts.append(f"configuration in {cmd.config_file} (not in the log)")
    return f"launch command (line {line}, {cmd.entry}): " + ", ".join(parts)


def check(cmd: LogCommand, line: int, config: dict[str, tuple[object, int]], ran: bool) -> list[str]:
    """What the rest of the log says about the command: ``agrees: ...`` / ``contradicts: ...`` lines.

    Args:
        cmd: the command, read at ``line``.
        config: what the engine printed after its own rewrites: ``algorithm``, ``num_speculative_tokens``,
            ``draft_model`` -> (value, line).
        ran: the log holds speculative statistics lines.
    """
    out = []
    printed = config.get("algorithm")
    if printed is not None and cmd.method is not None:
        same = str(printed[0]).lower() == cmd.method.lower()
        out.append(f"{'agrees' if same else 'contradicts'}: the command asks for {cmd.method} (line {line}); the engine "
                   f"printed {printed[0]} (line {printed[1]})")
    k = config.get("num_speculative_tokens")
    if k is not None and cmd.num_speculative_tokens is not None and str(k[0]) != str(cmd.num_speculative_tokens):
        out.append(f"contradicts: the command asks for k {cmd.num_speculative_tokens} (line {line}); the engine printed "
                   f"{k[0]} (line {k[1]})")
    if cmd.method is None and cmd.config_file is None and ran:
        out.append(f"contradicts: the command (line {line}) asks for no speculative method, yet the log holds "
                   "speculative statistics (another launch, or a configuration file)")
    return out
