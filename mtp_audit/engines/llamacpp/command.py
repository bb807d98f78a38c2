"""Parse a ``llama-server`` / ``llama-cli`` command (llama.cpp or ik_llama.cpp) for the flags that decide MTP.

Flag spellings (ggml-org/llama.cpp ``common/arg.cpp`` as of the MTP pull requests, read from their diffs and
the commands users pasted into the tracker; no code copied):

- model: ``-m/--model FILE`` (one file or the first part ``-00001-of-0000N.gguf`` of a split set),
  ``-hf/--hf-repo USER/MODEL[:QUANT]`` (downloaded by llama.cpp; not audited here);
- speculative type: ``--spec-type T[,T...]`` (repeatable; values are accumulated), default ``none``;
  ``--spec-default`` is a preset of the n-gram types, not MTP (am17an/llama.cpp PR #13 sample commands);
- draft model: ``-md/--model-draft/--spec-draft-model FILE`` (an MTP-only ``mtp-*.gguf`` or a draft model);
- draft length: ``--spec-draft-n-max N`` (older ``--draft-max``, ``--draft``, ``--draft-n``), default 3 since
  PR #23269 (16 before);
- ``-np/--parallel N``; ``-sm/--split-mode none|layer|row|tensor``;
- ik_llama.cpp: ``--spec-type mtp[:n_max=N,p_min=P]`` (ikawrakow/ik_llama.cpp PR #2369).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from mtp_audit.errors import InputError

#: Programs that start a llama.cpp server or CLI (a path prefix and ``.exe`` are allowed).
PROGRAMS = ("llama-server", "llama-cli", "llama-speculative", "llama-mtmd-cli")

#: flag -> canonical name; flags that take a value.
VALUE_FLAGS: dict[str, str] = {
    "-m": "model", "--model": "model",
    "-hf": "hf_repo", "-hfr": "hf_repo", "--hf-repo": "hf_repo", "-hff": "hf_file", "--hf-file": "hf_file",
    "-md": "draft_model", "--model-draft": "draft_model", "--spec-draft-model": "draft_model",
    "--spec-type": "spec_type",
    "--spec-draft-n-max": "n_max", "--draft-max": "n_max", "--draft": "n_max", "--draft-n": "n_max",
    "--spec-draft-n-min": "n_min", "--draft-min": "n_min", "--draft-n-min": "n_min",
    "--spec-draft-p-min": "p_min", "--draft-p-min": "p_min",
    "-np": "parallel", "--parallel": "parallel",
    "-sm": "split_mode", "--split-mode": "split_mode",
    "-ngld": "draft_ngl", "--n-gpu-layers-draft": "draft_ngl", "--spec-draft-ngl": "draft_ngl",
    "-c": "ctx_size", "--ctx-size": "ctx_size", "--mmproj": "mmproj",
}

#: Flags without a value that matter here.
SWITCHES: dict[str, str] = {"--spec-default": "spec_default", "--no-mmproj": "no_mmproj"}

#: ik_llama.cpp ``mtp:`` options -> the mainline flag that says the same (a corrected command keeps them).
OPTION_FLAGS: dict[str, str] = {"n_max": "--spec-draft-n-max", "n_min": "--spec-draft-n-min", "p_min": "--spec-draft-p-min"}

_IK_MTP = re.compile(r"^mtp(?::(?P<opts>.*))?$")


@dataclass
class SpecType:
    """One ``--spec-type`` element.

    Attributes:
        name: the type (``"draft-mtp"``, ``"mtp"``, ``"ngram-mod"``).
        options: ``key=value`` options of the ik_llama.cpp spelling (``mtp:n_max=3``).
    """

    name: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class LlamaCommand:
    """The MTP-relevant parts of one command.

    Attributes:
        program: ``llama-server`` / ``llama-cli`` ...
        model: ``-m`` value; ``hf_repo``: ``-hf`` value.
        draft_model: ``-md`` / ``--spec-draft-model`` value.
        spec_types: every ``--spec-type`` element in order (empty: the default, none).
        spec_default: ``--spec-default`` given.
        n_max: ``--spec-draft-n-max`` (or the ik ``n_max=`` option); None when not given.
        parallel: ``-np``; split_mode: ``-sm``.
        flags: canonical name -> the flag spelling the user wrote (for messages and corrections).
        toks: the tokens, program first.
    """

    program: str
    toks: list[str]
    model: str | None = None
    hf_repo: str | None = None
    draft_model: str | None = None
    spec_types: list[SpecType] = field(default_factory=list)
    spec_default: bool = False
    n_max: int | None = None
    parallel: int | None = None
    split_mode: str | None = None
    flags: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)

    @property
    def spec_names(self) -> list[str]:
        """The ``--spec-type`` names in order."""
        return [s.name for s in self.spec_types]

    def wants_mtp(self) -> bool:
        """Whether a type that runs the model's own MTP head is asked for (``draft-mtp``, or ``mtp``)."""
        return any(n in ("draft-mtp", "mtp") for n in self.spec_names)


def split_command(argv: Sequence[str]) -> list[str]:
    """One string is split like a POSIX shell; a list is taken as tokens (line continuations dropped)."""
    toks = shlex.split(argv[0]) if len(argv) == 1 and " " in argv[0] else list(argv)
    return [t for t in toks if t != "\\"]


