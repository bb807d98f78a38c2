"""Follow ``SpeculativeConfig`` into vLLM's per-method ``SpeculatorConfig`` classes (0.34.0 and later), from the
release's own source: parsed, never imported.

vLLM 0.34.0 moved the per-method logic out of ``vllm/config/speculative.py``: ``__post_init__`` calls
``get_method_config_class`` / ``get_speculator_config_class`` (``vllm/v1/worker/gpu/spec_decode/speculator_config.py``),
which look the method up by name in ``_CONFIG_BY_METHOD`` (method -> the qualname of a ``SpeculatorConfig`` subclass,
resolved with ``resolve_obj_by_qualname``), detect it from the draft checkpoint in ``_CHECKPOINT_DETECTION_ORDER``
through each class's ``matches``, and call the class's ``default_model`` / ``configure`` / ``apply_options`` (0.34.0
``speculative.py:1349-1417``). :class:`SpeculatorLink` gives the statement-order replay
(:mod:`mtp_audit.engines.code.statements`) what it needs to run that code as written:

- the names ``speculative.py`` imports from the speculator package, each a function replayed in its own module or a
  class value (:func:`class_value`: its class attributes through the bases, its methods replayed in the module that
  defines them, ``super()`` the next class of the bases);
- ``resolve_obj_by_qualname(qualname)`` answered by reading the named module of the same tree;
- ``SpeculativeConfig``'s own methods reachable from those modules (``spec.use_multi_module_mtp()``,
  ``SpeculativeConfig._verify_and_get_draft_tp(...)``).

When a module, table or class the release names is not in the tree, or does not parse, the path that needs it is
``lost`` with "vLLM moved ..." (:class:`~mtp_audit.engines.code.statements.HookLost`): the launch reports that question
as could not tell, never a refusal.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from mtp_audit.engines.code.statements import UNKNOWN, HookLost, Native, Obj, Path, Replay

#: the package the speculator configs live in (module path prefix in the tree)
SPEC_PKG = "vllm/v1/worker/gpu/spec_decode/"
#: the resolver ``speculator_config.py`` imports from ``vllm.utils.import_utils``
RESOLVER = "resolve_obj_by_qualname"


def module_rel(dotted: str, sources: Any) -> tuple[str, bytes | None]:
    """The tree path of module ``dotted`` (``vllm.a.b`` -> ``vllm/a/b.py`` or ``vllm/a/b/__init__.py``) and its bytes
    (``None``: not in this tree)."""
    base = dotted.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        data = sources.get(rel)
        if data is not None:
            return rel, data
    return f"{base}.py", None


def _imports(module: ast.Module) -> dict[str, tuple[str, str]]:
    """Top-level ``from vllm.x import a as b`` of a module: local name -> (module, name) (imports under
    ``if TYPE_CHECKING:`` are type hints only and are left out)."""
    out: dict[str, tuple[str, str]] = {}
    for st in module.body:
        if isinstance(st, ast.ImportFrom) and st.module and st.level == 0 and st.module.startswith("vllm"):
            for a in st.names:
                out[a.asname or a.name] = (st.module, a.name)
    return out


class SpeculatorLink:
    """The modules of one vLLM tree that ``SpeculativeConfig`` reaches through the speculator package.

    Args:
        sources: tree path -> bytes (``.get(rel)``; ``None``: not in the tree), e.g.
            :class:`mtp_audit.engines.vllm.draft.TreeSources`.
        hooks: the launch's hooks (``ModelConfig``, ``EAGLEConfig`` ...), shared by every module's replay.
        spec: the replay of the ``SpeculativeConfig`` module.
        version: the release, for "vLLM X moved ..." messages.
        declared: draft architecture list -> the qualname of the ``SpeculatorConfig`` its model class declares
            (``speculator_config_class``), ``None`` when it declares none, :data:`UNKNOWN` when not known.
    """

    def __init__(self, sources: Any, hooks: Mapping[str, Callable[..., Any]], spec: Replay, version: str,
                 declared: Callable[[Any], Any]) -> None:
        self.sources, self.hooks, self.spec, self.version, self.declared = sources, dict(hooks), spec, version, declared
        self.replays: dict[str, Replay | None] = {}
        self.trees: dict[str, ast.Module] = {}
        self.classes: dict[tuple[str, str], Obj | None] = {}
        self.spec_proxy = Obj("SpeculativeConfig", {"__class__": True, **{m: self._spec_method(m) for m, fn in spec.methods.items()
                                                                           if not any(ast.unparse(d) == "property" for d in fn.decorator_list)}})

    # ----------------------------------------------------------------- modules
    def moved(self, what: str) -> HookLost:
        """The path that needs ``what`` cannot go on: the release moved it."""
        return HookLost(f"could not tell: vLLM {self.version} moved {what}")

    def replay_of(self, dotted: str) -> Replay | None:
        """The replay of module ``dotted`` (parsed once; its vLLM imports bound), ``None`` when it is not in the tree or
        does not parse."""
        rel, data = module_rel(dotted, self.sources)
        if rel in self.replays:
            return self.replays[rel]
        from mtp_audit.engines.code.pyast import parse_source

        module = parse_source(rel, data)[0] if data is not None else None
        if module is None:
            self.replays[rel] = None
            return None
        r = Replay(module, rel, cls=None, hooks=self.hooks)
        self.replays[rel], self.trees[rel] = r, module
        self.bind_imports(r, module)
        _module_values(r, module)
        return r

    def bind_imports(self, r: Replay, module: ast.Module) -> bool:
        """Bind in ``r`` the names ``module`` imports from the speculator package (functions, classes), the resolver and
        ``SpeculativeConfig``'s module constants; whether any speculator-package name was bound."""
        linked = False
        if r is not self.spec:
            # ``from vllm.config import SpeculativeConfig`` (at the top, under TYPE_CHECKING, or inside a method)
            r.globals.setdefault("SpeculativeConfig", self.spec_proxy)
        for local, (mod, name) in _imports(module).items():
            rel = mod.replace(".", "/")
            if rel.startswith(SPEC_PKG.rstrip("/")):
                r.globals[local] = self.value(mod, name)
                linked = True
            elif name == RESOLVER:
                r.globals[local] = Native(RESOLVER, self._resolve)
            elif mod == "vllm.config" and name == "SpeculativeConfig" or mod == "vllm.config.speculative" and name == "SpeculativeConfig":
                r.globals[local] = self.spec_proxy
            elif mod == "vllm.config.speculative" and name in self.spec.globals:
                r.globals[local] = self.spec.globals[name]
        return linked

    def value(self, dotted: str, name: str) -> Any:
        """Module ``dotted``'s ``name``: a :class:`Native` for a function, a class value, a constant; a Native that
        loses the path when the module or the name is gone."""
        r = self.replay_of(dotted)
        if r is None:
            return Native(name, self._gone(f"{name} ({module_rel(dotted, self.sources)[0]} is not in this tree or does not parse)"))
        if name in r.functions:
            return Native(name, self._function(r, r.functions[name]), split=None)
        cls = self.class_value(dotted, name)
        if cls is not None:
            return cls
        if name in r.globals:
            return r.globals[name]
        return Native(name, self._gone(f"{name} (not defined in {r.rel})"))

    def _gone(self, what: str) -> Callable[..., Any]:
        def fn(_r: Replay, _p: Path, _a: list[Any], _k: dict[str, Any], _n: Any) -> Any:
            raise self.moved(what)

        return fn

    def _resolve(self, _r: Replay, _p: Path, args: list[Any], _k: dict[str, Any], _n: Any) -> Any:
        """``resolve_obj_by_qualname("vllm.a.b.Name")``: the class (or function) of that module in this tree."""
        q = args[0] if args else UNKNOWN
        if not isinstance(q, str) or "." not in q:
            raise self.moved(f"a speculator class named by a value the replay does not know ({q!r})")
        mod, name = q.rsplit(".", 1)
        v = self.value(mod, name)
        if isinstance(v, Native) and v.name == name and mod.replace(".", "/").startswith("vllm/") and self.replay_of(mod) is None:
            raise self.moved(f"{q} ({module_rel(mod, self.sources)[0]} is not in this tree or does not parse)")
        return v

    # ----------------------------------------------------------------- classes
    def class_value(self, dotted: str, name: str, depth: int = 0) -> Obj | None:
        """Class ``name`` of module ``dotted`` as a value: its attributes (class-level constants through its bases, each
        base resolved through the defining module's imports) and its methods (:class:`Native`, replayed in the module
        that defines them with ``cls`` bound to this class); ``None`` when the module defines no such class."""
        key = (dotted, name)
        if key in self.classes:
            return self.classes[key]
        r = self.replay_of(dotted)
        node = next((n for n in self.trees.get(r.rel, ast.Module(body=[], type_ignores=[])).body
                     if isinstance(n, ast.ClassDef) and n.name == name), None) if r is not None else None
        if node is None or r is None or depth > 12:
            return None
        obj = Obj(name, {"__class__": True, "__name__": name, "__qualname__": f"{dotted}.{name}"})
        self.classes[key] = obj
        for b in reversed(node.bases):
            base = self._base(r, dotted, b, depth)
            if base is not None:
                obj.attrs.update({k: v for k, v in base.attrs.items() if k not in ("__name__", "__qualname__")})
        self._own_members(r, node, obj)
        return obj

    def _base(self, r: Replay, dotted: str, b: ast.expr, depth: int) -> Obj | None:
        if not isinstance(b, ast.Name):
            return None
        imports = _imports(self.trees[r.rel])
        if b.id in imports:
            return self.class_value(imports[b.id][0], imports[b.id][1], depth + 1)
        return self.class_value(dotted, b.id, depth + 1)

    def _own_members(self, r: Replay, node: ast.ClassDef, obj: Obj) -> None:
        parent = {k: v for k, v in obj.attrs.items() if isinstance(v, Native)}
        for st in node.body:
            if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name):
                    obj.attrs[targets[0].id] = _class_attr(st.value, r, obj)
            elif isinstance(st, ast.FunctionDef) and not any(ast.unparse(d) == "property" for d in st.decorator_list):
                obj.attrs[st.name] = Native(f"{node.name}.{st.name}", self._method(r, st, obj, dict(parent)))

    def _method(self, r: Replay, fn: ast.FunctionDef, defined_in: Obj, parents: dict[str, Any]) -> Callable[..., Any]:
        """A method of a class value: replayed in ``r`` with ``cls`` bound to the class it is called on (the first
        argument the caller passes through ``cls.x()`` resolves to the value the method was looked up on), ``super()``
        to the methods the class inherited."""
        is_class = any(ast.unparse(d) == "classmethod" for d in fn.decorator_list)

        def call(caller: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            owner = _receiver(caller, p, n, defined_in)
            if owner.name == "super":
                owner = owner.attrs["__cls__"]  # super().m(): the method of the base, ``cls`` still the caller's class
            sup = Obj("super", {**parents, "__cls__": owner})
            return _inline(r, fn, p, owner if is_class else None, list(args), kwargs, {"super": Native("super", lambda *_a: sup)})

        return call

    def _function(self, r: Replay, fn: ast.FunctionDef) -> Callable[..., Any]:
        def call(_caller: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], _n: Any) -> Any:
            return _inline(r, fn, p, None, list(args), kwargs, {})

        return call

    def _spec_method(self, name: str) -> Native:
        """``SpeculativeConfig.<name>`` called from another module (``spec.use_x()``, ``SpeculativeConfig._verify_x(...)``):
        the replayed method, or the launch's hook for it (``self.update_arch_``)."""
        fn = self.spec.methods[name]
        is_static = any(ast.unparse(d) in ("staticmethod", "classmethod") for d in fn.decorator_list)

        def call(caller: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            recv = _receiver(caller, p, n, None)
            hook = self.hooks.get(f"self.{name}")
            if hook is not None and isinstance(recv, Obj):
                p.frames.append({"self": recv})
                try:
                    return hook(self.spec, p, args, kwargs, n)
                finally:
                    p.frames.pop()
            if is_static:
                return _inline(self.spec, fn, p, None, list(args), kwargs, {})
            return _inline(self.spec, fn, p, recv, list(args), kwargs, {})

        return Native(f"SpeculativeConfig.{name}", call)


def _receiver(caller: Replay, p: Path, n: Any, default: Any) -> Any:
    """The value a method was looked up on (``x`` of ``x.m(...)``), else ``default``."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
        v = caller.ev(n.func.value, p)
        if isinstance(v, Obj):
            return v
    return default


def _inline(r: Replay, fn: ast.FunctionDef, p: Path, self_obj: Any, args: list[Any], kwargs: dict[str, Any],
            extra: dict[str, Any]) -> Any:
    """Run ``fn`` of module replay ``r`` on path ``p`` as part of an expression (:meth:`Replay._inline`'s rules), with
    ``extra`` names in its frame. The path's objects are the caller's: a call that forks into outcomes that differ
    loses the path (what it changed is not one state)."""
    if p.frames and len(p.frames) > 24:
        raise HookLost("the speculator calls nest too deeply to replay")
    frame = r._bind(fn, self_obj, args, kwargs)  # noqa: SLF001 - the replay's own binding rules
    frame.update(extra)
    sub = Path(frames=[], bound=p.bound)
    sub.frames = p.frames + [frame]
    depth = len(p.frames)
    outs = r.block(fn.body, [sub])
    if len(outs) > 1:
        ends = {(repr(q.raised), repr(q.ret if q.returned else None), q.lost) for q in outs}
        if len(ends) > 1 or any(q.lost for q in outs):
            raise HookLost(f"{r.rel}:{fn.lineno} {fn.name} ends in {len(outs)} ways the launch does not decide: "
                           + "; ".join(f"{t} ({loc})" for q in outs for t, _b, loc in q.assumed[-2:])[:300])
        # every path ends the same way: one path goes on, each value the paths left different is unknown
        for other in outs[1:]:
            for fa, fb in zip(outs[0].frames[:depth], other.frames[:depth]):
                for k in fa:
                    fa[k] = _join(fa[k], fb.get(k, UNKNOWN), set())
            outs[0].bound = _join(outs[0].bound, other.bound, set())
            outs[0].assumed = [a for a in outs[0].assumed if a in other.assumed]
    q = outs[0]
    if q is not sub:
        p.frames[:depth] = q.frames[:depth]
        p.bound = q.bound
    p.logs.extend(x for x in q.logs if x not in p.logs)
    p.assumed.extend(a for a in q.assumed if a not in p.assumed)
    if q.lost is not None:
        raise HookLost(q.lost)
    if q.raised is not None:
        from mtp_audit.engines.code.statements import HookRaise

        raise HookRaise(q.raised.type, q.raised.message, q.raised.location)
    return q.ret if q.returned else None


def _join(a: Any, b: Any, seen: set[int]) -> Any:
    """``a`` where ``a`` and ``b`` (the same value on two paths) agree, :data:`UNKNOWN` where they differ; objects are
    joined attribute by attribute in place."""
    if isinstance(a, Obj) and isinstance(b, Obj) and a.name == b.name:
        if id(a) in seen:
            return a
        seen.add(id(a))
        for k in set(a.attrs) | set(b.attrs):
            a.attrs[k] = _join(a.attrs.get(k, UNKNOWN), b.attrs.get(k, UNKNOWN), seen) if k in a.attrs and k in b.attrs else UNKNOWN
        return a
    if isinstance(a, Native) and isinstance(b, Native):
        return a if a.name == b.name else UNKNOWN
    try:
        return a if type(a) is type(b) and repr(a) == repr(b) else UNKNOWN
    except RecursionError:
        return UNKNOWN


def _class_attr(node: ast.expr, r: Replay, cls: Obj) -> Any:
    """A class-level value: a literal, ``frozenset({...})`` (as a sorted tuple), ``Base.attr | {...}``, a name of the
    module; :data:`UNKNOWN` otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set") and len(node.args) <= 1:
        inner = _class_attr(node.args[0], r, cls) if node.args else ()
        return tuple(sorted(inner)) if isinstance(inner, (tuple, list)) and all(isinstance(x, str) for x in inner) else UNKNOWN
    if isinstance(node, ast.Set):
        vals = [_class_attr(e, r, cls) for e in node.elts]
        return tuple(sorted(vals)) if all(isinstance(v, str) for v in vals) else UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        a, b = _class_attr(node.left, r, cls), _class_attr(node.right, r, cls)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return tuple(sorted(set(a) | set(b)))
        return UNKNOWN
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        base = r.globals.get(node.value.id)
        return base.get(node.attr) if isinstance(base, Obj) else UNKNOWN
    if isinstance(node, ast.Name):
        return cls.attrs.get(node.id, r.globals.get(node.id, UNKNOWN))
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNKNOWN


def _module_values(r: Replay, module: ast.Module) -> None:
    """Module-level names the static pass left unknown, evaluated by the replay in source order (``_CONFIG_BY_METHOD``
    built with ``_builtin(module, name)`` calls; ``_CUSTOM_CONFIGS: dict = {}``)."""
    for st in module.body:
        if not isinstance(st, (ast.Assign, ast.AnnAssign)):
            continue
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or st.value is None or targets[0].id in r.globals:
            continue
        p = Path(frames=[{}])
        try:
            v = r.ev(st.value, p)
        except Exception:  # noqa: BLE001 - a value the replay cannot compute stays unknown
            continue
        if v is not UNKNOWN and p.raised is None and p.lost is None and not (isinstance(v, tuple) and v[:1] == ("__ref__",)):
            r.globals[targets[0].id] = v


#: the module that names each method's ``SpeculatorConfig`` class (0.34.0)
TABLE_MODULE = "vllm.v1.worker.gpu.spec_decode.speculator_config"


def speculator_table(spec_module: ast.Module, spec_rel: str, sources: Any, version: str) -> dict[str, Any] | None:
    """What the release's speculator package says about each method, read from its source (``None`` when the
    ``SpeculativeConfig`` module imports nothing from the package: 0.33.0 and before).

    Returns ``{"location": "<rel>:<line of _CONFIG_BY_METHOD>", "methods": {method: {"class", "location", "speculator",
    "supported_options", "base_method"}}, "detection_order": [...], "detection_location", "options": [...]
    (``_METHOD_SPECIFIC_OPTIONS`` of the SpeculativeConfig module), "options_location", "gap"}``; ``gap`` says what the
    tree lacks (the table module, a class it names)."""
    spec = Replay(spec_module, spec_rel, cls="SpeculativeConfig")
    link = SpeculatorLink(sources, {}, spec, version, lambda _a: None)
    if not link.bind_imports(spec, spec_module):
        return None
    out: dict[str, Any] = {"location": None, "methods": {}, "detection_order": None, "detection_location": None,
                           "options": None, "options_location": None, "gap": None}
    for st in spec_module.body:
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and "_METHOD_SPECIFIC_OPTIONS" in ast.unparse(st.targets[0] if isinstance(st, ast.Assign) else st.target):
            v = spec.globals.get("_METHOD_SPECIFIC_OPTIONS")
            out["options"] = list(v) if isinstance(v, (tuple, list)) else None
            out["options_location"] = f"{spec_rel}:{st.lineno}"
    r = link.replay_of(TABLE_MODULE)
    if r is None:
        out["gap"] = f"{module_rel(TABLE_MODULE, sources)[0]} is not in this tree or does not parse"
        return out
    lines = {t.id: st.lineno for st in link.trees[r.rel].body if isinstance(st, (ast.Assign, ast.AnnAssign))
             for t in (st.targets if isinstance(st, ast.Assign) else [st.target]) if isinstance(t, ast.Name)}
    table = r.globals.get("_CONFIG_BY_METHOD")
    order = r.globals.get("_CHECKPOINT_DETECTION_ORDER")
    out["location"] = f"{r.rel}:{lines['_CONFIG_BY_METHOD']}" if "_CONFIG_BY_METHOD" in lines else None
    if isinstance(order, (tuple, list)):
        out["detection_order"] = list(order)
        out["detection_location"] = f"{r.rel}:{lines.get('_CHECKPOINT_DETECTION_ORDER')}"
    if not isinstance(table, dict):
        out["gap"] = f"{r.rel}: no _CONFIG_BY_METHOD table of qualnames"
        return out
    for method, qual in table.items():
        out["methods"][method] = _class_facts(link, qual)
    missing = [m for m, c in out["methods"].items() if c.get("location") is None]
    if missing:
        out["gap"] = "the classes named for " + ", ".join(missing) + " are not in this tree"
    return out


def _class_facts(link: SpeculatorLink, qual: Any) -> dict[str, Any]:
    """One ``_CONFIG_BY_METHOD`` entry: the class, where it is defined, its ``speculator_class``,
    ``supported_options`` and ``base_method`` (through its bases)."""
    if not isinstance(qual, str) or "." not in qual:
        return {"class": None, "location": None}
    mod, name = qual.rsplit(".", 1)
    cls = link.class_value(mod, name)
    if cls is None:
        return {"class": name, "location": None}
    rel = module_rel(mod, link.sources)[0]
    line = next((n.lineno for n in link.trees[rel].body if isinstance(n, ast.ClassDef) and n.name == name), None)
    opts = cls.get("supported_options")
    spec_cls = cls.get("speculator_class")
    base = cls.get("base_method")
    return {"class": name, "location": f"{rel}:{line}",
            "speculator": spec_cls if isinstance(spec_cls, str) or spec_cls is None else "?",
            "supported_options": list(opts) if isinstance(opts, (tuple, list)) else None,
            "base_method": base if isinstance(base, str) or base is None else "?"}
