"""One walk over a parsed module, queried by every pass: the index of assignments, attribute reads and writes,
calls, ``return``/``assert``/``if`` statements and boolean ``or`` expressions, each with the context a rewrite
analysis needs (enclosing unit and class, the chain of ``if`` branches around it, the statement list it sits in).

Engine-neutral: no engine file or class name appears here. The SGLang analyzer builds its rewrite model on it
(:mod:`mtp_audit.engines.sglang.scan`); the statement-order replay (:mod:`mtp_audit.engines.code.evaluator`) walks
the same ``ast`` nodes. Audited source is parsed, never imported or run.

Cost (measured in ``benchmarks/bench_sglang.py``): one Python-level pass over the statements plus one
``ast.iter_child_nodes`` pass over each expression, about 1 s per million nodes on a 2-core machine; SGLang
0.5.23's server-argument files (1.3 MB) hold about 200k nodes.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import itertools
import re
import threading
from collections.abc import Iterator
from typing import Any, Generic, TypeVar, cast

#: Expressions whose insides never hold a value rewrite: sites inside them are marked ``hidden``.
_HIDING = (ast.Lambda, ast.JoinedStr)
#: Statements whose expressions are marked ``hidden`` (a raise or an assert never assigns a flag).
_HIDING_STMT = (ast.Raise, ast.Assert)
#: Expression nodes without anything to index inside or at them (see ``ModuleIndex._expr``); their subclasses
#: (``Load``, ``Or``, ``Eq``...) are listed one by one because the walk compares exact types.
_LEAVES = frozenset({ast.Name, ast.Constant, *(c for base in (ast.expr_context, ast.boolop, ast.operator, ast.unaryop,
                                                              ast.cmpop) for c in base.__subclasses__())})
#: Fields that never hold a node to walk into: names and flags (strings, numbers) and the leaves above.
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "kind", "conversion", "is_async", "type_comment", "level"})
#: Node type -> the fields ``_expr`` walks into (filled on first sight of each type).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


#: One source line as ``ast.get_source_segment`` splits a file (``ast._splitlines_no_ff``: on ``\r\n``, ``\r`` and
#: ``\n`` only, line ends kept; the parser counts lines the same way).
_SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


#: Young-generation threshold of the cyclic GC while many files are parsed (:func:`fewer_collections`).
PARSE_GC_THRESHOLD = 20000


@contextlib.contextmanager
def fewer_collections(threshold: int = PARSE_GC_THRESHOLD) -> Iterator[None]:
    """Let the cyclic garbage collector run less often while many files are parsed and indexed: ``ast.parse`` makes
    millions of container objects, none in a reference cycle (reference counting frees each tree), yet at the
    default threshold (700 allocations) the collector runs thousands of times and walks the live trees again and
    again. Measured on SGLang 0.5.23 cold (CPU seconds, 2 cores): user time 1.83 s at the default, 1.64 s at 20,000,
    1.61 s with the collector off, whose peak RSS was 2.5 MiB higher (61.4 against 59.4 MiB); so it keeps running,
    less often. Process-wide, as ``gc.set_threshold`` is: audits running at once in several threads share one
    raised threshold, and the last of them to finish puts back the thresholds the first one found."""
    global _gc_users, _gc_saved
    with _GC_LOCK:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(threshold, _gc_saved[0]), *_gc_saved[1:])
        _gc_users += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_users -= 1
            if _gc_users == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)


_GC_LOCK = threading.Lock()
_gc_users = 0  # fewer_collections blocks running now, in every thread
_gc_saved: tuple[int, ...] | None = None  # the thresholds the first of them found


class Context:
    """Where a statement sits: ``unit`` (the module-level function or method holding it, ``None`` at module or
    class level), ``owner`` (that unit's class name), ``guards`` (``((If node, in_body), ...)`` from the
    outermost ``if`` inside the unit to the innermost; ``in_body`` False for the ``else``/``elif`` side) and
    ``suite`` (the list of statements it belongs to; ``None`` for a one-line suite such as ``if x: y = 1``)."""

    __slots__ = ("guards", "owner", "suite", "unit")

    def __init__(self, unit: Any, owner: str | None, guards: tuple[tuple[ast.If, bool], ...], suite: list[ast.stmt] | None) -> None:
        self.unit, self.owner, self.guards, self.suite = unit, owner, guards, suite


#: the node type a :class:`Site` holds (``Site[ast.Call]`` in :attr:`ModuleIndex.calls`, ...)
N = TypeVar("N", bound="ast.stmt | ast.expr")


class Site(Generic[N]):
    """One indexed node with its :class:`Context`; ``hidden`` when it sits inside a ``raise``, an ``assert``,
    a ``lambda`` or an f-string."""

    __slots__ = ("ctx", "hidden", "node")

    def __init__(self, node: N, ctx: Context, hidden: bool) -> None:
        self.node: N = node
        self.ctx, self.hidden = ctx, hidden

    @property
    def pos(self) -> tuple[int, int]:
        """``(line, column)`` of the node: source order for sorting."""
        return self.node.lineno, self.node.col_offset


def callee_name(call: ast.Call) -> str:
    """The last name of a call's function: ``f`` for ``f()``, ``b`` for ``a.b()``, ``""`` otherwise."""
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


