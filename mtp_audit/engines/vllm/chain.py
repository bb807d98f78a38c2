"""Simulate ``SpeculativeConfig.hf_config_override`` on a draft config, statically.

The function is a sequence of ``if`` tests on ``hf_config.model_type`` / ``hf_config.architectures[0]``
that write ``hf_config.model_type = "..._mtp"`` and ``hf_config.update({"architectures": [...]})``.
Two-step rewrites (``deepseek_v3`` -> ``deepseek_mtp``, then ``if model_type == "deepseek_mtp":
update(...)``) only show their result when the statements run in order, so the function is
*interpreted* over a tiny abstract state ``{model_type, architecture}``: one run per start key (each
literal the function compares ``model_type`` or an architecture with), where the other field is
"some other value" that equals nothing.

Shapes handled (research doc §6 a-i, checked on 0.8.5 / 0.11.0 / 0.20.0 / 0.33.0):
two-step chains; arch-keyed tests, ``initial_architecture = hf_config.architectures[0]`` and the walrus
``(arch := hf_config.architectures[0]) in (...)``; ``"X" in architectures`` of a local
``getattr(hf_config, "architectures", [])``; ``{...}.intersection(...)``; conditional targets
(``IfExp``, nested ``IfExp`` through a local); local dict lookups (``mtp_arch_maps[arch]``);
``overrides = {...}; overrides["architectures"] = [...]; hf_config.update(overrides)``;
``hf_config = getattr(hf_config, "text_config", hf_config)`` rebinding; f-string targets (dynamic);
early ``return``; ``x in ("single string")`` with Python's substring semantics.

A test that depends on anything else (``getattr(hf_config, "n_routed_experts", ...)``, a parameter)
is *unknown*: its branch runs and everything written in it is marked ``conditional``.
"""

from __future__ import annotations

import ast
from typing import Any


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
#: The value of a field that is not the start key: equal to no literal, a substring of no string.
OTHER = "\x00other"


class _HF:
    """The draft's ``hf_config`` object (also after ``text_config`` rebinding)."""


class _Choice:
    def __init__(self, options: list[Any]) -> None:
        self.options = options


class _Dyn:
    def __init__(self, text: str) -> None:
        self.text = text


HF = _HF()


