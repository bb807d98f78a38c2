"""Rewrite sites of one SGLang module, read from its :class:`~mtp_audit.engines.code.index.ModuleIndex`
(one ``ast`` walk per file; no second parse).

For every unit (module-level function or method) it records, with the source text of the ``if`` branches
around each (``condition``), the line of the innermost test (``test_line``), the ``(subject, op, literals)``
comparisons of those tests (``froms``) and whether a log call is a statement of the same branch (``logged``):

- ``sites``: ``self.x = V`` / ``server_args.x = V`` / ``args.x = V``, ``overrides["x"] = V``,
  ``declare_resolution(..., x=V)`` keywords and ``return {"x": V}`` entries; ``V`` a literal (``to``), a
  conditional of two literals, a call (``call``: linked later to the helper's literal returns) or anything else
  (``dynamic``, its text);
- ``returns``: ``return "LIT"`` (a helper's literal result);
- ``alias_lookups``: ``return cls.NAME`` under ``if x in SET_NAME`` (``SpeculativeAlgorithm.from_string``);
- ``normalisations``: ``x = x.upper()`` / ``.lower()``;
- ``draft_overrides``: ``...architectures[0] = "Arch"`` under a condition naming ``draft``;
- ``draft_path_fills``: ``speculative_draft_model_path = ...model_path`` and ``model_path or
  server_args.model_path``.

Shapes and the versions they occur in: docs/sglang.md "Shapes recognised". Lines are 1-based, of the file.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mtp_audit.engines.code.index import Context, ModuleIndex, Site
from mtp_audit.engines.sglang.guards import site_guard

LOG_FUNCS = re.compile(r"^(logger|logging|log|_logger|LOGGER)\.(info|warning|warn|error|debug|critical|exception)"
                       r"|^warnings\.warn$|^print$|^print_\w*once$|^log_info_on_rank0$|^\w*warn\w*once$")

#: Receivers of a server-arguments field assignment.
_RECEIVERS = frozenset(("self", "server_args", "args"))

_NOT = object()
KINDS = ("sites", "returns", "alias_lookups", "normalisations", "draft_overrides", "draft_path_fills", "unknown")


def dotted(node: ast.AST) -> str:
    """``a.b.c``; ``x["k"]`` / ``x[0]`` / ``x[]`` for subscripts; ``f()`` for calls; ``""`` for anything else."""
    if type(node) is ast.Name:
        return node.id
    if type(node) is ast.Attribute:
        return dotted(node.value) + "." + node.attr
    if type(node) is ast.Subscript:
        key = subscript_key(node)
        return dotted(node.value) + (f"[{key!r}]" if isinstance(key, str) else "[0]" if key == 0 else "[]")
    if type(node) is ast.Call:
        return dotted(node.func) + "()"
    if type(node) is ast.Constant and node.value in (None, True, False) and type(node.value) is not int:
        return str(node.value)
    return ""


def subscript_key(node: ast.Subscript) -> Any:
    """The literal key of ``x[KEY]`` (``None`` for slices, tuples and non-literals)."""
    if isinstance(node.slice, (ast.Slice, ast.Tuple)):
        return None
    v = literal(node.slice)
    return v if v is not _NOT else None


def literal(node: ast.AST) -> Any:
    """A literal as JSON: str/int/float/bool/None, or a list of those (list, tuple or set display, in source
    order); else the module's not-a-literal sentinel (bytes, complex, ``...``, f-strings, names, calls)."""
    if type(node) is ast.Constant:
        v = node.value
        return v if v is None or isinstance(v, (str, bool, int, float)) else _NOT
    if type(node) is ast.List or type(node) is ast.Tuple or type(node) is ast.Set:
        vals = []
        for el in node.elts:
            v = literal(el)
            if v is _NOT or isinstance(v, list):
                return _NOT
            vals.append(v)
        return vals
    return _NOT


def is_literal(value: Any) -> bool:
    """Whether a :func:`literal` result is a literal."""
    return value is not _NOT


