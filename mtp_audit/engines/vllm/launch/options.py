"""Whether this vLLM declares an option of the command, read from the release's own argument-parser source (never
imported).

vLLM's server parser (``FlexibleArgumentParser``, an ``argparse.ArgumentParser``) is built from:

- ``EngineArgs.add_cli_args`` (``vllm/engine/arg_utils.py``): ``add_argument("--max-model-len", ...)`` with literal
  option strings (0.33.0 :991), each backed by an ``EngineArgs`` dataclass field of the same name;
- the frontend arguments (0.33.0 ``vllm/entrypoints/common/cli_args.py:283``, 0.11.0
  ``vllm/entrypoints/openai/cli_args.py``): ``f"--{key.replace('_', '-')}"`` for every field of the ``FrontendArgs``
  dataclasses (``port``, ``host``, ``api_key`` ...), plus literal ``add_argument`` calls;
- the ``serve`` subcommand (``vllm/entrypoints/cli/serve.py``: ``--headless``, ``--api-server-count`` ...).

An option is *declared* here when its literal string is quoted in one of those files, or when its name (dashes as
underscores) is an annotated field there, or it is ``--no-X`` of a declared ``--X`` (``BooleanOptionalAction``).
This over-approximates the table (a field that is not an option still counts), so "declared" never turns a valid
option into an error; an option *not* found is not proven unknown either: argparse also accepts an unambiguous prefix
(``allow_abbrev``) and a release may generate options in other ways, so it stays a question the launch cannot
answer, and that question is whether the server starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: the files that declare the server's options (those this release has are read)
PARSER_FILES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/common/cli_args.py", "vllm/entrypoints/openai/cli_args.py",
                "vllm/entrypoints/cli/serve.py", "vllm/utils/argparse_utils.py")


def undeclared(sources: Mapping[str, bytes | None], options: list[str]) -> list[str] | None:
    """The long options of ``options`` (normalised ``--kebab-case``, a dotted ``--x.key`` read as ``--x``) that no
    parser file of this release declares (module docstring); ``None`` when ``vllm/engine/arg_utils.py`` is not readable
    (nothing can be said)."""
    texts = [t for t in (sources.get(rel) for rel in PARSER_FILES) if t]
    if not sources.get("vllm/engine/arg_utils.py"):
        return None
    return [o for o in options if o.startswith("--") and not _declared(texts, o.split(".", 1)[0])]


def _declared(texts: list[bytes], opt: str) -> bool:
    names = [opt] + ([("--" + opt[5:])] if opt.startswith("--no-") else [])
    for name in names:
        quoted = b'"' + name.encode() + b'"'
        field = re.compile(rb"^[ \t]+" + re.escape(name[2:].replace("-", "_").encode()) + rb"[ \t]*:", re.M)
        if any(quoted in t or b"'" + name.encode() + b"'" in t or field.search(t) for t in texts):
            return True
    return False
