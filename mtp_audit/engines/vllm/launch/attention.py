"""The attention backend vLLM really selects for a launch, replayed statement by statement from the release's own source
(:mod:`mtp_audit.engines.code.statements`; parsed, never imported).

Which files are read is derived from the source, not listed:

1. the CUDA platform: ``vllm/platforms/__init__.py`` names its class in the CUDA plugin's return value
   (``"vllm.platforms.cuda.CudaPlatform"``; an alias such as ``CudaPlatform = NvmlCudaPlatform if ... else ...`` is
   followed to the classes it names), and the class whose method resolution order defines ``get_attn_backend_cls`` is
   the one replayed (0.33.0 ``vllm/platforms/cuda.py:420``, 0.24.0 ``:395``, 0.11.0 ``:240``);
2. every name that code uses is resolved through the imports of the module it is written in: the backend enum
   (0.24+ ``AttentionBackendEnum``, 0.11.0 ``_Backend``), a backend class from the enum member's class path
   (``vllm.v1.attention.backends.mla.flashinfer_mla.FlashInferMLABackend`` -> that module), its base classes across
   modules (``AttentionBackend`` in ``vllm/v1/attention/backend.py``: ``validate_configuration`` and each
   ``supports_*`` check), and module functions imported from other ``vllm`` modules (``is_quantized_kv_cache``,
   ``flash_attn_supports_mla``), each replayed from its own file.

The launch's known values go in: the declared machine's compute capability (``get_device_capability``), the
checkpoint's head size, dtype, MLA-ness and sparse indexer, ``--kv-cache-dtype``, ``--block-size`` and the chosen
backend (``--attention-backend``, ``--attention-config`` / ``-ac`` ``backend``; 0.11.0: ``VLLM_ATTENTION_BACKEND``).
What only the running process knows (whether a kernel library imports, the flash-attn build's features) stays
unknown: where it changes the answer, the attention backend is "could not tell" and the undecided tests are named.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.code.statements import UNKNOWN, HookRaise, Native, Obj, Path, Raised, Replay
from mtp_audit.engines.vllm.launch.quant import find_class, module_rel, parsed_module

PLATFORMS_INIT = "vllm/platforms/__init__.py"
ENVS = "vllm/envs.py"
#: the torch dtypes the replay names (``torch.bfloat16`` -> ``"torch.bfloat16"``)
TORCH_DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "uint8", "int8")
MAX_CALL_DEPTH = 10


class Cap(tuple):
    """A device capability ``(major, minor)`` as vLLM's ``DeviceCapability`` NamedTuple compares it (tuple order),
    with ``major``, ``minor`` and ``to_int()`` (vllm/platforms/interface.py ``DeviceCapability``)."""

    def __new__(cls, major: int, minor: int) -> Cap:
        return super().__new__(cls, (int(major), int(minor)))

    def replay_attr(self, attr: str) -> Any:
        """``major`` / ``minor`` / ``to_int``; anything else unknown."""
        if attr == "major":
            return self[0]
        if attr == "minor":
            return self[1]
        if attr == "to_int":
            return Native("to_int", lambda *a: self[0] * 10 + self[1])
        return UNKNOWN

    def __deepcopy__(self, memo: Any) -> Cap:
        return self


class Member(str):
    """An enum member as a string (its ``str()``: ``AttentionBackendEnum.FLASH_ATTN``, or the value for a ``str`` enum)
    that also answers ``name``, ``value`` and ``get_class()`` (a backend enum's class path resolved in the tree)."""

    member_name: str
    member_value: Any
    get_class: Any

    def __new__(cls, text: str, name: str, value: Any, get_class: Any = None) -> Member:
        m = super().__new__(cls, text)
        m.member_name, m.member_value, m.get_class = name, value, get_class
        return m

    def replay_attr(self, attr: str) -> Any:
        """``name`` / ``value`` / ``get_class`` / ``get_path``; anything else unknown."""
        if attr == "name":
            return self.member_name
        if attr == "value":
            return self.member_value
        if attr == "get_class" and self.get_class is not None:
            return self.get_class
        if attr == "get_path" and isinstance(self.member_value, str):
            return Native("get_path", lambda *a: self.member_value)
        return UNKNOWN

    def __deepcopy__(self, memo: Any) -> Member:
        return self


@dataclass
class AttnKnowns:
    """What the launch fixes for attention-backend selection (:data:`UNKNOWN` where it does not).

    Attributes:
        capability: the GPU's compute capability ``(major, minor)``.
        head_size: the attention head size (MLA: ``kv_lora_rank + qk_rope_head_dim``).
        dtype: the model dtype as torch names it (``"torch.bfloat16"``).
        kv_cache_dtype: ``--kv-cache-dtype`` (``"auto"`` when not given).
        block_size: ``--block-size`` (``None``: not given).
        use_mla, use_sparse, has_sink: the model's MLA, sparse-indexer and attention-sink use.
        num_heads: attention heads per GPU (``None``: unknown, as vLLM passes it for non-MLA layers).
        selected: the backend name the command chooses (``None``: automatic).
        selected_from: which option or variable chose it.
        hf_config: the checkpoint's (text) config.json keys, read by backends through ``get_current_vllm_config()``
            (``model_config.hf_text_config``); ``None`` when not audited.
        parallel: ``parallel_config`` fields the command fixes (``tensor_parallel_size``,
            ``decode_context_parallel_size``, ``prefill_context_parallel_size``; vLLM's default 1 when not given).
        attention_config: ``--attention-config`` JSON keys the command gives (over ``AttentionConfig``'s defaults).
        environ: the launch's ``VLLM_*`` variables (``vllm.envs`` reads them; unset ones take envs.py's defaults).
    """

    capability: Any
    head_size: Any
    dtype: Any
    kv_cache_dtype: Any = "auto"
    block_size: Any = None
    use_mla: Any = False
    use_sparse: Any = False
    has_sink: Any = False
    num_heads: Any = None
    selected: str | None = None
    selected_from: str | None = None
    hf_config: dict[str, Any] | None = None
    parallel: dict[str, Any] = field(default_factory=dict)
    attention_config: dict[str, Any] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict)


