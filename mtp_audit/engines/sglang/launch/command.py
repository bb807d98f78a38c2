"""Parse an SGLang launch command the way the targeted SGLang version parses it.

The parser of every SGLang release is a plain ``argparse.ArgumentParser`` built in
``prepare_server_args`` (``sglang/srt/server_args.py``; 0.5.9: line 5579, 0.5.23: line 679) with
``allow_abbrev`` left at its default ``True``. Both entry points end there:
``python -m sglang.launch_server`` (``sglang/launch_server.py`` passes ``sys.argv[1:]``) and
``sglang serve`` (``sglang/cli/main.py`` registers the ``serve`` sub-command from 0.5.9 on and
``sglang/cli/serve.py`` passes the remaining arguments to ``prepare_server_args``).

The options, their aliases, actions, ``nargs``, types and choices come from the sglang analyzer's
facts (``facts["sglang"]["cli_arguments"]``, ``["parser"]``, ``["entry_points"]``; see
docs/sglang.md). The matching rules are those of CPython 3.11 ``argparse._parse_optional`` and
``_get_option_tuples``: an exact option string wins; ``--name=value`` splits at the first ``=``; with
``allow_abbrev`` a unique prefix of a long option is accepted, several prefixes are an "ambiguous
option" error; an unknown ``--x`` and any stray token end in "unrecognized arguments".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from mtp_audit.engines.argv import split_command, split_env_prefix
from mtp_audit.engines.sglang.release import Release
from mtp_audit.errors import InputError

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")

#: How each entry point is written in plain words (keys of ``facts["sglang"]["entry_points"]``).
ENTRY_LAUNCH_SERVER = "python -m sglang.launch_server"
ENTRY_SERVE = "sglang serve"


@dataclass(frozen=True)
class Problem:
    """Something argparse would reject, or a token it accepts only by prefix.

    Attributes:
        kind: ``"unknown"``, ``"ambiguous"``, ``"missing-value"``, ``"invalid-choice"``,
            ``"invalid-type"``, ``"explicit-arg-ignored"``, ``"required"``, ``"positional"``,
            ``"abbreviation"``, ``"help"`` or ``"entry-point"``.
        index: index of the token in the command (``None`` for "required").
        token: the token as typed.
        message: one sentence, in argparse's words where argparse has some.
        fix: replacement tokens that correct it, or ``None`` when no fix is known.
    """

    kind: str
    index: int | None
    token: str
    message: str
    fix: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Option:
    """One option as parsed.

    Attributes:
        index: index of the option token in the command.
        typed: the option as typed (``"--tp"``, ``"--fp4-gemm-backend=flashinfer_cudnn"``).
        flag: the declared flag, the key in ``cli_arguments`` (``"--tensor-parallel-size"``).
        option_string: the option string argparse matched (``"--tp-size"``).
        value: the value (a string, a list for ``nargs`` ``+``/``*``/N, ``None`` for flags without value).
        consumed: how many tokens after ``index`` were taken as values.
    """

    index: int
    typed: str
    flag: str
    option_string: str
    value: str | list[str] | None
    consumed: int = 0


@dataclass
class LaunchCommand:
    """A parsed launch command.

    Attributes:
        argv: every token as given (environment assignments and the program included).
        env: ``KEY=VALUE`` assignments written before the program (``SGLANG_X=1 python -m ...``).
        entry: :data:`ENTRY_LAUNCH_SERVER` or :data:`ENTRY_SERVE`.
        start: index of the first server argument in ``argv``.
        options: the options in command order.
        problems: what argparse of this SGLang would reject, and prefix abbreviations it accepts.
        parsed_with: ``"sglang analyzer"`` when the option table came from the sglang facts,
            ``"heuristic"`` when no table was available (every ``--x`` accepted, values guessed).
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    entry: str
    start: int
    options: list[Option] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    parsed_with: str = "sglang analyzer"
    names: dict[str, str] = field(default_factory=dict)

    def flag_of(self, *option_strings: str) -> str | None:
        """The declared flag that owns any of ``option_strings`` in this SGLang (``None`` if none)."""
        for o in option_strings:
            if o in self.names:
                return self.names[o]
        return None

    def get(self, *option_strings: str) -> str | list[str] | None:
        """Value of the last occurrence of the option known by any of ``option_strings`` (aliases of
        one argument, e.g. ``"--tp-size", "--tensor-parallel-size"``), or ``None`` when absent."""
        flags = {self.names.get(o, o) for o in option_strings}
        for opt in reversed(self.options):
            if opt.flag in flags:
                return opt.value if opt.value is not None else "true"
        return None

    def has(self, *option_strings: str) -> bool:
        """Whether the option is given."""
        flags = {self.names.get(o, o) for o in option_strings}
        return any(opt.flag in flags for opt in self.options)

    def server_args(self) -> list[str]:
        """The server arguments (tokens after the entry point)."""
        return list(self.argv[self.start:])

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "argv": list(self.argv),
            "env": dict(sorted(self.env.items())),
            "entry": self.entry,
            "parsed_with": self.parsed_with,
            "options": [{"flag": o.flag, "typed": o.typed, "option_string": o.option_string, "value": o.value} for o in self.options],
            "problems": [{"kind": p.kind, "token": p.token, "message": p.message, "fix": list(p.fix) if p.fix is not None else None}
                         for p in self.problems],
        }


