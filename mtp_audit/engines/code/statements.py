"""A statement-order replay of whole audited Python functions (parsed with ``ast``, never imported or run): the
function-level companion of :mod:`mtp_audit.engines.code.evaluator` (which evaluates one condition with Python's
semantics); this module runs a function body, its assignments, calls into the same class and module, and hooks for
what lies outside the file.

:class:`Replay` walks a function's statements in source order over partly known values, with Python's own semantics
where the values are known, and forks the path only where a test it cannot decide changes what happens next:

- values are plain Python data (``None``, numbers, strings, tuples, lists, dicts), :class:`Obj` (an object whose
  attributes are known one by one; a missing attribute reads as :data:`UNKNOWN`) or :data:`UNKNOWN`;
- an operator applied to known values is applied for real to those data values (``None > 1`` raises ``TypeError``
  with Python's own message), so the path ends there with that exception and the ``file:line`` of the statement;
- a false ``assert`` raises ``AssertionError`` with its message, ``raise`` ends the path, ``return`` ends the call;
- a test that is :data:`UNKNOWN` forks the path in two (each remembers the assumption it made, with its line);
  paths that end in the same state are merged again, so only the tests that change the outcome multiply paths;
- calls: methods of the replayed class and module functions are followed (depth-bounded); builtins that are
  safe on data (``getattr`` on :class:`Obj`, ``len``, ``min`` ...), ``str`` methods, ``typing.get_args`` on a
  module-level ``Literal[...]`` and log calls (recorded, return ``None``) are understood; the engine adapter
  supplies ``hooks`` for what the engine builds from outside the file (``ModelConfig(...)``, a registry check);
  anything else returns :data:`UNKNOWN` and its side effects are not modelled.

A statement the replay cannot follow (``while``, a ``for`` over an unknown iterable that assigns or raises, too
many paths) marks the path ``lost``: the adapter reports that question as "could not tell", never a guess.

Used by the vLLM launch (:mod:`mtp_audit.engines.vllm.launch.spec_config_replay`) for ``SpeculativeConfig.__post_init__``.
An engine adopts it by giving :class:`Replay` the parsed module, the class name and its hooks
(``Replay(module, rel, cls="ServerArgs", hooks={...}).call("_handle_x", self_obj)``).
"""

from __future__ import annotations

import ast
import copy
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class _Unknown:
    _inst: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __deepcopy__(self, memo: Any) -> _Unknown:
        return self

    def __bool__(self) -> bool:
        raise TypeError("UNKNOWN has no truth value")


#: a value the replay does not know
UNKNOWN: Any = _Unknown()
#: the most paths one replay keeps; more is a lost path ("could not tell")
MAX_PATHS = 64
MAX_DEPTH = 6


class Obj:
    """An object with known attributes (``attrs``); reading a missing one gives :data:`UNKNOWN` (or ``default``
    when one was declared, e.g. a dataclass field default). ``name`` says what it stands for in messages. An attribute
    ``__truth__`` (``True`` / ``False`` / :data:`UNKNOWN`) is the object's truth in tests (its ``__bool__``)."""

    def __init__(self, name: str, attrs: Mapping[str, Any] | None = None, *, strict: bool = False) -> None:
        self.name = name
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.strict = strict

    def get(self, key: str) -> Any:
        """The attribute ``key`` (:data:`UNKNOWN` when not known)."""
        return self.attrs.get(key, UNKNOWN)

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Bounded:
    """An integer known only to lie between ``lo`` and ``hi`` (``None``: no upper bound), e.g. a length derived from a
    config whose exact value the launch does not know: an ordering comparison with a known integer is decided where the
    interval allows (``1024 > Bounded(163840)`` is ``False``), anything else is :data:`UNKNOWN` (it is not plain data)."""

    def __init__(self, lo: int, hi: int | None = None, name: str = "an integer") -> None:
        self.lo, self.hi, self.name = lo, hi, name

    def __repr__(self) -> str:
        return f"<{self.name}: at least {self.lo}" + (f", at most {self.hi}>" if self.hi is not None else ">")

    def __deepcopy__(self, memo: Any) -> Bounded:
        return self

    def __bool__(self) -> bool:
        if self.lo > 0:
            return True
        raise TypeError("the truth of a bounded integer that may be 0 is not known")

    def compare(self, op: ast.cmpop, other: Any, flipped: bool) -> Any:
        """``self OP other`` (``other OP self`` when ``flipped``) for an integer ``other``: ``True``/``False`` where every
        value of the interval gives the same answer, else :data:`UNKNOWN`."""
        if isinstance(other, bool) or not isinstance(other, int) or type(op) not in _CMP:
            return UNKNOWN
        f = _CMP[type(op)]
        ends = [self.lo, self.hi if self.hi is not None else max(self.lo, other) + 1]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            inside = self.lo <= other and (self.hi is None or other <= self.hi)
            if inside and self.lo != self.hi:
                return UNKNOWN
        got = {f(other, e) if flipped else f(e, other) for e in ends}
        return got.pop() if len(got) == 1 else UNKNOWN


@dataclass
class Raised:
    """An exception the replayed code raises: its class name, its message (``{...}`` for unknown parts), where;
    ``none_operands``: for an operator that failed on ``None`` (``cfg.speculative_eagle_topk > 1``), the source text of
    each operand that was ``None``."""

    type: str
    message: str
    location: str
    none_operands: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.type}: {self.message} ({self.location})"


