"""``mtp-audit hook KIND FILE...``: the entry point of the pre-commit hooks (``.pre-commit-hooks.yaml``).

pre-commit passes the changed files that match a hook's pattern. ``hook checkpoint`` audits the folder of
each ``config.json`` / ``*.safetensors.index.json`` once; ``hook launch`` audits every SGLang or vLLM launch
command written in each shell script or text file (backslash continuations joined), naming the file and
line. The exit code is the worst of the audits' (2 before 1 before 3 before 0).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click

#: Text that starts a launch command in a script.
LAUNCH_START = re.compile(r"(?:^|[\s;&|(])((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:(?:exec|nohup|env)\s+)*(?:python3?\s+-m\s+(?:sglang\.launch_server|vllm\.entrypoints\.\S+)"
                          r"|sglang\s+serve|vllm\s+serve)\b.*)$")

#: Largest script read (bytes).
MAX_SCRIPT_BYTES = 1 << 20

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
@click.option("--env-dump", metavar="FILE", default=None, help="launch: environment dump of the serving machine.")
@click.option("--facts", metavar="FILE", default=None, help="launch: stored machine facts (mtp-audit preflight --save-facts).")
@click.option("--no-machine", "no_machine", is_flag=True,
              help="launch: audit off the serving machine (never read this one; the --env-dump given, or nothing): machine "
                   "questions are notes, not blocking.")
@click.option("--fail-on", default=None, help="Passed to each audit (info, warning, error, never).")
def hook(kind: str, files: tuple[Path, ...], sglang: str | None, vllm: str | None, env_dump: str | None,
         facts: str | None, no_machine: bool, fail_on: str | None) -> int:
    """Audit the files pre-commit passes: checkpoint folders (their config.json or index) or launch scripts."""
    from mtp_audit.cli.main import main

    common = ["--fail-on", fail_on] if fail_on else []
    codes: list[int] = []
    if kind == "checkpoint":
        for folder in dict.fromkeys(os.path.dirname(os.fspath(f)) or "." for f in files):
            click.echo(f"mtp-audit checkpoint {folder}")
            codes.append(main(["checkpoint", folder, *common]))
        return _worst(codes)
    machine = [*(["--env-dump", env_dump] if env_dump else []), *(["--facts", facts] if facts else []),
               *(["--no-machine"] if no_machine else [])]
    for f in files:
        for line, cmd in _read_commands(f):
            if "$" in cmd or "`" in cmd:
                click.echo(f"{f}:{line}: skipped: the command uses shell variables or substitutions, which only the shell can expand")
                continue
            try:
                toks = command_tokens(cmd)
            except ValueError as exc:
                click.echo(f"{f}:{line}: skipped: cannot split the command ({exc})")
                codes.append(2)
                continue
            is_vllm = "vllm serve" in cmd or "vllm.entrypoints" in cmd
            engine = (["--vllm", vllm] if is_vllm and vllm else []) or (["--sglang", sglang] if not is_vllm and sglang else [])
            click.echo(f"{f}:{line}: mtp-audit launch -- {shlex.join(toks)}")
            codes.append(main(["launch", *engine, *machine, *common, "--", *toks]))
    return _worst(codes)


def _read_commands(path: Path) -> list[tuple[int, str]]:
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_bytes_bounded

    raw = read_bytes_bounded(path, MAX_SCRIPT_BYTES, display=str(path))
    if b"\x00" in raw[:4096]:
        raise InputError(str(path), "is a binary file, expected a shell script")
    return launch_commands(raw.decode("utf-8", errors="replace"))