@dataclass
class AttnSelection:
    """What the replay decided.

    Attributes:
        backend: the enum name of the backend that runs (``FLASH_ATTN``), :data:`UNKNOWN` when not decided, ``None``
            when vLLM refuses.
        class_path: its class path (``vllm.v1.attention.backends.flash_attn.FlashAttentionBackend``).
        decided_at: ``file:line`` of the statement that returned it.
        raised: the exception vLLM raises at start-up (an invalid explicit backend, no valid backend).
        checked: ``(backend name, reasons it is invalid or None when valid, UNKNOWN when not decided)`` for each
            backend whose ``validate_configuration`` ran, in order.
        undecided: the tests the replay could not decide that changed the answer (``text (file:line)``).
        gap: why nothing could be replayed (source missing or unparsable).
        platform: ``file:line`` of the replayed ``get_attn_backend_cls``.
        assumed: what the replay took as given about the installed tree (a compiled extension the wheel ships loads).
    """

    backend: Any = UNKNOWN
    class_path: Any = UNKNOWN
    decided_at: str | None = None
    raised: Raised | None = None
    checked: list[tuple[str, Any]] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    gap: str | None = None
    platform: str | None = None
    assumed: list[str] = field(default_factory=list)


def _dotted_rel(sources: Any, dotted: str) -> tuple[str, str] | None:
    """``("vllm/x/y.py", "Name")`` for a dotted ``vllm.x.y.Name`` that the tree has."""
    mod, _, name = dotted.rpartition(".")
    if not mod.startswith("vllm"):
        return None
    stem = mod.replace(".", "/")
    for rel in (stem + ".py", stem + "/__init__.py"):
        if sources.get(rel) is not None:
            return rel, name
    return None


def find_platform(sources: Any) -> tuple[str, str] | str:
    """``(module path, class name)`` of the CUDA platform class that defines (or inherits) ``get_attn_backend_cls``,
    derived from ``vllm/platforms/__init__.py`` (module docstring); a string saying why not."""
    init = parsed_module(sources, PLATFORMS_INIT)
    if init is None:
        return f"{PLATFORMS_INIT} is missing or does not parse"
    plugin = next((n for n in init.body if isinstance(n, ast.FunctionDef) and n.name == "cuda_platform_plugin"), None)
    dotted = next((c.value for c in ast.walk(plugin) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                   and c.value.startswith("vllm.platforms.")), None) if plugin else None
    found = _dotted_rel(sources, dotted) if dotted else None
    if found is None:
        return f"{PLATFORMS_INIT}: the CUDA platform's class path was not found"
    rel, name = found
    module = parsed_module(sources, rel)
    if module is None:
        return f"{rel} is missing or does not parse"
    names = [name]
    for node in module.body:  # CudaPlatform = NvmlCudaPlatform if ... else NonNvmlCudaPlatform
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            names = [n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)] + names
    for cand in names:
        world = World(sources)
        if find_class(sources, rel, cand) and "get_attn_backend_cls" in world.methods(rel, cand):
            return rel, cand
    return f"{rel}: no class of {', '.join(names)} defines get_attn_backend_cls"


