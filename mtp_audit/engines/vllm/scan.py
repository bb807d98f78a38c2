"""Per-file extraction from vLLM source with the stdlib ``ast`` (source is data: parsed, never run).

Only the handful of files in :data:`mtp_audit.engines.vllm.target.WANTED` are parsed. Every
``scan_*`` function takes the file's bytes and returns a JSON-serialisable dict (cached by content
hash in :mod:`mtp_audit.engines.vllm.audit`); none raises for bad input: a file that is not UTF-8 or
does not parse gives ``{"gap": "..."}``.

Why ``ast`` and not libcst here: every fact needed is an expression tree plus a 1-based line
(``ast`` gives both from the C parser); the one fact ``ast`` drops, parentheses around a string
(lint MTP408), is recovered from the source text at the node's column. Parsing the six files of
0.33.0 with ``ast`` takes ~0.15 s; libcst with positions takes several seconds on them.
"""

from __future__ import annotations

import ast
import re
from typing import Any, TypeGuard

from mtp_audit.engines.code.pyast import dotted as _dotted
from mtp_audit.engines.code.pyast import is_log_call
from mtp_audit.engines.code.pyast import module_string_sets as module_consts
from mtp_audit.engines.code.pyast import parse_source as _parse
from mtp_audit.engines.code.pyast import source_text as _src
from mtp_audit.engines.code.pyast import strings_in as _strings_in
from mtp_audit.engines.vllm.chain import simulate_all

#: Bump when any extraction changes, so cached results are recomputed.
SCAN_VERSION = 8

#: ``SpeculativeConfig`` fields whose rewrites are reported.
FIELDS = ("method", "model", "quantization", "num_speculative_tokens", "enforce_eager", "tokenizer")

# --- module constants -------------------------------------------------------------------------


def _imports(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


# --- guards and rewrites ----------------------------------------------------------------------


class _Guard:
    __slots__ = ("node", "negated")

    def __init__(self, node: ast.If, negated: bool) -> None:
        self.node, self.negated = node, negated

    def text(self) -> str:
        t = _src(self.node.test)
        return f"not ({t})" if self.negated else t

    def to_json(self) -> dict[str, Any]:
        return {"test": _src(self.node.test), "negated": self.negated, "line": self.node.lineno}


def _is_self_attr(node: ast.AST, name: str | None = None) -> TypeGuard[ast.Attribute]:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" and (
        name is None or node.attr == name)


def _set_members(node: ast.AST, consts: dict[str, dict[str, Any]]) -> tuple[list[str], str] | None:
    """Members of a set a field is tested against, and how it is written: a literal tuple, a module
    constant, ``get_args(LiteralName)``, or a single string (a substring test, MTP408)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        vals = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return (vals, "literal") if len(vals) == len(node.elts) else None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value], "string"
    if isinstance(node, ast.Name) and node.id in consts:
        return list(consts[node.id]["values"]), node.id
    if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "get_args" and node.args and isinstance(node.args[0], ast.Name):
        n = node.args[0].id
        if n in consts:
            return list(consts[n]["values"]), f"get_args({n})"
    return None


def field_test(test: ast.AST, field: str, consts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """What ``test`` says about ``self.<field>``: ``{"op": "in"|"=="|"is None"|"falsy", "values",
    "via", "excluded"}`` (``excluded``: ``and self.method != "mtp"`` of 0.11.1+), or ``None``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found = None
        excluded: list[str] = []
        for v in test.values:
            if isinstance(v, ast.Compare) and len(v.ops) == 1 and _is_self_attr(v.left, field) and isinstance(v.ops[0], ast.NotEq) \
                    and isinstance(v.comparators[0], ast.Constant):
                excluded.append(str(v.comparators[0].value))
                continue
            sub = field_test(v, field, consts)
            if sub is not None and found is None:
                found = sub
        if found is not None:
            found = dict(found, excluded=excluded, values=[x for x in found["values"] if x not in excluded], partial=True)
        return found
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_self_attr(test.operand, field):
        return {"op": "falsy", "values": [], "via": None, "excluded": []}
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_self_attr(test.left, field)):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.In):
        m = _set_members(right, consts)
        if m is None:
            return {"op": "in", "values": [], "via": _src(right), "excluded": [], "unresolved": True}
        return {"op": "in", "values": m[0], "via": m[1], "excluded": []}
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
        return {"op": "==", "values": [str(right.value)], "via": None, "excluded": []}
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
        return {"op": "is None", "values": [], "via": None, "excluded": []}
    return None


