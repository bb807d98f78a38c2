"""Per-file extraction from SGLang source: CLI declarations, value rewrites, draft overrides,
MTP registrations and environment variables. Source is data: parsed, never imported or run.

Two-level parse, measured in ``benchmarks/bench_sglang.py``:

1. A textual pre-filter on raw bytes picks the few files that can hold what we look for.
2. Those files are parsed with the stdlib ``ast`` (C parser, line numbers for free) to find module
   constants, imports, ``add_argument`` calls and annotated config fields, and the *functions* that
   contain candidate rewrite sites.
3. Each such function is parsed on its own with **libcst** (with ``PositionProvider`` on that small
   module only; on the whole 5,775-line ``server_args.py`` of 0.5.9 positions alone take ~1.7 s),
   and a visitor tracks the ``if`` branches around every assignment, ``return``,
   ``declare_resolution(...)`` call and ``overrides["field"] = ...`` store, giving the condition's
   source text, whether a log call sits in the same branch, and the from/to literals.

Shapes recognised (issue 3, "What it finds" 2a-2e): direct ``self.x = "LIT"`` under ``if self.x ==
"LIT"``; helpers returning a literal for an input literal (``self.x = f(self.x)``,
``server_args.x = f(...)``, ``declare_resolution(sa, "src", x=f(...))``); ``overrides["x"] = v``;
``return {"x": v}``; ``MODEL_OVERRIDES`` tables; alias sets (``_RESERVED_ALIASES =
frozenset({"NEXTN"})``) looked up by ``SpeculativeAlgorithm.from_string``; dict maps; ``.upper()``.

The result of :func:`scan_file` is a JSON-serialisable dict so it can be cached by content hash.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

#: Bump when the extraction changes, so cached results are recomputed.
SCAN_VERSION = 9

# --- pre-filter --------------------------------------------------------------------------------

#: Bytes that make a file a candidate for the server-arguments pass (parsed with ast + libcst).
_SERVER_TRIGGER = re.compile(
    rb"add_argument\(|cli_name=|declare_resolution\(|speculative_algorithm|architectures\[0\]|"
    rb"_ALIASES|MODEL_OVERRIDES|def from_string|_CHOICES\s*=|: A\[|Arg\("
)
#: Path parts where server-argument processing lives (across 0.4.0 .. 0.5.23).
_SERVER_PATHS = re.compile(
    r"(^|/)srt/(server_args\.py|arg_groups/|configs/model_config\.py|speculative/spec_(info|registry)\.py|"
    r"layers/quantization/__init__\.py|layers/moe/utils\.py)"
)
_ENV_HINT = re.compile(rb"NEXTN|MTP|SPEC|FP4")
ENTRY_HINT = re.compile(rb"^EntryClass\s*=", re.M)
_MTP_NAME = re.compile(r"mtp|nextn", re.I)

#: Env var names of interest (issue 3 item 6): contain NEXTN, MTP, SPEC, FP4 or NVFP4.
ENV_NAME = rb"[A-Z][A-Z0-9_]*(?:NEXTN|MTP|SPEC|FP4)[A-Z0-9_]*"
_ENV_DEFINED = re.compile(rb"^[ \t]+(" + ENV_NAME + rb")[ \t]*(?::[^=\n]*)?=[ \t]*Env\w*\(", re.M)
_ENV_READ = re.compile(
    rb"envs\.(" + ENV_NAME + rb")\b"
    rb"|get_\w*env\w*\(\s*[\"'](" + ENV_NAME + rb")[\"']"
    rb"|environ(?:\.get|\.setdefault|\.pop)?\s*[\[(]\s*[\"'](" + ENV_NAME + rb")[\"']"
    rb"|getenv\(\s*[\"'](" + ENV_NAME + rb")[\"']"
)

LOG_FUNCS = re.compile(r"^(logger|logging|log|_logger|LOGGER)\.(info|warning|warn|error|debug|critical|exception)"
                       r"|^warnings\.warn$|^print$|^print_\w*once$|^log_info_on_rank0$|^\w*warn\w*once$")

_CANDIDATE_LINE = re.compile(
    r"(self|server_args|args)\.\w+\s*=[^=]|declare_resolution\(|overrides\[[^\]]+\]\s*=[^=]|"
    r"architectures|model_path\s+or\b|_ALIASES|return\s*\{|return\s+[\"']|\.upper\(\)"
)


def wants_server_pass(rel: str, data: bytes) -> bool:
    """Whether ``rel`` goes through the ast + libcst pass (server-argument processing files)."""
    return bool(_SERVER_PATHS.search(rel)) and bool(_SERVER_TRIGGER.search(data)) or (
        b'"NEXTN"' in data and b"speculative_algorithm" in data
    ) or (b"architectures[0] =" in data and b"is_draft" in data)


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
    if not _ENV_HINT.search(data):
        return out
    lc = _LineCounter(data)
    for m in _ENV_DEFINED.finditer(data):
        out["defined"].append([m.group(1).decode(), lc.line(m.start(1))])
    for m in _ENV_READ.finditer(data):
        if _in_comment(data, m.start()):
            continue
        name = next(g for g in m.groups() if g)
        out["read"].append([name.decode(), lc.line(m.start())])
    return out


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

    The ``EntryClass = ...`` statement alone is parsed with ``libcst.parse_expression``; a class's
    line is its ``class NAME`` line in the same file, else the EntryClass line.
    Returns (entries ``{"class", "line", "entry_line", "mtp"}``, problems).
    """
    import libcst as cst

    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    for m in ENTRY_HINT.finditer(data):
        start = m.end()
        text = data[start:start + 20000].decode("utf-8", "replace")
        expr_text = _balanced_prefix(text).strip()
        entry_line = _line_of(data, m.start())
        try:
            expr = cst.parse_expression(expr_text)
        except Exception:  # libcst.ParserSyntaxError and friends
            problems.append(f"EntryClass at line {entry_line} not understood")
            continue
        names: list[str] = []
        elems = expr.elements if isinstance(expr, (cst.List, cst.Tuple)) else [expr]
        for el in elems:
            v = el.value if isinstance(el, cst.Element) else el
            if isinstance(v, cst.Name):
                names.append(v.value)
            elif isinstance(v, cst.Attribute):
                names.append(v.attr.value)
        for n in names:
            cm = re.search(rb"^class\s+" + re.escape(n.encode()) + rb"\b", data, re.M)
            entries.append({"class": n, "line": _line_of(data, cm.start()) if cm else entry_line, "entry_line": entry_line,
                            "mtp": bool(_MTP_NAME.search(n))})
    return entries, problems


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
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple, set, frozenset)):
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
    return (fields.get(cls or "") or {}).get(node.attr)


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
    if ref is not None:
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