def find_entry(toks: list[str]) -> tuple[dict[str, str], str, int]:
    """Locate the SGLang entry point: ``(env assignments, entry, index of the first server argument)``.

    Accepted: optional ``env`` and ``KEY=VALUE`` prefixes, then ``python[3[.N]] [python flags] -m
    sglang.launch_server`` or ``[path/]sglang serve``.

    Raises:
        InputError: the command does not start SGLang's server.
    """
    env, i = split_env_prefix(toks)
    if i >= len(toks):
        raise InputError("launch command", "only environment assignments, no program")
    prog = PurePath(toks[i]).name
    if _PYTHON.match(prog):
        j = i + 1
        while j < len(toks) and toks[j].startswith("-") and toks[j] != "-m" and not toks[j].startswith("-m"):
            j += 1
        module = None
        if j < len(toks) and toks[j] == "-m" and j + 1 < len(toks):
            module, start = toks[j + 1], j + 2
        elif j < len(toks) and toks[j].startswith("-m") and len(toks[j]) > 2:
            module, start = toks[j][2:], j + 1
        if module == "sglang.launch_server":
            return env, ENTRY_LAUNCH_SERVER, start
        what = f"python -m {module}" if module else "a python command without -m sglang.launch_server"
        raise InputError("launch command", f"{what} is not an SGLang server launch (expected python -m sglang.launch_server ... or sglang serve ...; "
                                           "for vLLM: vllm serve MODEL ... or python -m vllm.entrypoints.openai.api_server --model MODEL ...)")
    if prog == "sglang" and i + 1 < len(toks) and toks[i + 1] == "serve":
        return env, ENTRY_SERVE, i + 2
    raise InputError("launch command", f"'{toks[i]}' is not an SGLang server launch (expected python -m sglang.launch_server ... or sglang serve ...; "
                                           "for vLLM: vllm serve MODEL ... or python -m vllm.entrypoints.openai.api_server --model MODEL ...)")


def _nargs_count(action: str | None, nargs: str | None) -> str:
    """argparse arity: ``"0"``, ``"1"``, ``"?"``, ``"*"``, ``"+"`` or a number as text."""
    if action in ("store_true", "store_false", "store_const", "count", "help", "version", "append_const") \
            or (action and action.split(".")[-1] in ("BooleanOptionalAction",)):
        return "0"
    if nargs in (None, "None"):
        return "1"
    return str(nargs)


def parse_command(argv: list[str] | tuple[str, ...], sglang_facts: dict[str, Any] | None) -> LaunchCommand:
    """Parse ``argv`` with the option table of ``sglang_facts`` (``None``: a heuristic parse).

    Returns the :class:`LaunchCommand`; problems are recorded, never raised.

    Raises:
        InputError: the command is empty or not an SGLang server launch.
    """
    toks = split_command(argv)
    env, entry, start = find_entry(toks)
    cmd = LaunchCommand(tuple(toks), env, entry, start)
    release = Release.of(sglang_facts)
    eps = release.entry_points
    if eps is not None and entry in eps and eps[entry] is None:
        version = release.version or "this version"
        fix = None
        if entry == ENTRY_SERVE and eps.get(ENTRY_LAUNCH_SERVER):
            fix = ("python", "-m", "sglang.launch_server")
        cmd.problems.append(Problem("entry-point", start - 1, " ".join(toks[max(0, start - 2):start]),
                                    f"SGLang {version} has no '{entry}' command", fix))
    args = release.cli
    if not args:
        cmd.parsed_with = "heuristic"
        _parse_heuristic(cmd)
        return cmd
    allow_abbrev = release.parser.get("allow_abbrev") is not False
    names: dict[str, str] = {}
    for flag, rec in args.items():
        for o in [flag, *(rec.get("aliases") or [])]:
            names.setdefault(o, flag)
    names.setdefault("-h", "--help")
    names.setdefault("--help", "--help")
    cmd.names = names
    spec = dict(args)
    spec["--help"] = {"action": "help", "choices": None, "nargs": None, "type": None, "aliases": ["-h"]}
    first = start
    if entry == ENTRY_SERVE and start < len(toks) and not toks[start].startswith("-") and serve_takes_positional_model(sglang_facts):
        # ``sglang serve MODEL ...``: serve.py's _normalize_positional_model_path rewrites it to --model-path MODEL
        mflag = names.get("--model-path") or names.get("--model")
        if mflag is not None:
            cmd.options.append(Option(start, toks[start], mflag, "--model-path" if "--model-path" in names else "--model", toks[start], 0))
            first = start + 1
    _parse_argparse(cmd, toks, start, names, spec, allow_abbrev, first=first)
    return cmd