def _reads_target(node: ast.AST) -> bool:
    return "target_model_config" in _src(node)


def _walk_writes(stmts: list[ast.stmt], guards: list[_Guard], out: list[dict[str, Any]], consts: dict[str, dict[str, Any]],
                 func: str) -> None:
    for st in stmts:
        if isinstance(st, ast.If):
            _walk_writes(st.body, guards + [_Guard(st, False)], out, consts, func)
            _walk_writes(st.orelse, guards + [_Guard(st, True)], out, consts, func)
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            _walk_writes(st.body, guards, out, consts, func)
            _walk_writes(getattr(st, "orelse", []), guards, out, consts, func)
        elif isinstance(st, ast.Try):
            for block in (st.body, st.orelse, st.finalbody, *[h.body for h in st.handlers]):
                _walk_writes(block, guards, out, consts, func)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                if _is_self_attr(t) and t.attr in FIELDS and st.value is not None:
                    out.append(_classify(t.attr, st, guards, stmts, consts, func))


def _classify(field: str, st: ast.Assign | ast.AnnAssign | ast.AugAssign, guards: list[_Guard], siblings: list[ast.stmt], consts: dict[str, dict[str, Any]],
              func: str) -> dict[str, Any]:
    """One rewrite ``self.<field> = value`` with its guard and kind.

    Kinds: ``alias`` (the innermost test of the same field against a set / literal, value a literal
    other than the tested ones), ``default-fill`` (guarded by ``self.<field> is None`` / ``not
    self.<field>``), ``auto-detect`` (``method`` written in the ``else`` of an ``if self.method in
    (...): pass`` that keeps a few explicit methods), ``draft-target`` (``model`` read from
    ``target_model_config``), ``inherited-quantization``, ``forced`` (anything else on a field the
    user may set, e.g. ``enforce_eager = True`` for DeepSeek-V3.2 in 0.11.0-0.28.0).
    """
    value = st.value
    assert value is not None  # the caller passes only writes with a value (a bare annotation writes nothing)
    logs = [s for s in siblings if isinstance(s, ast.Expr) and is_log_call(s.value)]
    lit = value.value if isinstance(value, ast.Constant) else None
    rec: dict[str, Any] = {
        "field": field, "line": st.lineno, "function": func, "value": _src(value)[:160],
        "literal": lit if isinstance(lit, (str, int, bool)) or lit is None and isinstance(value, ast.Constant) else None,
        "is_literal": isinstance(value, ast.Constant),
        "guards": [g.to_json() for g in guards], "logged": bool(logs),
        "log_line": logs[0].lineno if logs else None,
        "log_text": _strings_in(logs[0])[:200] if logs else None,
        "kind": "forced", "from": [], "via": None, "kept": [], "detector": None,
    }
    own = None
    for g in reversed(guards):
        ft = field_test(g.node.test, field, consts)
        if ft is not None:
            own = (g, ft)
            break
    kept_guard = None
    if field == "method":
        for g in guards:
            body = g.node.body
            if g.negated and len(body) == 1 and isinstance(body[0], ast.Pass):
                ft = field_test(g.node.test, "method", consts)
                if ft is not None and ft["op"] in ("in", "=="):
                    kept_guard = (g, ft)
    if own is not None and not own[0].negated and own[1]["op"] in ("is None", "falsy"):
        rec["kind"] = "default-fill"
    elif own is not None and not own[0].negated and own[1]["op"] in ("in", "==") and isinstance(lit, str) and not (
            own[1]["values"] == [lit]):
        rec["kind"] = "alias"
        rec["from"] = [v for v in own[1]["values"] if v != lit]
        rec["via"] = own[1].get("via")
    elif kept_guard is not None:
        rec["kind"] = "auto-detect"
        rec["kept"] = kept_guard[1]["values"]
        inner = guards[-1]
        rec["detector"] = _src(inner.node.test) if not inner.negated else None
        rec["detector_line"] = inner.node.lineno
    if rec["kind"] in ("forced", "default-fill") and field == "model" and _reads_target(value):
        rec["kind"] = "draft-target"
    elif rec["kind"] in ("forced", "default-fill") and field == "quantization" and _reads_target(value):
        rec["kind"] = "inherited-quantization"
    elif rec["kind"] == "forced" and field == "method" and any(
            field_test(g.node.test, "method", consts) is not None for g in guards if not g.negated):
        rec["kind"] = "normalisation"
    elif rec["kind"] == "forced" and field == "model" and any((ft := field_test(g.node.test, "model", consts)) and ft["op"] == "is None"
                                         for g in guards if not g.negated):
        rec["kind"] = "default-fill"
    return rec


