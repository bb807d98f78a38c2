"""Read a vLLM server command the way vLLM reads it: the entry point, the model, and the speculative
config after every form vLLM accepts is merged.

Entry points (checked in the 0.11.0 and 0.33.0 wheels):

- ``vllm serve MODEL ...`` (``vllm/entrypoints/cli/serve.py``: ``model_tag`` positional,
  ``args.model = args.model_tag``; 0.33.0 ``vllm/utils/argparse_utils.py:324-352`` also moves
  ``--model X`` to the front, with a deprecation warning);
- ``python -m vllm.entrypoints.openai.api_server --model MODEL ...`` (``--model`` of ``EngineArgs``);
- ``python -m vllm.entrypoints.cli.main serve MODEL ...`` (what the ``vllm`` script runs).

Speculative-config forms (``FlexibleArgumentParser.parse_args``, 0.11.0 ``vllm/utils/__init__.py``
L1713ff, 0.33.0 ``vllm/utils/argparse_utils.py`` L372-492; ``EngineArgs.add_cli_args``):

- ``--speculative-config '{"method": "mtp", ...}'`` (type ``optional_type(json.loads)``: 0.33.0
  ``vllm/engine/arg_utils.py:1864``; ``""`` / ``"None"`` mean none), also ``--speculative-config=...``,
  ``--speculative_config`` (underscores in the option name become dashes) and ``-sc`` (0.33.0 :1866);
- dotted keys: ``--speculative-config.method mtp`` / ``--speculative-config.num_speculative_tokens=3``;
  the value is ``json.loads``-ed, a string when that fails (0.33.0 also reads ``1k``-style numbers);
  the dotted keys are merged into one JSON dict appended after the other arguments, so they win over
  an earlier plain ``--speculative-config`` (argparse keeps the last value);
- ``--spec-method`` / ``--spec-model`` / ``--spec-tokens`` (0.33.0 :1869-1872, not in 0.11.0):
  merged into the dict by ``create_speculative_config`` (:2108-2121), a key given both ways is
  ``ValueError("--spec-X and --speculative-config['key'] are mutually exclusive")``; keys are then
  normalised with ``k.replace("-", "_")`` (:2126).

Only these options are read; vLLM's whole option table is not (see :class:`VllmCommand` ``unparsed``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from mtp_audit.engines.argv import split_env_prefix
from mtp_audit.errors import InputError

ENTRY_VLLM_SERVE = "vllm serve"
ENTRY_VLLM_API_SERVER = "python -m vllm.entrypoints.openai.api_server"
ENTRY_VLLM_CLI_MAIN = "python -m vllm.entrypoints.cli.main serve"
VLLM_ENTRIES = (ENTRY_VLLM_SERVE, ENTRY_VLLM_API_SERVER, ENTRY_VLLM_CLI_MAIN)

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
#: the shorthand flags and the speculative-config key each fills (0.33.0 arg_utils.py:2108-2112)
SPEC_SHORTHAND = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}
#: option strings (after underscore -> dash) that take no value, among those the cross-checks read
_NO_VALUE = {"--trust-remote-code", "--enforce-eager", "--help", "-h", "--version", "--headless", "--fail-on-environ-validation",
             "--no-fail-on-environ-validation", "--enable-expert-parallel", "-ep"}
#: option strings (after normalisation) that take exactly one value, among those the cross-checks read: argparse exits
#: with "argument X: expected one argument" when one ends the command or is followed by another option (0.33.0
#: vllm/engine/arg_utils.py add_cli_args, each declared without nargs; the ``--spec-*`` shorthand only where declared)
VALUE_OPTIONS = frozenset({
    "--speculative-config", "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
    "--data-parallel-size-local", "--quantization", "--model-impl", "--attention-backend", "--kv-cache-dtype", "--dtype",
    "--max-num-batched-tokens", "--max-model-len"})
_SHORT_WITH_VALUE = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
                     "-q": "--quantization", "-sc": "--speculative-config", "-O": "--optimization-level"}


@dataclass(frozen=True)
class SpecSource:
    """One place in the command that sets speculative-config keys.

    Attributes:
        index: token index of the option.
        consumed: how many tokens after ``index`` hold its value (0 for ``--x=v``).
        form: ``"json"``, ``"dotted"`` or ``"shorthand"``.
        option: the option as vLLM normalises it (``"--speculative-config"``, ``"--spec-tokens"``).
        keys: the keys it sets, with their values after vLLM's parsing.
    """

    index: int
    consumed: int
    form: str
    option: str
    keys: dict[str, Any]


@dataclass
class VllmCommand:
    """A parsed vLLM server command.

    Attributes:
        argv: every token as given. env: ``KEY=VALUE`` assignments before the program.
        entry: one of :data:`VLLM_ENTRIES`. start: index of the first server argument.
        model: the model as vLLM resolves it (positional ``model_tag`` or ``--model``), ``None`` if absent.
        model_source: ``"positional"`` or ``"--model"``.
        options: normalised option string -> last value (``None`` for flags without value).
        spec: the speculative config dict vLLM builds (keys with ``-`` turned into ``_``), ``None``
            when no form sets it. spec_sources: the options that set it, in command order.
        problems: ``(kind, token, message)`` for what vLLM rejects before the engine starts
            (``"expected-one-argument"``, ``"bad-json"``, ``"not-a-dict"``, ``"mutually-exclusive"``, ``"no-model"``, ``"positional-ignored"``).
        ignored_positional: ``(index, token)`` of a model given positionally to the api_server entry point, which
            does not read it.
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    entry: str
    start: int
    model: str | None = None
    model_source: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] | None = None
    spec_sources: list[SpecSource] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    ignored_positional: tuple[int, str] | None = None

    def get(self, *names: str) -> Any:
        """Value of the first of ``names`` that the command gives (``True`` for a flag without value)."""
        for n in names:
            if n in self.options:
                v = self.options[n]
                return True if v is None else v
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"argv": list(self.argv), "env": dict(sorted(self.env.items())), "entry": self.entry,
                "model": self.model, "model_source": self.model_source, "speculative_config": self.spec,
                "speculative_config_sources": [{"option": s.option, "form": s.form, "keys": s.keys} for s in self.spec_sources],
                "problems": [{"kind": k, "token": t, "message": m} for k, t, m in self.problems], "parsed_with": "heuristic"}


