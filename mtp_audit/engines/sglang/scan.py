"""Per-file extraction from SGLang source: CLI declarations, value rewrites, draft overrides,
MTP registrations, environment variables, value-flow pieces and start-up assertions. Source is data:
parsed, never imported or run.

One parse and one walk per file, measured in ``benchmarks/bench_sglang.py``:

1. A byte pre-filter picks the files to parse. It is **derived from the passes**: each :class:`Pass`
   declares the path scope it reads and the names it looks up (:data:`PASSES`); a file is parsed when
   any pass wants it, and each pass runs on exactly the files it wants, so adding a pass cannot
   silently widen or narrow another pass's file set. A file only the value-flow consumer pass wants is parsed
   only when it can add to a value flow (:func:`mtp_audit.engines.sglang.treescan.scan_tree`).
2. A wanted file is parsed once with the stdlib ``ast`` and indexed once
   (:class:`~mtp_audit.engines.code.index.ModuleIndex`); every pass queries that index: CLI
   declarations and module constants, the rewrite sites of each function
   (:mod:`mtp_audit.engines.sglang.rewrites`: the ``if`` branches around every assignment, ``return``,
   ``declare_resolution(...)`` call and ``overrides["field"] = ...`` store, with the condition's source
   text, whether a log call sits in the same branch, and the from/to literals), the value-flow pieces
   (:mod:`mtp_audit.engines.sglang.flow`) and the override/assert replay facts
   (:mod:`mtp_audit.engines.sglang.startup_facts`).

Shapes recognised: direct ``self.x = "LIT"`` under ``if self.x == "LIT"``; helpers returning a literal
for an input literal (``self.x = f(self.x)``, ``server_args.x = f(...)``, ``declare_resolution(sa,
"src", x=f(...))``); ``overrides["x"] = v``; ``return {"x": v}``; ``MODEL_OVERRIDES`` tables; alias
sets (``_RESERVED_ALIASES = frozenset({"NEXTN"})``) looked up by ``SpeculativeAlgorithm.from_string``;
dict maps; ``.upper()``.

The result of :func:`scan_file` is a JSON-serialisable dict so it can be cached by content hash.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from mtp_audit.engines.code.index import ModuleIndex
from mtp_audit.engines.sglang import flow, spec_hooks, startup_facts
from mtp_audit.engines.sglang.guards import hook_calls, module_predicates
from mtp_audit.engines.sglang.names import HOOK_PATHS, TRACKED_SOURCE
from mtp_audit.engines.sglang.prefilter import AssertedFieldFinder, AttributeFinder, WordFinder, find_all
from mtp_audit.engines.sglang.rewrites import LOG_FUNCS, analyse_units  # noqa: F401  (LOG_FUNCS: public name kept)

# --- pre-filter, derived from what the passes look up --------------------------------------------

#: Lines of a function that may hold a rewrite site; the rewrite pass analyses only functions holding one,
#: and the same words make a server-argument file wanted (below).
CANDIDATE_SOURCE = (
    r"(self|server_args|args)\.\w+\s*=[^=]|declare_resolution\(|overrides\[[^\]]+\]\s*=[^=]|"
    r"architectures|model_path\s+or\b|_ALIASES|return\s*\{|return\s+[\"']|\.upper\(\)"
)
_CANDIDATE_LINE = re.compile(CANDIDATE_SOURCE)
#: What the CLI/constants part of the server pass looks up: ``add_argument`` calls, annotated and msgspec
#: fields, alias sets, ``MODEL_OVERRIDES`` tables, ``*_CHOICES`` lists, ``from_string``.
CLI_SOURCE = r"add_argument\(|cli_name=|: A\[|Arg\(|_ALIASES|MODEL_OVERRIDES|def from_string|_CHOICES\s*=|speculative_algorithm"
#: Path parts where server-argument processing lives (across 0.4.0 .. 0.5.23).
_SERVER_PATHS = re.compile(
    r"(^|/)srt/(server_args\.py|arg_groups/|configs/model_config\.py|speculative/spec_(info|registry)\.py|"
    r"layers/quantization/__init__\.py|layers/moe/utils\.py)"
)
class Searcher(Protocol):
    """What :class:`Pass` asks of its ``tokens`` and ``also``: a compiled bytes regex, or an exact finder of
    :mod:`~mtp_audit.engines.sglang.prefilter` (its ``search`` answers whether its ``pattern`` matches)."""

    def search(self, data: bytes) -> object:
        """Not ``None`` when the pattern matches somewhere in ``data``."""


class Pass(NamedTuple):
    """One extraction pass: the files it reads (``paths``: a path pattern, ``None`` = every file), the names it
    looks up in their bytes (``tokens``; ``also``: a second pattern that must match too) and ``gate``: literal
    bytes of which the tokens need at least one (a C substring search that rules out most files before any
    regex runs; ``()`` = no gate)."""

    name: str
    paths: re.Pattern[str] | None
    tokens: Searcher
    also: Searcher | None = None
    gate: tuple[bytes, ...] = ()

    def wants(self, rel: str, data: bytes) -> bool:
        """Whether this pass can find something in file ``rel`` with bytes ``data``."""
        if self.paths is not None and not self.paths.search(rel):
            return False
        if self.gate and not any(g in data for g in self.gate):
            return False
        return self.tokens.search(data) is not None and (self.also is None or self.also.search(data) is not None)


def _b(source: str) -> re.Pattern[bytes]:
    return re.compile(source.encode())


#: Every pass and what it looks up. ``server``: CLI declarations, constants and rewrite sites of the
#: server-argument files (plus any file that rewrites ``"NEXTN"`` or a draft architecture);
#: ``flow-hook``: ``if x.F == "lit": x.F = C`` on tracked fields in hook files; ``flow-consumer``: config
#: classes built from the server arguments; ``asserts``: ``assert`` statements on backend fields.
PASSES: tuple[Pass, ...] = (
    Pass("server", _SERVER_PATHS, _b(CANDIDATE_SOURCE + "|" + CLI_SOURCE)),
    Pass("server", None, _b(r'"NEXTN"'), _b(r"speculative_algorithm"), gate=(b'"NEXTN"',)),
    Pass("server", None, _b(r"architectures\[0\] ="), _b(r"is_draft"), gate=(b"architectures[0] =",)),
    Pass("flow-hook", HOOK_PATHS, _b(r"\.(" + TRACKED_SOURCE + r")\s*==\s*[\"']")),
    # from_server_args|is_draft_model (the gate is that regex), then \.(TRACKED)\b looked for only around the names
    Pass("flow-consumer", None, AttributeFinder(TRACKED_SOURCE), gate=(b"from_server_args", b"is_draft_model")),
    # \bassert\b, then (?m)assert[\s(]+[\w.]*\.(FIELDS)\b|^[ \t]+\w+ = [\w.]+\.(\w+_)?(FIELDS)(_str)?[ \t]*$ looked for
    # only around the field names (the same answer as the two regexes: tests/test_sglang_prefilter.py)
    Pass("asserts", None, WordFinder(b"assert"), AssertedFieldFinder()),
)


def passes_for(rel: str, data: bytes) -> tuple[str, ...]:
    """The names of the passes that want file ``rel`` (sorted, unique); empty: the file is not parsed."""
    if not rel.endswith(".py"):
        return ()
    return tuple(sorted({p.name for p in PASSES if p.wants(rel, data)}))


def wants_server_pass(rel: str, data: bytes) -> bool:
    """Whether ``rel`` goes through the server-arguments pass (see :data:`PASSES`)."""
    return "server" in passes_for(rel, data)


_ENV_HINTS = (b"MTP", b"SPEC", b"FP4", b"NEXTN")
ENTRY_HINT = re.compile(rb"^EntryClass\s*=", re.MULTILINE)


def has_entry(data: bytes) -> bool:
    """Whether ``data`` holds an ``EntryClass = ...`` statement (substring searches; the regex only on a
    line that starts with ``EntryClass``)."""
    return next(_entry_starts(data), None) is not None


def _entry_starts(data: bytes):  # noqa: ANN202 - a generator of offsets
    """Offsets of the lines that are ``EntryClass = ...`` statements, in order (what ``ENTRY_HINT.finditer`` finds)."""
    pos = 0 if data.startswith(b"EntryClass") else data.find(b"\nEntryClass")
    while pos != -1:
        start = pos if pos == 0 and data.startswith(b"EntryClass") else pos + 1
        m = ENTRY_HINT.match(data, start)
        if m is not None:
            yield m
        pos = data.find(b"\nEntryClass", start)
_MTP_NAME = re.compile(r"mtp|nextn", re.IGNORECASE)

#: Env var names of interest: contain NEXTN, MTP, SPEC, FP4 or NVFP4.
ENV_NAME = rb"[A-Z][A-Z0-9_]*(?:NEXTN|MTP|SPEC|FP4)[A-Z0-9_]*"
_ENV_DEFINED = re.compile(rb"^[ \t]+(" + ENV_NAME + rb")[ \t]*(?::[^=\n]*)?=[ \t]*Env\w*\(", re.MULTILINE)
_ENV_READ = re.compile(
    rb"envs\.(" + ENV_NAME + rb")\b"
    rb"|get_\w*env\w*\(\s*[\"'](" + ENV_NAME + rb")[\"']"
    rb"|environ(?:\.get|\.setdefault|\.pop)?\s*[\[(]\s*[\"'](" + ENV_NAME + rb")[\"']"
    rb"|getenv\(\s*[\"'](" + ENV_NAME + rb")[\"']"
)


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _in_comment(data: bytes, offset: int) -> bool:
    start = data.rfind(b"\n", 0, offset) + 1
    return b"#" in data[start:offset]


def scan_env(data: bytes) -> dict[str, list[list[Any]]]:
    """Environment variables whose names contain NEXTN/MTP/SPEC/FP4 (so also NVFP4).

    ``defined``: ``NAME = EnvBool(...)``-style class attributes (``sglang/srt/environ.py``, 0.5.x).
    ``read``: ``envs.NAME``, ``get_bool_env_var("NAME")`` (any ``get_*env*``), ``os.environ[...]``,
    ``os.environ.get(...)``, ``os.getenv(...)``. Matches inside ``#`` comments are ignored.
    Returns ``{"defined": [[name, line]], "read": [[name, line]]}``.
    """
    out: dict[str, list[list[Any]]] = {"defined": [], "read": []}
    # substring searches, far cheaper than a regex over every file: every _ENV_DEFINED match holds "Env", every
    # _ENV_READ match "env" (envs., get_*env*(, environ, getenv), and every name one of _ENV_HINTS; "Env" (the
    # slower search: 49 of SGLang 0.5.23's files hold it, 825 "env") only where it decides something
    read = b"env" in data
    if not read and b"Env" not in data:
        return out
    hints = _hint_offsets(data)
    if not hints:
        return out
    lc = _LineCounter(data)
    if b"Env" in data:
        for m in _ENV_DEFINED.finditer(data):
            out["defined"].append([m.group(1).decode(), lc.line(m.start(1))])
    if read:
        for m in _env_reads(data, hints):
            if _in_comment(data, m.start()):
                continue
            name = next(g for g in m.groups() if g)
            out["read"].append([name.decode(), lc.line(m.start())])
    return out


#: Bytes that can stand between the start of an :data:`_ENV_READ` match and its name (``\w``, ``\s``, ``.([``
#: and quotes) map to ``a``, every other byte to ``#``.
_ENV_PREFIX_BYTES = bytes(
    ord("a") if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "_ \t\n\r\f\v.([\"'") else ord("#") for b in range(256))
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _hint_offsets(data: bytes) -> list[int]:
    """Every offset of one of :data:`_ENV_HINTS` in ``data``, ascending, each once."""
    return sorted({i for h in _ENV_HINTS for i in find_all(data, h)})


def _env_reads(data: bytes, hints: list[int] | None = None):  # noqa: ANN202 - a generator of matches
    """The matches of ``_ENV_READ.finditer(data)``, found without running the regex over the whole file
    (``hints``: :func:`_hint_offsets` of ``data`` when the caller has them).

    Every match's name holds one of :data:`_ENV_HINTS`, and the name is the whole run of ``[A-Z0-9_]`` bytes
    around that hint (it follows a ``.`` or a quote and ends at ``\b`` or a quote). Between the match start
    and the name only the bytes of :data:`_ENV_PREFIX_BYTES` occur. So for each hint, in file order and past
    the previous match, the regex is searched only from the start of that run of prefix bytes to one byte
    past the name: the leftmost match there is the one ``finditer`` finds next, and a hint without a match
    there is in no match."""
    if hints is None:
        hints = _hint_offsets(data)
    if not hints:
        return
    prefix = data.translate(_ENV_PREFIX_BYTES)
    pos, n = 0, len(data)
    for h in hints:
        if h < pos:
            continue
        end = h
        while end < n and data[end] in _NAME_BYTES:
            end += 1
        m = _ENV_READ.search(data, max(pos, prefix.rfind(b"#", 0, h) + 1), min(n, end + 1))
        if m is not None:
            yield m
            pos = m.end()


class _LineCounter:
    """1-based line of increasing byte offsets in O(total) time."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.n = data, 0, 1

    def line(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.n = 0, 1
        self.n += self.data.count(b"\n", self.pos, offset)
        self.pos = offset
        return self.n


def scan_entry_classes(data: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """Classes registered through a model file's ``EntryClass`` (sglang/srt/models/*.py); ``mtp`` marks
    MTP/NextN classes (name contains ``mtp`` / ``nextn``, any case).

    The ``EntryClass = ...`` statement alone is parsed with ``ast`` (mode ``eval``); a class's
    line is its ``class NAME`` line in the same file, else the EntryClass line.
    Returns (entries ``{"class", "line", "entry_line", "mtp"}``, problems).
    """
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    for m in _entry_starts(data):
        start = m.end()
        text = data[start:start + 20000].decode("utf-8", "replace")
        expr_text = _balanced_prefix(text).strip()
        entry_line = _line_of(data, m.start())
        try:
            expr = ast.parse(expr_text, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            problems.append(f"EntryClass at line {entry_line} not understood")
            continue
        names: list[str] = []
        for v in expr.elts if isinstance(expr, (ast.List, ast.Tuple)) else [expr]:
            if isinstance(v, ast.Name):
                names.append(v.id)
            elif isinstance(v, ast.Attribute):
                names.append(v.attr)
        for n in names:
            at = _class_line_offset(data, n.encode())
            entries.append({"class": n, "line": _line_of(data, at) if at is not None else entry_line, "entry_line": entry_line,
                            "mtp": bool(_MTP_NAME.search(n))})
    return entries, problems


def _class_line_offset(data: bytes, name: bytes) -> int | None:
    """Offset of the first ``class NAME`` statement at the start of a line (``class`` then whitespace, then
    ``NAME`` not followed by a name character); substring searches, then a regex on the candidate line only."""
    if not name:
        return None
    pos = data.find(name)
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        if data.startswith(b"class", start) and _class_statement_at(data, start, name):
            return start
        pos = data.find(name, pos + 1)
    return None


_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPACE_BYTES = frozenset(b" \t\n\r\f\v")


def _class_statement_at(data: bytes, start: int, name: bytes) -> bool:
    """Whether ``re.compile(rb"class\\s+" + re.escape(name) + rb"\\b").match(data, start)`` would match, without
    compiling a pattern per class name (a model folder has hundreds): ``class``, whitespace, ``name``, then a word
    boundary (ASCII word bytes, as a bytes pattern has them)."""
    i = j = start + 5
    while j < len(data) and data[j] in _SPACE_BYTES:
        j += 1
    if j == i or not data.startswith(name, j):
        return False
    k = j + len(name)
    return (data[k - 1] in _WORD_BYTES) != (k < len(data) and data[k] in _WORD_BYTES)


def _balanced_prefix(text: str) -> str:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "\n" and depth <= 0:
            return text[:i]
    return text


# --- ast skeleton -------------------------------------------------------------------------------


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _const_expr(node: ast.AST) -> Any:
    """A module constant as JSON: a literal list of values, or ``{"expr": source}`` to resolve later."""
    v = _literal(node)
    if v is not _NOT_LITERAL:
        if isinstance(v, (list, tuple, set, frozenset)):
            return sorted(map(str, v)) if isinstance(v, (set, frozenset)) else [str(x) for x in v]
        if isinstance(v, dict):
            return {"dict": {str(k): _jsonable(x) for k, x in v.items()}}
        return {"scalar": _jsonable(v)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple", "list", "sorted") and len(node.args) == 1:
        return _const_expr(node.args[0])
    return {"expr": ast.unparse(node)}


def _jsonable(v: Any) -> Any:
    """``v`` as JSON values; a set's elements in a fixed order (by type, then ``repr``), never the string-hash order
    of the process that parsed it (a cached result must not depend on ``PYTHONHASHSEED``)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (set, frozenset)):
        return [_jsonable(x) for x in sorted(v, key=lambda x: (type(x).__name__, repr(x)))]
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return "?"


def _field_default(value: ast.AST) -> ast.AST | None:
    """The default expression of a dataclass field's right-hand side: ``x`` of ``= x`` or of
    ``= field(default=x, ...)``; ``None`` for a ``field(...)`` without ``default=`` (``default_factory``)."""
    if isinstance(value, ast.Call) and _dotted(value.func) in ("field", "dataclasses.field"):
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def class_field_defaults(cls: ast.ClassDef) -> dict[str, dict[str, Any]]:
    """Defaults of the annotated fields of one class body (a ``@dataclass`` such as ``ServerArgs``).

    Returns ``{field: {"value": str | None, "literal": bool, "line": int}}``: ``value`` is the literal's
    ``str`` (``None`` for a ``None`` default) when ``literal``, else the default's source text; ``line``
    is the 1-based line of the field statement (``moe_runner_backend: str = "auto"``, SGLang 0.5.9
    ``sglang/srt/server_args.py:498``). Fields without a default or with ``default_factory`` are left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for st in cls.body:
        if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None):
            continue
        node = _field_default(st.value)
        if node is None:
            continue
        lit = _literal(node)
        out[st.target.id] = {"value": _dotted(node) if lit is _NOT_LITERAL else (None if lit is None else str(lit)),
                             "literal": lit is not _NOT_LITERAL, "line": st.lineno}
    return out


def _field_ref(node: ast.AST, owner: str | None, fields: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The field a ``default=`` expression names: ``ServerArgs.x`` (any class of this file), or
    ``cls.x`` / ``self.x`` inside a method of class ``owner``. SGLang 0.4.0 .. 0.5.15 declare most flags as
    ``parser.add_argument(..., default=ServerArgs.x)`` in ``ServerArgs.add_cli_args``."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return None
    cls = owner if node.value.id in ("cls", "self") else node.value.id
    owned = fields.get(cls or "")
    return owned.get(node.attr) if owned else None


def _cli_from_call(call: ast.Call, text: str, owner: str | None = None,
                   fields: dict[str, dict[str, dict[str, Any]]] | None = None) -> dict[str, Any] | None:
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")]
    if not flags:
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    dest = _literal(kw["dest"]) if "dest" in kw else None
    flag_node = next(a for a in call.args if isinstance(a, ast.Constant) and a.value == flags[0])
    rec = _cli_record(flags[0], dest if isinstance(dest, str) else None, kw, flag_node.lineno, text, aliases=flags[1:])
    default = kw.get("default")
    ref = _field_ref(default, owner, fields or {}) if default is not None else None
    if default is not None and ref is not None:
        # default=ServerArgs.x: the dataclass field's own default (kept as text when it is not a literal)
        rec["default_expr"] = _dotted(default)
        rec["default_line"] = ref["line"]
        if ref["literal"]:
            rec["default"] = ref["value"]
    return rec


def _expr_text(node: ast.AST | None) -> str | None:
    """A keyword value as text: the literal's ``str`` for constants, else the source expression."""
    if node is None:
        return None
    lit = _literal(node)
    if lit is _NOT_LITERAL:
        return _dotted(node)
    return None if lit is None else str(lit)


def _cli_record(flag: str, dest: str | None, kw: Mapping[str, ast.AST], line: int, text: str, *,
                aliases: list[str] | None = None) -> dict[str, Any]:
    choices = kw.get("choices")
    default = kw.get("default")
    help_node = kw.get("help")
    help_text = None
    if help_node is not None:
        hv = _literal(help_node)
        help_text = hv if isinstance(hv, str) else _dotted(help_node)
    dv = None
    if default is not None:
        lit = _literal(default)
        dv = _dotted(default) if lit is _NOT_LITERAL else (None if lit is None else str(lit))
    return {
        "flag": flag,
        "dest": dest or flag.lstrip("-").replace("-", "_"),
        "choices_expr": _dotted(choices) if choices is not None else None,
        "choices": _choices_literal(choices),
        "choices_line": getattr(choices, "lineno", None),
        "default": dv,
        "default_expr": None,
        "default_line": getattr(default, "lineno", None),
        "line": line,
        "help": help_text,
        "aliases": list(aliases or []),
        "action": _expr_text(kw.get("action")),
        "nargs": _expr_text(kw.get("nargs")),
        "type": _expr_text(kw.get("type")),
        "required": _literal(kw["required"]) is True if "required" in kw else False,
    }


def _choices_literal(node: ast.AST | None) -> list[str] | None:
    if node is None:
        return None
    v = _literal(node)
    if v is not _NOT_LITERAL and isinstance(v, (list, tuple, set, frozenset)):
        return [str(x) for x in v]
    return None


def _annotated_field(stmt: ast.AnnAssign, text: str) -> dict[str, Any] | None:
    """``name: A[T, "help" | Arg(...)] = default`` (annotated ServerArgs fields, 0.5.15 on)."""
    ann = stmt.annotation
    if not (isinstance(stmt.target, ast.Name) and isinstance(ann, ast.Subscript)):
        return None
    if not (isinstance(ann.value, ast.Name) and ann.value.id in ("A", "Annotated")):
        return None
    parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    if len(parts) < 2:
        return None
    typ, meta = parts[0], parts[1]
    kw: dict[str, ast.AST] = {}
    flag = None
    if isinstance(meta, ast.Call):
        kw = {k.arg: k.value for k in meta.keywords if k.arg}
        if "no_cli" in kw and _literal(kw["no_cli"]) is True:
            return None
        cn = kw.get("cli_name")
        if cn is not None and isinstance(_literal(cn), str):
            flag = _literal(cn)
        if "help" not in kw and meta.args:
            kw["help"] = meta.args[0]
    elif isinstance(meta, ast.Constant):
        kw["help"] = meta
    else:
        return None
    if stmt.value is not None:
        kw["default"] = stmt.value
    name = stmt.target.id
    if "choices" not in kw:
        lit = _literal_type_choices(typ)
        if lit is not None:
            kw["choices"] = ast.List(elts=[ast.Constant(x) for x in lit], ctx=ast.Load())
    aliases = _literal(kw["aliases"]) if "aliases" in kw else None
    aliases = [str(a) for a in aliases] if isinstance(aliases, (list, tuple)) else []
    # How arg_utils.add_cli_args_from_dataclass (0.5.15 on) turns the annotation into argparse
    # keywords: a custom action wins; Optional[bool] / bool -> store_true; List[X] -> nargs "+".
    inner = _unwrap_optional_ann(typ)
    if "action" not in kw and "choices" not in kw and isinstance(inner, ast.Name) and inner.id == "bool":
        kw["action"] = ast.Constant("store_true")
    if "action" not in kw and "nargs" not in kw and isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) \
            and inner.value.id in ("List", "list") and "type_parser" not in kw:
        kw["nargs"] = ast.Constant("+")
    if "type" not in kw:
        kw["type"] = kw.get("type_parser") or ast.Name(id=_dotted(inner), ctx=ast.Load())
    if "required" not in kw and stmt.value is None:
        kw["required"] = ast.Constant(True)
    return _cli_record(flag or "--" + name.replace("_", "-"), name, kw, stmt.lineno, text, aliases=aliases)


def _unwrap_optional_ann(typ: ast.AST) -> ast.AST:
    """``Optional[T]`` / ``T | None`` / ``Union[T, None]`` -> ``T`` (other annotations unchanged)."""
    if isinstance(typ, ast.Subscript) and isinstance(typ.value, ast.Name) and typ.value.id == "Optional":
        return typ.slice
    if isinstance(typ, ast.Subscript) and isinstance(typ.value, ast.Name) and typ.value.id == "Union":
        elts = [e for e in (typ.slice.elts if isinstance(typ.slice, ast.Tuple) else [typ.slice])
                if not (isinstance(e, ast.Constant) and e.value is None)]
        return elts[0] if len(elts) == 1 else typ
    if isinstance(typ, ast.BinOp) and isinstance(typ.op, ast.BitOr):
        sides = [x for x in (typ.left, typ.right) if not (isinstance(x, ast.Constant) and x.value is None)]
        return sides[0] if len(sides) == 1 else typ
    return typ


def _literal_type_choices(typ: ast.AST) -> list[Any] | None:
    if isinstance(typ, ast.Subscript) and isinstance(typ.value, ast.Name):
        if typ.value.id == "Literal":
            v = _literal(typ.slice)
            if v is _NOT_LITERAL:
                return None
            return list(v) if isinstance(v, tuple) else [v]
        if typ.value.id == "Optional":
            return _literal_type_choices(typ.slice)
    return None


def _module_of_import(node: ast.ImportFrom, rel: str) -> str | None:
    if node.level == 0:
        return node.module
    parts = rel[:-3].split("/")
    # rel like python/sglang/srt/x.py -> package parts after the 'sglang' anchor
    if "sglang" in parts:
        parts = parts[parts.index("sglang"):]
    base = parts[: len(parts) - node.level]
    return ".".join(base + ([node.module] if node.module else []))


# --- the per-file entry point --------------------------------------------------------------------


def scan_file(rel: str, data: bytes, passes: tuple[str, ...] | bool) -> dict[str, Any]:
    """Extract everything from one file. ``passes``: the names of :data:`PASSES` to run (``True`` = the
    server pass only, ``False`` = none); the file is parsed and indexed once for all of them.

    Returns a JSON-serialisable dict with keys ``env``, ``entry``, ``gap`` (a message when the file could
    not be read or parsed, else ``None``), for the server pass ``consts``, ``imports``, ``cli``, ``funcs``
    (per function: its parameters and rewrite records), ``unit_errors``, ``mutations``, ``parsers``, and
    ``flow`` / ``asserts`` / ``overrides`` for the passes of those names. Never raises for bad input.
    """
    if isinstance(passes, bool):
        passes = ("server",) if passes else ()
    res: dict[str, Any] = {"env": scan_env(data), "entry": [], "gap": None}
    if has_entry(data):
        entries, problems = scan_entry_classes(data)
        res["entry"] = entries
        if problems:
            res["gap"] = "; ".join(problems)
    if not passes:
        if any(e["mtp"] for e in res["entry"]) and not res["gap"]:
            _check_registers(rel, data, res)
        return res
    res["passes"] = list(passes)
    ix = index_source(rel, data, res)
    if ix is None:
        return res
    try:
        if "server" in passes:
            res.update(_server_pass(ix))
        if "flow-hook" in passes or "flow-consumer" in passes:
            res["flow"] = flow.file_pieces(ix, hook="flow-hook" in passes, consumer="flow-consumer" in passes)
        if "asserts" in passes or "server" in passes:
            res.update(startup_facts.file_facts(ix, asserts="asserts" in passes))
        if "server" in passes:
            res.update(spec_hooks.file_hooks(ix))
    except (RecursionError, MemoryError) as exc:  # an expression nested too deeply for the passes: like a parse failure
        for key in ("consts", "cli", "funcs", "flow", "registrations", "asserts", "predicates", "hook_calls", "defines"):
            res.pop(key, None)
        res["gap"] = f"does not parse into a tree the passes can walk (nested too deeply: {type(exc).__name__}); not examined"
    return res


def _check_registers(rel: str, data: bytes, res: dict[str, Any]) -> None:
    """A model file registering an MTP / NextN class is parsed (the other model files are not): SGLang's model
    registry imports each module and skips one that fails to import (``import_model_classes``, ``except Exception``
    then "Ignore import error when loading ...": wheel:sglang-0.5.9:sglang/srt/models/registry.py:102-107), so a file that does not parse registers nothing on the serving Python, or something,
    on a newer one. Its entries stay, with a note (``res["passes"]`` empty: not a server file) naming the file."""
    probe: dict[str, Any] = {"gap": None}
    if index_source(rel, data, probe) is None and probe["gap"]:
        names = ", ".join(e["class"] for e in res["entry"] if e["mtp"])
        res["gap"] = (f"{probe['gap'].removesuffix('; not examined')}: SGLang's model registry skips a module that fails "
                      f"to import, so whether {names} is registered depends on the serving Python")
        res["passes"] = []


def index_source(rel: str, data: bytes, res: dict[str, Any] | None = None) -> ModuleIndex | None:
    """Parse and index one file; ``None`` (with ``res["gap"]`` set when ``res`` is given) when it is not UTF-8
    or not Python 3 (also a file nested too deeply for the parser)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if res is not None:
            res["gap"] = f"not UTF-8 (byte {exc.start}); not parsed"
        return None
    try:
        tree = ast.parse(text, filename=rel)
        return ModuleIndex(rel, text, tree)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        if res is not None:
            res["gap"] = f"does not parse as Python 3{where} ({type(exc).__name__}: {getattr(exc, 'msg', exc)}); not examined"
        return None


def _server_pass(ix: ModuleIndex) -> dict[str, Any]:
    """CLI declarations, module constants and imports, parsers and rewrite records of one indexed file."""
    consts, imports, mutations = _module_level(ix.tree, ix.rel)
    return {"consts": consts, "imports": imports, "cli": _cli_declarations(ix), "funcs": _rewrite_units(ix),
            "unit_errors": [], "mutations": mutations, "parsers": _parsers(ix), "predicates": module_predicates(ix.tree),
            "hook_calls": hook_calls(ix), "defines": sorted({n.name for n in ix.tree.body if isinstance(n, ast.FunctionDef)})}


def _module_level(tree: ast.Module, rel: str) -> tuple[dict[str, Any], dict[str, str], list[list[Any]]]:
    """Module constants (``{name: {"values"|"dict"|"scalar"|"expr", "line"}}``), ``from x import y`` names
    and ``NAME.extend/append(...)`` / ``NAME += [...]`` mutations of module lists."""
    consts: dict[str, Any] = {}
    imports: dict[str, str] = {}
    mutations: list[list[Any]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            mod = _module_of_import(node, rel)
            for a in node.names:
                if mod:
                    imports[a.asname or a.name] = mod + "." + a.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            ce = _const_expr(node.value)
            consts[node.targets[0].id] = (ce | {"line": node.lineno}) if isinstance(ce, dict) else {"values": ce, "line": node.lineno}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            ce = _const_expr(node.value)
            consts[node.target.id] = (ce | {"line": node.lineno}) if isinstance(ce, dict) else {"values": ce, "line": node.lineno}
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and isinstance(node.value.func.value, ast.Name) and node.value.func.attr in ("extend", "append"):
            arg = node.value.args[0] if node.value.args else None
            if arg is not None:
                v = _literal(arg)
                if v is not _NOT_LITERAL:
                    vals = [str(v)] if node.value.func.attr == "append" else [str(x) for x in v]
                    mutations.append([node.value.func.value.id, vals, node.lineno])
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            v = _literal(node.value)
            if isinstance(v, (list, tuple)):
                mutations.append([node.target.id, [str(x) for x in v], node.lineno])
    return consts, imports, mutations


def _cli_declarations(ix: ModuleIndex) -> list[dict[str, Any]]:
    """``add_argument(...)`` calls (in ``ast.walk`` order, as before the index) and annotated dataclass fields."""
    tree, text = ix.tree, ix.text
    fields = {node.name: class_field_defaults(node) for node in tree.body if isinstance(node, ast.ClassDef)}
    cli: list[dict[str, Any]] = []
    for site in ix.calls.get("add_argument", ()):
        if isinstance(site.node.func, ast.Attribute):
            rec = _cli_from_call(site.node, text, site.ctx.owner if site.ctx.unit is not None else None, fields)
            if rec:
                cli.append(rec)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, ast.AnnAssign):
                    rec = _annotated_field(st, text)
                    if rec:
                        rec["class"] = node.name
                        cli.append(rec)
    return cli


def _parsers(ix: ModuleIndex) -> list[dict[str, Any]]:
    """The ``ArgumentParser(...)`` calls inside ``prepare_server_args``."""
    out: list[dict[str, Any]] = []
    for s in ix.calls.get("ArgumentParser", ()):
        unit = s.ctx.unit
        if unit is None or unit.name != "prepare_server_args":
            continue
        kws = {k.arg: k.value for k in s.node.keywords if k.arg}
        ab = _literal(kws["allow_abbrev"]) if "allow_abbrev" in kws else True
        prog = _literal(kws["prog"]) if "prog" in kws else None
        out.append({"function": unit.name, "line": s.node.lineno, "allow_abbrev": ab if isinstance(ab, bool) else None,
                    "prog": prog if isinstance(prog, str) else None})
    return out


def _rewrite_units(ix: ModuleIndex) -> list[dict[str, Any]]:
    """Per unit holding a candidate line (:data:`_CANDIDATE_LINE`): its rewrite records (:mod:`.rewrites`)."""
    lines = ix.text.splitlines(keepends=True)
    picked = []
    for node, owner in ix.units:
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if _CANDIDATE_LINE.search("".join(lines[start - 1:node.end_lineno or node.lineno])):
            picked.append((node, owner))
    records = analyse_units(ix, {id(n) for n, _ in picked})
    funcs: list[dict[str, Any]] = []
    for node, owner in picked:
        analysis = records[id(node)]
        if any(analysis.values()):
            params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
            funcs.append({"name": node.name, "owner": owner, "line": node.lineno, "params": params, **analysis})
    return funcs