# --- predicates (use_eagle() and friends) -------------------------------------------------------


def predicate_methods(fn: ast.FunctionDef, consts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Methods for which a ``SpeculativeConfig.use_*()`` / ``uses_*()`` predicate can be true:
    ``return self.method in (...)`` / ``== "x"`` (exact), the same inside ``and`` (``conditional``:
    further tests on the draft's config, e.g. 0.33.0 ``use_gemma4_mtp`` also needs
    ``model_type == "gemma4_mtp"``), or a leading ``if self.method != "x" ...: return False``
    (0.33.0 ``use_multi_module_mtp``). ``None`` when not understood."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return None
    first = body[0]
    if isinstance(first, ast.Return) and first.value is not None:
        return _pred_expr(first.value, consts)
    if isinstance(first, ast.If) and len(first.body) == 1 and isinstance(first.body[0], ast.Return):
        t = first.test
        parts = t.values if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.Or) else [t]
        for p in parts:
            if isinstance(p, ast.Compare) and len(p.ops) == 1 and _is_self_attr(p.left, "method") and isinstance(p.ops[0], ast.NotEq) \
                    and isinstance(p.comparators[0], ast.Constant):
                return {"methods": [str(p.comparators[0].value)], "conditional": True, "condition": _src(t)[:200]}
    return None


def _pred_expr(e: ast.AST, consts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    ft = field_test(e, "method", consts)
    if ft is not None and ft["op"] in ("in", "==") and not ft.get("unresolved"):
        return {"methods": ft["values"], "conditional": bool(ft.get("partial")), "condition": _src(e)[:200]}
    if isinstance(e, ast.BoolOp) and isinstance(e.op, ast.Or):
        ms: list[str] = []
        for v in e.values:
            sub = _pred_expr(v, consts)
            if sub is None:
                return None
            ms += sub["methods"]
        return {"methods": ms, "conditional": False, "condition": _src(e)[:200]}
    return None


# --- the SpeculativeConfig file ---------------------------------------------------------------


def init_fields(cls: ast.ClassDef) -> list[str]:
    """The fields a ``SpeculativeConfig(**...)`` call may name, in source order: the annotated class attributes that are
    not ``ClassVar`` and not ``field(init=False)`` (a pydantic dataclass with ``extra="forbid"`` refuses any other key:
    "Unexpected keyword argument")."""
    out = []
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and "ClassVar" not in _src(st.annotation):
            v = st.value
            if isinstance(v, ast.Call) and any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                                               for k in v.keywords):
                continue
            out.append(st.target.id)
    return out


