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


def launch_commands(text: str) -> list[tuple[int, str]]:
    """``[(1-based line, command text)]`` of each launch command in a shell script: continuation lines
    (a trailing backslash) are joined, comments dropped, text before the program (``exec``, ``nohup``) cut."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, buf = i + 1, lines[i]
        while buf.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            buf = buf.rstrip()[:-1] + " " + lines[i]
        i += 1
        stripped = buf.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = LAUNCH_START.search(stripped)
        if m:
            cmd = re.sub(r"^((?:[A-Za-z_]\w*=\S*\s+)*)(?:(?:exec|nohup)\s+)+", r"\1", m.group(1))
            out.append((start, cmd.split(" #", 1)[0].strip().rstrip("&").strip()))
    return out


def yaml_commands(text: str, display: str) -> list[tuple[int, str]]:
    """``[(1-based line, command text)]`` of each launch command in a YAML file (every document): a string value
    is read as a script (:func:`launch_commands`, so ``sh -c`` blocks work), a list of strings as one command's
    tokens, and a mapping's ``command`` (or ``entrypoint``) list followed by its ``args`` list as one command
    (Kubernetes containers). Read with ``yaml.compose_all`` (safe: no object is built).

    Raises:
        ValueError: the file does not parse as YAML (a template with ``{{ ... }}``, a broken file); the message says
            where and why.
    """
    import yaml

    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise _NotYaml(f"does not parse as YAML{where} ({getattr(exc, 'problem', None) or exc}; a template?): "
                       "its commands were not read") from None
    out: list[tuple[int, str]] = []
    for doc in docs:
        if doc is not None:
            out.extend(_node_commands(doc))
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


def _node_commands(node: Any) -> Iterator[tuple[int, str]]:
    """Launch commands under one YAML node (see :func:`yaml_commands`)."""
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        if isinstance(node.value, str) and LAUNCH_START.search(node.value):
            offset = 0 if node.style in (None, "", "'", '"') else 1  # a block scalar starts on the next line
            yield from ((line + offset + n - 1, cmd) for n, cmd in launch_commands(node.value))
        return
    if isinstance(node, yaml.SequenceNode):
        toks = _strings(node)
        if toks is not None and not _spaced(toks[0]) and LAUNCH_START.search(shlex.join(toks)):
            yield from _token_commands(line, toks)  # an exec-form list: ["vllm", "serve", ...]
            return
        for child in node.value:  # a list of command lines, or of mappings; a lone token is no command
            if not (isinstance(child, yaml.ScalarNode) and not _spaced(str(child.value))):
                yield from _node_commands(child)
        return
    if isinstance(node, yaml.MappingNode):
        keys = {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        head_node = keys.get("command") if _strings(keys.get("command")) else keys.get("entrypoint")
        head = _strings(head_node)
        toks = (head or []) + (_strings(keys.get("args")) or [])
        if head_node is not None and head is not None and LAUNCH_START.search(shlex.join(toks)):
            yield from _token_commands(head_node.start_mark.line + 1, toks)
            return
        for _, value in node.value:
            yield from _node_commands(value)


def _spaced(text: str) -> bool:
    return any(c.isspace() for c in text)


def _token_commands(line: int, toks: list[str]) -> Iterator[tuple[int, str]]:
    """A command given as tokens; ``sh -c SCRIPT`` (``bash -lc`` ...) is the script's commands."""
    if len(toks) >= 3 and os.path.basename(toks[0]) in ("sh", "bash", "dash", "zsh") and toks[1].startswith("-") and "c" in toks[1]:
        yield from ((line, cmd) for _, cmd in launch_commands(toks[2]))
        return
    yield line, shlex.join(toks)


def command_tokens(cmd: str) -> list[str]:
    """The tokens of one command line, up to the first shell operator (``>``, ``|``, ``&&``, ``;``).

    Raises:
        ValueError: unbalanced quotes.
    """
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out: list[str] = []
    for tok in lex:
        if tok and set(tok) <= set("();<>|&"):
            break
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
                     for folder in dict.fromkeys(os.path.dirname(os.fspath(f)) or "." for f in files)]
        else:
            machine = [*(["--env-dump", env_dump] if env_dump else []), *(["--facts", facts] if facts else []),
                       *(["--no-machine"] if no_machine else [])]
            releases = {"sglang": ["--sglang", sglang] if sglang else [], "vllm": ["--vllm", vllm] if vllm else [],
                        "llamacpp": ["--llamacpp-build", llamacpp_build] if llamacpp_build else []}
            codes = [code for f in files for code in _audit_file(f, runs, tmp, releases, [*machine, *common])]
        runs.write()
    return _worst(codes)


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
        except ValueError as exc:
            click.echo(f"{path}:{line}: skipped: cannot split the command ({exc})")
            codes.append(2)
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