#: First SGLang release whose ``sglang/cli/serve.py`` has ``_normalize_positional_model_path`` ("Allow
#: ``sglang serve <model>``": a first argument not starting with ``-`` becomes ``--model-path``). Checked by
#: hand in the wheels: 0.5.15 has no such function; 0.5.16 (serve.py:49), 0.5.18 (serve.py:55), 0.5.20 and 0.5.23
#: (serve.py:62) have it.
SERVE_POSITIONAL_MODEL_SINCE = "0.5.16"


def serve_takes_positional_model(sglang_facts: dict[str, Any] | None) -> bool:
    """Whether ``sglang serve MODEL`` is accepted by this SGLang: the sglang facts' ``serve_positional_model_path``
    when the analyzer records it, else the version (>= :data:`SERVE_POSITIONAL_MODEL_SINCE`); ``False`` when unknown."""
    facts = sglang_facts or {}
    if isinstance(facts.get("serve_positional_model_path"), bool):
        return facts["serve_positional_model_path"]
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(facts.get("version"))) >= Version(SERVE_POSITIONAL_MODEL_SINCE)
    except InvalidVersion:
        return False


def _classify(tok: str, names: dict[str, str], allow_abbrev: bool, after_dashdash: bool) -> str:
    """argparse's one-letter pattern of a token: ``"O"`` an option (known or not), ``"A"`` an argument."""
    if after_dashdash or not tok or tok[0] != "-" or len(tok) == 1:
        return "A"
    if tok in names:
        return "O"
    if "=" in tok and tok.split("=", 1)[0] in names:
        return "O"
    if allow_abbrev and tok.startswith("--") and _prefix_matches(tok, names):
        return "O"
    if _NEGATIVE_NUMBER.match(tok):
        return "A"
    if " " in tok:
        return "A"
    return "O"


def _prefix_matches(tok: str, names: dict[str, str]) -> list[str]:
    prefix = tok.split("=", 1)[0]
    return sorted(o for o in names if o.startswith("--") and o.startswith(prefix))


def _parse_argparse(cmd: LaunchCommand, toks: list[str], start: int, names: dict[str, str], spec: dict[str, Any], allow_abbrev: bool,
                    first: int | None = None) -> None:
    """Walk the tokens as argparse does (its pattern of option and argument tokens first), recording each option and
    each problem argparse would report; then the required options that are missing."""
    i = start if first is None else first
    pattern = _token_pattern(toks, start, names, allow_abbrev)
    seen: set[str] = {o.flag for o in cmd.options}
    while i < len(toks):
        if pattern[i] == "-":
            i += 1
        elif pattern[i] == "A":
            _positional(cmd, toks, i, start, names)
            i += 1
        else:
            i = _one_option(cmd, toks, pattern, i, names, spec, allow_abbrev, seen)
    for flag, rec in spec.items():
        if rec.get("required") and flag not in seen:
            cmd.problems.append(Problem("required", None, flag, f"the following arguments are required: {'/'.join([flag, *(rec.get('aliases') or [])])}"))


def _token_pattern(toks: list[str], start: int, names: dict[str, str], allow_abbrev: bool) -> list[str]:
    """argparse's pattern: ``"-"`` for tokens before ``start`` and the first ``--``, ``"O"`` options, ``"A"`` arguments."""
    dashdash = False
    pattern = []
    for k, t in enumerate(toks):
        if k < start:
            pattern.append("-")
        elif t == "--" and not dashdash:
            pattern.append("-")
            dashdash = True
        else:
            pattern.append(_classify(t, names, allow_abbrev, dashdash))
    return pattern


