"""Launch commands as tokens: split a pasted command like a POSIX shell, peel off ``NAME=VALUE`` assignments
before the program, and join tokens back into one shell-quoted line. Every engine's command parser starts here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePath

from mtp_audit.errors import InputError

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command(argv: list[str] | tuple[str, ...]) -> list[str]:
    """The tokens of a command: ``argv`` as given, or a single string split like a POSIX shell.

    Raises:
        InputError: nothing given, or unbalanced quotes.
    """
    toks = [t for t in argv]
    if len(toks) == 1 and (" " in toks[0] or "\n" in toks[0]):
        try:
            toks = shlex.split(toks[0].replace("\\\n", " "))
        except ValueError as exc:
            raise InputError("launch command", f"cannot split: {exc}") from None
    if not toks or not any(t.strip() for t in toks):
        raise InputError("launch command", "empty (expected e.g. python -m sglang.launch_server --model-path ...)")
    return toks


def split_env_prefix(toks: list[str]) -> tuple[dict[str, str], int]:
    """``(NAME=VALUE assignments before the program, index of the program token)`` of a shell command, after an
    optional leading ``env``; the index is ``len(toks)`` when nothing follows the assignments. Shared by the SGLang
    (:func:`find_entry`) and vLLM (:func:`mtp_audit.engines.vllm.launch.command.vllm_entry`) parsers."""
    env: dict[str, str] = {}
    i = 0
    if i < len(toks) and PurePath(toks[i]).name == "env":
        i += 1
    while i < len(toks) and _ENV_ASSIGN.match(toks[i]):
        k, _, v = toks[i].partition("=")
        env[k] = v
        i += 1
    return env, i


def shell_join(tokens: list[str]) -> str:
    """Tokens as one shell-quoted line."""
    return " ".join(shlex.quote(t) for t in tokens)
