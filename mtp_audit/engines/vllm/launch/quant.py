"""The quantization method vLLM really runs for a checkpoint and ``--quantization``, replayed statement by statement
from the release's own source (:mod:`mtp_audit.engines.code.statements`; parsed, never imported):

1. ``ModelArchConfigConvertorBase._normalize_quantization_config`` (0.33.0
   ``vllm/transformers_utils/model_arch_config_convertor.py:241``): a ModelOpt ``quant_algo`` becomes the
   ``quant_method`` (``MIXED_PRECISION`` -> ``modelopt_mixed``);
2. ``ModelConfig._verify_quantization`` (0.33.0 ``vllm/config/model.py:1383``): every method's
   ``override_quantization_method`` in the source's order of preference, the first non-``None`` answer replacing the
   user's ``--quantization`` (silently), then the "does not match" and "Unknown quantization method" refusals.

``override_quantization_method`` is replayed from the config class of each method in the source's ``overrides`` list
(the class found through ``get_quantization_config``'s ``method_to_config`` and its imports); a method outside that list
answers ``None``: ``_verify_quantization`` itself raises for a built-in method that overrides without being listed, so no
release that starts can have one.

For ModelOpt ``MIXED_PRECISION`` (NVFP4 MLPs, FP8 attention), ``--quantization modelopt_fp4`` resolves to
``modelopt_mixed`` (0.33.0 ``modelopt.py:1663``), silently.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.code.pyast import parse_source
from mtp_audit.engines.code.statements import UNKNOWN, HookRaise, Obj, Raised, Replay

MODEL_REL = "vllm/config/model.py"
CONVERTOR_REL = "vllm/transformers_utils/model_arch_config_convertor.py"
QUANT_INIT = "vllm/model_executor/layers/quantization/__init__.py"


@dataclass
class QuantResolution:
    """What the replay decided: ``method`` (the ``self.quantization`` vLLM keeps; ``None``: unquantized;
    :data:`UNKNOWN`: not decided), ``raised`` (vLLM refuses the model), ``decided_at`` (``file:line`` of the override
    that replaced the method, or of the normalisation), ``gap`` (why nothing could be replayed), ``overridden``
    (the user's ``--quantization`` replaced by another method)."""

    method: Any = UNKNOWN
    raised: Raised | None = None
    decided_at: str | None = None
    gap: str | None = None
    overridden: bool = False
    trace: list[str] = field(default_factory=list)


def parsed_module(sources: Any, rel: str) -> ast.Module | None:
    """The parsed module at ``rel`` (``None``: absent or not Python); parsed once per sources mapping (the cache lives on
    the mapping, :class:`mtp_audit.engines.vllm.draft.TreeSources`, so it goes with its tree)."""
    cache = sources.__dict__.setdefault("_parsed", {}) if hasattr(sources, "__dict__") else {}
    if rel not in cache:
        data = sources.get(rel)
        cache[rel] = parse_source(rel, data)[0] if data is not None else None
    return cache[rel]



def module_rel(sources: Any, base: str, node: ast.ImportFrom) -> str | None:
    """The tree path of an ``import from`` target (relative to the package of ``base``, or absolute ``vllm.x``):
    ``x/y.py`` or ``x/y/__init__.py``, whichever the tree has."""
    if node.level:
        pkg = base.rsplit("/", 1)[0].split("/")
        pkg = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
        stem = "/".join(pkg + (node.module.split(".") if node.module else []))
    elif node.module and node.module.split(".")[0] == "vllm":
        stem = node.module.replace(".", "/")
    else:
        return None
    for rel in (stem + ".py", stem + "/__init__.py"):
        if sources.get(rel) is not None:
            return rel
    return None


def find_class(sources: Any, rel: str, name: str, depth: int = 0) -> tuple[str, str] | None:
    """``(module path, class name)`` where class ``name`` seen from module ``rel`` is defined, following ``from .m import
    Name [as Alias]`` re-exports (at most 4 hops)."""
    module = parsed_module(sources, rel)
    if module is None or depth > 4:
        return None
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return rel, name
    for sub in ast.walk(module):
        if isinstance(sub, ast.ImportFrom):
            for a in sub.names:
                if (a.asname or a.name) == name:
                    target = module_rel(sources, rel, sub)
                    if target is not None:
                        return find_class(sources, target, a.name, depth + 1)
    return None


def _class_index(sources: Any) -> tuple[dict[str, list[tuple[str, str]]], Any, dict[str, Any]]:
    """``method name -> [(module path, class name), ...]`` from ``get_quantization_config``'s ``method_to_config`` (a
    name bound in a platform branch has one candidate per branch), the ``QuantizationMethods`` Literal values and the
    module's other literal constants (``DEPRECATED_QUANTIZATION_METHODS``)."""
    init = parsed_module(sources, QUANT_INIT)
    if init is None:
        return {}, UNKNOWN, {}
    rp = Replay(init, QUANT_INIT)
    literal = rp.globals.get("QuantizationMethods", UNKNOWN)
    literal = literal[1] if isinstance(literal, tuple) and len(literal) == 2 and literal[0] == "__literal__" else UNKNOWN
    consts = {k: v for k, v in rp.globals.items() if not (isinstance(v, tuple) and v[:1] == ("__literal__",))}
    fn = next((n for n in init.body if isinstance(n, ast.FunctionDef) and n.name == "get_quantization_config"), None)
    if fn is None:
        return {}, literal, consts
    where: dict[str, list[tuple[str, str]]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.ImportFrom):
            target = module_rel(sources, QUANT_INIT, node)
            for a in node.names:
                found = find_class(sources, target, a.name) if target else None
                if found:
                    where.setdefault(a.asname or a.name, []).append(found)
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Name) and node.value.id in where:
            tgt = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tgt, ast.Name):
                where.setdefault(tgt.id, [])
                where[tgt.id] = list(dict.fromkeys(where[tgt.id] + where[node.value.id]))
    out: dict[str, list[tuple[str, str]]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name) and v.id in where:
                    out[k.value] = where[v.id]
    return out, literal, consts