def _positional(cmd: LaunchCommand, toks: list[str], i: int, start: int, names: dict[str, str]) -> None:
    """A stray argument: "unrecognized arguments", with ``--model-path MODEL`` as the fix for ``sglang serve MODEL`` on a
    version without serve.py's ``_normalize_positional_model_path``."""
    tok = toks[i]
    fix: tuple[str, ...] = ()
    if cmd.entry == ENTRY_SERVE and i == start and "--model-path" in names \
            and not any(t in ("--model-path", "--model") or t.startswith(("--model-path=", "--model=")) for t in toks[i:]):
        fix = ("--model-path", tok)
    cmd.problems.append(Problem("positional", i, tok, f"unrecognized arguments: {tok}", fix))


def _one_option(cmd: LaunchCommand, toks: list[str], pattern: list[str], i: int, names: dict[str, str], spec: dict[str, Any],
                allow_abbrev: bool, seen: set[str]) -> int:
    """Read the option at ``i`` (name, abbreviation, explicit ``=value``, its values); the index after it."""
    tok = toks[i]
    resolved = _option_string(cmd, toks, pattern, i, names, allow_abbrev)
    if isinstance(resolved, int):
        return resolved
    ostr, explicit = resolved
    flag = names[ostr]
    rec = spec.get(flag, {})
    if flag == "--help":
        cmd.problems.append(Problem("help", i, tok, "prints the help text and exits; the server does not start", ()))
        return i + 1
    read = _option_values(cmd, toks, pattern, i, ostr, _nargs_count(rec.get("action"), rec.get("nargs")), explicit)
    if read is None:
        return i + 1
    value, values, consumed = read
    for v in values:
        _check_value(cmd, i, ostr, rec, v)
    cmd.options.append(Option(i, tok, flag, ostr, value, consumed))
    seen.add(flag)
    return i + 1 + consumed


def _option_string(cmd: LaunchCommand, toks: list[str], pattern: list[str], i: int, names: dict[str, str],
                   allow_abbrev: bool) -> tuple[str, str | None] | int:
    """``(declared option string, explicit value)`` of the token at ``i``, or the next index when argparse rejects it
    (ambiguous or unknown; the problem is recorded)."""
    tok = toks[i]
    if tok in names:
        return tok, None
    if "=" in tok and tok.split("=", 1)[0] in names:
        ostr, explicit = tok.split("=", 1)
        return ostr, explicit
    matches = _prefix_matches(tok, names) if allow_abbrev and tok.startswith("--") else []
    if len(matches) > 1:
        cmd.problems.append(Problem("ambiguous", i, tok, f"ambiguous option: {tok.split('=', 1)[0]} could match {', '.join(matches)}"))
        i += 1
        while i < len(toks) and pattern[i] == "A":
            i += 1
        return i
    if len(matches) == 1:
        attached = tok.split("=", 1)[1] if "=" in tok else None
        cmd.problems.append(Problem("abbreviation", i, tok,
                                    f"{tok.split('=', 1)[0]} is accepted only as an abbreviation of {matches[0]} (argparse allow_abbrev)",
                                    (matches[0] + ("=" + attached if attached is not None else ""),)))
        return matches[0], attached
    return _unknown_option(cmd, toks, pattern, i, names)


def _unknown_option(cmd: LaunchCommand, toks: list[str], pattern: list[str], i: int, names: dict[str, str]) -> int:
    """An option argparse does not know: one problem for it and the values after it (argparse leaves those among the
    extras too), with the closest declared spelling as the fix; the index after the values."""
    import difflib

    tok = toks[i]
    j = i + 1
    while j < len(toks) and pattern[j] == "A":
        j += 1
    name = tok.split("=", 1)[0]
    other = OTHER_ENGINE_OPTIONS.get(name)
    if other is not None:  # another engine's option: a near spelling of an SGLang flag would be a wrong fix
        cmd.problems.append(Problem("unknown", i, tok, f"unrecognized arguments: {' '.join(toks[i:j])} ({other})", None))
        return j
    close = difflib.get_close_matches(name, [o for o in names if o.startswith("--")], n=1, cutoff=0.8)
    fix = (close[0] + ("=" + tok.split("=", 1)[1] if "=" in tok else ""),) if close else None
    cmd.problems.append(Problem("unknown", i, tok, f"unrecognized arguments: {' '.join(toks[i:j])}", fix))
    return j


