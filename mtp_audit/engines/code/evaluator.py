"""Three-valued evaluation of audited conditions with Python's semantics, for replaying an engine's statements
in source order without importing or running them. Engine-neutral: the caller says what each name means.

:func:`evaluate` takes an expression (an ``ast`` node or its source text) and a ``lookup`` that maps a dotted
name (``cfg.moe_runner_backend``), a no-argument call (``get_platform().is_sm100``, ``is_blackwell()``) or a
bare name to a known value, or to :data:`UNKNOWN`. The result is a :class:`Outcome`: a value, :data:`UNKNOWN`,
or the exception Python would raise (``TypeError`` for ``None > 1``). ``and``/``or`` short-circuit as Python
does, so ``False and <unknown>`` is ``False`` and ``True or <unknown>`` is ``True``; anything the evaluator does
not model (arithmetic, calls with arguments, subscripts of unknowns) is :data:`UNKNOWN`, never a guess.

A statement-order replay walks a function body with :func:`evaluate` on each ``if`` / ``assert``: a false
``assert`` is ``AssertionError`` with its message, ``raise`` ends the path, an unknown test forks the path only
where the two sides differ. The SGLang analyzer uses it for ``model_overrides`` rewrites and the attention
backend asserts (:mod:`mtp_audit.engines.sglang.startup_facts`).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # pragma: no cover - guarded: callers test ``is UNKNOWN``
        raise TypeError("UNKNOWN has no truth value")


#: A value the replay does not know.
UNKNOWN: Any = _Unknown()


class Outcome:
    """The result of :func:`evaluate`: ``value`` (a Python value or :data:`UNKNOWN`) or ``error`` (the name of
    the exception Python raises, e.g. ``"TypeError"``, with ``message``)."""

    __slots__ = ("error", "message", "value")

    def __init__(self, value: Any = UNKNOWN, error: str | None = None, message: str = "") -> None:
        self.value, self.error, self.message = value, error, message

    @property
    def known(self) -> bool:
        """A value (not unknown, not an exception)."""
        return self.error is None and self.value is not UNKNOWN

    def truth(self) -> bool | None:
        """``bool(value)`` when known; ``None`` when unknown or an exception."""
        return bool(self.value) if self.known else None

    def __repr__(self) -> str:
        return f"Outcome(error={self.error!r})" if self.error else f"Outcome({self.value!r})"


Lookup = Callable[[str], Any]

_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def name_of(node: ast.AST) -> str | None:
    """``a.b.c``, ``f().x``, ``f()`` for a chain of names, attributes and calls (a call's arguments are left out of
    the name: ``model_config_of(server_args).quantization`` is ``model_config_of().quantization``); else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = name_of(node.value)
        return None if base is None else base + "." + node.attr
    if isinstance(node, ast.Call):
        base = name_of(node.func)
        return None if base is None else base + "()"
    return None


def evaluate(expr: ast.AST | str, lookup: Lookup) -> Outcome:
    """Evaluate ``expr`` (see the module doc). A text that does not parse is :data:`UNKNOWN`."""
    if isinstance(expr, str):
        try:
            expr = ast.parse(expr.strip(), mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return Outcome()
    return _eval(expr, lookup, 0)


def _eval(node: ast.AST, lookup: Lookup, depth: int) -> Outcome:
    if depth > 50:
        return Outcome()
    if isinstance(node, ast.Constant):
        return Outcome(node.value)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        vals = [_eval(e, lookup, depth + 1) for e in node.elts]
        if any(not v.known for v in vals):
            return Outcome()
        items = [v.value for v in vals]
        return Outcome(frozenset(items) if isinstance(node, ast.Set) else tuple(items))
    if isinstance(node, ast.BoolOp):
        return _boolop(node, lookup, depth)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = _eval(node.operand, lookup, depth + 1)
        return v if not v.known else Outcome(not v.value)
    if isinstance(node, ast.Compare):
        return _compare(node, lookup, depth)
    if isinstance(node, ast.NamedExpr):  # (cfg := x) is x
        return _eval(node.value, lookup, depth + 1)
    name = name_of(node)
    if name is not None:
        v = lookup(name)
        return Outcome(v)
    return Outcome()


def _boolop(node: ast.BoolOp, lookup: Lookup, depth: int) -> Outcome:
    is_and = isinstance(node.op, ast.And)
    unknown = False
    last = Outcome()
    for e in node.values:
        v = _eval(e, lookup, depth + 1)
        if v.error:
            return v if not unknown else Outcome()
        if not v.known:
            unknown = True
            continue
        last = v
        if bool(v.value) != is_and:  # short circuit: False in `and`, True in `or` (true whatever came before)
            return v
    return Outcome() if unknown else last


def _compare(node: ast.Compare, lookup: Lookup, depth: int) -> Outcome:
    left = _eval(node.left, lookup, depth + 1)
    result: Outcome = Outcome(True)
    for op, right_node in zip(node.ops, node.comparators):
        right = _eval(right_node, lookup, depth + 1)
        if left.error or right.error:
            return left if left.error else right
        if not left.known or not right.known:
            return Outcome()
        fn = _CMP.get(type(op))
        if fn is None:
            return Outcome()
        try:
            ok = fn(left.value, right.value)
        except TypeError as exc:  # None > 1: the engine raises here
            return Outcome(error="TypeError", message=str(exc))
        if not ok:
            return Outcome(False)
        result, left = Outcome(True), right
    return result


def message_text(node: ast.AST | None) -> str:
    """The text of an ``assert``/``raise`` message: string pieces joined, ``{...}`` for f-string fields."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                       else "{" + ast.unparse(v.value if isinstance(v, ast.FormattedValue) else v) + "}"
                       for v in node.values)
    if isinstance(node, ast.Call) and node.args:
        return message_text(node.args[0])
    return ast.unparse(node)