class _QuantHooks:
    def __init__(self, sources: Any, classes: dict[str, list[tuple[str, str]]], overrides: list[str] | None) -> None:
        self.sources, self.classes = sources, classes
        self.overrides = overrides
        self.decided: list[str] = []

    def get_config(self, r: Replay, p: Any, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        return Obj("QuantizationConfigClass", {"__method__": args[0] if args else UNKNOWN})

    def overrides_list(self, p: Any) -> list[str] | None:
        v = p.frames[-1].get("overrides") if p.frames else None
        return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None

    def override(self, r: Replay, p: Any, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        """``method.override_quantization_method(quant_cfg, user_quant, hf_config=...)`` replayed from the class's own
        module; ``None`` for a method outside the source's ``overrides`` list (module docstring)."""
        method = p.frames[-1].get("method") if p.frames else None
        name = method.get("__method__") if isinstance(method, Obj) else UNKNOWN
        listed = self.overrides_list(p)
        if not isinstance(name, str) or listed is None:
            return UNKNOWN
        if name not in listed:
            return None
        answers = [self._one(rel, cls, args, kwargs) for rel, cls in self.classes.get(name) or []]
        if not answers or any(a is UNKNOWN for a in answers) or len({repr(a[0]) for a in answers}) != 1:
            return UNKNOWN
        ret, where = answers[0]
        if ret is not None and where:
            self.decided.append(where)
        return ret

    def _one(self, rel: str, cls: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """``(answer, file:line of the return that gave it)`` of one class's ``override_quantization_method``, or
        :data:`UNKNOWN`; a class that does not define it (nor a base in its module) inherits ``QuantizationConfig``'s,
        which answers ``None``."""
        module = parsed_module(self.sources, rel)
        if module is None:
            return UNKNOWN
        sub = Replay(module, rel, cls=cls)
        if "override_quantization_method" not in sub.methods:
            return (None, None)
        paths = sub.call("override_quantization_method", Obj(cls), *args[:2], **{k: v for k, v in kwargs.items() if k == "hf_config"})
        rets = {repr(q.ret) for q in paths if q.raised is None and q.lost is None}
        if len(paths) != 1 or paths[0].raised is not None or paths[0].lost is not None or len(rets) != 1:
            return UNKNOWN
        ret = paths[0].ret
        fn = sub.methods["override_quantization_method"]
        line = next((s.lineno for s in ast.walk(fn) if isinstance(s, ast.Return) and isinstance(s.value, ast.Constant)
                     and s.value.value == ret), fn.lineno)
        return (ret, f"{rel}:{line}")


def resolve_quantization(sources: Any, quant_cfg: dict[str, Any] | None, user_quant: str | None,
                         hf_config: dict[str, Any] | None = None) -> QuantResolution:
    """Replay the quantization chain (module docstring) for a checkpoint's quantization config (``config.json``
    ``quantization_config``, else ``hf_quant_config.json``; ``None``: none) and ``--quantization`` (``None``: not given);
    ``hf_config``: what is known of the model's config (``model_type``, ``architectures``), which some overrides test.
    Unparsable or missing source is a :attr:`QuantResolution.gap`."""
    model = parsed_module(sources, MODEL_REL)
    if model is None:
        return QuantResolution(gap=f"{MODEL_REL} is missing or does not parse: the quantization method was not replayed")
    res = QuantResolution()
    cfg = _normalized(sources, quant_cfg, res)
    if cfg is UNKNOWN:
        return res
    classes, literal, consts = _class_index(sources)
    hooks = _QuantHooks(sources, classes, None)
    me_quant = Obj("me_quant", {**consts, "QUANTIZATION_METHODS": list(literal) if literal is not UNKNOWN else UNKNOWN,
                                "QuantizationMethods": ("__literal__", tuple(literal)) if literal is not UNKNOWN else UNKNOWN,
                                "get_quantization_config": ("__ref__", "me_quant.get_quantization_config")})
    r = Replay(model, MODEL_REL, cls="ModelConfig", names={"me_quant": me_quant},
               hooks={"me_quant.get_quantization_config": hooks.get_config, "method.override_quantization_method": hooks.override,
                      "cast": lambda rp, p, a, kw, n: a[1] if len(a) > 1 else UNKNOWN})
    if "_verify_quantization" not in r.methods:
        return QuantResolution(gap=f"{MODEL_REL}: ModelConfig has no _verify_quantization to replay")
    arch = Obj("ModelArchConfig", {"quantization_config": cfg})
    self_obj = Obj("ModelConfig", {**r.field_defaults(), "quantization": user_quant, "model_arch_config": arch,
                                   "hf_config": Obj("PretrainedConfig", {**dict(hf_config or {}), "quantization_config": cfg},
                                                    strict=True)})
    paths = r.call("_verify_quantization", self_obj)
    if len(paths) != 1 or paths[0].lost:
        res.trace += [f"{t} ({loc})" for p in paths for t, _b, loc in p.assumed]
        return res
    p = paths[0]
    if p.raised is not None:
        res.raised = p.raised
        return res
    res.method = p.bound.get("quantization")
    res.decided_at = hooks.decided[-1] if hooks.decided else res.decided_at
    res.overridden = bool(user_quant) and res.method != user_quant
    return res


def _normalized(sources: dict[str, bytes | None], quant_cfg: dict[str, Any] | None, res: QuantResolution) -> Any:
    """Step 1: ``_normalize_quantization_config`` when this release has it (0.24+); older releases read
    ``quant_method`` as written."""
    if quant_cfg is None:
        return None
    cfg = dict(quant_cfg)
    conv = parsed_module(sources, CONVERTOR_REL)
    if conv is None:
        return cfg
    r = Replay(conv, CONVERTOR_REL, cls="ModelArchConfigConvertorBase")
    if "_normalize_quantization_config" not in r.methods:
        return cfg
    paths = r.call("_normalize_quantization_config", Obj("Convertor"), Obj("PretrainedConfig", {"quantization_config": cfg}, strict=True))
    if len(paths) != 1 or paths[0].lost or paths[0].raised is not None:
        if len(paths) == 1 and paths[0].raised is not None:
            res.raised = paths[0].raised
        return UNKNOWN
    before = quant_cfg.get("quant_method")
    out = paths[0].ret
    if isinstance(out, dict) and out.get("quant_method") != before:
        fn = r.methods["_normalize_quantization_config"]
        line = next((s.lineno for s in ast.walk(fn) if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
                     and s.value.value == out.get("quant_method")), fn.lineno)
        res.decided_at = f"{CONVERTOR_REL}:{line}"
        res.trace.append(f"quant_method {before!r} -> {out.get('quant_method')!r} ({CONVERTOR_REL}:{line})")
    return out


def normalized_quant_config(sources: Any, quant_cfg: dict[str, Any] | None) -> Any:
    """The quantization config as ``ModelConfig`` leaves it after ``_normalize_quantization_config`` (0.24+; the dict
    ``hf_config.quantization_config`` holds afterwards), or as written on older releases; :data:`UNKNOWN` when the
    normalisation cannot be replayed or raises."""
    return _normalized(sources, quant_cfg, QuantResolution())


__all__ = ["QuantResolution", "resolve_quantization", "normalized_quant_config", "HookRaise"]
