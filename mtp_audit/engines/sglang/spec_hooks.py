"""SGLang's speculative-parameter hooks as replayable source: the functions that decide ``speculative_num_steps`` /
``speculative_eagle_topk`` / ``speculative_num_draft_tokens`` at start-up and compare them (0.5.23
``srt/arg_groups/speculative_hook.py``: ``_handle_eagle_family`` compares ``cfg.speculative_eagle_topk > 1`` at :1177 and
:1274, ``_handle_ngram`` at :1357), the module functions they call, and the dispatch that picks one per algorithm
(0.5.23 ``srt/speculative/spec_info.py:256-266`` ``if self.is_dflash(): _handle_dflash(server_args) elif ...``, with the
enum members each ``is_x`` predicate accepts, ``:102-133``).

Which functions are kept is derived from the source, not listed: every module-level function in which
``speculative_eagle_topk`` is an operand of an ordering comparison (where Python raises ``TypeError`` for ``None``),
and the same-module functions those call. Only their source text is cached (a few kB per release), for the launch's
statement-order replay (:mod:`mtp_audit.engines.code.statements`).
"""

from __future__ import annotations

import ast
from typing import Any

from mtp_audit.engines.code.index import ModuleIndex

#: the field whose ordering comparisons select a hook
TOPK_FIELD = "speculative_eagle_topk"
_ORDER = (ast.Gt, ast.Lt, ast.GtE, ast.LtE)
#: the most source characters one release's hooks may cache (a larger tree is not replayed: could not tell)
MAX_SOURCE_CHARS = 60_000


def _compares_topk(fn: ast.FunctionDef) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and any(isinstance(op, _ORDER) for op in n.ops):
            for side in (n.left, *n.comparators):
                if isinstance(side, ast.Attribute) and side.attr == TOPK_FIELD:
                    return True
    return False


def _callees(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    return {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names}


def hook_functions(ix: ModuleIndex) -> dict[str, dict[str, Any]]:
    """``{name: {"line", "source"}}``: the module-level functions comparing ``speculative_eagle_topk`` and, transitively,
    the module functions they call (their source text as written, ``line`` of the ``def``)."""
    funcs = {n.name: n for n in ix.tree.body if isinstance(n, ast.FunctionDef)}
    keep = {name for name, fn in funcs.items() if _may_name_topk(ix, fn) and _compares_topk(fn)}
    todo = list(keep)
    while todo:
        for c in _callees(funcs[todo.pop()], set(funcs)) - keep:
            keep.add(c)
            todo.append(c)
    out = {}
    for name in sorted(keep):
        fn = funcs[name]
        src = ix.source_segment(fn)
        if src is not None:
            out[name] = {"line": fn.lineno, "source": src}
    return out


def _may_name_topk(ix: ModuleIndex, fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` (decorators included) can hold an attribute named :data:`TOPK_FIELD`: its lines hold the name,
    or are not ASCII (an identifier may be written in characters that NFKC-normalise to it). A test on the text
    before walking every node of every function of the file."""
    first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
    text = ix.lines_text(first, fn.end_lineno or fn.lineno)
    return TOPK_FIELD in text or not text.isascii()


def _predicate_names(test: ast.expr) -> list[str] | None:
    """``["is_eagle", "is_standalone"]`` for ``self.is_eagle() or self.is_standalone()``; ``None`` for any other test."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    out = []
    for p in parts:
        if not (isinstance(p, ast.Call) and not p.args and isinstance(p.func, ast.Attribute)
                and isinstance(p.func.value, ast.Name) and p.func.value.id == "self" and p.func.attr.startswith("is_")):
            return None
        out.append(p.func.attr)
    return out


def _members(fn: ast.FunctionDef) -> list[str] | None:
    """The enum members an ``is_x`` predicate accepts: ``return self in (C.A, C.B)`` / ``return self == C.A``."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Compare):
        return None
    cmp = body[0].value
    if len(cmp.ops) != 1 or not (isinstance(cmp.left, ast.Name) and cmp.left.id == "self"):
        return None
    right = cmp.comparators[0]
    elts = right.elts if isinstance(cmp.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) else \
        [right] if isinstance(cmp.ops[0], ast.Eq) else None
    if elts is None:
        return None
    members = [e.attr for e in elts if isinstance(e, ast.Attribute)]
    return members if len(members) == len(elts) else None


def dispatch(ix: ModuleIndex) -> dict[str, Any]:
    """The per-algorithm dispatch of one file: ``{"calls": [{"predicates": [is_x], "hook": name, "location"}] (source
    order: an ``if``/``elif`` chain's first true test wins), "predicates": {is_x: [enum members]}}``. The ``if``
    statements are those of the index (every ``if`` of the file, in source order) inside a method of a module-level
    class, at any depth."""
    preds, methods = {}, set()
    for cls in (n for n in ix.tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            methods.add(id(fn))
            if fn.name.startswith("is_"):
                m = _members(fn)
                if m is not None:
                    preds[fn.name] = m
    calls: list[dict[str, Any]] = []
    for site in ix.ifs:
        if id(site.ctx.unit) not in methods:
            continue
        node = site.node
        names = _predicate_names(node.test)
        if names is None:
            continue
        for st in node.body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name):
                calls.append({"predicates": names, "hook": st.value.func.id, "location": f"{ix.rel}:{st.lineno}"})
    calls.sort(key=lambda c: (c["location"].rsplit(":", 1)[0], int(c["location"].rsplit(":", 1)[1])))
    return {"calls": calls, "predicates": preds} if calls else {}


def file_hooks(ix: ModuleIndex) -> dict[str, Any]:
    """The speculative-hook facts of one file of the server pass (empty keys left out)."""
    out: dict[str, Any] = {}
    fns = hook_functions(ix)
    if fns:
        out["spec_hook_functions"] = fns
    d = dispatch(ix)
    if d:
        out["spec_dispatch"] = d
    return out


def merge(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The release's ``speculative_hooks`` fact from the per-file scan results: ``{"functions": {rel: {name: {"line",
    "source"}}}, "dispatch": [...] (every call of the dispatch, in source order), "predicates": {...}}``; ``{}`` when the release has none (before 0.5.15) or its
    source is larger than :data:`MAX_SOURCE_CHARS`."""
    functions = {rel: r["spec_hook_functions"] for rel, r in sorted(results.items()) if r.get("spec_hook_functions")}
    calls, preds = [], {}
    for _rel, r in sorted(results.items()):
        d = r.get("spec_dispatch") or {}
        calls += d.get("calls", [])
        preds.update(d.get("predicates", {}))
    hooks = {name for fns in functions.values() for name in fns}
    size = sum(len(f["source"]) for fns in functions.values() for f in fns.values())
    if not any(c["hook"] in hooks for c in calls) or size > MAX_SOURCE_CHARS:
        return {}
    return {"functions": functions, "dispatch": calls, "predicates": preds}