def comparisons(test: ast.AST) -> list[tuple[str, str, list[str]]]:
    """Flatten ``a == "X" or a == "Y"``, ``a in ("X", "Y")``, ``a in NAME``, ``a is None`` into
    ``(subject, op, literals)`` triples; ``op`` is ``"=="``, ``"in"``, ``"in-name"`` or ``"is"``."""
    if isinstance(test, ast.BoolOp):
        return [c for v in test.values for c in comparisons(v)]
    res: list[tuple[str, str, list[str]]] = []
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        subj, op, right = dotted(test.left), test.ops[0], test.comparators[0]
        lit = literal(right)
        if isinstance(op, ast.Eq) and lit is not _NOT and not isinstance(lit, list):
            res.append((subj, "==", ["None" if lit is None else str(lit)]))
        elif isinstance(op, ast.In):
            if isinstance(lit, list):
                res.append((subj, "in", [str(x) for x in lit]))
            elif isinstance(right, (ast.Name, ast.Attribute)):
                res.append((subj, "in-name", [dotted(right)]))
        elif isinstance(op, ast.Is) and lit is None:
            res.append((subj, "is", ["None"]))
    return res


def logged_in(suite: list[ast.stmt] | None) -> bool:
    """Whether a statement of ``suite`` is a log call (:data:`LOG_FUNCS`); ``False`` for a one-line suite."""
    for st in suite or ():
        if type(st) is ast.Expr and type(st.value) is ast.Call and LOG_FUNCS.search(dotted(st.value.func)):
            return True
    return False


def _exits_early(st: ast.stmt) -> bool:
    """An ``if`` without ``else`` whose body ends the function or raises (``if cfg.x != "auto": return {}``)."""
    return (type(st) is ast.If and not st.orelse
            and type(st.body[-1]) in (ast.Return, ast.Raise))


def early_exit_text(ix: ModuleIndex, unit: Any, line: int) -> str:
    """The ``not (test)`` of every early exit a statement at ``line`` of function ``unit`` is only reached past: an
    ``if`` without ``else`` whose body returns or raises, earlier in the same statement list or in an enclosing one
    (0.5.23 ``model_overrides/kimi_k3.py:180-185``: ``if cfg.moe_runner_backend != "auto": return {}`` and the GPU and
    checkpoint tests before ``return {"moe_runner_backend": "flashinfer_mxfp4"}``; ``kv_cache_hook.py:531`` before its
    asserts). ``""`` when there is none or ``unit`` is ``None`` (module level)."""
    parts: list[str] = []
    body = getattr(unit, "body", None)
    while body:
        holder = None
        for st in body:
            if st.lineno > line:
                break
            if line <= (st.end_lineno or st.lineno):
                holder = st
                break
            if _exits_early(st):
                parts.append(f"not ({ix.normalized(st.test, parens=True)})")
        if holder is None or holder.lineno == line:
            break
        inner = [b for b in (getattr(holder, "body", None), getattr(holder, "orelse", None)) if b]
        body = next((b for b in inner if b[0].lineno <= line <= (b[-1].end_lineno or b[-1].lineno)), None)
    return " and ".join(parts)


def enum_lookup_ends(ix: ModuleIndex, ctx: Context) -> dict[str, Any]:
    """What else the name lookup holding an alias test knows: ``members``, the upper-case names its enum class
    assigns (0.5.23 ``SpeculativeAlgorithm``: ``DFLASH = auto()`` ... ``NONE``), and ``raise``, the ``raise`` that
    ends the function when no name matches (``{"line", "exception", "message"}``, 0.5.23 ``spec_info.py:65``
    ``ValueError(f"Unknown speculative algorithm name: {name}")``); ``{}`` without an owner class."""
    from mtp_audit.engines.code.evaluator import message_text

    cls = ix.classes.get(ctx.owner or "")
    if cls is None:
        return {}
    members = [t.id for st in cls.body if type(st) is ast.Assign for t in st.targets
               if type(t) is ast.Name and t.id.isupper()]
    out: dict[str, Any] = {"members": members}
    last = ctx.unit.body[-1] if ctx.unit is not None and ctx.unit.body else None
    if type(last) is ast.Raise and last.exc is not None:
        exc = last.exc
        name = dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc)
        out["raise"] = {"line": last.lineno, "exception": name, "message": message_text(exc)}
    return out