def vllm_entry(toks: list[str]) -> tuple[dict[str, str], str, int] | None:
    """``(env assignments, entry, index of the first server argument)`` when ``toks`` starts a vLLM
    server, else ``None`` (the command may be SGLang's, see :func:`mtp_audit.engines.sglang.launch.command.find_entry`)."""
    env, i = split_env_prefix(toks)
    if i >= len(toks):
        return None
    prog = PurePath(toks[i]).name
    if prog == "vllm" and i + 1 < len(toks) and toks[i + 1] == "serve":
        return env, ENTRY_VLLM_SERVE, i + 2
    if _PYTHON.match(prog):
        j = i + 1
        while j < len(toks) and toks[j].startswith("-") and not toks[j].startswith("-m"):
            j += 1
        module, start = None, j
        if j < len(toks) and toks[j] == "-m" and j + 1 < len(toks):
            module, start = toks[j + 1], j + 2
        elif j < len(toks) and toks[j].startswith("-m") and len(toks[j]) > 2:
            module, start = toks[j][2:], j + 1
        if module == "vllm.entrypoints.openai.api_server":
            return env, ENTRY_VLLM_API_SERVER, start
        if module == "vllm.entrypoints.cli.main" and start < len(toks) and toks[start] == "serve":
            return env, ENTRY_VLLM_CLI_MAIN, start + 1
    return None