class Native:
    """A callable value the adapter puts into the replayed world (a bound method of an object modelled outside the
    file, an enum member's ``get_class``): calling it runs ``fn(replay, path, args, kwargs, node)``, like a hook, and
    it may raise :class:`HookRaise`. ``name`` is what messages show. ``split`` (optional, same arguments) gives the
    call's distinct outcomes ``[(value, Raised | None, assumed), ...]``: an assignment ``x = f(...)`` then continues once
    per outcome instead of reading an undecided call as :data:`UNKNOWN`."""

    def __init__(self, name: str, fn: Callable[..., Any], split: Callable[..., Any] | None = None) -> None:
        self.name, self.fn, self.split = name, fn, split

    def __repr__(self) -> str:
        return f"<native {self.name}>"

    def __deepcopy__(self, memo: Any) -> Native:
        return self


def _none_operands(n: ast.AST, vals: list[Any]) -> tuple[str, ...]:
    """The operands of a one-operator comparison, a binary or a unary operation that are ``None``, as source text."""
    if isinstance(n, ast.Compare) and len(n.ops) == 1:
        nodes: list[ast.AST] = [n.left, n.comparators[0]]
    elif isinstance(n, ast.BinOp):
        nodes = [n.left, n.right]
    elif isinstance(n, ast.UnaryOp):
        nodes = [n.operand]
    else:
        return ()
    return tuple(ast.unparse(node) for node, v in zip(nodes, vals) if v is None) if len(nodes) == len(vals) else ()


@dataclass
class Path:
    """One path through the replayed code: the locals of each frame, what it assumed, logged, and how it ended."""

    frames: list[dict[str, Any]]
    assumed: list[tuple[str, bool, str]] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    raised: Raised | None = None
    returned: bool = False
    ret: Any = None
    lost: str | None = None
    #: the object bound to ``self`` by :meth:`Replay.call` (each forked path has its own copy)
    bound: Any = None
    #: ``"break"`` / ``"continue"`` while leaving a loop body
    jump: str | None = None
    #: ``file:line`` of the last ``return`` statement run on this path
    ret_loc: str | None = None

    @property
    def done(self) -> bool:
        """Whether the current block stops executing (raise, return, lost, or a break/continue)."""
        return self.raised is not None or self.returned or self.lost is not None or self.jump is not None

    def fork(self) -> Path:
        """A deep copy (objects included)."""
        return copy.deepcopy(self)


class _Exit(Exception):
    pass


#: ``self_obj`` for :meth:`Replay.run_on`: each path's own :attr:`Path.bound`
_BOUND = object()


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
        ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitAnd: operator.and_}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt,
        ast.LtE: operator.le}
_STR_METHODS = ("lower", "upper", "startswith", "endswith", "strip", "split", "replace", "removeprefix", "removesuffix",
                "isidentifier", "isdigit", "rsplit", "partition", "rpartition", "join")
#: list methods that change the list in place (followed on the path's own copy)
_LIST_MUTATORS = ("append", "extend", "insert")
_UNARY_OPS: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_SAFE_BUILTINS: dict[str, Callable[..., Any]] = {"len": len, "min": min, "max": max, "str": str, "int": int, "bool": bool,
                                                 "abs": abs, "tuple": tuple, "list": list, "sorted": sorted, "any": any, "all": all}
_LOG_NAMES = ("logger", "logging", "log", "_logger", "warnings")


def _is_ref(v: Any) -> bool:
    """Whether ``v`` is the replay's placeholder for a name it could not resolve (``("__ref__", "envs.X")``)."""
    return isinstance(v, tuple) and len(v) == 2 and v[0] == "__ref__" and isinstance(v[1], str)