class _Unit:
    """The records of one unit, collected with their source positions and ordered at the end."""

    def __init__(self, ix: ModuleIndex) -> None:
        self.ix = ix
        self.out: dict[str, list[tuple[tuple[int, int], dict[str, Any]]]] = {k: [] for k in KINDS}

    def add(self, kind: str, pos: tuple[int, int], rec: dict[str, Any]) -> None:
        self.out[kind].append((pos, rec))

    def result(self) -> dict[str, list[dict[str, Any]]]:
        return {k: [r for _, r in sorted(v, key=lambda x: x[0])] for k, v in self.out.items()}

    # --- context ---------------------------------------------------------------------------------

    def cond_text(self, ctx: Context) -> str:
        parts = []
        for node, in_body in ctx.guards:
            t = self.ix.normalized(node.test, parens=True)
            if in_body and " or " in t and len(ctx.guards) > 1:
                t = f"({t})"
            parts.append(t if in_body else f"not ({t})")
        return " and ".join(parts)

    @staticmethod
    def test_line(ctx: Context) -> int | None:
        return ctx.guards[-1][0].lineno if ctx.guards else None

    @staticmethod
    def froms(ctx: Context) -> list[tuple[str, str, list[str]]]:
        """Comparisons of the enclosing in-body conditions, innermost first."""
        res: list[tuple[str, str, list[str]]] = []
        for node, in_body in reversed(ctx.guards):
            if in_body:
                res += comparisons(node.test)
        return res

    # --- records ---------------------------------------------------------------------------------

    def record(self, ctx: Context, argument: str, value: ast.expr, anchor: ast.stmt | ast.expr | ast.keyword, shape: str) -> None:
        """One value handed to ``argument`` (see the module doc for the shapes of ``value``)."""
        pos = (anchor.lineno, anchor.col_offset)
        logged = logged_in(ctx.suite)
        base = {"argument": argument, "line": pos[0], "condition": self.cond_text(ctx), "test_line": self.test_line(ctx),
                "logged": logged, "shape": shape, "froms": self.froms(ctx)}
        if shape in ("overrides-dict", "return-dict"):
            base["exits"] = early_exit_text(self.ix, ctx.unit, pos[0])
        base.update(site_guard(ctx.unit, pos[0], ctx.guards, argument, value))
        lit = literal(value)
        if lit is not _NOT:
            self.add("sites", pos, dict(base, to=lit if isinstance(lit, list) else [lit]))
            return
        if isinstance(value, ast.IfExp):
            a, b = literal(value.body), literal(value.orelse)
            if a is not _NOT and b is not _NOT:
                self.add("sites", pos, dict(base, to=[a, b]))
                return
        if isinstance(value, ast.Call):
            self._call(pos, base, argument, value, shape)
            return
        text = self.ix.normalized(value, parens=True)
        if argument == "speculative_draft_model_path" and text.split(".")[-1] == "model_path":
            self.add("draft_path_fills", pos, {"kind": "explicit", "line": pos[0], "condition": base["condition"],
                                               "test_line": base["test_line"], "value": text, "logged": logged})
            return
        self.add("sites", pos, dict(base, to=["<" + text[:80] + ">"], dynamic=True))

    def _call(self, pos: tuple[int, int], base: dict[str, Any], argument: str, value: ast.Call, shape: str) -> None:
        fname = dotted(value.func)
        if fname.endswith((".upper", ".lower")):
            subj = dotted(value.func.value) if isinstance(value.func, ast.Attribute) else ""
            if subj.split(".")[-1] == argument or subj.endswith(")"):
                self.add("normalisations", pos, {"argument": argument, "kind": fname.rsplit(".", 1)[1], "line": pos[0], "shape": shape})
                return
        parts: list[tuple[tuple[int, int], str | None, ast.AST]] = [
            ((a.lineno, a.col_offset), None, a.value if isinstance(a, ast.Starred) else a) for a in value.args]
        parts += [((k.lineno, k.col_offset), k.arg, k.value) for k in value.keywords]
        args = [{"keyword": kw, "refers": dotted(v).split(".")[-1]} for _, kw, v in sorted(parts, key=lambda p: p[0])]
        self.add("sites", pos, dict(base, call={"func": fname.split(".")[-1], "args": args}))

    def assign(self, site: Site[ast.Assign]) -> None:
        node = site.node
        if len(node.targets) != 1:
            return
        tgt, ctx = node.targets[0], site.ctx
        if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id in _RECEIVERS:
            self.record(ctx, tgt.attr, node.value, node, "assignment")
        elif isinstance(tgt, ast.Subscript) and dotted(tgt.value).split(".")[-1].endswith("overrides"):
            key = subscript_key(tgt)
            if key is not None:
                self.record(ctx, key, node.value, node, "overrides-dict")
        self._architectures(tgt, node, ctx)

    def _architectures(self, tgt: ast.AST, node: ast.Assign, ctx: Context) -> None:
        is_arch = (isinstance(tgt, ast.Subscript) and dotted(tgt.value).endswith("architectures")) or (
            isinstance(tgt, ast.Attribute) and tgt.attr == "architectures")
        if not is_arch:
            return
        cond = self.cond_text(ctx)
        if "draft" not in cond:
            return
        lit = literal(node.value)
        if isinstance(lit, list) and lit:
            lit = lit[0]
        to = lit if isinstance(lit, str) else "<" + self.ix.normalized(node.value, parens=True)[:80] + ">"
        froms = [c for c in self.froms(ctx) if c[0].endswith("architectures[0]") or c[0].endswith("architectures")]
        self.add("draft_overrides", (node.lineno, node.col_offset), {"to": to, "line": node.lineno, "condition": cond,
                                                                     "froms": froms, "logged": logged_in(ctx.suite)})

    def declare(self, site: Site[ast.Call]) -> None:
        for k in site.node.keywords:
            if k.arg is not None:
                self.record(site.ctx, k.arg, k.value, k, "declare_resolution")

    def ret(self, site: Site[ast.Return]) -> None:
        node = site.node
        v, ctx = node.value, site.ctx
        if v is None:
            return
        if isinstance(v, ast.Dict):
            for k, val in zip(v.keys, v.values):
                if k is not None and isinstance(literal(k), str):
                    self.record(ctx, literal(k), val, k, "return-dict")
            return
        lit = literal(v)
        pos = (node.lineno, node.col_offset)
        if isinstance(lit, str):
            self.add("returns", pos, {"to": lit, "line": node.lineno, "condition": self.cond_text(ctx),
                                      "test_line": self.test_line(ctx), "froms": self.froms(ctx), "logged": logged_in(ctx.suite)})
        elif isinstance(v, ast.Attribute) and ctx.guards:
            for subj, op, lits in self.froms(ctx):
                if op == "in-name":
                    self.add("alias_lookups", pos, {"set_name": lits[0], "to": v.attr, "subject": subj, "line": node.lineno,
                                                    "condition": self.cond_text(ctx), "test_line": self.test_line(ctx),
                                                    **enum_lookup_ends(self.ix, ctx)})

    def or_op(self, site: Site[ast.BoolOp]) -> None:
        """``model_path or server_args.model_path``: the implicit draft path (``ModelConfig.from_server_args``)."""
        node = site.node
        a, b = node.values[0], node.values[1]
        if dotted(a).split(".")[-1] == "model_path" and dotted(b).split(".")[-1] == "model_path":
            text = self.ix.normalized(node) if len(node.values) == 2 else (
                self.ix.normalized(a) + " or " + self.ix.normalized(b))
            self.add("draft_path_fills", (a.lineno, a.col_offset), {
                "kind": "implicit", "line": a.lineno, "condition": self.cond_text(site.ctx),
                "test_line": self.test_line(site.ctx), "value": text, "logged": False})


def analyse_units(ix: ModuleIndex, units: set[int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    """Rewrite records of the units whose ``id()`` is in ``units``: ``{id(unit): {kind: [record]}}`` (every
    kind of :data:`KINDS` present, possibly empty), in source order within each kind."""
    acc: dict[int, _Unit] = {u: _Unit(ix) for u in units}

    def of(site: Site[Any]) -> _Unit | None:
        return None if site.ctx.unit is None or site.hidden else acc.get(id(site.ctx.unit))

    for assign in ix.assigns:
        u = of(assign)
        if u is not None:
            u.assign(assign)
    for call in ix.calls.get("declare_resolution", ()):
        u = of(call)
        if u is not None:
            u.declare(call)
    for ret in ix.returns:
        u = of(ret)
        if u is not None:
            u.ret(ret)
    for or_op in ix.or_ops:
        u = of(or_op)
        if u is not None:
            u.or_op(or_op)
    return {k: u.result() for k, u in acc.items()}