def _norm(opt: str) -> str:
    """vLLM's option-name normalisation: underscores become dashes between ``--`` and the first ``.``."""
    if not opt.startswith("--"):
        return _SHORT_WITH_VALUE.get(opt, opt)
    head, dot, rest = opt[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest


def _dotted_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_vllm_command(toks: list[str], spec_shorthand: bool) -> VllmCommand:
    """Parse a vLLM server command (``toks`` already split).

    Args:
        toks: the command's tokens.
        spec_shorthand: whether this vLLM declares ``--spec-method/--spec-model/--spec-tokens``
            (``facts["vllm"]["spec_flags"]``); when not, they are kept as unknown options.

    Raises:
        InputError: the command is not a vLLM server launch.
    """
    found = vllm_entry(toks)
    if found is None:
        raise InputError("launch command", f"'{' '.join(toks[:3])}' is not a vLLM server launch "
                                           "(expected vllm serve MODEL ... or python -m vllm.entrypoints.openai.api_server --model ...)")
    env, entry, start = found
    cmd = VllmCommand(argv=tuple(toks), env=env, entry=entry, start=start)
    st = _SpecParts()
    positional: list[tuple[int, str]] = []
    i = start
    while i < len(toks):
        t = toks[i]
        if not t.startswith("-") or t == "-":
            positional.append((i, t))
            i += 1
            continue
        opt, val, consumed = _option_at(toks, i)
        if val is None and (opt in VALUE_OPTIONS or (opt in SPEC_SHORTHAND and spec_shorthand)):
            cmd.problems.append(("expected-one-argument", opt, f"argument {opt}: expected one argument"))
        _take_option(cmd, st, opt, val, i, consumed, spec_shorthand)
        i += 1 + consumed
    cmd.spec = _merge_spec(cmd, st)
    _model_of(cmd, entry, positional)
    return cmd


@dataclass
class _SpecParts:
    """The speculative config as the options give it, before vLLM's argparse merges them."""

    json: dict[str, Any] | None = None
    dotted: dict[str, Any] = field(default_factory=dict)
    shorthand: dict[str, tuple[str, Any]] = field(default_factory=dict)


def _option_at(toks: list[str], i: int) -> tuple[str, str | None, int]:
    """``(normalised option, value, tokens consumed after it)`` for the option at ``toks[i]``."""
    name, eq, val = toks[i].partition("=")
    opt = _norm(name)
    if eq:
        return opt, val, 0
    if opt in _NO_VALUE or i + 1 >= len(toks) or (toks[i + 1].startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", toks[i + 1])):
        return opt, None, 0
    return opt, toks[i + 1], 1


def _take_option(cmd: VllmCommand, st: _SpecParts, opt: str, val: str | None, i: int, consumed: int, spec_shorthand: bool) -> None:
    """Record one option: the three speculative-config spellings (dotted, JSON, ``--spec-*``) or a plain option."""
    if opt.startswith("--speculative-config."):
        key = opt.split(".", 1)[1]
        dv = _dotted_value(val) if val is not None else None
        st.dotted[key] = dv
        cmd.spec_sources.append(SpecSource(i, consumed, "dotted", opt, {key.replace("-", "_"): dv}))
    elif opt == "--speculative-config":
        cmd.options[opt] = val
        st.json = _spec_json_value(cmd, val)
        cmd.spec_sources.append(SpecSource(i, consumed, "json", opt, dict(st.json or {})))
    elif opt in SPEC_SHORTHAND and spec_shorthand:
        key = SPEC_SHORTHAND[opt]
        v: Any = val
        if key == "num_speculative_tokens" and isinstance(val, str):
            try:
                v = int(val)
            except ValueError:
                cmd.problems.append(("bad-int", val, f"argument {opt}: invalid int value: '{val}'"))
        st.shorthand[key] = (opt, v)
        cmd.spec_sources.append(SpecSource(i, consumed, "shorthand", opt, {key: v}))
        cmd.options[opt] = val
    else:
        cmd.options[opt] = val


def _spec_json_value(cmd: VllmCommand, val: str | None) -> dict[str, Any] | None:
    """``--speculative-config JSON`` as vLLM's argparse reads it (``json.loads``; ``None``/empty: no config)."""
    if val in (None, "", "None"):
        return None
    try:
        parsed = json.loads(val)
    except ValueError as exc:
        cmd.problems.append(("bad-json", val, f"argument --speculative-config: Value {val} cannot be converted to <function loads>. ({exc})"))
        return None
    if not isinstance(parsed, dict):
        cmd.problems.append(("not-a-dict", val, f"--speculative-config {val}: a JSON {type(parsed).__name__}, not an object"))
        return None
    return parsed


def _merge_spec(cmd: VllmCommand, st: _SpecParts) -> dict[str, Any] | None:
    """The speculative config vLLM builds: dotted keys are appended as one more ``--speculative-config`` JSON (argparse
    keeps that last value, replacing a plain JSON given as well); a ``--spec-*`` key also in the JSON is 'mutually
    exclusive'."""
    spec = st.json
    if st.dotted:
        if spec:
            cmd.problems.append(("dotted-replaces-json", "--speculative-config",
                                 "--speculative-config.KEY options replace the --speculative-config JSON given as well "
                                 f"(vLLM appends them as one more --speculative-config; argparse keeps the last): {sorted(spec)} dropped"))
        spec = dict(st.dotted)
    for key, (opt, v) in st.shorthand.items():
        if spec is None:
            spec = {}
        if key in spec:
            cmd.problems.append(("mutually-exclusive", opt, f"{opt} and --speculative-config['{key}'] are mutually exclusive"))
            continue
        spec[key] = v
    return {str(k).replace("-", "_"): v for k, v in spec.items()} if spec is not None else None


def _model_of(cmd: VllmCommand, entry: str, positional: list[tuple[int, str]]) -> None:
    """The served model: ``vllm serve``'s positional, else ``--model``; the api_server entry point's positional is
    ignored by vLLM (recorded as a problem)."""
    if entry in (ENTRY_VLLM_SERVE, ENTRY_VLLM_CLI_MAIN) and positional:
        cmd.model, cmd.model_source = positional[0][1], "positional"
    model_opt = cmd.options.get("--model")
    if isinstance(model_opt, str) and cmd.model is None:
        cmd.model, cmd.model_source = model_opt, "--model"
    if entry == ENTRY_VLLM_API_SERVER and positional and cmd.model is None:
        # make_arg_parser declares model_tag, but only `vllm serve` copies it to args.model (0.11.0
        # vllm/entrypoints/cli/serve.py:47-48; api_server's __main__ does not, 0.11.0 api_server.py:1942-1953, 0.33.0
        # launchers/api_server/entry.py:204-226): the engine gets ModelConfig's default model
        cmd.ignored_positional = positional[0]
        cmd.model, cmd.model_source = positional[0][1], "positional (ignored by the api_server entry point)"
        cmd.problems.append(("positional-ignored", positional[0][1], f"python -m vllm.entrypoints.openai.api_server ignores the positional "
                                                                     f"model {positional[0][1]}: only vllm serve copies model_tag to --model"))
    if cmd.model is None:
        cmd.problems.append(("no-model", "", "no model given (vllm serve MODEL, or --model MODEL)"))


def spec_json(spec: dict[str, Any]) -> str:
    """The speculative config as vLLM's documentation writes it: compact JSON, keys in a fixed order
    (``method``, ``model``, ``num_speculative_tokens``, then the rest sorted)."""
    order = ["method", "model", "num_speculative_tokens"]
    keys = [k for k in order if k in spec] + sorted(k for k in spec if k not in order)
    return json.dumps({k: spec[k] for k in keys}, separators=(",", ":"))


_KEEP = object()


def rebuild_vllm(cmd: VllmCommand, spec: Any = _KEEP, *, model_option: bool = False) -> list[str]:
    """The command with fixes applied, as tokens.

    Args:
        cmd: the parsed command.
        spec: a dict: every speculative-config form is replaced by one ``--speculative-config JSON`` at the first
            one's position; ``None``: they are removed; left out: kept as written.
        model_option: write an ignored positional model (:attr:`VllmCommand.ignored_positional`) as ``--model MODEL``.
    """
    skip: set[int] = set()
    if spec is not _KEEP:
        for s in cmd.spec_sources:
            skip.update(range(s.index, s.index + 1 + s.consumed))
    first = min((s.index for s in cmd.spec_sources), default=None) if spec is not _KEEP else None
    out: list[str] = []
    for i, t in enumerate(cmd.argv):
        if i == first and spec is not None:
            out += ["--speculative-config", spec_json(spec)]
        if i in skip:
            continue
        if model_option and cmd.ignored_positional is not None and i == cmd.ignored_positional[0]:
            out += ["--model", t]
            continue
        out.append(t)
    if spec is not _KEEP and first is None and spec is not None:
        out += ["--speculative-config", spec_json(spec)]
    return out