def scan_spec(rel: str, data: bytes) -> dict[str, Any]:
    """Everything about ``class SpeculativeConfig`` (vllm/config.py 0.8.5 L2140, vllm/config/speculative.py
    0.11.0 L41, 0.33.0): the validated ``method`` Literal, whether the class is a pydantic dataclass,
    every field rewrite (:func:`_classify`), predicate methods, the draft ``ModelConfig(hf_overrides=...)``
    link, the ``hf_config_override`` chains (:mod:`.chain`), ``__post_init__`` architecture writes, the
    ``n_predict`` rules and the parenthesised-string ``in`` tests (whole file)."""
    tree, text, gap = _parse(rel, data)
    if tree is None:
        return {"gap": gap}
    consts = module_consts(tree)
    imports = _imports(tree)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SpeculativeConfig"), None)
    res: dict[str, Any] = {"gap": None, "consts": consts, "paren_in": paren_string_in_tests(tree, text)}
    if cls is None:
        res["gap"] = "no class SpeculativeConfig; not examined"
        return res
    decorators = [_src(d) for d in cls.decorator_list]
    res["class_line"] = cls.lineno
    res["decorators"] = decorators
    res["dataclass_from"] = next((imports.get(d.split("(")[0]) for d in decorators if imports.get(d.split("(")[0], "").endswith("dataclass")), None)
    res["config_decorator_from"] = imports.get("config") if "config" in decorators else None
    method_field = None
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == "method":
            names = [n.id for n in ast.walk(st.annotation) if isinstance(n, ast.Name) and n.id in consts]
            method_field = {"line": st.lineno, "annotation": _src(st.annotation), "literal": names[0] if names else None,
                            "skip_validation": "SkipValidation" in _src(st.annotation)}
    res["method_field"] = method_field
    res["fields"] = init_fields(cls)
    funcs = {st.name: st for st in cls.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    rewrites: list[dict[str, Any]] = []
    for name, fn in funcs.items():
        _walk_writes(fn.body, [], rewrites, consts, name)
    res["rewrites"] = rewrites
    preds = {}
    for name, fn in funcs.items():
        if name.startswith(("use_", "uses_")):
            p = predicate_methods(fn, consts)  # type: ignore[arg-type]
            preds[name] = dict(p, line=fn.lineno) if p else {"methods": None, "line": fn.lineno, "condition": None, "conditional": True}
    res["predicates"] = preds
    post = funcs.get("__post_init__")
    res["post_init_line"] = post.lineno if post else None
    res["override_link"] = _override_link(post, funcs) if post else None
    res["post_init_arch_writes"] = _post_init_arch_writes(post) if post else []
    res["n_predict_rules"] = _n_predict_rules(post) if post else {}
    ov = funcs.get("hf_config_override")
    if ov is not None:
        res["override"] = {"line": ov.lineno, "end_line": ov.end_lineno, "chains": simulate_all(ov, consts),
                           "source": ast.get_source_segment(text, ov) or ""}
    else:
        res["override"] = None
    return res


def _override_link(post: ast.AST, funcs: dict[str, Any]) -> dict[str, Any]:
    """How ``hf_config_override`` reaches the draft ``ModelConfig``: ``direct``
    (``hf_overrides=SpeculativeConfig.hf_config_override``, 0.8.5-0.24.0) or ``composed``
    (``hf_overrides=draft_hf_overrides`` built by ``compose_draft_hf_overrides``, 0.25.0+), else ``unknown``."""
    assigns: dict[str, ast.AST] = {}
    for n in ast.walk(post):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigns[n.targets[0].id] = n.value
    for n in ast.walk(post):
        if isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == "ModelConfig":
            for kw in n.keywords:
                if kw.arg != "hf_overrides":
                    continue
                v = kw.value
                if _dotted(v).endswith("hf_config_override"):
                    return {"how": "direct", "line": kw.value.lineno, "value": _src(v)}
                if isinstance(v, ast.Name) and v.id in assigns:
                    a = assigns[v.id]
                    helper = _dotted(a.func).split(".")[-1] if isinstance(a, ast.Call) else ""
                    h = funcs.get(helper)
                    if h is not None and "hf_config_override" in _src(h):
                        return {"how": "composed", "line": kw.value.lineno, "value": _src(v), "helper": helper, "helper_line": h.lineno}
                return {"how": "unknown", "line": kw.value.lineno, "value": _src(v)}
    return {"how": "unknown", "line": None, "value": None}


def _post_init_arch_writes(post: ast.AST) -> list[dict[str, Any]]:
    """Draft architectures written in ``__post_init__`` itself (not through ``hf_config_override``):
    ``x.architectures = [...]`` (DSpark, 0.25+) and ``{"architectures": [f"Transformers{moe}ForMTP"]}``
    (Transformers-backend MTP, 0.33.0 L1397). Each: ``{"line", "to": [str], "dynamic": bool}``."""
    out: list[dict[str, Any]] = []
    from mtp_audit.engines.vllm.chain import render_target

    for n in ast.walk(post):
        vals: list[ast.expr] = []
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "architectures" and not _is_self_attr(t) for t in n.targets):
            vals = [n.value]
        elif isinstance(n, ast.Dict):
            vals = [v for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and k.value == "architectures"]
        for v in vals:
            elts = v.elts if isinstance(v, (ast.List, ast.Tuple)) else [v]
            tos, dyn = [], False
            for e in elts:
                r = render_target(e)
                tos += r[0]
                dyn = dyn or r[1]
            out.append({"line": v.lineno, "to": tos, "dynamic": dyn})
    return out