#: Options of other engines that people paste into SGLang commands, with what SGLang reads instead (no spelling fix is
#: offered for them: ``--speculative-config`` is one edit from 0.5.23's unrelated ``--speculative-adaptive-config``).
_SGLANG_SPEC = ("SGLang reads --speculative-algorithm NEXTN (or EAGLE) with --speculative-num-steps, "
                "--speculative-eagle-topk and --speculative-num-draft-tokens")
OTHER_ENGINE_OPTIONS: dict[str, str] = {
    "--speculative-config": f"vLLM's option; {_SGLANG_SPEC}",
    "--speculative_config": f"vLLM's option; {_SGLANG_SPEC}",
    "-sc": f"vLLM's option; {_SGLANG_SPEC}",
    "--num-speculative-tokens": f"vLLM's option; {_SGLANG_SPEC}",
    "--spec-type": f"llama.cpp's option; {_SGLANG_SPEC}",
    "--extra_llm_api_options": "TensorRT-LLM's option; SGLang reads its own flags (or --config FILE)",
}


def _option_values(cmd: LaunchCommand, toks: list[str], pattern: list[str], i: int, ostr: str, arity: str,
                   explicit: str | None) -> tuple[str | list[str] | None, list[str], int] | None:
    """``(value, values, tokens consumed)`` of the option at ``i`` by its arity, or ``None`` when argparse rejects a
    missing value (the problem is recorded)."""
    tok = toks[i]
    if arity == "0":
        if explicit is not None:
            cmd.problems.append(Problem("explicit-arg-ignored", i, tok, f"argument {ostr}: ignored explicit argument '{explicit}'", (ostr,)))
        return None, [], 0
    if explicit is not None:
        return (explicit if arity in ("1", "?") else [explicit]), [explicit], 0
    values: list[str] = []
    j = i + 1
    while j < len(toks) and pattern[j] == "A":
        values.append(toks[j])
        j += 1
    if arity in ("1", "+") and not values:
        want = "one argument" if arity == "1" else "at least one argument"
        cmd.problems.append(Problem("missing-value", i, tok, f"argument {ostr}: expected {want}"))
        return None
    if arity in ("1", "?"):
        values = values[:1]
        return (values[0] if values else None), values, len(values)
    if arity in ("+", "*"):
        return values, values, len(values)
    n = int(arity) if arity.isdigit() else 1
    if len(values) < n:
        cmd.problems.append(Problem("missing-value", i, tok, f"argument {ostr}: expected {n} arguments"))
        return None
    return values[:n], values[:n], n


def _check_value(cmd: LaunchCommand, i: int, ostr: str, rec: dict[str, Any], v: str) -> None:
    typ = rec.get("type")
    if typ in ("int", "float"):
        try:
            (int if typ == "int" else float)(v)
        except ValueError:
            cmd.problems.append(Problem("invalid-type", i, v, f"argument {ostr}: invalid {typ} value: '{v}'"))
            return
    choices = rec.get("choices")
    if choices:
        ok = v in choices
        if not ok and typ in ("int", "float"):
            try:
                ok = float(v) in [float(c) for c in choices]
            except ValueError:
                ok = False
        if not ok:
            shown = ", ".join(f"'{c}'" for c in choices)
            fix = None
            upper = [c for c in choices if c.lower() == v.lower()]
            if upper:
                fix = (ostr, upper[0])
            cmd.problems.append(Problem("invalid-choice", i, v, f"argument {ostr}: invalid choice: '{v}' (choose from {shown})", fix))


#: Option strings the launch checks read (parallel sizes, model, speculative, quantization), every alias of one
#: argument in one tuple: without an option table a prefix of exactly one of these argument groups is read as that
#: argument, as argparse's ``allow_abbrev`` would (``--tp 8`` is ``--tp-size 8``), and noted in the option.
HEURISTIC_ARGUMENTS: tuple[tuple[str, ...], ...] = (
    ("--tp-size", "--tensor-parallel-size"), ("--pp-size", "--pipeline-parallel-size"), ("--dp-size", "--data-parallel-size"),
    ("--ep-size", "--expert-parallel-size", "--ep"), ("--nnodes",), ("--model-path", "--model"),
    ("--speculative-algorithm",), ("--quantization",), ("--mem-fraction-static",))


