"""``mtp-audit hook KIND FILE...``: the entry point of the pre-commit hooks (``.pre-commit-hooks.yaml``).

pre-commit passes the changed files that match a hook's pattern. ``hook checkpoint`` audits the folder of
each ``config.json`` / ``*.safetensors.index.json`` once; ``hook launch`` audits every launch command of the four
engines (SGLang, vLLM, llama.cpp, TensorRT-LLM) written in each shell script or text file (backslash continuations
joined) or YAML file (a ``command:`` / ``args:`` list or string, as Kubernetes and Compose files hold them), naming
the file and line, and says what it skipped and why. ``--sarif FILE`` writes one SARIF run for all the audits. The
exit code is the worst of the audits' (2 before 1 before 3 before 0).
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

#: A program that starts an engine's server, as a script writes it (a path before it allowed: ./build/bin/llama-server).
_PROGRAM = (r"python3?\s+-m\s+(?:sglang\.launch_server|vllm\.entrypoints\.\S+)|sglang\s+serve|vllm\s+serve"
            r"|(?:\S*/)?(?:llama-server|llama-cli|llama-speculative|llama-mtmd-cli|trtllm-serve)")
#: Text that starts a launch command in a script.
LAUNCH_START = re.compile(r"(?:^|[\s;&|(])((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:(?:exec|nohup|env)\s+)*(?:"
                          + _PROGRAM + r")(?![\w.-]).*)$")

#: Largest script read (bytes).
MAX_SCRIPT_BYTES = 1 << 20

#: File name endings read as YAML.
YAML_SUFFIXES = (".yaml", ".yml")

_RANK = {2: 4, 4: 4, 1: 3, 3: 2, 0: 0}


#: Shells whose ``-c SCRIPT`` (``sh -c``, ``bash -lc``) or here-document body is a script they run.
SHELLS = ("sh", "bash", "dash", "zsh")
#: A here-document operator and its delimiter word (``<<EOT``, ``<<-'EOT'``, ``<< "EOT"``), not a here-string (``<<<``).
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
#: Where a program may start a launch (the text before it checked by :func:`_quoted_at`).
_CANDIDATE = re.compile(r"(?:^|(?<=[\s;&|(]))(?=(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:(?:exec|nohup|env)\s+)*(?:"
                        + _PROGRAM + r")(?![\w.-]))")


def launch_commands(text: str) -> list[tuple[int, str]]:
    """``[(1-based line, command text)]`` of each launch command in a shell script, as the shell would run it:
    continuation lines (a trailing backslash) are joined and so are the lines of a quoted argument (a launch's
    newline inside quotes read as a space, as the engines' JSON options read it), comments dropped, text before the program
    (``exec``, ``nohup``) cut. A program name inside quotes (``echo "usage: vllm serve ..."``) is text, not a launch,
    unless the quotes are the script of ``sh -c`` (then its commands are read); a here-document body is text unless
    a shell reads it (``bash <<EOF``)."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, buf, i = i + 1, *_logical_line(lines, i)
        out.extend((start, cmd) for cmd in _line_commands(buf.strip()))
        heredoc = _heredoc_of(buf)
        if heredoc is not None:
            body_end = _heredoc_end(lines, i, *heredoc)
            if _runs_shell(buf):
                out.extend((i + n, cmd) for n, cmd in launch_commands("\n".join(lines[i:body_end])))
            i = body_end + 1
    return out


def _logical_line(lines: list[str], i: int) -> tuple[str, int]:
    """The command line starting at ``lines[i]`` (backslash continuations and open quotes joined) and the index of the
    line after it; an unclosed quote runs to the end of the text (the caller's split then says so). Each line is
    scanned once, from the quote state the lines before it left."""
    parts, state, i = [lines[i]], _quote_states(lines[i], [])[1], i + 1
    while i < len(lines):
        if state is None and parts[-1].rstrip().endswith("\\"):
            parts[-1] = parts[-1].rstrip()[:-1] + " "
        elif state is not None:
            parts.append("\n")
        else:
            break
        parts.append(lines[i])
        state = _quote_states(lines[i], [], state)[1]
        i += 1
    return "".join(parts), i


def _quote_states(text: str, positions: list[int], quote: str | None = None) -> tuple[list[str | None], str | None]:
    """In one pass over ``text`` read as the shell reads it, starting inside ``quote`` (``'``, ``"`` or ``None``):
    what is open at each of ``positions`` (ascending): ``'``, ``"``, ``#`` (a comment) or ``None``; and the quote
    still open at the end (``None`` after a comment)."""
    states: list[str | None] = []
    k, j = 0, 0
    while j < len(text) and quote != "#":
        while k < len(positions) and positions[k] <= j:
            states.append(quote)
            k += 1
        c = text[j]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\":
            j += 1
        elif quote == '"':
            quote = None if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (j == 0 or text[j - 1].isspace()):
            quote = "#"
        j += 1
    states += [quote] * (len(positions) - k)
    return states, None if quote == "#" else quote


#: A shell reading a script from its ``-c`` option (``sh -c``, ``bash -lc``), somewhere on a line.
_SHELL_C = re.compile(r"(?:^|[\s/;&|(])(?:" + "|".join(SHELLS) + r")\s+-[a-z]*c")


def _line_commands(line: str) -> list[str]:
    """The launch commands of one logical line: the first program outside quotes and comments (the rest of the
    line), else the commands of an ``sh -c SCRIPT`` on it."""
    if not line or line.startswith("#"):
        return []
    candidates = list(_CANDIDATE.finditer(line))
    for m, state in zip(candidates, _quote_states(line, [m.start() for m in candidates])[0]):
        found = LAUNCH_START.match(line[m.start():].replace("\n", " ")) if state is None else None
        if found is not None:
            cmd = re.sub(r"^((?:[A-Za-z_]\w*=\S*\s+)*)(?:(?:exec|nohup)\s+)+", r"\1", found.group(1))
            return [cmd.split(" #", 1)[0].strip().rstrip("&").strip()]
    if not (_SHELL_C.search(line) and re.search(_PROGRAM, line)):
        return []
    try:
        toks = command_tokens(line, stop=False)
    except ValueError:
        return []
    return [cmd for n in range(len(toks) - 2) for _, cmd in _shell_script(toks[n:n + 3])]


def _shell_script(toks: list[str]) -> list[tuple[int, str]]:
    """The launch commands of ``SHELL -c SCRIPT`` (``toks``: the shell's name, its option, the script), else ``[]``."""
    if os.path.basename(toks[0]) in SHELLS and re.fullmatch(r"-[a-z]*c[a-z]*", toks[1]):
        return launch_commands(toks[2])
    return []


def _heredoc_of(line: str) -> tuple[str, bool] | None:
    """``(delimiter, leading tabs stripped)`` of a here-document started on ``line`` outside quotes, else ``None``."""
    found = [m for m in _HEREDOC.finditer(line) if line[m.start() - 1:m.start()] != "<" and line[m.end():m.end() + 1] != "<"]
    for m, state in zip(found, _quote_states(line, [m.start() for m in found])[0]):
        if state is None:
            return m.group(3), m.group(1) == "-"
    return None


def _heredoc_end(lines: list[str], i: int, word: str, tabs: bool) -> int:
    """The index of the line ending the here-document whose body starts at ``lines[i]`` (``len(lines)`` if none)."""
    for j in range(i, len(lines)):
        if (lines[j].lstrip("\t") if tabs else lines[j]) == word:
            return j
    return len(lines)


def _runs_shell(line: str) -> bool:
    """Whether the command reading a here-document on ``line`` is a shell (``bash <<EOF``, ``sh -s <<'EOF'``)."""
    try:
        toks = command_tokens(line.split("<<", 1)[0])
    except ValueError:
        return False
    return bool(toks) and os.path.basename(toks[0]) in SHELLS and all(t.startswith("-") and "c" not in t for t in toks[1:])


def yaml_commands(text: str, display: str) -> list[tuple[int, str]]:
    """``[(1-based line, command text)]`` of each launch command in a YAML file (every document): a string value
    is read as a script (:func:`launch_commands`, so ``sh -c`` blocks work), a list of strings as one command's
    tokens, and a mapping's ``command`` (or ``entrypoint``) list followed by its ``args`` list as one command
    (Kubernetes containers; ``[sh, -c]`` with the script in ``args`` its script's commands). Read with the bounded
    composer of :mod:`mtp_audit.sources.yamlfile` (no object is built; events, aliases, nesting depth and the size
    once aliases are expanded bounded); each node is walked once, however many aliases point at it.

    Raises:
        ValueError: the file does not parse as YAML (a template with ``{{ ... }}``, a broken file) or is over a bound
            of the YAML reader; the message says where and why.
    """
    import yaml

    from mtp_audit.errors import InputError
    from mtp_audit.sources.yamlfile import compose_documents_bounded

    try:
        docs = compose_documents_bounded(text, display)
    except InputError as exc:
        raise _NotYaml(f"{exc.problem}: its commands were not read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise _NotYaml(f"does not parse as YAML{where} ({getattr(exc, 'problem', None) or exc}; a template?): "
                       "its commands were not read") from None
    out: list[tuple[int, str]] = []
    seen: set[int] = set()
    for doc in docs:
        out.extend(_node_commands(doc, seen))
    return sorted(set(out))


class _NotYaml(ValueError):
    """A ``.yaml`` / ``.yml`` file that does not parse, or is too large to be a manifest: skipped with its reason, not
    an input error (Helm templates, generated YAML and YAML data files are common in deployment repositories)."""


def _strings(node: Any) -> list[str] | None:
    """The values of a YAML sequence of scalars, else ``None``."""
    import yaml

    if isinstance(node, yaml.SequenceNode) and node.value and all(isinstance(v, yaml.ScalarNode) for v in node.value):
        return [str(v.value) for v in node.value]
    return None


def _node_commands(node: Any, seen: set[int]) -> Iterator[tuple[int, str]]:
    """Launch commands under one YAML node (see :func:`yaml_commands`); ``seen`` holds the nodes walked already."""
    import yaml

    if id(node) in seen:
        return
    seen.add(id(node))
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        if isinstance(node.value, str) and re.search(_PROGRAM, node.value):
            offset = 0 if node.style in (None, "", "'", '"') else 1  # a block scalar starts on the next line
            yield from ((line + offset + n - 1, cmd) for n, cmd in launch_commands(node.value))
        return
    if isinstance(node, yaml.SequenceNode):
        yield from _sequence_commands(node, line, seen)
        return
    if isinstance(node, yaml.MappingNode):
        yield from _mapping_commands(node, seen)


def _sequence_commands(node: Any, line: int, seen: set[int]) -> Iterator[tuple[int, str]]:
    """An exec-form list (``["vllm", "serve", ...]``) as one command, else the commands of its members."""
    import yaml

    toks = _strings(node)
    if toks is not None and not _spaced(toks[0]) and LAUNCH_START.search(shlex.join(toks)):
        yield from _token_commands(line, toks)
        return
    for child in node.value:  # a list of command lines, or of mappings; a lone token is no command
        if not (isinstance(child, yaml.ScalarNode) and not _spaced(str(child.value))):
            yield from _node_commands(child, seen)


def _mapping_commands(node: Any, seen: set[int]) -> Iterator[tuple[int, str]]:
    """A container's ``command`` (or ``entrypoint``) list and ``args`` list as one command, or as a shell's script
    (``[sh, -c]``: the script node read where it is written), else the commands of the mapping's values."""
    import yaml

    keys = {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    head_node = keys.get("command") if _strings(keys.get("command")) else keys.get("entrypoint")
    head = _strings(head_node)
    args = keys.get("args")
    toks = (head or []) + (_strings(args) or [])
    if head_node is not None and head is not None:
        script = _script_node(head_node, head, args)
        found = list(_node_commands(script, seen)) if script is not None else []
        if found:
            yield from found
            return
        if LAUNCH_START.search(shlex.join(toks)):
            yield from _token_commands(head_node.start_mark.line + 1, toks)
            return
    for _, value in node.value:
        yield from _node_commands(value, seen)


def _script_node(head_node: Any, head: list[str], args: Any) -> Any:
    """The scalar node holding the script of a ``[sh, -c]`` command (in ``command`` or first in ``args``), else None."""
    if len(head) < 2 or os.path.basename(head[0]) not in SHELLS or not re.fullmatch(r"-[a-z]*c[a-z]*", head[1]):
        return None
    if len(head) >= 3:
        return head_node.value[2]
    return args.value[0] if _strings(args) else None


def _spaced(text: str) -> bool:
    return any(c.isspace() for c in text)


def _token_commands(line: int, toks: list[str]) -> Iterator[tuple[int, str]]:
    """A command given as tokens; ``sh -c SCRIPT`` (``bash -lc`` ...) is the script's commands."""
    if len(toks) >= 3 and os.path.basename(toks[0]) in SHELLS and toks[1].startswith("-") and "c" in toks[1]:
        yield from ((line, cmd) for _, cmd in launch_commands(toks[2]))
        return
    yield line, shlex.join(toks)


def command_tokens(cmd: str, *, stop: bool = True) -> list[str]:
    """The tokens of one command line, up to the first shell operator (``>``, ``|``, ``&&``, ``;``); with
    ``stop=False`` the whole line, operators left out (``cd x && sh -c '...'``).

    Raises:
        ValueError: unbalanced quotes.
    """
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out: list[str] = []
    for tok in lex:
        if tok and set(tok) <= set("();<>|&"):
            if stop:
                break
            continue
        out.append(tok)
    return out


def _worst(codes: list[int]) -> int:
    return max(codes, key=lambda c: _RANK.get(c, 4)) if codes else 0


@click.command("hook", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("kind", type=click.Choice(["checkpoint", "launch"]))
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sglang", metavar="TARGET", default=None, help="launch: the SGLang to check against (default: the installed one).")
@click.option("--vllm", metavar="TARGET", default=None, help="launch: the vLLM to check against (default: the installed one).")
@click.option("--llamacpp-build", "llamacpp_build", metavar="N", default=None, help="launch: the llama.cpp build of llama-server commands.")
@click.option("--env-dump", metavar="FILE", default=None, help="launch: environment dump of the serving machine.")
@click.option("--facts", metavar="FILE", default=None, help="launch: stored machine facts (mtp-audit preflight --save-facts).")
@click.option("--no-machine", "no_machine", is_flag=True,
              help="launch: audit off the serving machine (never read this one; the --env-dump given, or nothing): machine "
                   "questions are notes, not blocking.")
@click.option("--fail-on", default=None, help="Passed to each audit (info, warning, error, never).")
@click.option("--sarif", "sarif", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the findings of every audit as one SARIF run to FILE.")
@click.option("--sarif-category", "sarif_category", metavar="NAME", default=None,
              help="With --sarif: the code-scanning category [default: mtp-audit/hook-KIND].")
def hook(kind: str, files: tuple[Path, ...], sglang: str | None, vllm: str | None, llamacpp_build: str | None,
         env_dump: str | None, facts: str | None, no_machine: bool, fail_on: str | None, sarif: Path | None,
         sarif_category: str | None) -> int:
    """Audit the files pre-commit passes: checkpoint folders (their config.json or index) or launch scripts and YAML."""
    from mtp_audit.cli.hooksarif import SarifRuns

    runs = SarifRuns(sarif, sarif_category or f"mtp-audit/hook-{kind}")
    common = ["--fail-on", fail_on] if fail_on else []
    with tempfile.TemporaryDirectory(prefix="mtp-audit-hook-") as tmp:
        if kind == "checkpoint":
            codes = [runs.run(["checkpoint", folder, *common], tmp, f"mtp-audit checkpoint {folder}")
                     for folder in dict.fromkeys(os.path.dirname(os.fspath(f)) or "." for f in files)
                     if not _skipped_not_a_model(folder)]
        else:
            machine = [*(["--env-dump", env_dump] if env_dump else []), *(["--facts", facts] if facts else []),
                       *(["--no-machine"] if no_machine else [])]
            releases = {"sglang": ["--sglang", sglang] if sglang else [], "vllm": ["--vllm", vllm] if vllm else [],
                        "llamacpp": ["--llamacpp-build", llamacpp_build] if llamacpp_build else []}
            codes = [code for f in files for code in _audit_file(f, runs, tmp, releases, [*machine, *common])]
        runs.write()
    return _worst(codes)


#: Most folder entries looked at for a weights file before a folder is audited as a checkpoint anyway.
_MAX_ENTRIES_LOOKED_AT = 10_000


def _skipped_not_a_model(folder: str) -> bool:
    """Say ``FOLDER/config.json: skipped: not a model config`` and return True when the folder's ``config.json`` is
    JSON without ``architectures`` or ``model_type`` (an application's settings: the hook's pattern matches every
    ``config.json``) and the folder holds no ``*.safetensors`` file or index; False otherwise (a model config, a
    config.json that is missing, not a regular file or not JSON: audited as before, so a broken checkpoint still fails)."""
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_json_bounded

    path = Path(folder) / "config.json"
    try:
        config = read_json_bounded(path, follow=False)
    except InputError:
        return False
    if isinstance(config, dict) and ("architectures" in config or "model_type" in config):
        return False
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= _MAX_ENTRIES_LOOKED_AT or ".safetensors" in entry.name:
                    return False
    except OSError:
        return False
    click.echo(f"{path}: skipped: not a model config (no architectures or model_type, no safetensors file beside it)")
    return True


def _audit_file(path: Path, runs: Any, tmp: str, releases: dict[str, list[str]], options: list[str]) -> list[int]:
    """Audit each launch command of one file; say what was skipped and why. Returns the exit codes."""
    from mtp_audit.engines.registry import engine_for
    from mtp_audit.errors import InputError

    try:
        commands = _read_commands(path)
    except _NotYaml as exc:
        click.echo(f"{path}: skipped: {exc}")
        return []
    if not commands:
        click.echo(f"{path}: skipped: no launch command of SGLang, vLLM, llama.cpp or TensorRT-LLM found")
        return []
    codes: list[int] = []
    for line, cmd in commands:
        if "$" in cmd or "`" in cmd:
            click.echo(f"{path}:{line}: skipped: the command uses shell variables or substitutions, which only the shell can expand")
            continue
        try:
            toks = command_tokens(cmd)
        except ValueError as exc:  # the shell would refuse the script too: not a launch to audit
            click.echo(f"{path}:{line}: skipped: cannot split the command ({exc})")
            continue
        try:
            engine = engine_for(toks).name
        except InputError:
            click.echo(f"{path}:{line}: skipped: '{shlex.join(toks[:4])}' is not a server launch of an engine mtp-audit knows")
            continue
        codes.append(runs.run(["launch", *releases.get(engine, []), *options, "--", *toks], tmp,
                              f"{path}:{line}: mtp-audit launch -- {shlex.join(toks)}", where=f"{path}:{line}"))
    return codes


def _read_commands(path: Path) -> list[tuple[int, str]]:
    """The launch commands of one script or YAML file.

    Raises:
        InputError: a script that is missing, unreadable, binary or over :data:`MAX_SCRIPT_BYTES`.
        _NotYaml: a YAML file that does not parse or is over :data:`MAX_SCRIPT_BYTES` (skipped by the caller).
    """
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_bytes_bounded

    is_yaml = path.name.lower().endswith(YAML_SUFFIXES)
    try:
        too_big = is_yaml and os.stat(path).st_size > MAX_SCRIPT_BYTES
    except OSError:
        too_big = False  # read_bytes_bounded says why, in one line
    if too_big:  # a YAML data file, not a deployment manifest: skipped, as a template is
        raise _NotYaml(f"is larger than {MAX_SCRIPT_BYTES:,} bytes: its commands were not read")
    raw = read_bytes_bounded(path, MAX_SCRIPT_BYTES, display=str(path))
    if b"\x00" in raw[:4096]:
        raise InputError(str(path), "is a binary file, expected a shell script or YAML")
    text = raw.decode("utf-8", errors="replace")
    if is_yaml:
        return yaml_commands(text, str(path))
    return launch_commands(text)
