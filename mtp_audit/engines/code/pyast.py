"""Engine-neutral helpers over the stdlib ``ast`` for audited Python source (parsed, never run): parsing
bytes without raising, dotted names, log calls (the "logged vs silent" test of a rewrite), the string text of
a message, and module-level string sets / ``Literal`` resolution. Used by the vLLM analyzer
(:mod:`mtp_audit.engines.vllm.scan`); engine knowledge (file and class names) stays in each engine's package.

The sglang analyzer has its own module index (:mod:`mtp_audit.engines.code.index`).
"""

from __future__ import annotations

import ast
import re
from typing import Any

_LOG = re.compile(r"^(logger|logging|log|_logger)\.(info|warning|warn|error|debug|critical|exception)(_once)?$|^warnings\.warn$")


def parse_source(rel: str, data: bytes) -> tuple[ast.Module | None, str, str | None]:
    """``(module, text, None)``, or ``(None, text, gap message)`` when ``data`` is not UTF-8 or not Python 3."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, "", f"not UTF-8 (byte {exc.start}); not parsed"
    try:
        return ast.parse(text, filename=rel), text, None
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return None, text, f"does not parse as Python 3{where} ({type(exc).__name__}); not examined"


def source_text(node: ast.AST) -> str:
    """``ast.unparse`` on one line (whitespace runs collapsed)."""
    try:
        return " ".join(ast.unparse(node).split())
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return "?"


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (``f()`` for a call), ``""`` otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return dotted(node.func) + "()"
    return ""


def is_log_call(node: ast.AST) -> bool:
    """``logger.warning(...)``, ``logger.info_once(...)``, ``warnings.warn(...)`` and friends."""
    return isinstance(node, ast.Call) and bool(_LOG.match(dotted(node.func)))


def strings_in(node: ast.AST) -> str:
    """All string constants inside ``node`` joined (f-string pieces included): a message's text."""
    return "".join(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def module_string_sets(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """Module-level string sets: ``NAME = ("a", "b")`` / ``frozenset({...})`` / ``Literal[...]``
    (nested Literals named in the same module are flattened, e.g. 0.33.0 ``EagleModelTypes`` holds
    ``MTPModelTypes``). Returns ``{name: {"values": [str], "line": int, "kind": "tuple"|"Literal"}}``."""
    raw: dict[str, tuple[ast.AST, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            raw[node.targets[0].id] = (node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            raw[node.target.id] = (node.value, node.lineno)
    out: dict[str, dict[str, Any]] = {}

    def values(expr: ast.AST, depth: int = 0) -> tuple[list[str], str] | None:
        if depth > 8:
            return None
        if isinstance(expr, ast.Subscript) and dotted(expr.value).split(".")[-1] == "Literal":
            elts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            vals: list[str] = []
            for e in elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str):
                    vals.append(e.value)
                elif isinstance(e, ast.Name) and e.id in raw:
                    sub = values(raw[e.id][0], depth + 1)
                    if sub is None:
                        return None
                    vals += sub[0]
                else:
                    return None
            return vals, "Literal"
        if isinstance(expr, ast.Call) and dotted(expr.func) in ("frozenset", "set", "tuple") and len(expr.args) == 1:
            return values(expr.args[0], depth + 1)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            vals = []
            for e in expr.elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str):
                    vals.append(e.value)
                else:
                    return None
            return (sorted(vals) if isinstance(expr, ast.Set) else vals), "tuple"
        if isinstance(expr, ast.Name) and expr.id in raw:
            return values(raw[expr.id][0], depth + 1)
        return None

    for name, (expr, line) in raw.items():
        v = values(expr)
        if v is not None:
            out[name] = {"values": v[0], "line": line, "kind": v[1]}
    return out