def _n_predict_rules(post: ast.AST) -> dict[str, Any]:
    """The three ``num_speculative_tokens`` vs MTP-layer rules in ``__post_init__`` (research doc §8):
    the silent default ``self.num_speculative_tokens = n_predict`` (0.8.5 L2418), the divisibility
    ``ValueError`` (0.8.5 L2422, 0.11.0 L392) and the ">1 reuses one MTP layer" warning (0.11.0 L333)."""
    out: dict[str, Any] = {"default_line": None, "divisible_line": None, "reuse_warning_line": None, "reuse_warning_skips": []}
    parents: dict[int, ast.AST] = {}
    for p in ast.walk(post):
        for c in ast.iter_child_nodes(p):
            parents[id(c)] = p
    for n in ast.walk(post):
        if isinstance(n, ast.Assign) and any(_is_self_attr(t, "num_speculative_tokens") for t in n.targets) \
                and isinstance(n.value, ast.Name) and "predict" in n.value.id and out["default_line"] is None:
            out["default_line"] = n.lineno
        elif isinstance(n, ast.Raise) and n.exc is not None and "divisible" in _strings_in(n.exc) and out["divisible_line"] is None:
            out["divisible_line"] = n.lineno
        elif isinstance(n, ast.Call) and is_log_call(n) and "same MTP layer" in _strings_in(n) and out["reuse_warning_line"] is None:
            out["reuse_warning_line"] = n.lineno
            up = parents.get(id(n))
            while up is not None and not isinstance(up, ast.If):
                up = parents.get(id(up))
            if up is not None:
                out["reuse_warning_condition"] = _src(up.test)[:240]
                skips = [c.value for c in ast.walk(up.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                out["reuse_warning_skips"] = skips
    return out


def paren_string_in_tests(tree: ast.Module, text: str) -> list[dict[str, Any]]:
    """``x in ("a")``: an ``in`` / ``not in`` test against a single string written in parentheses,
    which Python reads as a substring test, not a one-element tuple (0.11.0 ``speculative.py:338``
    ``in ("longcat_flash_mtp")``; 0.33.0 L777 ``in ("pangu_ultra_moe")``). ``ast`` drops the
    parentheses, so they are read from the source line at the string's column."""
    lines = text.splitlines()
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn))):
            continue
        c = n.comparators[0]
        if not (isinstance(c, ast.Constant) and isinstance(c.value, str)) or c.lineno != c.end_lineno:
            continue
        line = lines[c.lineno - 1] if c.lineno - 1 < len(lines) else ""
        before = line[:c.col_offset].rstrip()
        after = line[c.end_col_offset:].lstrip() if c.end_col_offset is not None else ""
        if before.endswith("(") and after.startswith(")") and before[:-1].rstrip().endswith("in"):
            out.append({"line": c.lineno, "test": _src(n)[:160], "string": c.value})
    return out


# --- other files ------------------------------------------------------------------------------