def render_target(node: ast.AST) -> tuple[list[str], bool]:
    """Architecture strings an expression can produce without any state: a constant, both arms of
    an ``IfExp``, an f-string rendered with its placeholders (``Transformers{moe}ForMTP``, dynamic).
    Returns (strings, dynamic)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value], False
    if isinstance(node, ast.IfExp):
        a, da = render_target(node.body)
        b, db = render_target(node.orelse)
        return a + b, da or db
    if isinstance(node, ast.JoinedStr):
        return [_fstring(node)], True
    return [f"<{ast.unparse(node)}>"], True


def _fstring(node: ast.JoinedStr) -> str:
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(str(v.value))
        elif isinstance(v, ast.FormattedValue):
            parts.append("{" + ast.unparse(v.value) + "}")
    return "".join(parts)


class _Run:
    def __init__(self, consts: dict[str, dict[str, Any]], model_type: str, arch: str) -> None:
        self.consts = consts
        self.state = {"model_type": model_type, "arch": arch}
        self.env: dict[str, Any] = {"hf_config": HF}
        self.src: dict[str, str] = {}
        self.cond = 0
        self.steps: list[dict[str, Any]] = []
        self.n_predict: list[str] = []
        self.text_config_line: int | None = None
        self.stopped: str | None = None

    # -- expressions --
    def ev(self, n: ast.AST) -> Any:  # noqa: C901 - one dispatch over node types
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            if n.id in self.env:
                return self.env[n.id]
            if n.id in self.consts:
                return list(self.consts[n.id]["values"])
            return UNKNOWN
        if isinstance(n, ast.Attribute):
            base = self.ev(n.value)
            if base is HF and n.attr == "model_type":
                return self.state["model_type"]
            if base is HF and n.attr == "architectures":
                return [self.state["arch"]]
            return UNKNOWN
        if isinstance(n, ast.Subscript):
            base = self.ev(n.value)
            key = self.ev(n.slice)
            if isinstance(base, list) and isinstance(key, int) and -len(base) <= key < len(base):
                return base[key]
            if isinstance(base, dict):
                if key is UNKNOWN or isinstance(key, (_Choice, _Unknown)):
                    return _Choice(list(base.values()))
                return base.get(key, UNKNOWN)
            return UNKNOWN
        if isinstance(n, ast.Call):
            return self.call(n)
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return [self.ev(e) for e in n.elts]
        if isinstance(n, ast.Dict):
            d: dict[Any, Any] = {}
            for k, v in zip(n.keys, n.values):
                if k is None:
                    continue
                kv = self.ev(k)
                if isinstance(kv, str):
                    d[kv] = v  # keep the node: values are evaluated where they are used
            return d
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            return self.compare(self.ev(n.left), n.ops[0], self.ev(n.comparators[0]))
        if isinstance(n, ast.BoolOp):
            # Python semantics: the operand itself is the value (``getattr(...) or []`` is a list)
            vals = [self.ev(v) for v in n.values]
            truths = [self.truth(v) for v in vals]
            if isinstance(n.op, ast.And):
                if False in truths:
                    return False
                return vals[-1] if all(t is True for t in truths) else UNKNOWN
            for v, t in zip(vals, truths):
                if t is True:
                    return v
                if t is UNKNOWN:
                    return True if True in truths else UNKNOWN
            return vals[-1]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            t = self.truth(self.ev(n.operand))
            return UNKNOWN if t is UNKNOWN else not t
        if isinstance(n, ast.IfExp):
            t = self.truth(self.ev(n.test))
            if t is True:
                return self.ev(n.body)
            if t is False:
                return self.ev(n.orelse)
            return _Choice([self.ev(n.body), self.ev(n.orelse)])
        if isinstance(n, ast.NamedExpr):
            v = self.ev(n.value)
            self.env[n.target.id] = v
            return v
        if isinstance(n, ast.JoinedStr):
            return _Dyn(_fstring(n))
        return UNKNOWN

    def call(self, n: ast.Call) -> Any:
        f = n.func
        if isinstance(f, ast.Name) and f.id == "getattr" and len(n.args) >= 2:
            base, attr = self.ev(n.args[0]), self.ev(n.args[1])
            if base is HF and attr == "architectures":
                return [self.state["arch"]]
            if base is HF and attr == "model_type":
                return self.state["model_type"]
            if base is HF and attr == "text_config" and len(n.args) == 3 and self.ev(n.args[2]) is HF:
                return HF  # no text_config -> the config itself; the rewrite then applies to it
            return UNKNOWN
        if isinstance(f, ast.Name) and f.id == "get_args" and n.args:
            v = self.ev(n.args[0])
            return v if isinstance(v, list) else UNKNOWN
        if isinstance(f, ast.Attribute) and f.attr == "intersection" and n.args:
            a, b = self.ev(f.value), self.ev(n.args[0])
            if isinstance(a, list) and isinstance(b, list) and not any(x is UNKNOWN for x in a + b):
                return [x for x in a if x in b]
            return UNKNOWN
        if isinstance(f, ast.Attribute) and f.attr == "update" and self.ev(f.value) is HF and n.args:
            self.update(n, self.ev(n.args[0]), n.args[0])
            return None
        return UNKNOWN

    @staticmethod
    def truth(v: Any) -> Any:
        if v is UNKNOWN or isinstance(v, (_Choice, _Dyn)):
            return UNKNOWN
        if isinstance(v, list) and any(x is UNKNOWN for x in v):
            return UNKNOWN if not any(x not in (UNKNOWN, OTHER) for x in v) else True
        return bool(v) if v != OTHER else True

    @staticmethod
    def compare(a: Any, op: ast.cmpop, b: Any) -> Any:
        if a is UNKNOWN or b is UNKNOWN or isinstance(a, (_Choice, _Dyn, _HF)) or isinstance(b, (_Choice, _Dyn, _HF)):
            return UNKNOWN
        try:
            if isinstance(op, ast.Eq):
                return a == b
            if isinstance(op, ast.NotEq):
                return a != b
            if isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(b, list) and any(x is UNKNOWN for x in b):
                    return UNKNOWN
                if isinstance(b, str) and isinstance(a, str):
                    r = a != OTHER and a in b  # Python's substring test, as vLLM's `in ("x")` really does
                else:
                    r = a in b
                return r if isinstance(op, ast.In) else not r
            if isinstance(op, ast.Is):
                return a is b
            if isinstance(op, ast.IsNot):
                return a is not b
        except TypeError:
            return UNKNOWN
        return UNKNOWN

    # -- writes --
    def targets_of(self, v: Any) -> tuple[list[str], bool, bool]:
        """(strings, conditional, dynamic) from an evaluated architectures value."""
        out: list[str] = []
        cond = dyn = False
        items = v if isinstance(v, list) else [v]
        for it in items:
            if isinstance(it, ast.AST):
                it = self.ev(it)
            if isinstance(it, _Choice):
                cond = True
                for o in it.options:
                    s, c, d = self.targets_of(o)
                    out += s
                    dyn = dyn or d
            elif isinstance(it, _Dyn):
                out.append(it.text)
                dyn = True
            elif isinstance(it, str):
                out.append(it)
            elif isinstance(it, list):
                s, c, d = self.targets_of(it)
                out += s
                cond, dyn = cond or c, dyn or d
            else:
                out.append("<unknown>")
                dyn = True
        return out, cond, dyn

    def step(self, field: str, to: list[str], line: int, conditional: bool, dynamic: bool) -> None:
        self.steps.append({"field": field, "to": to, "line": line, "conditional": conditional or self.cond > 0, "dynamic": dynamic})

    def update(self, call: ast.Call, d: Any, arg: ast.AST) -> None:
        if not isinstance(d, dict):
            return
        if "architectures" in d:
            node = d["architectures"]
            c0 = isinstance(node, _CondNode)
            if c0:
                node = node.node
            v = self.ev(node) if isinstance(node, ast.AST) else node
            to, c, dy = self.targets_of(v)
            c = c or c0
            self.step("architectures", to, call.lineno, c, dy)
            if len(to) == 1 and not c and not dy:
                self.state["arch"] = to[0]
        if "model_type" in d:
            node = d["model_type"]
            v = self.ev(node) if isinstance(node, ast.AST) else node
            if isinstance(v, str):
                self.step("model_type", [v], call.lineno, False, False)
                self.state["model_type"] = v
        if "n_predict" in d:
            node = d["n_predict"]
            text = ast.unparse(node) if isinstance(node, ast.AST) else repr(node)
            if isinstance(node, ast.Name) and node.id in self.src:
                text = self.src[node.id]
            self.n_predict.append(text)

    def assign(self, st: ast.Assign) -> None:
        value = st.value
        for t in st.targets:
            if isinstance(t, ast.Name):
                v = self.ev(value)
                if t.id == "hf_config":
                    if v is HF:
                        self.text_config_line = st.lineno
                        self.env["hf_config"] = HF
                    else:
                        self.env["hf_config"] = UNKNOWN
                    continue
                self.env[t.id] = v
                self.src[t.id] = ast.unparse(value)
            elif isinstance(t, ast.Attribute) and self.ev(t.value) is HF:
                v = self.ev(value)
                if t.attr == "model_type":
                    to, c, dy = self.targets_of(v)
                    self.step("model_type", to, st.lineno, c, dy)
                    if len(to) == 1 and not c and not dy:
                        self.state["model_type"] = to[0]
                elif t.attr == "architectures":
                    to, c, dy = self.targets_of(v)
                    self.step("architectures", to, st.lineno, c, dy)
                    if len(to) == 1 and not c and not dy:
                        self.state["arch"] = to[0]
            elif isinstance(t, ast.Subscript):
                base = self.ev(t.value)
                key = self.ev(t.slice)
                if isinstance(base, dict) and isinstance(key, str):
                    base[key] = value if self.cond == 0 else _CondNode(value)

    # -- statements --
    def run(self, stmts: list[ast.stmt]) -> bool:
        """Run ``stmts``; True when the function returned or raised unconditionally."""
        for st in stmts:
            if isinstance(st, ast.If):
                t = self.truth(self.ev(st.test))
                if t is True:
                    if self.run(st.body):
                        return True
                elif t is False:
                    if self.run(st.orelse):
                        return True
                else:
                    self.cond += 1
                    self.run(st.body)
                    self.run(st.orelse)
                    self.cond -= 1
            elif isinstance(st, ast.Assign):
                self.assign(st)
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                self.assign(ast.Assign(targets=[st.target], value=st.value, lineno=st.lineno))
            elif isinstance(st, ast.Expr):
                self.ev(st.value)
            elif isinstance(st, (ast.Return, ast.Raise)):
                if self.cond == 0:
                    self.stopped = f"{'returns' if isinstance(st, ast.Return) else 'raises'} at line {st.lineno}"
                    return True
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    self.env[(a.asname or a.name).split(".")[0]] = UNKNOWN
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
                self.cond += 1
                self.run(st.body)
                self.cond -= 1
        return False


class _CondNode(ast.AST):
    """A dict value stored under an unknown branch (``if not is_v41: overrides["architectures"] = ...``)."""

    def __init__(self, node: ast.AST) -> None:
        super().__init__()
        self.node = node


def _start_keys(fn: ast.FunctionDef | ast.AsyncFunctionDef, consts: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(field, literal) pairs the function tests: ``("model_type", "deepseek_v3")``, ``("arch", "MiMoForCausalLM")``."""
    arch_names = {"initial_architecture", "arch", "architectures", "architecture"}
    keys: list[tuple[str, str]] = []

    def lits(n: ast.AST) -> list[str]:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return [n.value]
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(n, ast.Name) and n.id in consts:
            return list(consts[n.id]["values"])
        return []

    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            left, right = n.left, n.comparators[0]
            lt = ast.unparse(left)
            if isinstance(left, ast.NamedExpr):
                lt = ast.unparse(left.value)
            if lt.endswith("model_type") and "text_config" not in lt.split(".")[0]:
                keys += [("model_type", v) for v in lits(right)]
            elif "architectures" in lt or lt in arch_names:
                keys += [("arch", v) for v in lits(right)]
            elif isinstance(left, ast.Constant) and isinstance(right, ast.Name) and right.id in arch_names:
                keys += [("arch", v) for v in lits(left)]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "intersection" and n.args \
                and "architectures" in ast.unparse(n.args[0]):
            keys += [("arch", v) for v in lits(n.func.value)]
    seen: set[tuple[str, str]] = set()
    out = []
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def simulate(fn: ast.FunctionDef | ast.AsyncFunctionDef, consts: dict[str, dict[str, Any]], model_type: str | None, arch: str | None) -> dict[str, Any]:
    """Run ``hf_config_override`` on a config with this ``model_type`` / first architecture (``None``:
    a value equal to no literal). Returns ``{"model_type", "architectures", "steps", "conditional",
    "dynamic", "n_predict_from", "text_config_line", "stopped"}``; ``architectures`` is ``None`` when
    no architecture was written."""
    run = _Run(consts, model_type or OTHER, arch or OTHER)
    run.run(fn.body)
    arch_steps = [s for s in run.steps if s["field"] == "architectures"]
    archs: list[str] | None = None
    if arch_steps:
        # the last unconditional write wins; conditional writes after it add options
        last_uncond = max((i for i, s in enumerate(arch_steps) if not s["conditional"]), default=None)
        chosen = arch_steps[last_uncond:] if last_uncond is not None else arch_steps
        archs = []
        for s in chosen:
            archs += [a for a in s["to"] if a not in archs]
    mt = run.state["model_type"]
    return {
        "model_type": None if mt == OTHER else mt,
        "architectures": archs,
        "steps": run.steps,
        "conditional": any(s["conditional"] for s in arch_steps) or (archs is not None and len(archs) > 1),
        "dynamic": any(s["dynamic"] for s in arch_steps),
        "n_predict_from": run.n_predict,
        "text_config_line": run.text_config_line,
        "stopped": run.stopped,
    }


def simulate_all(fn: ast.FunctionDef | ast.AsyncFunctionDef, consts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One :func:`simulate` per start key that ends in a written architecture or a changed
    ``model_type``; each result gains ``"key": "model_type"|"arch"`` and ``"value"``."""
    out = []
    for field, value in _start_keys(fn, consts):
        r = simulate(fn, consts, value if field == "model_type" else None, value if field == "arch" else None)
        if r["architectures"] is None and not any(s["field"] == "model_type" for s in r["steps"]):
            continue
        out.append({"key": field, "value": value, **r})
    return out
