"""The guard a rewrite sits under, read from the AST of its function, and what that guard says about a user's value.

A rewrite record's ``condition`` is the text of the ``if`` branches around the store. The **guard** adds everything
else the store is only reached past, in one mechanism for every file:

- early exits in the same function: an ``if`` without ``else`` whose body returns or raises (0.5.23
  ``mega_moe_hook.py:259`` ``if cfg.moe_runner_backend != "megamoe": return``; ``speculative_hook.py:1019``
  ``if target.architectures[0] != "IQuestQ1ForCausalLM": return False``), and ``assert`` statements before it
  (``speculative_hook.py:1160`` ``assert cfg.speculative_eagle_topk is None and ...``): a check that raises instead
  of rewriting (``speculative_hook.py:1051`` ``if cfg.speculative_num_draft_tokens not in (None, steps + 1): raise``);
- local names replaced by the one expression that reaches the test (``backends_unset = is_attention_backend_not_set(cfg)``
  in 0.5.23 ``model_overrides/kimi_k3.py:138``; ``quant_resolved = cfg.quantization`` in ``minimax_m3.py:48``);
- predicates of the release, functions whose body is one ``return <test>`` (0.5.23 ``model_override_base.py:176``
  ``is_attention_backend_not_set(cfg)``: the three attention backends ``is None``), inlined at link time across files
  (:func:`inline_predicates`).

A value that keeps what the user gave (``steps = cfg.speculative_num_steps`` refilled only under ``if steps is None``,
0.5.23 ``speculative_hook.py:1037-1039``; ``cfg.x or default``) is marked ``keeps_given``: only an unset flag changes.

:func:`given_value_test` then evaluates the guard (:func:`mtp_audit.engines.code.evaluator.evaluate`, three-valued) with the
rewritten argument bound to a value the user passed and everything else unknown: true means "whatever value is passed",
false means the rewrite never touches an explicit value (only ``None`` or the literals it compares), unknown means a
passed value is rewritten "only when ..." the rest of the guard holds (a platform predicate, an environment variable, a
model family, another flag).
"""

from __future__ import annotations

import ast
import copy
import re
from typing import Any, TypeGuard

from mtp_audit.engines.code.evaluator import UNKNOWN, evaluate

#: Longest guard text kept in a record (characters); a longer one is recorded as :data:`TOO_LONG` (unknown).
MAX_GUARD = 2000
#: The guard of a store whose guard text is longer than :data:`MAX_GUARD`: not an expression, so never evaluated.
TOO_LONG = "<guard too long to keep>"
#: Longest predicate body kept for inlining (characters).
MAX_PREDICATE = 400


# --- scan side: the guard of one store -----------------------------------------------------------------


def _exits_early(st: ast.stmt) -> TypeGuard[ast.If]:
    return type(st) is ast.If and not st.orelse and type(st.body[-1]) in (ast.Return, ast.Raise)