class ModuleIndex:
    """The index of one module, built in one walk (see the module doc).

    Attributes (lists are in source order):
        units: ``[(FunctionDef, class name | None)]`` module-level functions and methods of module-level classes.
        classes: ``{name: ClassDef}`` for every class at any depth (first definition wins).
        assigns: every ``ast.Assign`` statement.
        attr_stores: ``{attr: [Site of the Assign]}`` for ``<expr>.attr = ...`` targets.
        attr_reads: ``{attr: [Site of the Attribute]}`` for attributes read (``Load`` context).
        calls: ``{callee name: [Site of the Call]}`` (:func:`callee_name`).
        returns, asserts, ifs, raises: those statements.
        or_ops: ``ast.BoolOp`` nodes with ``or``.
    """

    def __init__(self, rel: str, text: str, tree: ast.Module) -> None:
        self.rel, self.text, self.tree = rel, text, tree
        self._lines: list[str] | None = None
        self._source_lines: list[str] | None = None
        self._line_starts: list[int] | None = None
        self.units: list[tuple[Any, str | None]] = []
        self.classes: dict[str, ast.ClassDef] = {}
        self.assigns: list[Site[ast.Assign]] = []
        self.attr_stores: dict[str, list[Site[ast.Assign]]] = {}
        self.attr_reads: dict[str, list[Site[ast.Attribute]]] = {}
        self.calls: dict[str, list[Site[ast.Call]]] = {}
        self.returns: list[Site[ast.Return]] = []
        self.asserts: list[Site[ast.Assert]] = []
        self.ifs: list[Site[ast.If]] = []
        self.raises: list[Site[ast.Raise]] = []
        self.or_ops: list[Site[ast.BoolOp]] = []
        top = Context(None, None, (), tree.body)
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.units.append((st, None))
            elif isinstance(st, ast.ClassDef):
                self.units += [(s, st.name) for s in st.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self._block(tree.body, top, unit_level=0)

    # --- the walk --------------------------------------------------------------------------------

    def _block(self, body: list[ast.stmt], ctx: Context, unit_level: int, owner_class: str | None = None) -> None:
        for st in body:
            self._stmt(st, ctx, unit_level, owner_class)

    def _stmt(self, st: ast.stmt, ctx: Context, unit_level: int, owner_class: str | None) -> None:
        t = type(st)
        if type(st) is ast.If:
            self._if(st, ctx, unit_level, owner_class)
            return
        if type(st) is ast.FunctionDef or type(st) is ast.AsyncFunctionDef:
            self._def(st, ctx, unit_level, owner_class)
            return
        if type(st) is ast.ClassDef:
            self.classes.setdefault(st.name, st)
            for e in [*st.decorator_list, *st.bases, *(k.value for k in st.keywords)]:
                self._expr(e, ctx, False)
            inner = Context(ctx.unit, ctx.owner, ctx.guards, st.body)
            self._block(st.body, inner, unit_level, st.name if unit_level == 0 else owner_class)
            return
        if type(st) is ast.Assign:
            site = Site(st, ctx, False)
            self.assigns.append(site)
            for tgt in st.targets:
                if type(tgt) is ast.Attribute:
                    self.attr_stores.setdefault(tgt.attr, []).append(site)
        elif type(st) is ast.Return:
            self.returns.append(Site(st, ctx, False))
        elif type(st) is ast.Assert:
            self.asserts.append(Site(st, ctx, False))
        elif type(st) is ast.Raise:
            self.raises.append(Site(st, ctx, False))
        self._children(st, ctx, unit_level, owner_class, t in _HIDING_STMT)

    def _children(self, node: ast.AST, ctx: Context, unit_level: int, owner_class: str | None, hidden: bool = False) -> None:
        """The fields of a statement, or of a handler, ``with`` item, ``match`` case or comprehension: statement lists
        become blocks, expressions are indexed (``hidden``: under a statement that hides them), other nodes recurse."""
        for field in node._fields:
            v = getattr(node, field, None)
            if isinstance(v, list):
                if v and isinstance(v[0], ast.stmt):
                    self._block(v, self._suite_ctx(ctx, v), unit_level, owner_class)
                else:
                    for x in v:
                        if isinstance(x, ast.expr):
                            self._expr(x, ctx, hidden)
                        elif isinstance(x, ast.AST):
                            self._children(x, ctx, unit_level, owner_class)
            elif isinstance(v, ast.expr):
                self._expr(v, ctx, hidden)
            elif isinstance(v, ast.AST):
                self._children(v, ctx, unit_level, owner_class)

    @staticmethod
    def _suite_ctx(ctx: Context, body: list[ast.stmt]) -> Context:
        return Context(ctx.unit, ctx.owner, ctx.guards, body)

    def _if(self, st: ast.If, ctx: Context, unit_level: int, owner_class: str | None) -> None:
        self.ifs.append(Site(st, ctx, False))
        self._expr(st.test, ctx, False)
        one_line = bool(st.body) and st.body[0].lineno == st.test.end_lineno
        self._block(st.body, Context(ctx.unit, ctx.owner, ctx.guards + ((st, True),), None if one_line else st.body),
                    unit_level, owner_class)
        if not st.orelse:
            return
        other = ctx.guards + ((st, False),)
        first = st.orelse[0]
        if len(st.orelse) == 1 and type(first) is ast.If and first.col_offset == st.col_offset:  # elif
            self._if(first, Context(ctx.unit, ctx.owner, other, [first]), unit_level, owner_class)
        else:
            self._block(st.orelse, Context(ctx.unit, ctx.owner, other, st.orelse), unit_level, owner_class)

    def _def(self, st: Any, ctx: Context, unit_level: int, owner_class: str | None) -> None:
        for e in [*st.decorator_list, *st.args.defaults, *(d for d in st.args.kw_defaults if d is not None)]:
            self._expr(e, ctx, False)
        if unit_level == 0:  # a new unit: guards restart inside it
            inner = Context(st, owner_class, (), st.body)
        else:
            inner = Context(ctx.unit, ctx.owner, ctx.guards, st.body)
        self._block(st.body, inner, unit_level + 1, owner_class)

    def _expr(self, node: ast.expr, ctx: Context, hidden: bool) -> None:
        """Index the calls, attribute reads and ``or`` expressions inside ``node``, in the order of a depth-first walk
        over ``ast.iter_child_nodes`` with an explicit stack (children pushed in field order, so popped in reverse).
        Leaves that hold nothing to index (names, constants, ``Load``/``Store`` contexts, operators) are not pushed:
        the order of the indexed nodes is the same as when they were."""
        if type(node) in _LEAVES:
            return
        stack: list[tuple[ast.AST, bool]] = [(node, hidden)]
        calls, reads = self.calls, self.attr_reads
        fields_of, leaves, AST = _CHILD_FIELDS, _LEAVES, ast.AST
        while stack:
            n, h = stack.pop()
            t = type(n)
            # dispatch on the exact type read once (the hot loop of indexing); each cast restates that check
            if t is ast.Call:
                call = cast(ast.Call, n)
                calls.setdefault(callee_name(call), []).append(Site(call, ctx, h))
            elif t is ast.Attribute:
                attr = cast(ast.Attribute, n)
                if type(attr.ctx) is ast.Load:
                    reads.setdefault(attr.attr, []).append(Site(attr, ctx, h))
            elif t is ast.BoolOp:
                boolop = cast(ast.BoolOp, n)
                if type(boolop.op) is ast.Or:
                    self.or_ops.append(Site(boolop, ctx, h))
            elif t in _HIDING:
                h = True
            fields = fields_of.get(t)
            if fields is None:
                fields = fields_of[t] = tuple(f for f in t._fields if f not in _NOT_CHILDREN)
            for f in fields:
                v = getattr(n, f, None)
                if type(v) is list:
                    for c in v:
                        if isinstance(c, AST) and type(c) not in leaves:
                            stack.append((c, h))
                elif isinstance(v, AST) and type(v) not in leaves:
                    stack.append((v, h))

    # --- source text -----------------------------------------------------------------------------

    def segment(self, node: ast.AST, *, parens: bool = False) -> str:
        """The exact source text of ``node`` (``ast.get_source_segment`` without re-splitting the file on every
        call). ``parens``: include the parentheses wrapped round it when the caller knows they belong to it (an
        ``if`` test, the value of an assignment)."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        lines = self._lines
        l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]  # callers pass parsed nodes, which carry positions
        c0 = len(lines[l0].encode("utf-8")[: node.col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]  # callers pass parsed nodes, which carry positions
        c1 = len(lines[l1].encode("utf-8")[: node.end_col_offset].decode("utf-8", "replace"))  # type: ignore[attr-defined]  # callers pass parsed nodes, which carry positions
        if parens:
            l0, c0, l1, c1 = self._widen(l0, c0, l1, c1)
        if l0 == l1:
            return lines[l0][c0:c1]
        return "\n".join([lines[l0][c0:], *lines[l0 + 1:l1], lines[l1][:c1]])

    def source_lines(self) -> list[str]:
        """The file's lines with their ends, split as ``ast.get_source_segment`` splits it (on ``\\r\\n``, ``\\r`` and
        ``\\n`` only), once per file: ``lines[n - 1]`` is line ``n`` of the parser."""
        if self._source_lines is None:
            self._source_lines = _SOURCE_LINE.findall(self.text)
        return self._source_lines

    def lines_text(self, first: int, last: int) -> str:
        """The text of lines ``first`` to ``last`` (1-based, inclusive, ends kept) of :meth:`source_lines`."""
        if self._line_starts is None:
            self._line_starts = list(itertools.accumulate(map(len, self.source_lines()), initial=0))
        starts = self._line_starts
        return self.text[starts[max(first, 1) - 1]:starts[min(last, len(starts) - 1)]]

    def source_segment(self, node: ast.AST) -> str | None:
        """Exactly ``ast.get_source_segment(self.text, node)`` (not padded), cut from :meth:`source_lines` instead of
        splitting the file again on every call; ``None`` for a node without an end position."""
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]  # any node: one without positions is answered None
            c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]  # any node: one without positions is answered None
        except (AttributeError, TypeError):
            return None
        if c1 is None:
            return None
        lines = self.source_lines()
        if l0 == l1:
            return _cut(lines[l0], c0, c1)
        return "".join([_cut(lines[l0], c0, None), *lines[l0 + 1:l1], _cut(lines[l1], 0, c1)])

    def _widen(self, l0: int, c0: int, l1: int, c1: int) -> tuple[int, int, int, int]:
        """Extend ``[l0:c0, l1:c1)`` over matching ``(``/``)`` pairs separated from it by whitespace only."""
        lines = self._lines or []
        while True:
            bl, bc = l0, c0 - 1
            while bl >= 0 and (bc < 0 or lines[bl][bc] in " \t\r"):
                if bc < 0:
                    bl -= 1
                    bc = len(lines[bl]) - 1 if bl >= 0 else -1
                else:
                    bc -= 1
            fl, fc = l1, c1
            while fl < len(lines) and (fc >= len(lines[fl]) or lines[fl][fc] in " \t\r"):
                if fc >= len(lines[fl]):
                    fl, fc = fl + 1, 0
                else:
                    fc += 1
            if bl < 0 or fl >= len(lines) or lines[bl][bc] != "(" or lines[fl][fc] != ")":
                return l0, c0, l1, c1
            l0, c0, l1, c1 = bl, bc, fl, fc + 1

    def normalized(self, node: ast.AST, *, parens: bool = False) -> str:
        """:meth:`segment` with comments dropped and whitespace runs collapsed to one space (a condition stays a
        Python expression that :func:`mtp_audit.engines.code.evaluator.evaluate` can read)."""
        seg = self.segment(node, parens=parens)
        if "#" in seg:
            seg = _drop_comments(seg)
        return " ".join(seg.split())


def _cut(line: str, start: int, end: int | None) -> str:
    """``line.encode()[start:end].decode()``: the column offsets of ``ast`` count UTF-8 bytes (an ASCII line is cut
    as it is)."""
    if line.isascii():
        return line[start:end]
    return line.encode()[start:end].decode()


def _drop_comments(seg: str) -> str:
    """``seg`` without ``#`` comments (tokenized, so a ``#`` inside a string stays); unchanged if it does not
    tokenize."""
    import io
    import tokenize

    try:
        toks = list(tokenize.generate_tokens(io.StringIO("(" + seg + "\n)").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return seg
    lines = seg.split("\n")
    for tok in reversed(toks):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start[0] - 1, tok.start[1] - (1 if tok.start[0] == 1 else 0)
            if 0 <= row < len(lines):
                lines[row] = lines[row][:col] + lines[row][tok.end[1] - (1 if tok.start[0] == 1 else 0):]
    return "\n".join(lines)