def _data(v: Any) -> bool:
    """Whether ``v`` is plain data the replay may apply Python operators to."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(_data(x) for x in v)
    if isinstance(v, dict):
        return all(_data(k) and _data(x) for k, x in v.items())
    return False


class Replay:
    """Replays functions of one parsed module (``module``, its path ``rel`` in the engine tree) over known values.

    Args:
        module: the parsed module.
        rel: the module's path in the engine tree (``vllm/config/speculative.py``), for ``file:line``.
        cls: the class whose methods ``self.m()`` / ``Cls.m()`` resolve to.
        hooks: dotted callee text (``ModelConfig``, ``self.update_arch_``, ``EAGLEConfig``) -> ``f(replay, path,
            args, kwargs)`` returning a value or raising :class:`HookRaise`; consulted before anything else.
        names: module-level names with known values (added to the module's own constants).
    """

    def __init__(self, module: ast.Module, rel: str, cls: str | None = None,
                 hooks: Mapping[str, Callable[..., Any]] | None = None, names: Mapping[str, Any] | None = None) -> None:
        self.rel = rel
        self.hooks = dict(hooks or {})
        self.functions: dict[str, ast.FunctionDef] = {}
        self.methods: dict[str, ast.FunctionDef] = {}
        self.cls = cls
        self.globals: dict[str, Any] = {}
        self.class_node: ast.ClassDef | None = None
        classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
        for node in module.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef) and node.name == cls:
                self.class_node = node
                self.methods = _methods_with_bases(node, classes)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self._global(node)
        self.globals.update(names or {})
        self._depth = 0

    # ----------------------------------------------------------------- module facts
    def _global(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return
        v = self._static(node.value)
        if v is not UNKNOWN:
            self.globals[targets[0].id] = v

    def _static(self, node: ast.AST) -> Any:
        """A module-level value: a literal, a ``Literal[...]`` (its values as a tuple), or a name defined before."""
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            vals = [self._static(e) for e in elts]
            # a Literal nested in a Literal is flattened, as typing does (Literal[Literal["a"], "b"] == Literal["a", "b"])
            flat = [x for v in vals for x in (v[1] if isinstance(v, tuple) and len(v) == 2 and v[0] == "__literal__" else (v,))]
            return ("__literal__", tuple(flat)) if all(v is not UNKNOWN for v in vals) else UNKNOWN
        if isinstance(node, ast.Name):
            return self.globals.get(node.id, UNKNOWN)
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return UNKNOWN

    def field_defaults(self) -> dict[str, Any]:
        """The class's annotated fields with a literal default (``x: int | None = None``, ``Field(default=...)``),
        name -> value; fields without one are left out (they read as :data:`UNKNOWN`)."""
        out: dict[str, Any] = {}
        for st in (self.class_node.body if self.class_node else []):
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                v = st.value
                if isinstance(v, ast.Call) and ast.unparse(v.func).split(".")[-1] in ("Field", "field"):
                    kw = {k.arg: k.value for k in v.keywords}
                    default = kw.get("default")
                    if default is None:
                        continue
                    v = default
                try:
                    out[st.target.id] = ast.literal_eval(v)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
        return out

    def loc(self, node: ast.AST) -> str:
        """``rel:line`` of a node."""
        return f"{self.rel}:{getattr(node, 'lineno', 0)}"

    # ----------------------------------------------------------------- calls
    def call(self, name: str, self_obj: Obj | None, *args: Any, **kwargs: Any) -> list[Path]:
        """Replay method ``name`` of the class (``self_obj`` bound to ``self``) or module function ``name``; the
        paths it ends on (each ``raised``, ``returned`` with ``ret``, or ``lost``).

        Raises:
            KeyError: no such method or function in the module.
        """
        fn = self.methods.get(name) or self.functions[name]
        path = Path(frames=[], bound=self_obj)
        return self._invoke(fn, [path], self_obj, list(args), kwargs)

    def _invoke(self, fn: ast.FunctionDef, paths: list[Path], self_obj: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Path]:
        out: list[Path] = []
        for p in paths:
            frame = self._bind(fn, p.bound if self_obj is _BOUND else self_obj, args, kwargs)
            p.frames.append(frame)
            p.returned, p.ret = False, None
            for q in self.block(fn.body, [p]):
                q.frames.pop()
                if q.returned:
                    q.returned = False
                else:
                    q.ret = None
                out.append(q)
        return _merge(out)

    def call_keeping(self, name: str, kept: Any, *args: Any) -> list[Path]:
        """:meth:`call` of module function ``name`` with ``kept`` (an object among ``args``) as each path's
        :attr:`Path.bound`: a fork copies it with the frames, so each path's final state of it can be read.

        Raises:
            KeyError: no such function in the module.
        """
        return self._invoke(self.functions[name], [Path(frames=[], bound=kept)], None, list(args), {})

    def run_on(self, name: str, paths: list[Path]) -> list[Path]:
        """Replay method ``name`` on paths that a previous :meth:`call` left (each with its own ``self``)."""
        return self._invoke(self.methods[name], paths, _BOUND, [], {})

    def _bind(self, fn: ast.FunctionDef, self_obj: Any, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        is_static = any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
        frame: dict[str, Any] = {}
        if params and not is_static and params[0] in ("self", "cls"):
            frame[params.pop(0)] = self_obj
        defaults = fn.args.defaults
        for i, name in enumerate(params):
            if i < len(args):
                frame[name] = args[i]
            elif name in kwargs:
                frame[name] = kwargs[name]
            else:
                j = i - (len(params) - len(defaults))
                frame[name] = self._static(defaults[j]) if j >= 0 else UNKNOWN
        for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
            frame[a.arg] = kwargs.get(a.arg, self._static(d) if d is not None else UNKNOWN)
        return frame

    # ----------------------------------------------------------------- statements
    def block(self, stmts: list[ast.stmt], paths: list[Path]) -> list[Path]:
        """Run ``stmts`` in order on every live path; finished paths pass through."""
        for st in stmts:
            live = [p for p in paths if not p.done]
            if not live:
                break
            done = [p for p in paths if p.done]
            nxt: list[Path] = []
            for p in live:
                nxt.extend(self.stmt(st, p))
            paths = _merge(done + nxt)
            if len(paths) > MAX_PATHS:
                for p in paths:
                    p.lost = p.lost or f"more than {MAX_PATHS} paths at {self.loc(st)}"
                break
        return paths

    def stmt(self, st: ast.stmt, p: Path) -> list[Path]:  # noqa: C901 - one dispatch over statement types
        """Run one statement on one path; the paths it continues as."""
        try:
            if isinstance(st, ast.Expr):
                if isinstance(st.value, ast.Call):
                    forked = self._call_paths(st.value, p)
                    if forked is not None:
                        return forked
                self.ev(st.value, p)
                return [p]
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                return self._assign(st, p)
            if isinstance(st, ast.If):
                return self._if(st, p)
            if isinstance(st, ast.Raise):
                return self._raise(st, p)
            if isinstance(st, ast.Assert):
                return self._assert(st, p)
            if isinstance(st, ast.Return):
                p.ret = self.ev(st.value, p) if st.value is not None else None
                p.returned = True
                p.ret_loc = self.loc(st)
                return [p]
            if isinstance(st, (ast.Pass, ast.Import, ast.Global, ast.Nonlocal)):
                return [p]
            if isinstance(st, (ast.Break, ast.Continue)):
                p.jump = "break" if isinstance(st, ast.Break) else "continue"
                return [p]
            if isinstance(st, ast.ImportFrom):
                for a in st.names:
                    # a function-level import of a name the replay already knows (given in ``names``) binds that value
                    known = self.globals.get(a.asname or a.name, UNKNOWN)
                    p.frames[-1][a.asname or a.name] = known if known is not UNKNOWN else ("__ref__", a.name)
                return [p]
            if isinstance(st, ast.For):
                return self._for(st, p)
            if isinstance(st, ast.Try):
                return self._try(st, p)
            if isinstance(st, ast.With):
                return self.block(st.body, [p])
        except _Exit:
            return [p]
        p.lost = f"{type(st).__name__} statement at {self.loc(st)} is not replayed"
        return [p]

    def _assign(self, st: ast.Assign | ast.AnnAssign | ast.AugAssign, p: Path) -> list[Path]:
        if st.value is None:
            return [p]
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call):
            split = self._split_call(st, p)
            if split is not None:
                return split
            forked = self._call_paths(st.value, p)
            if forked is not None:
                for q in forked:
                    if not q.done:
                        for t in st.targets:
                            self._store(t, q.ret, q)
                        q.ret = None
                return forked
        if isinstance(st, ast.AugAssign):
            v = self._binop(st.op, self.ev(st.target, p), self.ev(st.value, p), st, p)
            targets: list[ast.expr] = [st.target]
        else:
            v = self.ev(st.value, p)
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        for t in targets:
            self._store(t, v, p)
        return [p]

    def _arguments(self, n: ast.Call, p: Path) -> tuple[list[Any], dict[str, Any]] | None:
        """A call's positional values (``*args`` left out) and keyword values, a ``**mapping`` merged in; ``None`` when
        such a mapping is not a known dict."""
        args = [self.ev(a, p) for a in n.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.ev(k.value, p) for k in n.keywords if k.arg}
        for k in n.keywords:
            if k.arg is None:
                extra = self.ev(k.value, p)
                if not isinstance(extra, dict):
                    return None
                kwargs.update({str(key): v for key, v in extra.items()})
        return args, kwargs

    def _call_paths(self, n: ast.Call, p: Path) -> list[Path] | None:
        """A statement that is a call of a followed function (``self.m(...)``, ``Cls.m(...)``, a module function): the
        callee runs on ``p`` itself, so a test it cannot decide forks the caller (each path keeps what its branch did,
        ``ret`` the value returned); ``None`` when the callee is not one the replay follows (then it is evaluated as an
        expression)."""
        callee = " ".join(ast.unparse(n.func).split())
        if callee in self.hooks or self._depth >= MAX_DEPTH:
            return None
        parts = callee.split(".")
        fn, self_obj = None, None
        if len(parts) == 2 and parts[0] in ("self", "cls", self.cls) and parts[1] in self.methods:
            if isinstance(self._attr(self._name(parts[0], p), parts[1]), Native):
                return None
            fn = self.methods[parts[1]]
            self_obj = self._name(parts[0], p) if parts[0] in ("self", "cls") else None
        elif len(parts) == 1 and parts[0] in self.functions and parts[0] not in p.frames[-1]:
            fn = self.functions[parts[0]]
        if fn is None:
            return None
        got = self._arguments(n, p)
        if got is None:
            return None
        self._depth += 1
        try:
            out = self._invoke(fn, [p], self_obj, got[0], got[1])
        finally:
            self._depth -= 1
        return out

    def _split_call(self, st: ast.Assign, p: Path) -> list[Path] | None:
        """``x = f(...)`` where ``f`` is a :class:`Native` with ``split`` and more than one outcome: one path per outcome
        (each with the callee's assumptions); ``None`` to assign as usual."""
        n = st.value
        assert isinstance(n, ast.Call)
        if any(k.arg is None for k in n.keywords) and not isinstance(n.func, ast.Attribute):
            return None
        f = self.ev(n.func, p) if isinstance(n.func, ast.Attribute) else None
        if not isinstance(f, Native) or f.split is None:
            return None
        got = self._arguments(n, p)
        if got is None:
            return None
        args, kwargs = got
        outs = f.split(self, p, args, kwargs, n)
        if not outs or len(outs) < 2:
            return None
        result = []
        for value, raised, assumed in outs:
            q = p.fork()
            q.assumed.extend(a for a in assumed if a not in q.assumed)
            if raised is not None:
                q.raised = raised
            else:
                for t in st.targets:
                    self._store(t, value, q)
            result.append(q)
        return result

    def _store(self, t: ast.expr, v: Any, p: Path) -> None:
        if isinstance(t, ast.Name):
            p.frames[-1][t.id] = v
        elif isinstance(t, ast.Attribute):
            base = self.ev(t.value, p)
            if isinstance(base, Obj):
                base.attrs[t.attr] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            vals = list(v) if isinstance(v, (list, tuple)) and len(v) == len(t.elts) else [UNKNOWN] * len(t.elts)
            for e, x in zip(t.elts, vals):
                self._store(e, x, p)
        elif isinstance(t, ast.Subscript):
            base = self.ev(t.value, p)
            key = self.ev(t.slice, p)
            if isinstance(base, dict) and key is not UNKNOWN and _data(key):
                base[key] = v

    def _if(self, st: ast.If, p: Path) -> list[Path]:
        t = self.truth(st.test, p)
        if t is UNKNOWN:
            q = p.fork()
            text = " ".join(ast.unparse(st.test).split())
            p.assumed.append((text, True, self.loc(st)))
            q.assumed.append((text, False, self.loc(st)))
            return self.block(st.body, [p]) + self.block(st.orelse, [q])
        return self.block(st.body if t else st.orelse, [p])

    def _raise(self, st: ast.Raise, p: Path) -> list[Path]:
        exc = st.exc
        if exc is None:
            p.lost = f"bare raise at {self.loc(st)}"
            return [p]
        name = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc).split(".")[-1]
        msg = ""
        if isinstance(exc, ast.Call) and exc.args:
            msg = self.text(exc.args[0], p)
        p.raised = Raised(name, msg, self.loc(st))
        return [p]

    def _assert(self, st: ast.Assert, p: Path) -> list[Path]:
        t = self.truth(st.test, p)
        msg = self.text(st.msg, p) if st.msg is not None else " ".join(ast.unparse(st.test).split())
        if t is UNKNOWN:
            q = p.fork()
            q.assumed.append((ast.unparse(st.test), False, self.loc(st)))
            q.raised = Raised("AssertionError", msg, self.loc(st))
            p.assumed.append((ast.unparse(st.test), True, self.loc(st)))
            return [p, q]
        if not t:
            p.raised = Raised("AssertionError", msg, self.loc(st))
        return [p]

    def _for(self, st: ast.For, p: Path) -> list[Path]:
        it = self.ev(st.iter, p)
        if isinstance(it, (list, tuple)) and len(it) <= 256:
            live, out = [p], []
            for x in it:
                for q in live:
                    self._store(st.target, x, q)
                nxt = []
                for q in self.block(st.body, live):
                    if q.jump == "break":
                        q.jump = None
                        out.append(q)
                    elif q.jump == "continue" or not q.done:
                        q.jump = None
                        nxt.append(q)
                    else:
                        out.append(q)
                live = nxt
                if not live:
                    break
            return out + self.block(st.orelse, live)
        if any(isinstance(n, (ast.Raise, ast.Return, ast.Assign, ast.AugAssign, ast.Assert)) for n in ast.walk(st)):
            p.lost = f"loop over an unknown iterable at {self.loc(st)}"
        return [p]

    def _try(self, st: ast.Try, p: Path) -> list[Path]:
        out: list[Path] = []
        for q in self.block(st.body, [p]):
            if q.raised is not None and st.handlers:
                h = next((h for h in st.handlers if h.type is None or q.raised.type in ast.unparse(h.type)
                          or ast.unparse(h.type) in ("Exception", "BaseException")), None)
                if h is not None:
                    q.raised = None
                    if h.name:
                        q.frames[-1][h.name] = UNKNOWN
                    out.extend(self.block(h.body, [q]))
                    continue
            out.extend(self.block(st.orelse, [q]) if not q.done else [q])
        return self.block(st.finalbody, out) if st.finalbody else out

    # ----------------------------------------------------------------- expressions
    def truth(self, node: ast.expr, p: Path) -> Any:
        """``True`` / ``False`` / :data:`UNKNOWN` for a test (Python's truth of the value)."""
        v = self.ev(node, p)
        if v is UNKNOWN:
            return UNKNOWN
        if isinstance(v, Obj) and "__truth__" in v.attrs:
            return v.attrs["__truth__"]
        if _is_ref(v):
            return UNKNOWN  # a name the replay could not resolve (an imported module's attribute): its truth is unknown
        if isinstance(v, (Obj, tuple)) and not _data(v):
            return True
        try:
            return bool(v)
        except TypeError:
            return UNKNOWN

    def text(self, node: ast.expr | None, p: Path) -> str:
        """A message's text: an f-string or ``%``-format with known parts filled in, ``{...}`` for unknown ones."""
        if node is None:
            return ""
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    x = self.ev(v.value, p)
                    parts.append((repr(x) if v.conversion == 114 else str(x)) if x is not UNKNOWN and _data(x)
                                 else "{" + ast.unparse(v.value) + "}")
            return "".join(parts)
        v = self.ev(node, p)
        return v if isinstance(v, str) else " ".join(ast.unparse(node).split())

    def ev(self, n: ast.expr, p: Path) -> Any:  # noqa: C901 - one dispatch over expression types
        """The value of expression ``n`` on path ``p``; an exception Python would raise ends the path (:class:`_Exit`)."""
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return self._name(n.id, p)
        if isinstance(n, ast.Attribute):
            return self._attr(self.ev(n.value, p), n.attr)
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            vals: list[Any] = []
            for e in n.elts:
                if isinstance(e, ast.Starred):
                    x = self.ev(e.value, p)
                    if not isinstance(x, (list, tuple)):
                        return UNKNOWN
                    vals.extend(x)
                else:
                    vals.append(self.ev(e, p))
            return tuple(vals) if isinstance(n, ast.Tuple) else vals
        if isinstance(n, ast.Dict):
            keys = [self.ev(k, p) if k is not None else UNKNOWN for k in n.keys]
            if all(k is not UNKNOWN and _data(k) for k in keys):
                return {k: self.ev(v, p) for k, v in zip(keys, n.values)}
            return UNKNOWN
        if isinstance(n, ast.BoolOp):
            return self._boolop(n, p)
        if isinstance(n, ast.UnaryOp):
            x = self.ev(n.operand, p)
            if isinstance(n.op, ast.Not):
                t = self._bool(x)
                return UNKNOWN if t is UNKNOWN else (not t)
            unary = _UNARY_OPS.get(type(n.op))
            return self._apply(lambda: unary(x), [x], n, p) if unary is not None else UNKNOWN
        if isinstance(n, ast.BinOp):
            return self._binop(n.op, self.ev(n.left, p), self.ev(n.right, p), n, p)
        if isinstance(n, ast.Compare):
            return self._compare(n, p)
        if isinstance(n, ast.IfExp):
            t = self.truth(n.test, p)
            if t is UNKNOWN:
                a, b = self.ev(n.body, p), self.ev(n.orelse, p)
                return a if a is not UNKNOWN and _data(a) and _data(b) and a == b else UNKNOWN
            return self.ev(n.body if t else n.orelse, p)
        if isinstance(n, ast.Call):
            return self._call(n, p)
        if isinstance(n, ast.JoinedStr):
            s = self.text(n, p)
            return UNKNOWN if "{" in s and any(isinstance(v, ast.FormattedValue) for v in n.values) and \
                any(self.ev(v.value, p) is UNKNOWN for v in n.values if isinstance(v, ast.FormattedValue)) else s
        if isinstance(n, ast.Subscript):
            base, key = self.ev(n.value, p), self.ev(n.slice, p)
            if isinstance(base, (dict, list, tuple, str)) and key is not UNKNOWN and _data(key):
                try:
                    return base[key]
                except (KeyError, IndexError, TypeError):
                    return UNKNOWN
            return UNKNOWN
        if isinstance(n, (ast.ListComp, ast.GeneratorExp)):
            return self._comp(n, p)
        if isinstance(n, ast.NamedExpr):
            v = self.ev(n.value, p)
            self._store(n.target, v, p)
            return v
        return UNKNOWN

    def _name(self, name: str, p: Path) -> Any:
        for frame in (p.frames[-1],) if p.frames else ():
            if name in frame:
                return frame[name]
        if name in self.globals:
            return self.globals[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        return ("__ref__", name)

    @staticmethod
    def _attr(base: Any, attr: str) -> Any:
        if isinstance(base, Obj):
            return base.get(attr)
        if hasattr(type(base), "replay_attr"):
            # a data value with named parts (a NamedTuple-like capability, an enum member): it answers itself
            return base.replay_attr(attr)
        if isinstance(base, list) and attr in _LIST_MUTATORS:
            return ("__strm__", base, attr)
        if isinstance(base, tuple) and len(base) == 2 and base[0] == "__ref__":
            return ("__ref__", f"{base[1]}.{attr}")
        if isinstance(base, str) and attr in _STR_METHODS:
            return ("__strm__", base, attr)
        if isinstance(base, dict) and attr in ("get", "keys", "values", "items", "copy"):
            return ("__strm__", base, attr)
        return UNKNOWN

    def _bool(self, x: Any) -> Any:
        if x is UNKNOWN or _is_ref(x):
            return UNKNOWN
        if isinstance(x, Obj):
            return x.attrs.get("__truth__", True)  # an adapter may give an object its __bool__
        try:
            return bool(x)
        except TypeError:
            return UNKNOWN

    def _boolop(self, n: ast.BoolOp, p: Path) -> Any:
        is_and = isinstance(n.op, ast.And)
        unknown = False
        last: Any = None
        for v in n.values:
            x = self.ev(v, p)
            b = self._bool(x)
            if b is UNKNOWN:
                unknown = True
                continue
            if (is_and and not b) or (not is_and and b):
                return x if not unknown else (UNKNOWN if is_and == bool(b) else x)
            last = x
        return UNKNOWN if unknown else last

    def _apply(self, fn: Callable[[], Any], vals: list[Any], n: ast.AST, p: Path) -> Any:
        """Apply a Python operator to known data values; a ``TypeError`` (``None > 1``) ends the path with it."""
        if any(v is UNKNOWN for v in vals) or not all(_data(v) or isinstance(v, Obj) for v in vals):
            return UNKNOWN
        try:
            return fn()
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
            p.raised = Raised(type(exc).__name__, str(exc), self.loc(n), _none_operands(n, vals))
            raise _Exit() from None

    def _binop(self, op: ast.operator, a: Any, b: Any, n: ast.AST, p: Path) -> Any:
        f = _BIN.get(type(op))
        if f is None or isinstance(a, Obj) or isinstance(b, Obj):
            return UNKNOWN
        if isinstance(op, ast.Mod) and isinstance(a, str):
            return UNKNOWN
        return self._apply(lambda: f(a, b), [a, b], n, p)

    def _compare(self, n: ast.Compare, p: Path) -> Any:
        left = self.ev(n.left, p)
        result: Any = True
        for op, right_node in zip(n.ops, n.comparators):
            right = self.ev(right_node, p)
            r = self._cmp1(op, left, right, n, p)
            if r is False:
                return False
            if r is UNKNOWN:
                result = UNKNOWN
            left = right
        return result

    def _cmp1(self, op: ast.cmpop, a: Any, b: Any, n: ast.AST, p: Path) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            same = a is b if (a is None or b is None or isinstance(a, (Obj, bool)) or isinstance(b, (Obj, bool))) else a == b
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(b, tuple) and len(b) == 2 and b[0] == "__literal__":
                b = b[1]
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            if isinstance(b, (list, tuple, set)):
                known = [x for x in b if x is not UNKNOWN]
                if _data(a) and any(_data(x) and x == a for x in known):
                    r = True
                elif len(known) < len(b) or not _data(a):
                    return UNKNOWN
                else:
                    r = False
            elif isinstance(b, (str, dict)) and _data(a):
                r = self._apply(lambda: a in b, [a, b], n, p)
            else:
                return UNKNOWN
            return r if isinstance(op, ast.In) else not r
        f = _CMP[type(op)]
        if isinstance(a, Bounded) or isinstance(b, Bounded):
            return a.compare(op, b, False) if isinstance(a, Bounded) else b.compare(op, a, True)
        if isinstance(a, Obj) or isinstance(b, Obj):
            return (a is b) if isinstance(op, ast.Eq) else (a is not b) if isinstance(op, ast.NotEq) else UNKNOWN
        return self._apply(lambda: f(a, b), [a, b], n, p)

    def _comp(self, n: ast.ListComp | ast.GeneratorExp, p: Path) -> Any:
        if len(n.generators) != 1 or n.generators[0].is_async:
            return UNKNOWN
        g = n.generators[0]
        it = self.ev(g.iter, p)
        if not isinstance(it, (list, tuple)):
            return UNKNOWN
        out = []
        saved = dict(p.frames[-1]) if p.frames else {}
        if not p.frames:
            p.frames.append({})
        try:
            for x in it:
                self._store(g.target, x, p)
                if all(self.truth(c, p) is True for c in g.ifs):
                    out.append(self.ev(n.elt, p))
                elif any(self.truth(c, p) is UNKNOWN for c in g.ifs):
                    return UNKNOWN
        finally:
            p.frames[-1] = saved
        return out

    def _call(self, n: ast.Call, p: Path) -> Any:  # noqa: C901 - one dispatch over callee kinds
        callee = " ".join(ast.unparse(n.func).split())
        got = self._arguments(n, p)
        if got is None:
            return UNKNOWN
        args, kwargs = got
        f = self.ev(n.func, p) if not isinstance(n.func, ast.Name) or n.func.id not in self.hooks else None
        if isinstance(f, Native):
            try:
                return f.fn(self, p, args, kwargs, n)
            except HookRaise as exc:
                p.raised = Raised(exc.type, exc.message, exc.location or self.loc(n))
                raise _Exit() from None
            except HookLost as exc:
                p.lost = p.lost or exc.why
                raise _Exit() from None
        hook = self.hooks.get(callee) or (self.hooks.get(f[1]) if isinstance(f, tuple) and len(f) == 2 and f[0] == "__ref__" else None)
        if hook is not None:
            try:
                return hook(self, p, args, kwargs, n)
            except HookRaise as exc:
                p.raised = Raised(exc.type, exc.message, exc.location or self.loc(n))
                raise _Exit() from None
            except HookLost as exc:
                p.lost = p.lost or exc.why
                raise _Exit() from None
        if callee.split(".")[0] in _LOG_NAMES:
            msg = self.text(n.args[0], p) if n.args else ""
            p.logs.append((msg, self.loc(n)))
            return None
        if isinstance(f, tuple) and len(f) == 3 and f[0] == "__strm__" and isinstance(f[1], list) and f[2] in _LIST_MUTATORS:
            if f[2] == "extend" and not (args and isinstance(args[0], (list, tuple))):
                return UNKNOWN
            getattr(f[1], f[2])(*args)
            return None
        if isinstance(f, tuple) and len(f) == 3 and f[0] == "__strm__":
            if isinstance(f[1], dict) and f[2] == "get" and args and _data(args[0]) and args[0] is not UNKNOWN:
                return f[1].get(args[0], args[1] if len(args) > 1 else None)
            if all(_data(a) and a is not UNKNOWN for a in args):
                out = getattr(f[1], f[2])(*args)
                return list(out) if isinstance(f[1], dict) and f[2] in ("keys", "values", "items") else out
            return UNKNOWN
        if isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr") and len(args) >= 2:
            base, key = args[0], args[1]
            if isinstance(base, Obj) and isinstance(key, str):
                if key in base.attrs:
                    return True if n.func.id == "hasattr" else base.attrs[key]
                if base.strict:
                    return False if n.func.id == "hasattr" else (args[2] if len(args) > 2 else UNKNOWN)
            if base is None and isinstance(key, str):
                return False if n.func.id == "hasattr" else (args[2] if len(args) > 2 else UNKNOWN)
            return UNKNOWN
        if isinstance(n.func, ast.Name) and n.func.id == "get_args" and len(args) == 1:
            a = args[0]
            return a[1] if isinstance(a, tuple) and len(a) == 2 and a[0] == "__literal__" else UNKNOWN
        if isinstance(n.func, ast.Name) and n.func.id == "isinstance" and len(args) == 2:
            return _isinstance(args[0], args[1])
        if isinstance(n.func, ast.Name) and n.func.id == "len" and len(args) == 1 and isinstance(args[0], (list, tuple, dict, str)) \
                and "len" not in self.functions:
            return len(args[0])  # the length of a known container, whatever its elements are
        if isinstance(n.func, ast.Name) and n.func.id in _SAFE_BUILTINS and n.func.id not in self.functions:
            if all(a is not UNKNOWN and _data(a) for a in args) and not kwargs:
                builtin = _SAFE_BUILTINS[n.func.id]
                return self._apply(lambda: builtin(*args), args, n, p)
            return UNKNOWN
        fn = None
        self_obj: Any = None
        parts = callee.split(".")
        if len(parts) == 2 and parts[0] in ("self", "cls", self.cls) and parts[1] in self.methods:
            fn = self.methods[parts[1]]
            self_obj = self._name(parts[0], p) if parts[0] in ("self", "cls") else None
        elif len(parts) == 1 and parts[0] in self.functions:
            fn = self.functions[parts[0]]
        if fn is not None and self._depth < MAX_DEPTH:
            return self._inline(fn, p, self_obj, args, kwargs, n)
        return UNKNOWN

    def _inline(self, fn: ast.FunctionDef, p: Path, self_obj: Any, args: list[Any], kwargs: dict[str, Any], n: ast.AST) -> Any:
        """Run a followed call inside an expression. A call whose paths disagree in their effect is not split out of
        the expression: when the paths end differently the result is :data:`UNKNOWN`; one that raises on every path
        ends the caller's path with that exception."""
        self._depth += 1
        try:
            sub = Path(frames=[], assumed=[], logs=[])
            outs = self._invoke(fn, [sub], self_obj, args, kwargs)
        finally:
            self._depth -= 1
        if len(outs) == 1:
            q = outs[0]
            p.logs.extend(q.logs)
            if q.raised is not None:
                p.raised = q.raised
                raise _Exit()
            if q.lost is not None:
                return UNKNOWN
            return q.ret
        rets = {repr(q.ret) for q in outs if q.raised is None and q.lost is None}
        raised = [q.raised for q in outs if q.raised is not None]
        if len(raised) == len(outs) and len({(r.type, r.location) for r in raised}) == 1:
            p.raised = raised[0]
            raise _Exit()
        if len(rets) == 1 and all(q.raised is None and q.lost is None for q in outs):
            return outs[0].ret
        return UNKNOWN


class HookRaise(Exception):
    """Raised by a hook: the replayed call raises ``type`` with ``message`` at ``location`` (``None``: the call)."""

    def __init__(self, type_: str, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.type, self.message, self.location = type_, message, location


class HookLost(Exception):
    """Raised by a hook or a :class:`Native`: the replay cannot follow this call (``why``: a module the engine moved,
    a call whose outcomes it does not decide); the path is marked ``lost`` with ``why`` (could not tell, never a guess)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _methods_with_bases(node: ast.ClassDef, classes: Mapping[str, ast.ClassDef], depth: int = 0) -> dict[str, ast.FunctionDef]:
    """The methods of class ``node``, with those it inherits from base classes defined in the same module (the class's
    own win; bases from other modules are not followed)."""
    out: dict[str, ast.FunctionDef] = {}
    if depth < 8:
        for b in reversed(node.bases):
            if isinstance(b, ast.Name) and b.id in classes and b.id != node.name:
                out.update(_methods_with_bases(classes[b.id], classes, depth + 1))
    out.update({n.name: n for n in node.body if isinstance(n, ast.FunctionDef)})
    return out


def _isinstance(v: Any, kinds: Any) -> Any:
    """``isinstance`` for replayed values: an :class:`Obj` is an instance of the classes named like it (its ``name``);
    data values against ``str``/``int``/``dict``/...; anything else unknown."""
    refs = kinds if isinstance(kinds, (tuple, list)) and not (len(kinds) == 2 and kinds[0] == "__ref__") else (kinds,)
    names = []
    for k in refs:
        if not (isinstance(k, tuple) and len(k) == 2 and k[0] == "__ref__"):
            return UNKNOWN
        names.append(k[1].split(".")[-1])
    if v is UNKNOWN:
        return UNKNOWN
    if isinstance(v, Obj):
        return v.name.split(".")[-1] in names if v.name[:1].isupper() else UNKNOWN
    builtin = {"str": str, "int": int, "float": float, "dict": dict, "list": list, "tuple": tuple, "bool": bool}
    if v is None:
        return False if "NoneType" not in names else True
    if all(n in builtin for n in names):
        return isinstance(v, tuple(builtin[n] for n in names))
    return False if _data(v) else UNKNOWN


#: the public name of the replay's ``isinstance`` (for adapters that answer ``isinstance`` themselves first)
isinstance_of = _isinstance


def _state(p: Path) -> str:
    def enc(v: Any, depth: int = 0) -> str:
        if isinstance(v, Obj):
            return "{" + ",".join(f"{k}={enc(x, depth + 1)}" for k, x in sorted(v.attrs.items())) + "}" if depth < 4 else "<obj>"
        return repr(v)

    return repr((tuple(tuple(sorted((k, enc(v)) for k, v in f.items())) for f in p.frames), p.logs, p.raised, p.returned,
                 enc(p.ret), p.lost, enc(p.bound)))


def _merge(paths: list[Path]) -> list[Path]:
    """Paths that reached the same state are one path again (their assumptions did not change anything)."""
    seen: dict[str, Path] = {}
    for p in paths:
        key = _state(p)
        if key in seen:
            kept = seen[key]
            kept.assumed = [a for a in kept.assumed if a in p.assumed]
        else:
            seen[key] = p
    return list(seen.values())