def heuristic_flag(name: str) -> str:
    """``name`` as written, or the first option string of the one argument of :data:`HEURISTIC_ARGUMENTS` that
    ``name`` is a prefix of (``"--tp"`` -> ``"--tp-size"``); ``name`` again when it is none or more than one."""
    hits = {group for group in HEURISTIC_ARGUMENTS for o in group if o == name}
    if hits:
        return next(iter(hits))[0]
    hits = {group for group in HEURISTIC_ARGUMENTS for o in group if o.startswith(name) and len(name) > 3}
    return next(iter(hits))[0] if len(hits) == 1 else name


def _parse_heuristic(cmd: LaunchCommand) -> None:
    """Without an option table: ``--x=v`` and ``--x v`` (when the next token is not an option); an option that is
    a prefix of one argument the checks read is read as that argument (:func:`heuristic_flag`)."""
    toks = cmd.argv
    i = cmd.start
    while i < len(toks):
        t = toks[i]
        if t.startswith("--"):
            written, eq, val = t.partition("=")
            name = heuristic_flag(written)
            if eq:
                cmd.options.append(Option(i, t, name, name, val))
            elif i + 1 < len(toks) and not toks[i + 1].startswith("--"):
                cmd.options.append(Option(i, t, name, name, toks[i + 1], 1))
                i += 1
            else:
                cmd.options.append(Option(i, t, name, name, None))
            cmd.names.setdefault(name, name)
            cmd.names.setdefault(written, name)
        i += 1


def rebuild(cmd: LaunchCommand, replace: dict[str, str | None], add: Mapping[str, str | None] | None = None,
            drop_prefixes: tuple[str, ...] = ()) -> list[str]:
    """The command with fixes applied, as tokens.

    Args:
        cmd: the parsed command.
        replace: declared flag -> new value (``None`` removes the option and its values).
        add: option string -> value appended when the flag is absent (``None`` value: a flag without value).
        drop_prefixes: option strings whose options are removed entirely (e.g. ``"--speculative-"``).

    Problems with a known fix (abbreviations, misspelt flags, choice case) are corrected too; a
    problem without a fix leaves its tokens as they are. A replaced flag given more than once is written
    once, at its last occurrence (the one argparse keeps).
    """
    toks = list(cmd.argv)
    out: list[str] = []
    by_index = {o.index: o for o in cmd.options}
    fix_at = {p.index: p for p in cmd.problems if p.index is not None and p.fix is not None}
    entry_fix = next((p for p in cmd.problems if p.kind == "entry-point" and p.fix), None)
    skip_until = -1
    present = set()
    last_at = {o.flag: o.index for o in cmd.options}
    for i, t in enumerate(toks):
        if i < skip_until:
            continue
        if entry_fix is not None and i in (cmd.start - 2, cmd.start - 1):
            if i == cmd.start - 1:
                out += list(entry_fix.fix or ())
            continue
        if i < cmd.start:
            out.append(t)
            continue
        opt = by_index.get(i)
        if opt is not None:
            present.add(opt.flag)
            end = i + 1 + opt.consumed
            if opt.flag in replace and last_at.get(opt.flag) != i:
                skip_until = end  # an earlier occurrence of a replaced flag: the value is written once, at the last one
                continue
            if opt.flag in replace or any(opt.option_string.startswith(p) for p in drop_prefixes):
                new = replace.get(opt.flag)
                if opt.flag in replace and new is not None:
                    out += [opt.option_string, new]
                skip_until = end
                continue
            fixes = [p for p in cmd.problems if p.index == i and p.fix]
            head = t
            vals = toks[i + 1:end]
            for q in fixes:
                fix = q.fix or ()  # never empty: only problems with a fix were kept
                if q.kind in ("abbreviation", "explicit-arg-ignored"):
                    head = fix[0]
                elif q.kind == "invalid-choice":
                    if "=" in head and head.split("=", 1)[1] == q.token:
                        head = head.split("=", 1)[0] + "=" + fix[1]
                    vals = [fix[1] if v == q.token else v for v in vals]
            out += [head, *vals]
            skip_until = end
            continue
        p = fix_at.get(i)
        if p is not None and p.kind == "unknown":
            out += list(p.fix or ())
            continue
        if p is not None and p.kind in ("help", "positional"):
            out += list(p.fix or ())
            continue
        out.append(t)
    for o, v in (add or {}).items():
        flag = cmd.names.get(o, o)
        if flag in present:
            continue
        out += [o] if v is None else [o, v]
    return out