def _path(unit: Any, line: int) -> list[tuple[list[ast.stmt], int]]:
    """The statement lists from ``unit``'s body down to the statement at ``line``, each with the index of the
    statement on the path in it."""
    out: list[tuple[list[ast.stmt], int]] = []
    body = getattr(unit, "body", None)
    while body:
        at = next((i for i, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
        if at is None:
            break
        out.append((body, at))
        holder = body[at]
        if holder.lineno == line and not isinstance(holder, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            break
        inner = [b for f in ("body", "orelse", "finalbody") for b in [getattr(holder, f, None)] if b]
        inner += [h.body for h in getattr(holder, "handlers", ()) or ()]
        body = next((b for b in inner if b[0].lineno <= line <= (b[-1].end_lineno or b[-1].lineno)), None)
    return out


def _before(unit: Any, line: int) -> list[ast.stmt]:
    """Every statement executed before the one at ``line`` on its way down (earlier statements of each list on the
    path), in order."""
    return [st for body, at in _path(unit, line) for st in body[:at]]


def _stores(st: ast.stmt) -> frozenset[str]:
    """Names a statement binds anywhere inside it (computed once per statement)."""
    got = getattr(st, "_mtp_stores", None)
    if got is None:
        got = frozenset(n.id for n in ast.walk(st) if type(n) is ast.Name and type(n.ctx) is ast.Store)
        st._mtp_stores = got  # type: ignore[attr-defined]  # a memo on the parsed node (AST nodes take any attribute)
    return got


def local_defs(unit: Any, line: int, wanted: set[str] | None = None) -> dict[str, ast.expr | None]:
    """Local names bound before ``line`` (only ``wanted`` ones when given): the expression of the last plain
    ``name = expr`` on the path, or ``None`` when the name is (also) bound in a way that is not one expression (a
    nested block, a loop, a tuple target)."""
    defs: dict[str, ast.expr | None] = {}
    for st in _before(unit, line):
        names = _stores(st)
        if not names or wanted is not None and not names & wanted:
            continue
        if type(st) is ast.Assign and len(st.targets) == 1 and type(st.targets[0]) is ast.Name:
            defs[st.targets[0].id] = st.value
        elif type(st) is ast.AnnAssign and type(st.target) is ast.Name and st.value is not None:
            defs[st.target.id] = st.value
        else:
            defs.update(dict.fromkeys(names))
    return defs


class _Inline(ast.NodeTransformer):
    """Put each name's expression in for the name; with ``receivers=False`` a name read as an attribute's receiver
    (``cfg`` of ``cfg.x``, a view of the record) stays, so fields keep the names the source gives them."""

    def __init__(self, defs: dict[str, ast.expr | None], receivers: bool = True) -> None:
        self.defs, self.receivers = defs, receivers

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if not self.receivers and type(node.value) is ast.Name:
            return node
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        d = self.defs.get(node.id)
        return copy.deepcopy(d) if d is not None and type(node.ctx) is ast.Load else node


def _receivers(unit: Any) -> set[str]:
    """Names read as an attribute's receiver anywhere in ``unit`` (computed once per function)."""
    got = getattr(unit, "_mtp_receivers", None)
    if got is None:
        got = {n.value.id for n in ast.walk(unit) if type(n) is ast.Attribute and type(n.value) is ast.Name}
        unit._mtp_receivers = got
    return got


def _inline_locals(test: ast.expr, unit: Any) -> ast.expr:
    """``test`` with each local name replaced by the expression that reaches it (two levels: a local defined from
    another local)."""
    skip: set[int] = set()  # names read here as a receiver (cfg of cfg.x) or called (get_platform())
    names: list[ast.Name] = []
    for n in ast.walk(test):
        if type(n) is ast.Attribute and type(n.value) is ast.Name:
            skip.add(id(n.value))
        elif type(n) is ast.Call and type(n.func) is ast.Name:
            skip.add(id(n.func))
        elif type(n) is ast.Name:
            names.append(n)
    wanted = {n.id for n in names if id(n) not in skip}
    if not wanted:
        return test
    receivers = _receivers(unit)
    wanted -= receivers
    if not wanted:
        return test
    defs = local_defs(unit, test.lineno, wanted)
    if not any(d is not None for d in defs.values()):
        return test
    params = {a.arg for a in unit.args.posonlyargs + unit.args.args + unit.args.kwonlyargs} if hasattr(unit, "args") else set()
    for name, d in defs.items():
        # a view of the record or of the model (cfg = resolving_view(server_args)) keeps its name: a local read as a
        # receiver, or bound to a call on the function's parameters alone
        if d is not None and (name in receivers or type(d) is ast.Call and d.args and all(
                type(a) is ast.Name and a.id in params for a in d.args) and not d.keywords):
            defs[name] = None
    if not any(d is not None for d in defs.values()):
        return test
    out = _Inline(defs, receivers=False).visit(copy.deepcopy(test))
    return _Inline(defs, receivers=False).visit(out) if defs else out


def guard_tests(unit: Any, line: int, guards: tuple[tuple[ast.If, bool], ...]) -> list[ast.expr]:
    """The conjuncts a store at ``line`` is only reached past, in source order: the early exits (``not (test)``) and
    ``assert`` tests before it, then the ``if`` branches around it (``test`` / ``not (test)``), locals inlined."""
    tests: list[ast.expr] = []
    if unit is not None:
        for st in _before(unit, line):
            if _exits_early(st):
                tests.append(_negated(_inlined(st.test, unit)))
            elif type(st) is ast.Assert:
                tests.append(_inlined(st.test, unit))
    for node, in_body in guards:
        t = _inlined(node.test, unit) if unit is not None else node.test
        tests.append(t if in_body else _negated(t))
    return tests


def _inlined(test: ast.expr, unit: Any) -> ast.expr:
    """:func:`_inline_locals` of a test node, computed once per node (every store under one ``if`` shares it)."""
    got = getattr(test, "_mtp_inlined", None)
    if got is None:
        got = _inline_locals(test, unit)
        test._mtp_inlined = got  # type: ignore[attr-defined]  # a memo on the parsed node (AST nodes take any attribute)
    return got


def _negated(test: ast.expr) -> ast.expr:
    got = getattr(test, "_mtp_negated", None)
    if got is None:
        got = ast.UnaryOp(op=ast.Not(), operand=test, lineno=getattr(test, "lineno", 0), col_offset=0)
        test._mtp_negated = got  # type: ignore[attr-defined]  # a memo on the parsed node (AST nodes take any attribute)
    return got


def _part(test: ast.expr) -> str:
    """A test's text as one conjunct (an ``or`` in parentheses), computed once per node."""
    got = getattr(test, "_mtp_text", None)
    if got is None:
        got = ast.unparse(test)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            got = f"({got})"
        test._mtp_text = got  # type: ignore[attr-defined]  # a memo on the parsed node (AST nodes take any attribute)
    return got


def _text(tests: list[ast.expr]) -> str:
    out = " and ".join(_part(t) for t in tests)
    return out if len(out) <= MAX_GUARD else TOO_LONG


def keeps_given(unit: Any, line: int, argument: str, value: ast.expr) -> bool:
    """Whether the stored ``value`` is the user's own value of ``argument`` unless that was unset: ``cfg.x or
    default``, ``default if cfg.x is None else cfg.x``, or a local first bound to ``cfg.x`` and bound again only under
    ``if local is None`` / ``if not local`` (0.5.23 ``speculative_hook.py:1037-1039``)."""
    def is_arg(n: ast.AST) -> bool:
        return type(n) is ast.Attribute and n.attr == argument

    if type(value) is ast.BoolOp and type(value.op) is ast.Or and is_arg(value.values[0]):
        return True
    if type(value) is ast.IfExp and is_arg(value.orelse) and _is_none_test(value.test, value.orelse):
        return True
    if type(value) is not ast.Name or unit is None:
        return False
    return _local_keeps(unit, line, value.id, is_arg)


def _is_none_test(test: ast.AST, subject: ast.AST) -> bool:
    """``subject is None`` or ``not subject``."""
    dump = ast.dump(subject)
    if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
        return ast.dump(test.operand) == dump
    return (type(test) is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) is ast.Is
            and ast.dump(test.left) == dump and type(test.comparators[0]) is ast.Constant
            and test.comparators[0].value is None)


def _local_keeps(unit: Any, line: int, name: str, is_arg: Any) -> bool:
    first = True
    for st in _before(unit, line):
        if name not in _stores(st):
            continue
        binds = [n for n in ast.walk(st) if type(n) is ast.Name and n.id == name and type(n.ctx) is ast.Store]
        if first:
            if not (type(st) is ast.Assign and len(st.targets) == 1 and st.targets[0] is binds[0] and is_arg(st.value)):
                return False
            first = False
            continue
        local = ast.Name(id=name, ctx=ast.Load())
        if not (type(st) is ast.If and _is_none_test(st.test, local)
                and not any(b in ast.walk(o) for o in st.orelse for b in binds)):
            return False
    return not first


def rebinds_given(unit: Any, line: int, argument: str, value: ast.expr) -> bool:
    """Whether the stored ``value`` is a local first bound to the user's own value of ``argument`` and bound again only
    inside branches (0.5.23 ``overrides.py:1451-1524``: ``moe_runner_backend = view.moe_runner_backend``, changed under
    quantization and GPU tests, stored when it differs): the given value changes only when one of those branches runs."""
    if type(value) is not ast.Name or unit is None:
        return False
    first = None
    for st in _before(unit, line):
        if value.id not in _stores(st):
            continue
        binds = [n for n in ast.walk(st) if type(n) is ast.Name and n.id == value.id and type(n.ctx) is ast.Store]
        if first is None:
            ok = (type(st) is ast.Assign and len(st.targets) == 1 and st.targets[0] is binds[0]
                  and type(st.value) is ast.Attribute and st.value.attr == argument)
            if not ok:
                return False
            first = st
        elif type(st) in (ast.Assign, ast.AnnAssign, ast.AugAssign):
            return False  # bound again unconditionally
    return first is not None


def site_guard(unit: Any, line: int, guards: tuple[tuple[ast.If, bool], ...], argument: str, value: ast.expr | None) -> dict[str, Any]:
    """``{"guard": text}`` plus ``"keeps_given": True`` where it holds (see the module doc); ``{}`` when the store
    sits under nothing and does not keep the given value."""
    out: dict[str, Any] = {}
    try:
        tests = guard_tests(unit, line, guards)
        if tests:
            out["guard"] = _text(tests)
    except (RecursionError, MemoryError):  # a test nested too deeply to copy or print: its guard is not told
        out["guard"] = TOO_LONG
    if value is not None and keeps_given(unit, line, argument, value):
        out["keeps_given"] = True
    elif value is not None and rebinds_given(unit, line, argument, value):
        out["rebinds_given"] = True
    return out


def hook_calls(ix: Any) -> list[dict[str, Any]]:
    """Calls of a bare function name with one positional name argument and nothing else (how SGLang runs its
    hooks: ``handle_modelscope_paths(server_args)``, 0.5.23 ``serving_hook.py:673``), inside a function: ``[{"callee",
    "function", "line", "guard"}]``, ``guard`` the text the call is only reached past (``""``: none)."""
    out: list[dict[str, Any]] = []
    for sites in ix.calls.values():
        for site in sites:
            node, unit = site.node, site.ctx.unit
            if unit is None or site.hidden or type(node.func) is not ast.Name or node.keywords or len(node.args) != 1 \
                    or type(node.args[0]) is not ast.Name \
                    or not any(type(st) is ast.Expr and st.value is node for st in site.ctx.suite or ()):
                continue
            try:
                g = _text(guard_tests(unit, node.lineno, site.ctx.guards))
            except (RecursionError, MemoryError):
                g = TOO_LONG
            out.append({"callee": node.func.id, "function": unit.name, "line": node.lineno, "guard": g})
    out.sort(key=lambda c: (c["line"], c["callee"]))
    return out


def caller_guard(function: str, calls: dict[str, list[dict[str, Any]]], depth: int = 3, seen: frozenset[str] = frozenset()) -> str:
    """The guard under which ``function`` runs, from its calls in the scanned files (:func:`hook_calls`, by callee
    name): ``(g1) or (g2)`` over the call sites, each with its own caller's guard, ``depth`` levels up; ``""`` when a
    call is unguarded or the function is not called by name there (a hook listed in a pipeline runs always)."""
    sites = calls.get(function) or []
    if not sites or depth <= 0 or function in seen:
        return ""
    terms = []
    for c in sites:
        up = caller_guard(c["function"], calls, depth - 1, seen | {function})
        g = " and ".join(x for x in (f"({up})" if " or " in up else up, c["guard"]) if x)
        if not g:
            return ""
        terms.append(g)
    uniq = list(dict.fromkeys(terms))
    return uniq[0] if len(uniq) == 1 else " or ".join(f"({t})" for t in uniq)


def with_callers(guard: str | None, callers: str) -> str | None:
    """``callers and guard`` (either may be empty); ``None`` when both are; :data:`TOO_LONG` past :data:`MAX_GUARD`."""
    parts = [f"({callers})" if " or " in callers else callers, guard or ""]
    out = " and ".join(p for p in parts if p) or None
    return TOO_LONG if out is not None and len(out) > MAX_GUARD else out


def module_predicates(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """Module-level functions whose body (a docstring aside) is one ``return <test>`` of a comparison, ``and``/``or``
    or ``not``: ``{name: {"params": [str], "expr": text}}`` (0.5.23 ``model_override_base.py:176``)."""
    out: dict[str, dict[str, Any]] = {}
    methods = [(f"self.{m.name}", m) for c in tree.body if type(c) is ast.ClassDef for m in c.body
               if type(m) is ast.FunctionDef and [a.arg for a in m.args.args] == ["self"]]
    for key, node in [(n.name, n) for n in tree.body if type(n) is ast.FunctionDef] + methods:
        body = node.body[1:] if node.body and type(node.body[0]) is ast.Expr and type(node.body[0].value) is ast.Constant else node.body
        if len(body) != 1 or type(body[0]) is not ast.Return or body[0].value is None:
            continue
        expr = body[0].value
        if type(expr) not in (ast.Compare, ast.BoolOp, ast.UnaryOp):
            continue
        try:
            text = ast.unparse(expr)
        except (RecursionError, MemoryError):
            continue
        if len(text) <= MAX_PREDICATE:
            out[key] = {"params": [a.arg for a in node.args.posonlyargs + node.args.args], "expr": text}
    return out


# --- link side --------------------------------------------------------------------------------------------


class _Predicates(ast.NodeTransformer):
    def __init__(self, preds: dict[str, dict[str, Any]]) -> None:
        self.preds = preds

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if type(f) is ast.Attribute and type(f.value) is ast.Name and f.value.id == "self":
            p, args = self.preds.get(f"self.{f.attr}"), [f.value, *node.args]
        else:
            p, args = self.preds.get(f.id if type(f) is ast.Name else ""), list(node.args)
        if p is None or node.keywords or len(args) != len(p["params"]):
            return node
        try:
            body = ast.parse(p["expr"], mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return node
        return _Inline(dict(zip(p["params"], args))).visit(body)


def inline_predicates(guard: str, preds: dict[str, dict[str, Any]]) -> str:
    """``guard`` with calls of the release's predicates (:func:`module_predicates`, all files merged, a name defined
    twice left out) replaced by their test, the arguments put in for the parameters; unchanged when nothing applies."""
    if not guard or not preds or not any(f"{n.rsplit('.', 1)[-1]}(" in guard for n in preds):
        return guard
    try:
        tree = ast.parse(guard, mode="eval").body
        return _text(_conjuncts(_Predicates(preds).visit(tree)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return guard


def _conjuncts(node: ast.expr) -> list[ast.expr]:
    if type(node) is ast.BoolOp and type(node.op) is ast.And:
        return [c for v in node.values for c in _conjuncts(v)]
    return [node]


# --- diff and launch side ---------------------------------------------------------------------------------


class _Given:
    """A value the user passed for the rewritten argument: equal only to itself; ordering it is unknown."""

    def __repr__(self) -> str:
        return "<given>"


class _New:
    """The rewrite's own new value: equal to itself, never to a value the user passed (had the user passed it, nothing
    would change); compared with anything else it is unknown (the evaluator turns the ``TypeError`` into unknown)."""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, _Given):
            return False
        raise TypeError("the new value is not known")

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return "<new>"


_GIVEN = _Given()
#: A guard that does not parse: its truth is unknown for every value.
_UNREADABLE: ast.expr = ast.Name(id="\0unreadable guard", ctx=ast.Load())
_NEW = _New()
_ARCH0 = re.compile(r"\.architectures\[0\]$")


class _Target(ast.NodeTransformer):
    """Replace the rewrite's own value expression (``steps + 1``) by a stand-in: a check ``x not in (None, steps + 1)``
    that raises otherwise lets a given value through only when it already equals the new value."""

    def __init__(self, dump: str) -> None:
        self.dump = dump

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and ast.dump(node) == self.dump:
            return ast.Constant(value=_NEW)  # type: ignore[arg-type]  # a stand-in the evaluator compares, never printed
        return super().generic_visit(node)


def _arch_names(node: ast.expr) -> ast.expr:
    """``<x>.architectures[0]`` read as ``model_arch`` (what a launch knows as the checkpoint's architecture)."""

    class _T(ast.NodeTransformer):
        def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
            self.generic_visit(n)
            if _ARCH0.search(ast.unparse(n)):
                return ast.copy_location(ast.Name(id="model_arch", ctx=ast.Load()), n)
            return n

    return _T().visit(node)


def parsed_guard(record: dict[str, Any]) -> ast.expr | None:
    """The record's guard (or, for records without one, its condition) as an expression with the rewrite's own value
    replaced (:class:`_Target`) and ``architectures[0]`` read as ``model_arch``; ``None`` when there is none or it
    does not parse."""
    text = record.get("guard") if record.get("guard") is not None else record.get("condition")
    if not text:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _UNREADABLE
    to = record.get("to") or []
    if len(to) == 1 and str(to[0]).startswith("<") and str(to[0]).endswith(">"):
        try:
            tree = _Target(ast.dump(ast.parse(str(to[0])[1:-1], mode="eval").body)).visit(tree)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            pass
    return _arch_names(tree)


def _compared_literals(tree: ast.expr, argument: str) -> list[Any]:
    """Literals the guard compares ``<x>.argument`` with (``==``, ``!=``, ``in``, ``not in``), in source order."""
    out: list[Any] = []
    for node in ast.walk(tree):
        if type(node) is not ast.Compare or len(node.ops) != 1:
            continue
        left, right = node.left, node.comparators[0]
        if not (type(left) is ast.Attribute and left.attr == argument):
            continue
        vals = right.elts if type(right) is ast.Tuple or type(right) is ast.List or type(right) is ast.Set else [right]
        out += [v.value for v in vals if type(v) is ast.Constant and isinstance(v.value, (str, int, float, bool))
                and v.value not in out]
    return out


def evaluate_for(tree: ast.expr | None, argument: str, value: Any, lookup: Any = None) -> bool | None:
    """The guard's truth with ``<x>.argument`` bound to ``value`` and other names from ``lookup`` (default: unknown);
    ``None`` for unknown or an exception."""
    if tree is None:
        return True

    def look(name: str) -> Any:
        if "." in name and name.rsplit(".", 1)[-1] == argument:
            return value
        return lookup(name) if lookup is not None else UNKNOWN

    return evaluate(tree, look).truth()


def given_value_test(record: dict[str, Any]) -> dict[str, Any]:
    """What the guard says about a value the user passes for the record's argument.

    Returns ``{"given": True | False | None, "froms": [str], "guard": text | None}``: ``given`` is the guard's truth
    for an arbitrary explicit value (``False`` also when the value ``keeps_given``); ``froms`` the values the rewrite
    can change when ``given`` is false (``"None"`` for an unset flag, then each literal the guard compares the argument
    with that passes it), else the record's own ``from``.
    """
    arg = record["argument"]
    tree = parsed_guard(record)
    text = record.get("guard") if record.get("guard") is not None else record.get("condition")
    if record.get("from") not in ("*",):
        value = None if record["from"] == "None" else record["from"]
        return {"given": evaluate_for(tree, arg, value), "froms": [record["from"]], "guard": text or None}
    given = False if record.get("keeps_given") else evaluate_for(tree, arg, _GIVEN)
    if given is True and record.get("rebinds_given"):
        given = None  # changed only where a branch binds the local again
    if given is not False:
        return {"given": given, "froms": ["*"], "guard": text or None}
    froms = ["None"] if evaluate_for(tree, arg, None) is not False else []
    froms += [str(v) for v in _compared_literals(tree, arg) if evaluate_for(tree, arg, v) is not False] if tree is not None else []
    return {"given": False, "froms": froms, "guard": text or None}
