"""A three-valued evaluator for the short Python tests vLLM's ``SpeculativeConfig`` makes
(auto-detection ``elif`` tests, ``use_*()`` predicates, the reuse-warning guard), over what a launch
knows. ``True`` / ``False`` when decided, :data:`UNKNOWN` otherwise. Audited code is parsed, never run.

Names are looked up as dotted source text (``self.draft_model_config.hf_config.model_type``);
``getattr(X, "name", default)`` reads ``X.name``; ``X.lower()``, ``get_args(NAME)``, ``min``/``max``,
and ``self.use_x()`` / ``speculative_config.use_x()`` (through the predicate's returned expression)
are understood. Anything else is unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # pragma: no cover - guarded against
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN: Any = _Unknown()


def _is_u(v: Any) -> bool:
    return v is UNKNOWN


class Evaluator:
    """Evaluate expressions against ``env`` (dotted name -> value) and ``predicates`` (``use_x`` ->
    its returned expression, or ``None`` when not a single expression)."""

    def __init__(self, env: Mapping[str, Any], predicates: Mapping[str, str | None] | None = None) -> None:
        self.env = dict(env)
        self.predicates = dict(predicates or {})
        self._depth = 0

    def truth(self, text: str | None) -> Any:
        """``True`` / ``False`` / :data:`UNKNOWN` for a test written as source text."""
        if not text:
            return UNKNOWN
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return UNKNOWN
        v = self.ev(node)
        if _is_u(v):
            return UNKNOWN
        return bool(v)

    def ev(self, n: ast.AST) -> Any:  # noqa: C901 - one dispatch over node types
        """The value of expression node ``n`` (a Python value, a list for tuples/lists/sets, or :data:`UNKNOWN`)."""
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return self.env.get(n.id, UNKNOWN)
        if isinstance(n, ast.Attribute):
            return self.env.get(ast.unparse(n), UNKNOWN)
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return [self.ev(e) for e in n.elts]
        if isinstance(n, ast.BoolOp):
            vals = []
            for v in n.values:
                x = self.ev(v)
                b = UNKNOWN if _is_u(x) else bool(x)
                if isinstance(n.op, ast.And) and b is False:
                    return False
                if isinstance(n.op, ast.Or) and b is True:
                    return True
                vals.append(b)
            return UNKNOWN if any(_is_u(b) for b in vals) else (isinstance(n.op, ast.And))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            x = self.ev(n.operand)
            return UNKNOWN if _is_u(x) else (not x)
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            return self._compare(n.ops[0], self.ev(n.left), self.ev(n.comparators[0]))
        if isinstance(n, ast.Call):
            return self._call(n)
        return UNKNOWN

    def _compare(self, op: ast.cmpop, a: Any, b: Any) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if _is_u(a) or _is_u(b):
                return UNKNOWN
            same = a is b if b is None or a is None else a == b
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            if _is_u(a) or _is_u(b):
                return UNKNOWN
            if isinstance(b, str):
                r = isinstance(a, str) and a in b
            elif isinstance(b, (list, tuple, set)):
                if a in [x for x in b if not _is_u(x)]:
                    r = True
                elif any(_is_u(x) for x in b):
                    return UNKNOWN
                else:
                    r = False
            else:
                return UNKNOWN
            return r if isinstance(op, ast.In) else not r
        if _is_u(a) or _is_u(b):
            return UNKNOWN
        try:
            if isinstance(op, ast.Eq):
                return a == b
            if isinstance(op, ast.NotEq):
                return a != b
            if isinstance(op, ast.Gt):
                return a > b
            if isinstance(op, ast.GtE):
                return a >= b
            if isinstance(op, ast.Lt):
                return a < b
            if isinstance(op, ast.LtE):
                return a <= b
        except TypeError:
            return UNKNOWN
        return UNKNOWN

    def _call(self, n: ast.Call) -> Any:
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "lower" and not n.args:
            v = self.ev(f.value)
            return v.lower() if isinstance(v, str) else UNKNOWN
        if isinstance(f, ast.Name) and f.id == "getattr" and len(n.args) in (2, 3) and isinstance(n.args[1], ast.Constant):
            key = f"{ast.unparse(n.args[0])}.{n.args[1].value}"
            if key in self.env:
                return self.env[key]
            return UNKNOWN
        if isinstance(f, ast.Name) and f.id == "get_args" and len(n.args) == 1:
            return self.ev(n.args[0])
        if isinstance(f, ast.Name) and f.id in ("min", "max") and n.args:
            vals = [self.ev(a) for a in n.args]
            if any(_is_u(v) or not isinstance(v, (int, float)) for v in vals):
                return UNKNOWN
            return (min if f.id == "min" else max)(vals)
        if isinstance(f, ast.Attribute) and f.attr.startswith(("use_", "uses_")) and not n.args:
            text = self.predicates.get(f.attr)
            if text is None or self._depth > 4:
                return UNKNOWN
            self._depth += 1
            try:
                return self.truth(text)
            finally:
                self._depth -= 1
        return UNKNOWN
