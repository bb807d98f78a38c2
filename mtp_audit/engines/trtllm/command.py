"""``trtllm-serve`` launch commands as TensorRT-LLM reads them: the entry point, the model, each option by its
parameter name, and the YAML file of ``--config`` / ``--extra_llm_api_options``.

Option spellings and which options are flags come from :mod:`mtp_audit.engines.trtllm.knowledge` (the ``serve`` click
command at a commit); click accepts ``--opt VALUE`` and ``--opt=VALUE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from mtp_audit.engines.argv import split_env_prefix
from mtp_audit.engines.trtllm.knowledge import FLAG_OPTIONS, VALUE_OPTIONS

ENTRY = "trtllm-serve"


@dataclass
class TrtllmCommand:
    """One parsed ``trtllm-serve`` command.

    Attributes:
        argv: the tokens as given; env: ``NAME=VALUE`` assignments before the program.
        entry: ``"trtllm-serve"`` or ``"trtllm-serve serve"``.
        model: the MODEL argument (a hub id, a checkpoint folder or an engine folder), ``None`` when missing.
        values: parameter name -> the value as typed (the last one for a repeated option); flags map to ``"true"``.
        given: parameter name -> the option string used (``--tp_size``).
        unknown: option strings ``trtllm-serve`` does not declare (click refuses them: "No such option").
        missing_value: options given without their value.
    """

    argv: list[str]
    env: dict[str, str]
    entry: str
    model: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    given: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    missing_value: list[str] = field(default_factory=list)

    @property
    def yaml_path(self) -> str | None:
        """The ``--config`` / ``--extra_llm_api_options`` file as typed."""
        return self.values.get("extra_llm_api_options")

    def to_dict(self) -> dict[str, object]:
        """JSON form (``facts.launch.command``)."""
        return {"argv": list(self.argv), "env": dict(sorted(self.env.items())), "entry": self.entry, "model": self.model,
                "values": dict(self.values), "given": dict(self.given), "unknown": list(self.unknown),
                "missing_value": list(self.missing_value)}


def trtllm_entry(toks: Sequence[str]) -> tuple[dict[str, str], str, int] | None:
    """``(env assignments, entry, index of the first server argument)`` when ``toks`` starts ``trtllm-serve`` (a
    path to it included), else ``None``. ``trtllm-serve serve MODEL`` names the subcommand explicitly."""
    env, i = split_env_prefix(list(toks))
    if i >= len(toks) or PurePath(toks[i]).name != ENTRY:
        return None
    if i + 1 < len(toks) and toks[i + 1] == "serve":
        return env, f"{ENTRY} serve", i + 2
    return env, ENTRY, i + 1


def parse_trtllm_command(toks: Sequence[str]) -> TrtllmCommand:
    """Parse a ``trtllm-serve`` command: the first non-option token is MODEL, options by their spellings.

    Raises:
        ValueError: the command does not start ``trtllm-serve`` (check with :func:`trtllm_entry` first).
    """
    found = trtllm_entry(toks)
    if found is None:
        raise ValueError("not a trtllm-serve command")
    env, entry, start = found
    cmd = TrtllmCommand(argv=list(toks), env=env, entry=entry)
    rest = list(toks[start:])
    i = 0
    while i < len(rest):
        i = _take(cmd, rest, i)
    return cmd


def _take(cmd: TrtllmCommand, rest: list[str], i: int) -> int:
    """Read the token at ``i`` (and its value) into ``cmd``; the index of the next token."""
    tok = rest[i]
    if not tok.startswith("--") or tok == "--":
        if cmd.model is None and tok != "--":
            cmd.model = tok
        return i + 1
    opt, eq, inline = tok.partition("=")
    if opt in FLAG_OPTIONS:
        cmd.values[FLAG_OPTIONS[opt]], cmd.given[FLAG_OPTIONS[opt]] = "true", opt
        return i + 1
    if opt not in VALUE_OPTIONS:
        cmd.unknown.append(opt)
        return i + 1
    name = VALUE_OPTIONS[opt]
    if eq:
        cmd.values[name], cmd.given[name] = inline, opt
        return i + 1
    if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
        cmd.missing_value.append(opt)
        return i + 1
    cmd.values[name], cmd.given[name] = rest[i + 1], opt
    return i + 2