class World:
    """The replayed program: classes across modules (their MRO, class attributes and methods), enums, imported
    functions, the CUDA platform as ``current_platform`` with the declared capability."""

    def __init__(self, sources: Any, capability: Any = UNKNOWN, vllm_config: Any = UNKNOWN,
                 environ: dict[str, str] | None = None) -> None:
        self.sources = sources
        self.environ = dict(environ or {})
        self._envs: Obj | None = None
        self.vllm_config = vllm_config
        self.capability = capability
        self.platform: Obj | None = None
        self.checked: list[tuple[str, Any]] = []
        self.undecided: list[str] = []
        #: what the replay took as given about the installed tree (a shipped compiled extension loads)
        self.assumed: list[str] = []
        self._classes: dict[tuple[str, str], Obj] = {}
        self._enums: dict[tuple[str, str], Obj] = {}
        self._names: dict[str, dict[str, Any]] = {}
        self._hooks: dict[str, dict[str, Callable[..., Any]]] = {}
        self._depth = 0

    # ------------------------------------------------------------------ classes
    def mro(self, rel: str, name: str, depth: int = 0) -> list[tuple[str, ast.ClassDef]]:
        """``[(module path, ClassDef), ...]`` most derived first, bases followed across modules through imports."""
        found = find_class(self.sources, rel, name)
        if found is None or depth > 8:
            return []
        module = parsed_module(self.sources, found[0])
        node = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == found[1]), None) if module else None
        if node is None:
            return []
        out = [(found[0], node)]
        for b in node.bases:
            bname = b.id if isinstance(b, ast.Name) else None
            if bname and bname not in ("ABC", "object", "NamedTuple", "Enum", "str", "Generic"):
                out += [x for x in self.mro(found[0], bname, depth + 1) if x not in out]
        return out

    def methods(self, rel: str, name: str) -> dict[str, tuple[str, str]]:
        """method name -> ``(module path, defining class)`` along the MRO (the most derived wins)."""
        out: dict[str, tuple[str, str]] = {}
        for mrel, node in reversed(self.mro(rel, name)):
            out.update({f.name: (mrel, node.name) for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))})
        return out

    def class_obj(self, rel: str, name: str) -> Obj:
        """The class ``name`` (seen from module ``rel``) as an object: class attributes with the values the replay can
        compute, ``__module__`` / ``__qualname__``, and each method as a :class:`Native` replaying it from its module."""
        found = find_class(self.sources, rel, name) or (rel, name)
        if found in self._classes:
            return self._classes[found]
        obj = Obj(found[1], {"__qualname__": found[1], "__name__": found[1], "__class_key__": found,
                            "__module__": found[0].removesuffix(".py").removesuffix("/__init__").replace("/", ".")})
        self._classes[found] = obj
        for mrel, node in reversed(self.mro(*found)):
            r = self.replay(mrel)
            p = Path(frames=[{}])
            for st in node.body:
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                    tgt = st.targets[0] if isinstance(st, ast.Assign) else st.target
                    if isinstance(tgt, ast.Name):
                        try:
                            obj.attrs[tgt.id] = r.ev(st.value, p)
                        except Exception:  # noqa: BLE001 - a class attribute the replay cannot compute is unknown
                            obj.attrs[tgt.id] = UNKNOWN
        for mname, (mrel, cname) in self.methods(*found).items():
            obj.attrs[mname] = Native(f"{found[1]}.{mname}", self._method_native(mrel, cname, mname, obj),
                                      split=self._method_split(mrel, cname, mname, obj))
        return obj

    def _method_native(self, rel: str, cname: str, mname: str, bound: Obj) -> Callable[..., Any]:
        def run(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            value: Any = UNKNOWN
            try:
                value = self.run(rel, cname, mname, bound, args, kwargs)
            except HookRaise as exc:
                value = exc
                raise
            finally:
                if mname == "validate_configuration":
                    self.checked.append((bound.name, value if not isinstance(value, HookRaise) else f"{value.type}: {value.message}"))
            return value
        return run

    def _method_split(self, rel: str, cname: str, mname: str, bound: Obj) -> Callable[..., Any]:
        def split(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            paths = self.paths(rel, cname, mname, bound, args, kwargs)
            if paths is None or any(q.lost for q in paths):
                return None
            outs: dict[str, tuple[Any, Any, list[Any]]] = {}
            for q in paths:
                key = repr((q.ret, q.raised.type, q.raised.location) if q.raised else q.ret)
                if key not in outs:
                    outs[key] = (q.ret, q.raised, list(q.assumed))
            if mname == "validate_configuration":
                self.checked.append((bound.name, [o[0] for o in outs.values()][0] if len(outs) == 1 else UNKNOWN))
            return list(outs.values())
        return split

    def run(self, rel: str, cname: str | None, fname: str, bound: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Replay method ``fname`` of ``cname`` (or module function when ``cname`` is ``None``) and fold its paths into
        one value: the return value all paths agree on, the exception all raise (:class:`HookRaise`), else
        :data:`UNKNOWN` (the undecided tests are recorded)."""
        paths = self.paths(rel, cname, fname, bound, args, kwargs)
        if paths is None:
            return UNKNOWN
        return self.fold(paths, fname)

    def paths(self, rel: str, cname: str | None, fname: str, bound: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Path] | None:
        """The paths of one replayed call (``None``: not followed: too deep or not in the tree)."""
        module = parsed_module(self.sources, rel)
        if module is None or self._depth >= MAX_CALL_DEPTH:
            return None
        r = self.replay(rel, cname)
        if fname not in r.methods and fname not in r.functions:
            return None
        self._depth += 1
        try:
            return r.call(fname, bound, *args, **kwargs)
        except (RecursionError, KeyError):
            return None
        finally:
            self._depth -= 1

    def fold(self, paths: list[Path], what: str) -> Any:
        """One value for a call's paths (see :meth:`run`)."""
        ok = [q for q in paths if q.raised is None and q.lost is None]
        raised = [q.raised for q in paths if q.raised is not None]
        if paths and len(raised) == len(paths) and len({(x.type, x.location) for x in raised}) == 1:
            raise HookRaise(raised[0].type, raised[0].message, raised[0].location)
        if ok and len(ok) == len(paths) and len({repr(q.ret) for q in ok}) == 1:
            return ok[0].ret
        if what == "validate_configuration" and ok and len(ok) == len(paths) and all(isinstance(q.ret, list) for q in ok):
            sure = [x for x in ok[0].ret if all(x in q.ret for q in ok)]
            if sure:
                return sure  # invalid whatever the undecided tests say
        for q in paths:
            self.undecided += [f"{t} ({loc})" for t, _b, loc in q.assumed if f"{t} ({loc})" not in self.undecided]
            if q.lost and q.lost not in self.undecided:
                self.undecided.append(q.lost)
        return UNKNOWN

    # ------------------------------------------------------------------ modules
    def replay(self, rel: str, cname: str | None = None) -> Replay:
        """A :class:`Replay` of module ``rel`` (class ``cname``) with the names and hooks its imports give."""
        module = parsed_module(self.sources, rel)
        assert module is not None
        return Replay(module, rel, cls=cname, hooks=self.hooks(rel), names=self.names(rel))

    def names(self, rel: str) -> dict[str, Any]:
        """Module-level names the replay knows in ``rel``: ``torch`` dtypes, ``current_platform``, the enums and
        classes defined or imported there."""
        if rel in self._names:
            return self._names[rel]
        out: dict[str, Any] = {"torch": Obj("torch", {d: f"torch.{d}" for d in TORCH_DTYPES}), "envs": self.envs()}
        self._names[rel] = out
        if self.platform is not None:
            out["current_platform"] = self.platform
        module = parsed_module(self.sources, rel)
        for node in (module.body if module else []):
            if module is not None and isinstance(node, (ast.Try, ast.If, ast.With)):
                # set at import time under a condition (``if current_platform.is_cuda(): try: import vllm._flashmla_C``):
                # replayed with the tree's compiled extensions (:meth:`_import_time`), unknown where that cannot decide
                out.update(self._import_time(rel, module, node, out))
        for name in self._visible_classes(rel, module):
            found = find_class(self.sources, rel, name)
            if found is None:
                continue
            if self._is_enum(*found):
                out[name] = self.enum_obj(*found)
        return out

    def envs(self) -> Obj:
        """``vllm.envs`` as the launch sees it: each ``environment_variables`` entry of ``vllm/envs.py`` whose lambda the
        replay can evaluate with ``os.getenv`` / ``os.environ.get`` answered from the launch's environment (else the
        lambda's own default: ``VLLM_BATCH_INVARIANT`` -> ``bool(int("0"))`` -> ``False``); others unknown."""
        if self._envs is not None:
            return self._envs
        self._envs = Obj("envs")
        module = parsed_module(self.sources, ENVS)
        table = next((n.value for n in (module.body if module else []) if isinstance(n, (ast.Assign, ast.AnnAssign))
                      and isinstance(n.value, ast.Dict) and any(isinstance(t, ast.Name) and t.id == "environment_variables"
                                                                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))), None)
        if table is None or module is None:
            return self._envs

        def getenv(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            name = args[0] if args else None
            if not isinstance(name, str):
                return UNKNOWN
            return self.environ.get(name, args[1] if len(args) > 1 else kwargs.get("default"))

        r = Replay(module, ENVS, hooks={"os.getenv": getenv, "os.environ.get": getenv})
        for key, value in zip(table.keys, table.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Lambda):
                try:
                    v = r.ev(value.body, Path(frames=[{}]))
                except Exception:  # noqa: BLE001 - an entry the replay cannot evaluate (it raised) is unknown
                    v = UNKNOWN
                self._envs.attrs[key.value] = v if v is None or isinstance(v, (bool, int, float, str)) else UNKNOWN
        return self._envs

    def _import_time(self, rel: str, module: ast.Module, node: ast.stmt, names: dict[str, Any]) -> dict[str, Any]:
        """The names a module-level ``if`` / ``try`` block binds at import time, replayed: an import of a ``vllm``
        compiled extension succeeds when the tree ships it (``vllm/_flashmla_C.abi3.so`` in the wheel; recorded in
        :attr:`assumed`) and raises ``ImportError`` when it does not; a block importing anything else, or that the
        replay cannot decide, leaves its names :data:`UNKNOWN`."""
        assigned = {t.id for sub in ast.walk(node) if isinstance(sub, (ast.Assign, ast.AnnAssign))
                    for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target]) if isinstance(t, ast.Name)}
        unknown = {n: UNKNOWN for n in assigned}
        has = getattr(self.sources, "has_compiled", None)
        stems: list[str] = []
        pkg = rel.rpartition("/")[0]
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                stems += [a.name.replace(".", "/") if a.name.startswith("vllm.") else "" for a in sub.names]
            elif isinstance(sub, ast.ImportFrom):
                stems += [f"{pkg}/{a.name}" if sub.level == 1 and sub.module is None else "" for a in sub.names]
        if not stems or has is None or "" in stems or self.platform is None:
            return unknown
        shipped = {stem: bool(has(stem)) for stem in stems}
        block = _ImportCalls(pkg).visit(copy.deepcopy(node))
        ast.fix_missing_locations(block)

        def load(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            if not shipped.get(args[0] if args else "", False):
                raise HookRaise("ImportError", f"No module named {args[0]!r} (not shipped in this tree)")
            return None

        r = Replay(module, rel, hooks={"__mtp_import__": load}, names=names)
        paths = r.block([block], [Path(frames=[{}])])
        if len(paths) != 1 or paths[0].raised is not None or paths[0].lost is not None:
            return unknown
        used = [s for s, ok in shipped.items() if ok]
        if used:
            note = f"the shipped compiled {', '.join(x.rpartition('/')[2] for x in used)} loads ({rel}:{node.lineno})"
            if note not in self.assumed:
                self.assumed.append(note)
        return {n: paths[0].frames[-1].get(n, UNKNOWN) for n in assigned}

    def _visible_classes(self, rel: str, module: ast.Module | None) -> list[str]:
        names = [n.name for n in (module.body if module else []) if isinstance(n, ast.ClassDef)]
        for node in (module.body if module else []):
            if isinstance(node, ast.ImportFrom):
                names += [a.asname or a.name for a in node.names if (a.asname or a.name)[:1].isupper() or a.name.startswith("_")]
        return names

    def _class_node(self, rel: str, name: str) -> ast.ClassDef | None:
        module = parsed_module(self.sources, rel)
        return next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name), None) if module else None

    def _is_enum(self, rel: str, name: str) -> bool:
        node = self._class_node(rel, name)
        return node is not None and any("Enum" in ast.unparse(b) for b in node.bases)

    def enum_obj(self, rel: str, name: str) -> Obj:
        """An enum class as an object whose attributes are its members (:class:`Member`); a member whose value is a
        ``vllm.`` class path gets a ``get_class()`` that gives that class; ``E[name]`` is answered by :meth:`enum_item`."""
        if (rel, name) in self._enums:
            return self._enums[(rel, name)]
        node = self._class_node(rel, name)
        is_str = any(ast.unparse(b) == "str" for b in node.bases) if node else False
        obj = Obj(name, {"__enum__": (rel, name)})
        self._enums[(rel, name)] = obj
        for st in node.body if node else []:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                try:
                    value = ast.literal_eval(st.value)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    value = UNKNOWN
                key = st.targets[0].id
                getter = Native(f"{name}.{key}.get_class", self._get_class(value)) if isinstance(value, str) and value.startswith("vllm.") else None
                obj.attrs[key] = Member(value if is_str and isinstance(value, str) else f"{name}.{key}", key, value, getter)
        return obj

    def _get_class(self, dotted: str) -> Callable[..., Any]:
        def get(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            found = _dotted_rel(self.sources, dotted)
            if found is not None and parsed_module(self.sources, found[0]) is None:
                self.undecided.append(f"{found[0]} does not parse: {dotted} not followed")
                return UNKNOWN  # the module is there but cannot be read: not a guess either way
            if found is None or find_class(self.sources, *found) is None:
                raise HookRaise("ImportError", f"{dotted} is not in this vLLM tree")
            return self.class_obj(*found)
        return get

    def hooks(self, rel: str) -> dict[str, Callable[..., Any]]:
        """Calls answered outside the module's own code: functions imported from other ``vllm`` modules (replayed
        there), NamedTuple constructors, ``DeviceCapability(...)``, ``enumerate``, ``min(..., key=lambda x: x.a)``,
        ``cast``, ``resolve_obj_by_qualname`` (a class path -> that class)."""
        if rel in self._hooks:
            return self._hooks[rel]
        out: dict[str, Callable[..., Any]] = {
            "DeviceCapability": lambda r, p, a, kw, n: Cap(*a[:2]) if len(a) >= 2 and all(isinstance(x, int) for x in a[:2]) else UNKNOWN,
            "enumerate": lambda r, p, a, kw, n: list(enumerate(a[0])) if a and isinstance(a[0], (list, tuple)) else UNKNOWN,
            "min": _min_hook, "cast": lambda r, p, a, kw, n: a[1] if len(a) > 1 else UNKNOWN,
            "resolve_obj_by_qualname": self._resolve_hook, "isinstance": _isinstance_hook, "super": self._super_hook,
        }
        config = {"get_current_vllm_config": lambda *a: self.vllm_config, "get_current_vllm_config_or_none": lambda *a: self.vllm_config}
        self._hooks[rel] = out
        module = parsed_module(self.sources, rel)
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.ClassDef) and _record_class(node):
                out[node.name] = self._record_hook(rel, node)
            if isinstance(node, ast.ImportFrom):
                target = module_rel(self.sources, rel, node)
                for a in node.names:
                    if target is not None and (a.asname or a.name) not in out:
                        out[a.asname or a.name] = config.get(a.name) or self._imported_hook(target, a.name)
        return out

    def _imported_hook(self, target: str, fname: str) -> Callable[..., Any]:
        def call(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            module = parsed_module(self.sources, target)
            fn = next((x for x in module.body if isinstance(x, ast.FunctionDef) and x.name == fname), None) if module else None
            if fn is None:
                found = find_class(self.sources, target, fname)
                node = self._class_node(*found) if found else None
                if found is not None and node is not None and _record_class(node):
                    return self._record_hook(found[0], node)(r, p, args, kwargs, n)
                return UNKNOWN
            return self.run(target, None, fname, None, args, kwargs)
        return call

    def _record_hook(self, rel: str, node: ast.ClassDef) -> Callable[..., Any]:
        """A NamedTuple / dataclass constructor: an :class:`Obj` of its fields (positional, then keyword); a ``__bool__``
        the class defines is replayed once and kept as the object's truth (0.11.0 ``_IsSupported``)."""
        fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        has_bool = any(isinstance(f, ast.FunctionDef) and f.name == "__bool__" for f in node.body)

        def make(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
            obj = Obj(node.name, dict(zip(fields, args)))
            obj.attrs.update({k: v for k, v in kwargs.items() if k in fields})
            if has_bool:
                try:
                    truth = self.run(rel, node.name, "__bool__", obj, [], {})
                except HookRaise:
                    truth = UNKNOWN
                obj.attrs["__truth__"] = truth if isinstance(truth, bool) else UNKNOWN
            return obj
        return make

    def _super_hook(self, r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        """``super()`` inside a method of class ``r.cls``: the methods of the classes after it in the bound class's MRO."""
        frame = p.frames[-1] if p.frames else {}
        bound = frame.get("cls", frame.get("self"))
        key = bound.attrs.get("__class_key__") if isinstance(bound, Obj) else None
        if not isinstance(bound, Obj) or not isinstance(key, tuple) or args:
            return UNKNOWN
        chain = self.mro(*key)
        idx = next((i for i, (mrel, node) in enumerate(chain) if mrel == r.rel and node.name == r.cls), None)
        if idx is None:
            return UNKNOWN
        proxy = Obj("super")
        for mrel, node in reversed(chain[idx + 1:]):
            for f in node.body:
                if isinstance(f, ast.FunctionDef):
                    proxy.attrs[f.name] = Native(f"super.{f.name}", self._method_native(mrel, node.name, f.name, bound))
        return proxy

    def _resolve_hook(self, r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        found = _dotted_rel(self.sources, args[0]) if args and isinstance(args[0], str) else None
        return self.class_obj(*found) if found and find_class(self.sources, *found) else UNKNOWN


class _ImportCalls(ast.NodeTransformer):
    """``import vllm._flashmla_C`` / ``from . import _vllm_fa3_C`` -> ``__mtp_import__("vllm/_flashmla_C")`` (a call the
    import-time replay answers from the tree's compiled extensions)."""

    def __init__(self, pkg: str) -> None:
        self.pkg = pkg

    def _call(self, stem: str, node: ast.stmt) -> ast.Expr:
        return ast.copy_location(ast.Expr(ast.Call(ast.Name("__mtp_import__", ast.Load()), [ast.Constant(stem)], [])), node)

    def visit_Import(self, node: ast.Import) -> Any:
        return [self._call(a.name.replace(".", "/"), node) for a in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        return [self._call(f"{self.pkg}/{a.name}", node) for a in node.names]


def _isinstance_hook(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
    """``isinstance(x, type)`` is true for a class the replay built (an :class:`Obj` with ``__qualname__``); the rest as
    :mod:`mtp_audit.engines.code.statements` answers it."""
    from mtp_audit.engines.code.statements import isinstance_of

    if len(args) != 2:
        return UNKNOWN
    if args[1] == ("__ref__", "type"):
        return isinstance(args[0], Obj) and "__qualname__" in args[0].attrs if args[0] is not UNKNOWN else UNKNOWN
    return isinstance_of(args[0], args[1])


def _min_hook(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
    """``min(seq)`` on data, and ``min(seq, key=lambda x: x.attr)`` on objects."""
    key = next((k.value for k in n.keywords if k.arg == "key"), None)
    if not args or not isinstance(args[0], (list, tuple)) or not args[0]:
        return UNKNOWN
    seq = list(args[0])
    if key is None:
        return min(seq) if all(isinstance(x, (int, float, str)) for x in seq) else UNKNOWN
    if isinstance(key, ast.Lambda) and isinstance(key.body, ast.Attribute) and isinstance(key.body.value, ast.Name):
        vals = [x.get(key.body.attr) if isinstance(x, Obj) else UNKNOWN for x in seq]
        if all(isinstance(v, (int, float)) for v in vals):
            return seq[vals.index(min(vals))]
    return UNKNOWN


def _record_class(node: ast.ClassDef) -> bool:
    """A NamedTuple or ``@dataclass`` class: calling it builds a record of its annotated fields."""
    return any(ast.unparse(b).endswith("NamedTuple") for b in node.bases) or any(
        "dataclass" in ast.unparse(d) for d in node.decorator_list)


#: The start of the gap :func:`select_attention` returns without a compute capability; the launch replaces its reason
#: with the machine's (:func:`mtp_audit.engines.vllm.launch.attn_launch.capability_missing`).
CAPABILITY_UNKNOWN = "the GPU's compute capability is not known"


def select_attention(sources: Any, k: AttnKnowns) -> AttnSelection:
    """Replay the CUDA platform's ``get_attn_backend_cls`` of this tree on ``k`` (module docstring). Missing or
    unparsable source is an :attr:`AttnSelection.gap`; a test on an unknown value that changes the answer leaves
    :attr:`AttnSelection.backend` :data:`UNKNOWN` with :attr:`AttnSelection.undecided` saying which."""
    found = find_platform(sources)
    if isinstance(found, str):
        return AttnSelection(gap=found)
    if not isinstance(k.capability, tuple):
        return AttnSelection(gap=f"{CAPABILITY_UNKNOWN} (no machine declared or seen)")
    world = World(sources, Cap(*k.capability), _vllm_config(k, _attention_defaults(sources)), k.environ)
    rel, cname = found
    rel, cname = world.methods(rel, cname)["get_attn_backend_cls"]  # the defining class (its subclasses only add NVML)
    platform = world.class_obj(rel, cname)
    platform.attrs["get_device_capability"] = Native("get_device_capability", lambda *a: world.capability)
    world.platform = platform
    world._names.clear()
    where = world.methods(rel, cname)["get_attn_backend_cls"]
    defining = parsed_module(sources, where[0])
    assert defining is not None  # the method was found in this module's class
    fn = next(f for f in defining.body if isinstance(f, ast.ClassDef) and f.name == where[1]).body
    node = next(f for f in fn if isinstance(f, ast.FunctionDef) and f.name == "get_attn_backend_cls")
    out = AttnSelection(platform=f"{where[0]}:{node.lineno}")
    selected = _selected_member(world, rel, k, out)
    if out.raised is not None:
        return out
    kwargs = _call_kwargs(world, rel, node, k, selected)
    paths = world.paths(where[0], where[1], "get_attn_backend_cls", platform, [], kwargs)
    out.checked, out.assumed = world.checked, world.assumed
    if paths is None:
        out.gap = f"{out.platform}: get_attn_backend_cls could not be replayed"
        return out
    _conclude(world, paths, out)
    return out


def _attention_defaults(sources: Any) -> dict[str, Any]:
    """``AttentionConfig``'s literal field defaults in this release (class found through ``vllm/config/__init__.py``'s
    re-export; 0.33.0 ``vllm/config/attention.py``: ``flash_attn_version = None`` ...); ``{}`` when it has none."""
    found = find_class(sources, "vllm/config/__init__.py", "AttentionConfig")
    module = parsed_module(sources, found[0]) if found else None
    if found is None or module is None:
        return {}
    return Replay(module, found[0], cls=found[1]).field_defaults()


def _vllm_config(k: AttnKnowns, attention_defaults: dict[str, Any] | None = None) -> Obj:
    """What ``get_current_vllm_config()`` holds that the launch knows: ``model_config.hf_text_config`` (config.json's
    keys, strict: a key it lacks is absent), ``cache_config`` (``cache_dtype``, ``block_size``), ``parallel_config``,
    ``attention_config`` (the release's defaults under the command's ``--attention-config``)."""
    hf = Obj("PretrainedConfig", dict(k.hf_config), strict=True) if isinstance(k.hf_config, dict) else Obj("PretrainedConfig")
    model = Obj("ModelConfig", {"hf_text_config": hf, "hf_config": hf, "use_mla": k.use_mla})
    cache = Obj("CacheConfig", {"cache_dtype": k.kv_cache_dtype, "user_specified_block_size": k.block_size is not None,
                                **({"block_size": k.block_size} if k.block_size is not None else {})})
    attention = Obj("AttentionConfig", {**dict(attention_defaults or {}), **dict(k.attention_config)})
    return Obj("VllmConfig", {"model_config": model, "cache_config": cache, "parallel_config": Obj("ParallelConfig", dict(k.parallel)),
                              "attention_config": attention})


def _selected_member(world: World, rel: str, k: AttnKnowns, out: AttnSelection) -> Any:
    """The enum member the chosen backend name stands for (``None``: automatic); an unknown name is vLLM's
    ``Unknown attention backend`` ValueError (the enum's ``__getitem__``)."""
    if k.selected is None or k.selected.lower() == "auto":
        return None
    enums = [v for v in world.names(rel).values() if isinstance(v, Obj) and "__enum__" in v.attrs and "Backend" in v.name
             and "Mamba" not in v.name and "Platform" not in v.name]
    env = k.selected_from == "VLLM_ATTENTION_BACKEND"
    # the variable is looked up as written (0.11.0 vllm/attention/selector.py:21-32, after dropping a "_VLLM_V1" suffix);
    # the options go through the enum's __getitem__ after .upper() (0.33.0 AttentionConfig.validate_backend_before)
    name = k.selected.removesuffix("_VLLM_V1") if env else k.selected.upper()
    for e in enums:
        m = e.attrs.get(name)
        if isinstance(m, Member):
            return m
    if not enums:
        return UNKNOWN
    erel, ename = enums[0].attrs["__enum__"]
    names = [n for n, m in enums[0].attrs.items() if isinstance(m, Member)]
    where = _env_raise(world, rel) if env else None
    if where is not None:
        out.raised = Raised("ValueError", f"Invalid attention backend: '{name}'. Valid backends are: {names}", where)
    else:
        out.raised = Raised("ValueError", f"Unknown attention backend: '{k.selected}'. Valid options are: {', '.join(names)}",
                            _getitem_raise(world, erel) or erel)
    out.backend = None
    return None


def _env_raise(world: World, rel: str) -> str | None:
    """``file:line`` of the ``raise ValueError("Invalid attention backend: ...")`` for an unknown
    ``VLLM_ATTENTION_BACKEND``, looked for in the modules the platform module imports (0.11.0: vllm/attention/selector.py)."""
    module = parsed_module(world.sources, rel)
    for node in ast.walk(module) if module else ():
        target = module_rel(world.sources, rel, node) if isinstance(node, ast.ImportFrom) else None
        tmod = parsed_module(world.sources, target) if target else None
        for r in ast.walk(tmod) if tmod else ():
            if isinstance(r, ast.Raise) and any(isinstance(c, ast.Constant) and isinstance(c.value, str)
                                                and "Invalid attention backend: '" in c.value for c in ast.walk(r)):
                return f"{target}:{r.lineno}"
    return None


def _getitem_raise(world: World, rel: str) -> str | None:
    module = parsed_module(world.sources, rel)
    for fn in ast.walk(module) if module else ():
        if isinstance(fn, ast.FunctionDef) and fn.name == "__getitem__":
            r = next((s for s in ast.walk(fn) if isinstance(s, ast.Raise)), None)
            if r is not None:
                return f"{rel}:{r.lineno}"
    return None


def _call_kwargs(world: World, rel: str, node: ast.FunctionDef, k: AttnKnowns, selected: Any) -> dict[str, Any]:
    """The arguments ``get_attn_backend_cls`` takes in this release, by parameter name: 0.24+ an
    ``AttentionSelectorConfig`` (its NamedTuple fields and defaults read from the source), 0.11.0 the values one by one."""
    values = {"selected_backend": selected, "head_size": k.head_size, "dtype": k.dtype, "kv_cache_dtype": k.kv_cache_dtype,
              "block_size": k.block_size, "use_mla": k.use_mla, "has_sink": k.has_sink, "use_sparse": k.use_sparse,
              "num_heads": k.num_heads, "use_v1": True, "use_mm_prefix": False}
    params = [a.arg for a in node.args.args + node.args.kwonlyargs][1:]
    if "block_size" in params and k.block_size is None:
        # 0.11.0 passes cache_config.block_size after the platform's own defaults (check_and_update_config), not only a
        # --block-size the user gave (0.24+ selector: None unless user-specified)
        values["block_size"] = UNKNOWN
    out = {p: values[p] for p in params if p in values}
    if "attn_selector_config" in params:
        out["attn_selector_config"] = _selector_config(world, rel, values)
    return out


def _selector_config(world: World, rel: str, values: dict[str, Any]) -> Any:
    found = find_class(world.sources, rel, "AttentionSelectorConfig")
    node = world._class_node(*found) if found else None
    if found is None or node is None:
        return UNKNOWN
    r = world.replay(found[0])
    p = Path(frames=[{}])
    fields: dict[str, Any] = {}
    for st in node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            name = st.target.id
            fields[name] = values[name] if name in values else (r.ev(st.value, p) if st.value is not None else UNKNOWN)
    obj = Obj("AttentionSelectorConfig", dict(fields))
    obj.attrs["_asdict"] = Native("_asdict", lambda *a: dict(fields))
    obj.attrs["__repr__"] = Native("__repr__", lambda *a: "AttentionSelectorConfig(" + ", ".join(
        f"{n}={v}" for n, v in fields.items()) + ")")
    return obj


def _conclude(world: World, paths: list[Path], out: AttnSelection) -> None:
    """The backend (or the exception) every path agrees on, else the undecided tests."""
    raised = [q.raised for q in paths if q.raised is not None]
    if len(raised) == len(paths) and len({(x.type, x.location) for x in raised}) == 1:
        known = [exc for exc in raised if "{" not in exc.message]
        out.raised, out.backend = (known[0] if known else raised[0]), None
        return
    ok = [q for q in paths if q.raised is None and q.lost is None]
    if ok and len(ok) == len(paths) and len({repr(q.ret) for q in ok}) == 1 and isinstance(ok[0].ret, str):
        out.class_path = ok[0].ret
        out.backend = _enum_name(world, ok[0].ret) or ok[0].ret.rpartition(".")[2]
        out.decided_at = ok[0].ret_loc
        return
    for q in paths:
        out.undecided += [f"{t} ({loc})" for t, _b, loc in q.assumed if f"{t} ({loc})" not in out.undecided]
        if q.lost and q.lost not in out.undecided:
            out.undecided.append(q.lost)
    out.undecided += [u for u in world.undecided if u not in out.undecided]
    outcomes = sorted({(_enum_name(world, q.ret) or str(q.ret)) if q.raised is None else f"{q.raised.type} ({q.raised.location})"
                       for q in paths if q.lost is None})
    out.undecided.insert(0, "possible outcomes: " + ", ".join(outcomes))


def _enum_name(world: World, class_path: str) -> str | None:
    for e in world._enums.values():
        for name, m in e.attrs.items():
            if isinstance(m, Member) and m.member_value == class_path:
                return name
    return None


#: on-disk cache namespace of :func:`select_attention_cached` (bump when the replay or the entry's shape changes)
CACHE_NAMESPACE = "vllm-attn-v1"


def _sha1(data: bytes | None) -> str:
    import hashlib

    return hashlib.sha1(data if data is not None else b"\0missing").hexdigest()


def _code_stamp() -> str:
    """SHA-1 of this module and the statement replay it drives, so an entry written by other replay code is a miss."""
    from pathlib import Path as _P

    from mtp_audit.engines.code import statements

    return _sha1(_P(__file__).read_bytes() + _P(statements.__file__).read_bytes())


def _to_json(sel: AttnSelection) -> dict[str, Any]:
    def val(v: Any) -> Any:
        return {"unknown": True} if v is UNKNOWN else v

    return {"backend": val(sel.backend), "class_path": val(sel.class_path), "decided_at": sel.decided_at,
            "raised": [sel.raised.type, sel.raised.message, sel.raised.location] if sel.raised else None,
            "checked": [[n, val(r) if not isinstance(r, list) or all(isinstance(x, str) for x in r) else {"unknown": True}]
                        for n, r in sel.checked],
            "undecided": list(sel.undecided), "gap": sel.gap, "platform": sel.platform, "assumed": list(sel.assumed)}


def _from_json(d: dict[str, Any]) -> AttnSelection | None:
    def val(v: Any) -> Any:
        return UNKNOWN if v == {"unknown": True} else v

    try:
        raised = Raised(*d["raised"]) if d["raised"] else None
        return AttnSelection(backend=val(d["backend"]), class_path=val(d["class_path"]), decided_at=d["decided_at"], raised=raised,
                             checked=[(str(n), val(r)) for n, r in d["checked"]], undecided=[str(u) for u in d["undecided"]],
                             gap=d["gap"], platform=d["platform"], assumed=[str(a) for a in d.get("assumed") or []])
    except (KeyError, TypeError, ValueError):
        return None


def select_attention_cached(sources: Any, k: AttnKnowns) -> AttnSelection:
    """:func:`select_attention` with its answer kept in the user cache (``vllm-attn-v1``): the entry is keyed by the
    launch's values, the platform module's bytes and the replay code's own hash (:func:`_code_stamp`), and holds the SHA-1 of every module the replay parsed; it is used
    only when each of those modules still has the same bytes (so an edited backend file replays again)."""
    import hashlib

    from mtp_audit.engines.code import cache

    folder = cache.cache_dir(CACHE_NAMESPACE)
    plat = sources.get(PLATFORMS_INIT)
    ident = repr((k.capability, k.head_size, k.dtype, k.kv_cache_dtype, k.block_size, k.use_mla, k.use_sparse, k.has_sink,
                  k.num_heads, k.selected, sorted((k.hf_config or {}).items(), key=str), sorted(k.parallel.items()),
                  sorted(k.attention_config.items(), key=str), sorted(k.environ.items())))
    key = "attn-" + hashlib.sha1((ident + _sha1(plat) + _code_stamp()).encode("utf-8", "surrogatepass")).hexdigest()
    hit = cache.load(folder, key)
    if hit is not None and isinstance(hit.get("files"), dict) and all(
            isinstance(h, str) and _sha1(sources.get(rel)) == h for rel, h in hit["files"].items()):
        sel = _from_json(hit.get("selection") or {})
        if sel is not None:
            return sel
    sel = select_attention(sources, k)
    parsed = sources.__dict__.get("_parsed", {}) if hasattr(sources, "__dict__") else {}
    cache.store(folder, key, {"files": {rel: _sha1(sources.get(rel)) for rel in sorted(parsed)}, "selection": _to_json(sel)})
    return sel