def _cli_record(flag: str, dest: str | None, kw: dict[str, ast.AST], line: int, text: str, *,
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


# --- libcst unit analysis -----------------------------------------------------------------------


def _analyse_unit(src: str, line_offset: int, col_strip: int, func_params: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Analyse one function's source with libcst; line numbers are shifted by ``line_offset``."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    module = cst.parse_module(src)
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "sites", "returns", "alias_lookups", "normalisations", "draft_overrides", "draft_path_fills", "unknown")}
    code = module.code_for_node

    def logged_in(suite_body: Any) -> bool:
        for st in suite_body:
            if isinstance(st, cst.SimpleStatementLine):
                for small in st.body:
                    call = small.value if isinstance(small, cst.Expr) else None
                    if isinstance(call, cst.Call) and LOG_FUNCS.search(_cst_dotted(call.func)):
                        return True
        return False

    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.conds: list[tuple[Any, bool]] = []  # (If node, in_body)
            self.suites: list[Any] = []

        def line(self, node: Any) -> Any:
            # Positions cost a code generation of the whole unit (most of libcst's time here), so
            # they are resolved after the visit, and only for a unit that recorded something.
            return _PendingLine(node)

        def cond_text(self) -> str:
            parts = []
            for node, in_body in self.conds:
                t = " ".join(code(node.test).split())
                if in_body and " or " in t and len(self.conds) > 1:
                    t = f"({t})"
                parts.append(t if in_body else f"not ({t})")
            return " and ".join(parts)

        def test_line(self) -> int | None:
            return self.line(self.conds[-1][0]) if self.conds else None

        def visit_If(self, node: Any) -> bool:
            node.test.visit(self)
            self.conds.append((node, True))
            self.suites.append(node.body.body)
            node.body.visit(self)
            self.suites.pop()
            self.conds.pop()
            if node.orelse is not None:
                self.conds.append((node, False))
                if isinstance(node.orelse, cst.If):
                    self.suites.append([node.orelse])
                    node.orelse.visit(self)
                else:
                    self.suites.append(node.orelse.body.body)
                    node.orelse.body.visit(self)
                self.suites.pop()
                self.conds.pop()
            return False

        def visit_IndentedBlock(self, node: Any) -> bool:
            self.suites.append(node.body)
            return True

        def leave_IndentedBlock(self, node: Any) -> None:
            self.suites.pop()

        def visit_FunctionDef(self, node: Any) -> bool:
            return True

        # Subtrees that never hold a rewrite: skip them (saves ~30% of the visit).
        def visit_Raise(self, node: Any) -> bool:
            return False

        def visit_Assert(self, node: Any) -> bool:
            return False

        def visit_FormattedString(self, node: Any) -> bool:
            return False

        def visit_Lambda(self, node: Any) -> bool:
            return False

        def comparisons(self) -> list[tuple[str, str, list[str]]]:
            """(subject, op, literals) from enclosing conditions, innermost first, in-body only."""
            res = []
            for node, in_body in reversed(self.conds):
                if in_body:
                    res += _comparisons(node.test)
            return res

        def record(self, kind: str, argument: str, value: Any, anchor: Any, shape: str) -> None:
            logged = logged_in(self.suites[-1]) if self.suites else False
            base = {"argument": argument, "line": self.line(anchor), "condition": self.cond_text(),
                    "test_line": self.test_line(), "logged": logged, "shape": shape,
                    "froms": self.comparisons()}
            lit = _cst_literal(value)
            if lit is not _NOT_LITERAL:
                base["to"] = [lit] if not isinstance(lit, list) else lit
                out["sites"].append(base)
                return
            if isinstance(value, cst.IfExp):
                a, b = _cst_literal(value.body), _cst_literal(value.orelse)
                if a is not _NOT_LITERAL and b is not _NOT_LITERAL:
                    base["to"] = [a, b]
                    out["sites"].append(base)
                    return
            if isinstance(value, cst.Call):
                fname = _cst_dotted(value.func)
                if fname.endswith(".upper") or fname.endswith(".lower"):
                    subj = _cst_dotted(value.func.value) if isinstance(value.func, cst.Attribute) else ""
                    if subj.split(".")[-1] == argument or subj.endswith(")"):
                        out["normalisations"].append({"argument": argument, "kind": fname.rsplit(".", 1)[1], "line": base["line"], "shape": shape})
                        return
                args = []
                for a in value.args:
                    args.append({"keyword": a.keyword.value if a.keyword else None, "refers": _cst_dotted(a.value).split(".")[-1]})
                base["call"] = {"func": fname.split(".")[-1], "args": args}
                out["sites"].append(base)
                return
            text = " ".join(code(value).split())
            if argument == "speculative_draft_model_path" and text.split(".")[-1] == "model_path":
                out["draft_path_fills"].append({"kind": "explicit", "line": base["line"], "condition": base["condition"], "test_line": base["test_line"], "value": text, "logged": logged})
                return
            base["to"] = ["<" + text[:80] + ">"]
            base["dynamic"] = True
            out["sites"].append(base)

        def visit_Assign(self, node: Any) -> bool:
            if len(node.targets) != 1:
                return True
            tgt = node.targets[0].target
            if isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value in ("self", "server_args", "args"):
                self.record("assign", tgt.attr.value, node.value, node, "assignment")
            elif isinstance(tgt, cst.Subscript) and _cst_dotted(tgt.value).split(".")[-1].endswith("overrides"):
                key = _subscript_key(tgt)
                if key is not None:
                    self.record("assign", key, node.value, node, "overrides-dict")
            self._architectures(tgt, node)
            return True

        def _architectures(self, tgt: Any, node: Any) -> None:
            is_arch = (isinstance(tgt, cst.Subscript) and _cst_dotted(tgt.value).endswith("architectures")) or (
                isinstance(tgt, cst.Attribute) and tgt.attr.value == "architectures")
            if not is_arch:
                return
            cond = self.cond_text()
            if "draft" not in cond:
                return
            lit = _cst_literal(node.value)
            if isinstance(lit, list) and lit:
                lit = lit[0]
            to = lit if isinstance(lit, str) else "<" + " ".join(code(node.value).split())[:80] + ">"
            froms = [c for c in self.comparisons() if c[0].endswith("architectures[0]") or c[0].endswith("architectures")]
            out["draft_overrides"].append({"to": to, "line": self.line(node), "condition": cond,
                                           "froms": froms, "logged": logged_in(self.suites[-1]) if self.suites else False})

        def visit_Call(self, node: Any) -> bool:
            fname = _cst_dotted(node.func)
            if fname.split(".")[-1] == "declare_resolution":
                for a in node.args:
                    if a.keyword is not None:
                        self.record("declare", a.keyword.value, a.value, a, "declare_resolution")
            return True

        def visit_Return(self, node: Any) -> bool:
            v = node.value
            if v is None:
                return True
            if isinstance(v, cst.Dict):
                for el in v.elements:
                    if isinstance(el, cst.DictElement):
                        k = _cst_literal(el.key)
                        if isinstance(k, str):
                            self.record("return", k, el.value, el, "return-dict")
                return True
            lit = _cst_literal(v)
            if isinstance(lit, str):
                out["returns"].append({"to": lit, "line": self.line(node), "condition": self.cond_text(),
                                       "test_line": self.test_line(), "froms": self.comparisons(),
                                       "logged": logged_in(self.suites[-1]) if self.suites else False})
            elif isinstance(v, cst.Attribute) and self.conds:
                for subj, op, lits in self.comparisons():
                    if op == "in-name":
                        out["alias_lookups"].append({"set_name": lits[0], "to": v.attr.value, "subject": subj,
                                                     "line": self.line(node), "condition": self.cond_text(),
                                                     "test_line": self.test_line()})
            return True

        def visit_BooleanOperation(self, node: Any) -> bool:
            # implicit draft path: ``model_path or server_args.model_path`` (ModelConfig.from_server_args)
            if isinstance(node.operator, cst.Or) and _cst_dotted(node.left).split(".")[-1] == "model_path" and _cst_dotted(node.right).split(".")[-1] == "model_path":
                out["draft_path_fills"].append({"kind": "implicit", "line": self.line(node), "condition": self.cond_text(),
                                               "test_line": self.test_line(), "value": " ".join(code(node).split()), "logged": False})
            return True

    module.visit(V())
    if not any(out.values()):
        return out
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def fill(value: Any) -> Any:
        if type(value) is _PendingLine:
            return positions[value.node].start.line + line_offset
        if type(value) is dict:
            return {k: fill(v) for k, v in value.items()}
        if type(value) is list:
            return [fill(v) for v in value]
        return value

    return {k: fill(v) for k, v in out.items()}