def scan_registry(rel: str, data: bytes) -> dict[str, Any]:
    """Model-registry dicts (vllm/model_executor/models/registry.py): every module-level dict literal
    whose values are ``("module", "Class")`` pairs. ``_PREVIOUSLY_SUPPORTED_MODELS`` (arch -> last
    version) is kept apart. Returns ``{"archs": {arch: {"dict", "line", "module", "class"}}, "removed": {...}}``."""
    tree, _, gap = _parse(rel, data)
    if tree is None:
        return {"gap": gap}
    archs: dict[str, dict[str, Any]] = {}
    removed: dict[str, Any] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Dict)):
            continue
        for k, v in zip(value.keys, value.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            if target.id == "_PREVIOUSLY_SUPPORTED_MODELS":
                removed[k.value] = {"line": k.lineno, "value": _src(v)[:80]}
            elif isinstance(v, ast.Tuple) and len(v.elts) >= 2 and isinstance(mod := v.elts[0], ast.Constant) \
                    and isinstance(klass := v.elts[1], ast.Constant):
                archs.setdefault(k.value, {"dict": target.id, "line": k.lineno, "module": mod.value, "class": klass.value})
    return {"gap": None, "archs": archs, "removed": removed}


def scan_dispatch(rel: str, data: bytes) -> dict[str, Any]:
    """Proposer / speculator construction in a runner file: every ``self.drafter = XProposer(...)``
    (V1 ``gpu_model_runner.py``) and ``return XSpeculator(...)`` (V2 ``gpu/spec_decode/__init__.py``)
    with the ``if``/``elif`` tests leading to it, in source order. Each entry: ``{"class", "line",
    "guards": [{"test", "negated", "line"}], "function"}``."""
    tree, _, gap = _parse(rel, data)
    if tree is None:
        return {"gap": gap}
    out: list[dict[str, Any]] = []

    def visit(stmts: list[ast.stmt], guards: list[_Guard], func: str) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(st.body, [], st.name)
            elif isinstance(st, ast.ClassDef):
                visit(st.body, [], func)
            elif isinstance(st, ast.If):
                visit(st.body, guards + [_Guard(st, False)], func)
                visit(st.orelse, guards + [_Guard(st, True)], func)
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
                visit(st.body, guards, func)
            elif isinstance(st, ast.Try):
                for b in (st.body, st.orelse, st.finalbody, *[h.body for h in st.handlers]):
                    visit(b, guards, func)
            else:
                val = None
                if isinstance(st, (ast.Assign, ast.AnnAssign)):
                    tg = st.targets if isinstance(st, ast.Assign) else [st.target]
                    if any(_is_self_attr(t, "drafter") for t in tg):
                        val = st.value
                elif isinstance(st, ast.Return):
                    val = st.value
                if isinstance(val, ast.Call):
                    name = _dotted(val.func).split(".")[-1]
                    # ``NgramProposerGPU`` (0.24.0 gpu_model_runner.py:575) ends in neither suffix
                    if name.endswith(("Proposer", "Speculator")) or "Proposer" in name or name == "create_custom_proposer":
                        out.append({"class": name, "line": st.lineno, "function": func, "guards": [g.to_json() for g in guards]})

    visit(tree.body, [], "<module>")
    return {"gap": None, "dispatch": out}


_ENV_KEY = re.compile(rb'^\s+"(VLLM_[A-Z0-9_]+)"\s*:', re.M)
_ENV_GETENV = re.compile(rb'getenv\(\s*"(VLLM_[A-Z0-9_]+)"\s*,\s*([^)\n]*)\)')
#: Env var names reported: spec decode, MTP, the V1/V2 runner switches, FP4 and MoE backends.
ENV_RELEVANT = re.compile(r"SPEC|MTP|EAGLE|DRAFT|NGRAM|FP4|MOE|MARLIN|USE_V1$|V2_MODEL_RUNNER|NVFP4|MXFP4|TRTLLM|CUTLASS_MOE|DEEPEP")


def scan_envs(rel: str, data: bytes) -> dict[str, Any]:
    """Environment variables vllm/envs.py defines (keys of ``environment_variables``, a
    ``"VLLM_X": lambda: ...`` dict literal in every version 0.7-0.33), with their line and, for the
    ones matching :data:`ENV_RELEVANT`, the raw default text of ``os.getenv("VLLM_X", DEFAULT)``.
    Also where unknown ``VLLM_*`` variables are reported (``validate_environ``)."""
    lines: dict[str, int] = {}
    nl = _NewlineIndex(data)
    for m in _ENV_KEY.finditer(data):
        lines.setdefault(m.group(1).decode(), nl.line(m.start(1)))
    defaults: dict[str, str] = {}
    for m in _ENV_GETENV.finditer(data):
        name = m.group(1).decode()
        if ENV_RELEVANT.search(name) and name not in defaults:
            defaults[name] = m.group(2).decode("utf-8", "replace").strip()[:60]
    unknown = data.find(b"Unknown vLLM environment variable")
    return {"gap": None if lines else "no environment_variables entries found", "defined": lines, "defaults": defaults,
            "unknown_warning_line": nl.line(unknown) if unknown >= 0 else None}


class _NewlineIndex:
    def __init__(self, data: bytes) -> None:
        import bisect

        self._bisect = bisect.bisect_right
        self.offsets = [m.start() for m in re.finditer(rb"\n", data)]

    def line(self, offset: int) -> int:
        return self._bisect(self.offsets, offset - 1) + 1 if offset > 0 else 1


def find_line(data: bytes, pattern: bytes) -> int | None:
    """1-based line of the first match of regex ``pattern`` in ``data``, or ``None``."""
    m = re.search(pattern, data, re.M)
    return data.count(b"\n", 0, m.start()) + 1 if m else None


def scan_arg_utils(rel: str, data: bytes) -> dict[str, Any]:
    """vllm/engine/arg_utils.py: the V1 oracle's accepted speculative methods (0.8.5 L1430-1436:
    ``speculative_method in ("eagle", "eagle3")``), the speculators call site
    (``maybe_override_with_speculators(``, 0.11.0 L1135), and the ``--spec-*`` shorthand flags (0.22+)."""
    tree, _, gap = _parse(rel, data)
    if tree is None:
        return {"gap": gap}
    oracle: list[dict[str, Any]] = []
    spec_flags: list[dict[str, Any]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "_is_v1_supported_oracle":
            for n in ast.walk(fn):
                if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == "speculative_method" and len(n.ops) == 1:
                    c = n.comparators[0]
                    vals = [e.value for e in getattr(c, "elts", [c]) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                    oracle.append({"line": n.lineno, "values": vals})
        if isinstance(fn, ast.Call) and isinstance(fn.func, ast.Attribute) and fn.func.attr == "add_argument" and fn.args \
                and isinstance(fn.args[0], ast.Constant) and str(fn.args[0].value).startswith("--spec-"):
            spec_flags.append({"flag": fn.args[0].value, "line": fn.lineno})
    accepted = sorted({v for o in oracle for v in o["values"]})
    return {"gap": None, "v1_oracle": {"lines": [o["line"] for o in oracle], "accepted": accepted} if oracle else None,
            "speculators_call_line": find_line(data, rb"maybe_override_with_speculators\("),
            "spec_flags": spec_flags}


def scan_tu_config(rel: str, data: bytes) -> dict[str, Any]:
    """``maybe_override_with_speculators`` (vllm/transformers_utils/config.py, 0.11.0 L470, 0.33.0 L800):
    whether the user's ``vllm_speculative_config`` is merged (``.update(vllm_speculative_config)``,
    0.29+) or replaced, and whether the function logs."""
    tree, _, gap = _parse(rel, data)
    if tree is None:
        return {"gap": gap}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "maybe_override_with_speculators":
            merged = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update" and n.args
                         and isinstance(n.args[0], ast.Name) and n.args[0].id == "vllm_speculative_config" for n in ast.walk(fn))
            logs = [n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and is_log_call(n)]
            swap = next((n.lineno for n in ast.walk(fn) if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "model" for t in n.targets) and "verifier" in _src(n.value)), None)
            return {"gap": None, "speculators": {"line": fn.lineno, "merges_user_config": merged, "logged": bool(logs),
                                                 "swap_line": swap}}
    return {"gap": None, "speculators": None}


def scan_text(rel: str, data: bytes, patterns: dict[str, bytes]) -> dict[str, Any]:
    """Lines of a few byte patterns in a file that is not parsed (``config/vllm.py``,
    ``config/utils.py``, ``platforms/interface.py``, the V0 worker)."""
    return {"gap": None, **{k: find_line(data, p) for k, p in patterns.items()}}