def program_index(toks: Sequence[str]) -> int | None:
    """Index of the llama.cpp program in ``toks`` (after ``KEY=VALUE`` prefixes, ``env``, ``./``), or None."""
    for i, t in enumerate(toks):
        base = os.path.basename(t)
        if base.endswith(".exe"):
            base = base[:-4]
        if base in PROGRAMS:
            return i
        if "=" in t and not t.startswith("-") or t in ("env", "sudo", "nohup", "exec", "time"):
            continue
        return None
    return None


def is_llamacpp(toks: Sequence[str]) -> str | None:
    """The program name when ``toks`` start a llama.cpp server or CLI."""
    i = program_index(toks)
    return os.path.basename(toks[i]).removesuffix(".exe") if i is not None else None


def parse_command(argv: Sequence[str]) -> LlamaCommand:
    """Parse the MTP-relevant flags; unknown flags are skipped (a value-taking flag we do not know keeps its
    value as a separate token, which is then skipped too unless it looks like a flag).

    Raises:
        InputError: not a llama.cpp command, a flag without its value, or a number that is not one.
    """
    toks = split_command(argv)
    i = program_index(toks)
    if i is None:
        raise InputError("command", "not a llama.cpp launch (expected llama-server or llama-cli ...)")
    cmd = LlamaCommand(os.path.basename(toks[i]).removesuffix(".exe"), list(toks[i:]))
    args = toks[i + 1:]
    k = 0
    while k < len(args):
        flag, eq, inline = args[k].partition("=") if args[k].startswith("--") else (args[k], "", "")
        if flag in SWITCHES:
            cmd.flags[SWITCHES[flag]] = flag
            cmd.spec_default = cmd.spec_default or SWITCHES[flag] == "spec_default"
        elif flag in VALUE_FLAGS:
            if not eq:
                if k + 1 >= len(args):
                    raise InputError(flag, "expects a value")
                k += 1
                inline = args[k]
            _apply(cmd, VALUE_FLAGS[flag], flag, inline)
        k += 1
    return cmd


def _int(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(flag, f"expects a number, got {text!r}") from None


def _apply(cmd: LlamaCommand, name: str, flag: str, value: str) -> None:
    cmd.flags[name] = flag
    cmd.values[name] = value
    if name == "spec_type":
        cmd.spec_types += [_spec(part.strip()) for part in split_types(value) if part.strip()]
        ik = next((s for s in cmd.spec_types if s.options.get("n_max")), None)
        if ik is not None and cmd.n_max is None:
            cmd.n_max = _int(flag, ik.options["n_max"])
    elif name in ("n_max", "parallel"):
        setattr(cmd, name, _int(flag, value))
    elif name in ("model", "hf_repo", "draft_model", "split_mode"):
        setattr(cmd, name, value)


def split_types(value: str) -> list[str]:
    """``ngram-mod,draft-mtp`` -> two types; ``mtp:n_max=3,p_min=0.5`` stays one (its options hold commas)."""
    out: list[str] = []
    for part in value.split(","):
        if out and "=" in part and ":" in out[-1]:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def _spec(text: str) -> SpecType:
    m = _IK_MTP.match(text)
    if m and m["opts"] is not None:
        opts = dict(p.split("=", 1) for p in m["opts"].split(",") if "=" in p)
        return SpecType("mtp", opts)
    return SpecType(text)


#: ``llama-server --version``: ``version: 10444 (037f2f344)``; ``llama-bench``: ``llama.cpp b9305 (63248fc3e)``;
#: bug-report headers: ``(build 10444, commit 037f2f344)``.
_VERSION_RES = (
    re.compile(r"^\s*version:\s*(\d{3,6})\s*\(([0-9a-f]{6,40})\)", re.M),
    re.compile(r"\bllama\.cpp\s+b(\d{3,6})\b"),
    re.compile(r"\bbuild\s+(\d{3,6})\b"),
    re.compile(r"\bb(\d{4,6})\b"),
)


@dataclass(frozen=True)
class BuildInfo:
    """A llama.cpp build as a version text names it.

    Attributes:
        build: the release number (``10444`` for ``b10444``).
        fork: ``"llama.cpp"`` or ``"ik_llama.cpp"``.
        evidence: the line it was read from.
    """

    build: int | None
    fork: str
    evidence: str


def parse_build(text: str) -> BuildInfo:
    """The build (and fork) from ``--llamacpp-build`` (``10444``, ``b10444``, ``ik:4100``) or from pasted
    ``llama-server --version`` output. ik_llama.cpp is recognised by the name ``ik_llama`` in the text.

    Raises:
        InputError: nothing in the text names a build.
    """
    fork = "ik_llama.cpp" if re.search(r"\bik[_-]?llama|^ik:", text, re.I | re.M) else "llama.cpp"
    bare = re.fullmatch(r"\s*(?:ik:)?b?(\d{1,7})\s*", text)
    if bare:
        return BuildInfo(int(bare[1]), fork, text.strip())
    for rx in _VERSION_RES:
        m = rx.search(text)
        if m:
            line = text[text.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
            return BuildInfo(int(m[1]), fork, line[:200])
    raise InputError("--llamacpp-build", "no llama.cpp build number found (expected N, bN, or 'version: N (commit)')")


def shell_join(toks: Sequence[str]) -> str:
    """The tokens as one shell line."""
    return " ".join(shlex.quote(t) for t in toks)