class _PendingLine:
    """A node whose line :func:`_analyse_unit` fills in once positions are resolved."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node


def _cst_dotted(node: Any) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return _cst_dotted(node.value) + "." + node.attr.value
    if isinstance(node, cst.Subscript):
        key = _subscript_key(node)
        return _cst_dotted(node.value) + (f"[{key!r}]" if isinstance(key, str) else "[0]" if key == 0 else "[]")
    if isinstance(node, cst.Call):
        return _cst_dotted(node.func) + "()"
    return ""


def _subscript_key(node: Any) -> Any:
    import libcst as cst

    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    v = _cst_literal(node.slice[0].slice.value)
    return v if v is not _NOT_LITERAL else None


def _cst_literal(node: Any) -> Any:
    """A libcst literal as JSON: str/int/float/bool/None or a list of those; else the sentinel."""
    import libcst as cst

    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        v = node.evaluated_value
        return v if isinstance(v, str) else _NOT_LITERAL
    if isinstance(node, cst.Integer):
        return int(node.value, 0) if not node.value.startswith("0") or node.value == "0" else _NOT_LITERAL
    if isinstance(node, cst.Float):
        return float(node.value)
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.value]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        vals = []
        for el in node.elements:
            if not isinstance(el, cst.Element):
                return _NOT_LITERAL
            v = _cst_literal(el.value)
            if v is _NOT_LITERAL or isinstance(v, list):
                return _NOT_LITERAL
            vals.append(v)
        return vals
    return _NOT_LITERAL


def _comparisons(test: Any) -> list[tuple[str, str, list[str]]]:
    """Flatten ``a == "X" or a == "Y"``, ``a in ("X", "Y")``, ``a in NAME``, ``a is None`` into
    ``(subject, op, literals)`` triples; ``op`` is ``"=="``, ``"in"``, ``"in-name"`` or ``"is"``."""
    import libcst as cst

    res: list[tuple[str, str, list[str]]] = []
    if isinstance(test, cst.BooleanOperation):
        return _comparisons(test.left) + _comparisons(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        subj = _cst_dotted(test.left)
        op = target.operator
        right = target.comparator
        lit = _cst_literal(right)
        if isinstance(op, cst.Equal) and lit is not _NOT_LITERAL and not isinstance(lit, list):
            res.append((subj, "==", ["None" if lit is None else str(lit)]))
        elif isinstance(op, cst.In):
            if isinstance(lit, list):
                res.append((subj, "in", [str(x) for x in lit]))
            elif isinstance(right, (cst.Name, cst.Attribute)):
                res.append((subj, "in-name", [_cst_dotted(right)]))
        elif isinstance(op, cst.Is) and lit is None:
            res.append((subj, "is", ["None"]))
    return res


# --- the per-file entry point --------------------------------------------------------------------


def scan_file(rel: str, data: bytes, server: bool) -> dict[str, Any]:
    """Extract everything from one file. ``server``: run the ast + libcst pass (see module doc).

    Returns a JSON-serialisable dict with keys ``env``, ``entry``, ``gap`` (a message when the file
    could not be read or parsed, else ``None``) and, for server files, ``consts``, ``imports``,
    ``cli``, ``funcs`` (per function: its parameters and libcst analysis) and ``unit_errors``.
    Never raises for bad input.
    """
    res: dict[str, Any] = {"env": scan_env(data), "entry": [], "gap": None}
    if ENTRY_HINT.search(data):
        entries, problems = scan_entry_classes(data)
        res["entry"] = entries
        if problems:
            res["gap"] = "; ".join(problems)
    if not server:
        return res
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        res["gap"] = f"not UTF-8 (byte {exc.start}); not parsed"
        return res
    try:
        tree = ast.parse(text, filename=rel)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        res["gap"] = f"does not parse as Python 3{where} ({type(exc).__name__}: {getattr(exc, 'msg', exc)}); not examined"
        return res
    lines = text.splitlines(keepends=True)
    consts: dict[str, Any] = {}
    imports: dict[str, str] = {}
    cli: list[dict[str, Any]] = []
    funcs: list[dict[str, Any]] = []
    unit_errors: list[str] = []
    mutations: list[list[Any]] = []

    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            mod = _module_of_import(node, rel)
            for a in node.names:
                if mod:
                    imports[a.asname or a.name] = mod + "." + a.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            consts[node.targets[0].id] = _const_expr(node.value) | {"line": node.lineno} if isinstance(_const_expr(node.value), dict) else {"values": _const_expr(node.value), "line": node.lineno}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            ce = _const_expr(node.value)
            consts[node.target.id] = (ce | {"line": node.lineno}) if isinstance(ce, dict) else {"values": ce, "line": node.lineno}
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) and isinstance(node.value.func.value, ast.Name) and node.value.func.attr in ("extend", "append"):
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

    fields = {node.name: class_field_defaults(node) for node in tree.body if isinstance(node, ast.ClassDef)}
    for node, owner in _walk_with_class(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            rec = _cli_from_call(node, text, owner, fields)
            if rec:
                cli.append(rec)
        elif isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, ast.AnnAssign):
                    rec = _annotated_field(st, text)
                    if rec:
                        rec["class"] = node.name
                        cli.append(rec)

    parsers: list[dict[str, Any]] = []
    for node, owner in _functions(tree):
        if node.name == "prepare_server_args":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and _dotted(sub.func).split(".")[-1] == "ArgumentParser":
                    kws = {k.arg: k.value for k in sub.keywords if k.arg}
                    ab = _literal(kws["allow_abbrev"]) if "allow_abbrev" in kws else True
                    prog = _literal(kws["prog"]) if "prog" in kws else None
                    parsers.append({"function": node.name, "line": sub.lineno,
                                    "allow_abbrev": ab if isinstance(ab, bool) else None,
                                    "prog": prog if isinstance(prog, str) else None})

    for node, owner in _functions(tree):
        start = node.lineno
        if node.decorator_list:
            start = min(d.lineno for d in node.decorator_list)
        end = node.end_lineno or node.lineno
        seg_lines = lines[start - 1:end]
        seg = "".join(seg_lines)
        if not _CANDIDATE_LINE.search(seg):
            continue
        seg = textwrap.dedent(seg)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
        try:
            analysis = _analyse_unit(seg, start - 1, 0, params)
        except Exception as exc:  # libcst parse error on a segment that ast accepted: report, never drop
            unit_errors.append(f"{node.name} (line {node.lineno}): libcst could not analyse it ({type(exc).__name__})")
            continue
        if any(analysis.values()):
            funcs.append({"name": node.name, "owner": owner, "line": node.lineno, "params": params, **analysis})

    res.update(consts=consts, imports=imports, cli=cli, funcs=funcs, unit_errors=unit_errors, mutations=mutations, parsers=parsers)
    return res


def _walk_with_class(tree: ast.Module) -> list[tuple[ast.AST, str | None]]:
    """Every node of ``tree`` in ``ast.walk`` order, with the name of the module-level class it sits in."""
    owner_of = {id(n): top.name for top in tree.body if isinstance(top, ast.ClassDef) for n in ast.walk(top)}
    return [(n, owner_of.get(id(n))) for n in ast.walk(tree)]


def _functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str | None]]:
    """Module-level functions and methods of module-level classes (nested defs stay inside their unit)."""
    out: list[tuple[Any, str | None]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node, None))
        elif isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.append((st, node.name))
    return out
