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
import re
from collections.abc import Mapping
from typing import Any


def n_predict_of(expr: str | None, ck: dict[str, Any] | None, class_defines: Any = None) -> tuple[int | None, str]:
    """The draft's ``n_predict`` as ``hf_config_override`` reads it (``expr``, e.g.
    ``getattr(text_config, 'mtp_num_hidden_layers', None)``), from the checkpoint facts: the declared MTP
    layer count when the expression reads the key the checkpoint declares them under
    (``mtp.declared_by``), a literal count, or the ``getattr`` default when the checkpoint declares
    them under another key and the config class is known to define no such attribute (``class_defines``: attribute
    name -> ``(defines: bool | None, evidence)``, :func:`mtp_audit.engines.vllm.launch.config_class.class_defines`;
    without it, or when it answers ``None``, not decided). Returns ``(value or None, how)``."""
    if expr is None:
        return None, "no n_predict written for this draft"
    m = re.fullmatch(r"\s*(\d+)\s*", expr)
    if m:
        return int(m.group(1)), f"constant {expr}"
    mtp = (ck or {}).get("mtp") or {}
    declared_by = str(mtp.get("declared_by") or "")
    key = declared_by.rsplit("/", 1)[-1] if declared_by else None
    g = re.search(r"""getattr\(\s*(\w+)\s*,\s*['"](\w+)['"]\s*(?:,\s*([^)]*))?\)|(\w+)\.get\(\s*['"](\w+)['"]\s*(?:,\s*([^)]*))?\)|(\w+)\.(\w+)\s*$""", expr)
    if not g:
        return None, f"{expr} (not read statically)"
    name = g.group(2) or g.group(5) or g.group(8)
    default = g.group(3) if g.group(2) else g.group(6) if g.group(5) else None
    if key and name == key:
        return mtp.get("declared_layers"), f"{expr} = {mtp.get('declared_layers')} ({declared_by} in config.json)"
    if ck is None:
        return None, f"{expr} (checkpoint not audited)"
    d = (default or "").strip()
    cfg: dict[str, Any] = ck["config"] if isinstance(ck.get("config"), dict) else {}
    defines, why = class_defines(name) if class_defines is not None and g.group(1) == "hf_config" and name not in cfg \
        else (None, None)
    if defines is False and (d in ("", "None") or d.isdigit()):
        # config.json does not hold the key and the config class defines no such attribute: getattr's default
        return (int(d) if d.isdigit() else None), f"{expr} = {d or 'None'}: config.json has no {name} and {why}"
    # config.json does not hold the key; the transformers config class may still define it (a class default is not in
    # config.json), so the getattr default is only what applies when the class has no such attribute
    return None, (f"{expr}: config.json has no {name} (its MTP layers: {declared_by or 'none declared'}); n_predict is the "
                  f"transformers config class's default, or {d or 'None'} when the class has none: not decided"
                  + (f" ({why})" if why else ""))


def pydantic_validated(vf: dict[str, Any] | None) -> bool:
    """Whether the release's ``SpeculativeConfig`` is a pydantic dataclass (the vLLM audit's ``spec_config.validated``:
    ``@config`` builds one from 0.24.0 on), so pydantic validates the fields before ``__post_init__``."""
    sc = vf.get("spec_config") if isinstance(vf, dict) else None
    return isinstance(sc, dict) and bool(sc.get("validated"))


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
            name = n.args[1].value
            if not isinstance(name, str):  # getattr(x, b"a") raises TypeError in Python: no value here
                return UNKNOWN
            key = f"{ast.unparse(n.args[0])}.{name}"
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


# ---------------------------------------------------------------------------------------------------------------
# Statement-order replay of SpeculativeConfig (engine-neutral core: mtp_audit.engines.code.statements)
# ---------------------------------------------------------------------------------------------------------------

from dataclasses import dataclass, field  # noqa: E402

from mtp_audit.engines.code.statements import UNKNOWN as R_UNKNOWN  # noqa: E402
from mtp_audit.engines.code.statements import HookLost, HookRaise, Native, Obj, Path, Replay  # noqa: E402
from mtp_audit.engines.vllm.distributions import ARCTIC_INFERENCE  # noqa: E402

REGISTRY_REL = "vllm/model_executor/models/registry.py"
#: ``__post_init__`` and the pydantic ``model_validator(mode="after")`` vLLM runs right after it
REPLAYED = ("__post_init__", "_verify_args")


@dataclass
class DraftFacts:
    """What the replay knows of one draft checkpoint after ``hf_config_override`` (mtp_audit's checkpoint audit and
    :meth:`mtp_audit.engines.vllm.draft.LaunchView.draft`): ``model_type``, ``architectures``, ``n_predict`` (``None``:
    the override writes none; :data:`R_UNKNOWN`: not decided), ``composite`` (the config nests a ``text_config``),
    ``config_class`` (the transformers class name in messages)."""

    model_type: Any
    architectures: Any
    n_predict: Any = R_UNKNOWN
    composite: Any = R_UNKNOWN
    config_class: str = "PretrainedConfig"
    #: the ``model_type`` of config.json itself (the class vLLM builds ``hf_config`` from, before any override)
    class_model_type: Any = R_UNKNOWN


@dataclass
class LaunchKnowns:
    """The values a launch fixes before ``SpeculativeConfig`` is built.

    Attributes:
        spec: the ``--speculative-config`` keys as given (JSON values).
        target_model: the model path/id of ``vllm serve``.
        target: the target's :class:`DraftFacts` (before any override; ``n_predict`` unused).
        target_text_model_type: ``text_config.model_type`` (``None`` when not composite).
        quantization: ``--quantization`` (``None`` when not given; what ModelConfig resolves is unknown).
        using_transformers: whether the target runs on the Transformers backend (``--model-impl``), or unknown.
        draft_of: model path -> its :class:`DraftFacts` (``None``: not audited).
        registered: architecture -> registry location, ``None`` when not registered, :data:`R_UNKNOWN` when unknown.
        parallel: the target ``ParallelConfig`` values the command fixes (``tensor_parallel_size``,
            ``decode_context_parallel_size``: the given value or vLLM's default 1); a value it does not fix is absent.
    """

    spec: dict[str, Any]
    target_model: str | None
    target: DraftFacts
    target_text_model_type: str | None
    quantization: str | None
    using_transformers: Any
    draft_of: Any
    registered: Any
    parallel: dict[str, Any] = field(default_factory=dict)
    #: model path -> an upper bound of the max_model_len vLLM derives for it (``None``: no bound; always ``None`` when
    #: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set)
    max_len_bound: Any = None
    #: (model path, model_type after ``hf_config_override``) -> a lower bound of the max_model_len vLLM derives for it
    #: (:func:`mtp_audit.engines.vllm.launch.max_len.length_floor`; ``math.inf``: no length key), ``None``: not decided
    max_len_floor: Any = None
    #: (model path, model_type) -> the machine facts the upper bound of :attr:`max_len_bound` rests on, as
    #: ``(label, value with its provenance)`` (the machine's transformers where its class defaults decided the length),
    #: evidence of a refusal; ``None``: none
    max_len_machine: Any = None
    #: the target ``ModelConfig.max_model_len`` (an int, a :class:`~mtp_audit.engines.code.statements.Bounded` one, or
    #: :data:`R_UNKNOWN`)
    target_max_len: Any = R_UNKNOWN
    #: model path -> the ``vocab_size`` of its config.json (its ``text_config``'s for a composite one), ``None`` when absent
    vocab_of: Any = None
    #: model path -> whether its config.json sets no ``head_dtype`` (then vLLM runs the lm_head in the model dtype)
    head_dtype_is_dtype: Any = None
    #: (model path, ``quantization``) -> the draft ``ModelConfig``'s ``_verify_quantization`` replayed on that checkpoint's
    #: own quantization config (:func:`mtp_audit.engines.vllm.launch.quant.resolve_quantization`), ``None``: not replayed
    draft_quant: Any = None
    #: the release's ``Requires-Dist`` lines (``None``: not read, a checkout)
    requires: Any = None
    #: distribution name -> whether the serving machine has it installed, a :class:`~mtp_audit.known.Known` of ``bool``
    #: (:meth:`mtp_audit.preflight.typed.MachineAnswer.installed`); ``None``: no machine facts
    installed: Any = None


@dataclass
class SpecReplay:
    """What the statement-order replay of ``SpeculativeConfig`` says for one launch.

    Attributes:
        paths: the paths it ended on (one, unless a test it could not decide changed the outcome).
        gap: why it could not replay at all (unparsable or missing source), else ``None``.
        linked: whether the release keeps per-method logic in the speculator package the replay followed into
            (0.34.0+, :mod:`mtp_audit.engines.vllm.speculators`).
    """

    paths: list[Path] = field(default_factory=list)
    gap: str | None = None
    rel: str | None = None
    linked: bool = False
    #: the machine facts the replay decided a test with: ``(label, value with its provenance)``, evidence of a refusal
    machine: list[tuple[str, str]] = field(default_factory=list)

    def moved(self) -> list[str]:
        """Why paths were lost because the release moved something the replay follows ("could not tell: vLLM X moved
        ..."), and the other lost paths of a linked release."""
        return [p.lost for p in self.paths if p.lost and (self.linked or "moved" in p.lost)]

    def _same(self, get: Any) -> Any:
        vals = [get(p) for p in self.paths]
        if not vals or any(p.lost for p in self.paths):
            return R_UNKNOWN
        first = vals[0]
        return first if all(repr(v) == repr(first) for v in vals) else R_UNKNOWN

    @property
    def raised(self) -> Any:
        """The :class:`Raised` every path ends with, ``None`` when no path raises, :data:`R_UNKNOWN` otherwise."""
        return self._same(lambda p: p.raised)

    def final(self, attr: str) -> Any:
        """``self.<attr>`` after the replay (the same on every path that does not raise), else :data:`R_UNKNOWN`."""
        ok = [p for p in self.paths if p.raised is None]
        if not ok or any(p.lost for p in self.paths):
            return R_UNKNOWN
        vals = [p.bound.get(attr) if isinstance(p.bound, Obj) else R_UNKNOWN for p in ok]
        first = vals[0]
        return first if all(repr(v) == repr(first) for v in vals) else R_UNKNOWN

    def draft_architectures(self) -> Any:
        """The draft ``ModelConfig``'s architectures after every rewrite (``None``: no draft model config)."""
        ok = [p for p in self.paths if p.raised is None]
        vals = []
        for p in ok:
            d = p.bound.get("draft_model_config") if isinstance(p.bound, Obj) else R_UNKNOWN
            # ModelConfig.architectures reads hf_config.architectures (0.11.0 a property; 0.24+ update_arch_ syncs it)
            hf = d.get("hf_config") if isinstance(d, Obj) else None
            vals.append(hf.get("architectures") if isinstance(hf, Obj) else d.get("architectures") if isinstance(d, Obj)
                        else (None if d is None else R_UNKNOWN))
        if not vals or any(p.lost for p in self.paths):
            return R_UNKNOWN
        return vals[0] if all(repr(v) == repr(vals[0]) for v in vals) else R_UNKNOWN

    def why(self) -> list[str]:
        """The tests it could not decide that changed the outcome (``text (file:line)``) and lost paths."""
        out = []
        for p in self.paths:
            out += [f"{t} ({loc})" for t, _b, loc in p.assumed if f"{t} ({loc})" not in out]
            if p.lost and p.lost not in out:
                out.append(p.lost)
        return out


def _config_obj(f: DraftFacts, model: Any, quantization: Any) -> Obj:
    """A ``ModelConfig``-like object for ``f`` (hf_config and hf_text_config share the known attributes)."""
    hf_attrs: dict[str, Any] = {"model_type": f.model_type, "architectures": list(f.architectures) if isinstance(f.architectures, list) else f.architectures}
    if f.n_predict is not R_UNKNOWN:
        hf_attrs["n_predict"] = f.n_predict
    hf_attrs["__composite__"] = f.composite
    hf_attrs["__class_model_type__"] = f.class_model_type
    hf = Obj(f"{f.config_class}", hf_attrs)
    return Obj("ModelConfig", {"model": model, "hf_config": hf, "hf_text_config": hf, "architectures": hf_attrs["architectures"],
                               "quantization": quantization, "runner": "draft", "registry": Obj("registry")})


class _Hooks:
    """The calls the replay cannot follow in ``speculative.py`` itself, answered from the launch's facts with the
    vLLM behaviour they stand for (each names its source)."""

    def __init__(self, known: LaunchKnowns, eagle_rel: str | None, sources: dict[str, bytes | None]) -> None:
        self.k = known
        self.sources = sources
        self.eagle_rel, self.eagle_src = eagle_rel, sources.get(eagle_rel or "")
        #: the machine facts a hook answered from (:attr:`SpecReplay.machine`)
        self.machine: list[tuple[str, str]] = []
        #: the speculator-package link of a 0.34.0+ release (:func:`_link`), else ``None``
        self.link: Any = None

    def table(self) -> dict[str, Any]:
        return {"ModelConfig": self.model_config, "EAGLEConfig": self.eagle_config, "self.update_arch_": self.update_arch,
                "target.using_transformers_backend": lambda *a: self.k.using_transformers,
                "self.target_model_config.using_transformers_backend": lambda *a: self.k.using_transformers,
"has_arctic_inference": self.has_arctic_inference,
                "SpeculativeConfig.compose_draft_hf_overrides": lambda *a: None}

    def model_config(self, r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        """``ModelConfig(model=..., runner="draft", hf_overrides=...)``: the draft checkpoint's config after
        ``hf_config_override`` (:meth:`LaunchView.draft`)."""
        model = kwargs.get("model", args[0] if args else R_UNKNOWN)
        f = self.k.draft_of(model) if isinstance(model, str) else None
        if f is None:
            f = DraftFacts(R_UNKNOWN, R_UNKNOWN)
        self._check_max_len(model, kwargs.get("max_model_len"), f.model_type)
        taken = self._max_len_taken(model, kwargs.get("max_model_len"), f)
        self._check_quantization(model, kwargs.get("quantization", R_UNKNOWN), f)
        obj = _config_obj(f, model, kwargs.get("quantization", R_UNKNOWN))
        obj.attrs["get_vocab_size"] = _vocab_native(self.k, model)
        if taken is not None:
            obj.attrs["max_model_len"] = taken
        if self.k.head_dtype_is_dtype is not None and isinstance(model, str) and self.k.head_dtype_is_dtype(model):
            # a generation (or draft) model's head runs in the model dtype unless its config sets head_dtype
            # (vllm/config/model.py _get_head_dtype: 0.34.0 :2565-2586): the same value, whatever it is
            obj.attrs["dtype"] = obj.attrs["head_dtype"] = f"<the dtype of {model}>"
        return obj

    def _check_max_len(self, model: Any, mml: Any, model_type: Any = None) -> None:
        """The draft ``ModelConfig`` refuses a ``max_model_len`` above the length it derives from the draft's config.json
        ("User-specified max_model_len (...) is greater than the derived max_model_len", ``vllm/config/model.py``
        ``_get_and_verify_max_len``: 0.34.0 :2708, 0.33.0 :2664, 0.24.0 :2209): said only when ``mml`` is above an
        upper bound of that length (:func:`mtp_audit.engines.vllm.launch.decide.max_len_bound`, or the exact length of
        :func:`mtp_audit.engines.vllm.launch.max_len.length_exact` where it is decided; ``model_type``: the draft's
        after ``hf_config_override``)."""
        if not isinstance(mml, int) or isinstance(mml, bool) or self.k.max_len_bound is None:
            return
        bound = self.k.max_len_bound(model, model_type)
        if bound is not None and mml > bound:
            self.machine += self.k.max_len_machine(model, model_type) if self.k.max_len_machine is not None else []
            raise HookRaise("ValueError", f"User-specified max_model_len ({mml}) is greater than the derived max_model_len "
                            f"(at most {bound} from the draft's config.json)", self._max_len_line())

    def _max_len_taken(self, model: Any, mml: Any, f: DraftFacts) -> int | None:
        """The draft ``ModelConfig``'s ``max_model_len`` when the given ``mml`` is at or below a lower bound of the length
        it derives (:func:`mtp_audit.engines.vllm.launch.max_len.length_floor`): ``_get_and_verify_max_len`` then
        returns ``int(max_model_len)`` (0.34.0 ``vllm/config/model.py:2701-2723``; with no length key at all it returns
        the given value at :2627); ``None`` when not decided."""
        if not isinstance(mml, int) or isinstance(mml, bool) or self.k.max_len_floor is None or not isinstance(model, str):
            return None
        floor = self.k.max_len_floor(model, f.model_type)
        return mml if floor is not None and mml <= floor else None

    def has_arctic_inference(self, *a: Any) -> Any:
        """``has_arctic_inference()`` (suffix decoding: 0.24.0 ``speculative.py:851``, 0.33.0 :1727; the module
        ``arctic_inference`` importable, ``vllm/utils/import_utils.py`` 0.24.0 :506, 0.33.0 :612): ``True`` when the
        release requires ``arctic-inference`` unconditionally (then it is installed with vLLM; 0.24.0 / 0.33.0 / 0.34.0
        METADATA require none), else what the machine facts say exactly of the ``arctic-inference`` distribution
        (installed / not installed), else unknown (no machine facts, or a listing that does not say)."""
        for line in self.k.requires or []:
            name, _, rest = str(line).partition(";")
            if name.strip().lower().replace("_", "-").startswith(ARCTIC_INFERENCE) and not rest.strip():
                return True
        seen = self.k.installed(ARCTIC_INFERENCE) if self.k.installed is not None else None
        if seen is None or seen.extent != "exact":
            return R_UNKNOWN
        self.machine.append((ARCTIC_INFERENCE, f"{'installed' if seen.value else 'not installed'} [{seen.source}]"))
        return bool(seen.value)

    def _check_quantization(self, model: Any, quantization: Any, f: DraftFacts) -> None:
        """The draft ``ModelConfig`` verifies ``quantization`` (the speculative config's) against the draft checkpoint's
        own quantization config (``ModelConfig._verify_quantization``: 0.34.0 ``vllm/config/model.py:1477`` "does not
        match the quantization method specified in the `quantization` argument", then "Unknown quantization method"):
        replayed from the release. A refusal raises it; a chain the replay does not decide loses the path when the
        speculative config sets ``quantization`` (what the draft runs with is then not decided), and is left alone when
        it does not (the target's own chain answers for the same checkpoint: MTP329)."""
        if self.k.draft_quant is None or not isinstance(model, str) or not (quantization is None or isinstance(quantization, str)):
            return
        # the overrides test the draft's hf_config, after hf_config_override (f): 0.34.0 deepseek_v41/quant_config.py:180
        hf = {"model_type": f.model_type, "architectures": f.architectures} \
            if isinstance(f.model_type, str) and isinstance(f.architectures, list) else None
        res = self.k.draft_quant(model, quantization, hf)
        if res is None:
            if quantization is not None:
                raise HookLost(f"the draft's quantization ({quantization!r}) against {model}'s own quantization config was "
                               "not replayed (the checkpoint's quantization config was not read)")
            return
        if res.raised is not None:
            raise HookRaise(res.raised.type, res.raised.message, res.raised.location)
        if quantization is not None and (res.gap is not None or res.method is R_UNKNOWN):
            raise HookLost(f"the draft's quantization ({quantization!r}) against {model}'s own quantization config is not "
                           f"decided: {res.gap or '; '.join(res.trace[:2])}")

    def _max_len_line(self) -> str | None:
        rel = "vllm/config/model.py"
        text = (self.sources.get(rel) or b"").decode("utf-8", "replace").splitlines()
        seen = False
        for i, line in enumerate(text, 1):
            seen = seen or "User-specified max_model_len" in line
            if seen and line.strip().startswith("raise ValueError("):
                return f"{rel}:{i}"
        return None

    def eagle_config(self, r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        """``EAGLEConfig(hf_config, method=...)``: replayed from ``transformers_utils/configs/eagle.py`` when the tree
        has it (the ``Eagle<Arch>`` / ``Eagle3<Arch>`` wrapping and its asserts). A composite config reads ``vocab_size``
        (``self.model.vocab_size``) only where the release's own config class defines it (:func:`mtp_audit.engines.vllm.
        launch.config_class.own_class_reads`), else ``AttributeError``; where it does, the wrapper copies
        ``self.model.to_dict()`` onto itself (0.34.0 ``eagle.py:85-88``), its ``text_config`` a dict then."""
        model = args[0] if args else kwargs.get("model")
        method = kwargs.get("method", "eagle")
        nested = False
        if isinstance(model, Obj) and model.get("__composite__") is True:
            from mtp_audit.engines.vllm.launch.config_class import own_class_reads

            reads, _why = own_class_reads(self.sources, model.get("__class_model_type__"), "vocab_size")
            if reads is not True:
                raise HookRaise("AttributeError", f"'{model.name}' object has no attribute 'vocab_size'", self._eagle_line("vocab_size"))
            nested = True
        archs = model.get("architectures") if isinstance(model, Obj) else R_UNKNOWN
        if not isinstance(archs, list) or not isinstance(method, str):
            return Obj("EAGLEConfig", {"model_type": "eagle", "architectures": R_UNKNOWN, "model": model})
        if method == "eagle":
            new = [a if a.startswith("Eagle") else f"Eagle{a}" for a in archs]
        elif method == "eagle3":
            new = [a if a.startswith("Eagle3") or a.endswith("Eagle3") else f"Eagle3{a}" for a in archs]
        elif method == "dflash":
            # 0.34.0 transformers_utils/configs/eagle.py:65-76 (DFlashSpeculatorConfig wraps the draft like EAGLE)
            new = [a if a.startswith("DFlash") or a.endswith("DFlash") else f"DFlash{a}" for a in archs]
        else:
            new = R_UNKNOWN
        attrs = dict(model.attrs) if isinstance(model, Obj) else {}
        attrs.update({"model_type": "eagle", "architectures": new, "model": model, "__text_config_dict__": nested})
        return Obj("EAGLEConfig", attrs)

    def text_config_raise(self) -> tuple[str, str | None]:
        """The message and ``file:line`` of ``get_hf_text_config``'s refusal of a ``text_config`` without
        ``num_attention_heads`` (``raise ValueError("The text_config extracted from the model config does not have
        `num_attention_heads` ...")``: 0.34.0 ``vllm/transformers_utils/config.py:1310``), read from the release."""
        import ast as _ast

        rel = "vllm/transformers_utils/config.py"
        data = self.sources.get(rel)
        try:
            tree = _ast.parse(data.decode("utf-8")) if data else None
        except (SyntaxError, UnicodeDecodeError, ValueError, MemoryError, RecursionError):
            tree = None
        raises = [n for n in _ast.walk(tree) if isinstance(n, _ast.Raise)] if tree is not None else []
        for node in raises:
            text = "".join(c.value for c in _ast.walk(node) if isinstance(c, _ast.Constant) and isinstance(c.value, str))
            if "does not have `num_attention_heads`" in text:
                return text, f"{rel}:{node.lineno}"
        return "The text_config extracted from the model config does not have `num_attention_heads` attribute.", None

    def registry_raise(self) -> str:
        """``file:line`` of the registry's ``raise ValueError(f"Model architectures ... are not supported for now")``."""
        import ast as _ast

        rel = REGISTRY_REL
        data = self.sources.get(rel)
        try:
            tree = _ast.parse(data.decode("utf-8")) if data else None
        except (SyntaxError, UnicodeDecodeError, ValueError, MemoryError, RecursionError):
            tree = None
        for node in _ast.walk(tree) if tree is not None else ():
            if isinstance(node, _ast.Raise) and "are not supported for now" in "".join(
                    c.value for c in _ast.walk(node) if isinstance(c, _ast.Constant) and isinstance(c.value, str)):
                return f"{rel}:{node.lineno}"
        return rel

    def _eagle_line(self, needle: str) -> str | None:
        if not self.eagle_src or not self.eagle_rel:
            return None
        for i, line in enumerate(self.eagle_src.decode("utf-8", "replace").splitlines(), 1):
            if f"self.model.{needle}" in line:
                return f"{self.eagle_rel}:{i}"
        return None

    def update_arch(self, r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        """``update_arch_()``: the draft ModelConfig takes the (wrapped) architectures and looks them up in the model
        registry, which raises ``ValueError`` for one it does not register (``registry.inspect_model_cls``)."""
        self_obj = p.frames[-1].get("self") if p.frames else None
        d = self_obj.get("draft_model_config") if isinstance(self_obj, Obj) else None
        if not isinstance(d, Obj):
            return None
        hf = d.get("hf_config")
        archs = hf.get("architectures") if isinstance(hf, Obj) else R_UNKNOWN
        d.attrs["architectures"] = archs
        if isinstance(hf, Obj) and hf.get("__text_config_dict__") is True:
            # update_arch_ first sets hf_text_config = get_hf_text_config(hf_config) (0.34.0 speculative.py:1570): the
            # wrapper's text_config is the composite's to_dict() copy, a dict without num_attention_heads
            # (transformers PreTrainedConfig.get_text_config returns it; vllm/transformers_utils/config.py:1309)
            message, where = self.text_config_raise()
            raise HookRaise("ValueError", message, where)
        d.attrs["hf_text_config"] = hf
        if not isinstance(archs, list):
            # the registry looks the wrapped architectures up and may refuse them: not known, so not a pass
            raise HookLost("could not tell: the draft architectures after the EAGLE-style wrapping are not known, so whether "
                           "vLLM's model registry takes them is not decided")
        if isinstance(archs, list):
            if not all(isinstance(a, str) for a in archs):
                return R_UNKNOWN  # an architecture name the launch does not know (its config.json was not read)
            regs = [self.k.registered(a) for a in archs]
            if any(x is R_UNKNOWN for x in regs):
                return R_UNKNOWN
            if all(x is None for x in regs):
                raise HookRaise("ValueError", f"Model architectures {archs} are not supported for now.", self.registry_raise())
        return None


def replay_spec_config(view: Any, known: LaunchKnowns) -> SpecReplay:
    """Replay ``SpeculativeConfig.__post_init__`` then ``_verify_args`` of ``view``'s vLLM on ``known``, statement by
    statement (:class:`mtp_audit.engines.code.statements.Replay`). Unparsable or missing source is a :attr:`SpecReplay.gap`
    (that question could not be told), never an exception."""
    from mtp_audit.engines.code.pyast import parse_source

    rel = getattr(view, "spec_rel", None)
    data = getattr(view, "spec_bytes", None)
    if rel is None or data is None:
        return SpecReplay(gap="vLLM's SpeculativeConfig module was not found in this tree")
    module, _text, problem = parse_source(rel, data)
    if module is None:
        return SpecReplay(gap=f"{rel}: {problem}", rel=rel)
    eagle_rel = "vllm/transformers_utils/configs/eagle.py"
    hooks = _Hooks(known, eagle_rel, getattr(view, "sources", None) or {})
    r = Replay(module, rel, cls="SpeculativeConfig", hooks=hooks.table())
    if "__post_init__" not in r.methods:
        return SpecReplay(gap=f"{rel}: SpeculativeConfig has no __post_init__ to replay", rel=rel)
    self_obj = Obj("SpeculativeConfig", {**computed_defaults(r), **r.field_defaults()})
    for key, value in known.spec.items():
        self_obj.attrs[key] = value
    self_obj.attrs["target_model_config"] = _target_obj(known)
    self_obj.attrs["target_parallel_config"] = Obj("ParallelConfig", dict(known.parallel))
    self_obj.attrs.setdefault("draft_model_config", None)
    refused = pydantic_refusal(r, view, known.spec, module)
    if refused is not None:
        return SpecReplay(paths=[Path(frames=[], bound=self_obj, raised=refused)], rel=rel)
    link = _link(view, module, r, hooks)
    if link is not None:
        for m, value in link.spec_proxy.attrs.items():
            self_obj.attrs.setdefault(m, value)
        self_obj.attrs["target_model_config"].attrs["speculator_config_class"] = declared_speculator(view, known.target.architectures)
    try:
        if link is not None:
            refused = _field_validators(r, link, self_obj, known.spec)
            if refused is not None:
                return SpecReplay(paths=[refused], rel=rel, linked=True)
        paths = r.call("__post_init__", self_obj)
        out = [p for p in paths if p.raised is not None or p.lost is not None]
        live = [p for p in paths if p.raised is None and p.lost is None]
        if link is not None:
            live = [_with_speculator_config(r, p) for p in live]
        out += r.run_on("_verify_args", live) if live and "_verify_args" in r.methods else live
    except RecursionError:
        return SpecReplay(gap=f"{rel}: SpeculativeConfig.__post_init__ nests too deeply to replay", rel=rel)
    return SpecReplay(paths=out, rel=rel, linked=link is not None, machine=list(dict.fromkeys(hooks.machine)))


def computed_defaults(r: Replay) -> dict[str, Any]:
    """Field defaults written as constant expressions (0.34.0 ``suffix_decoding_corpus_tokens: int = 1 << 20``,
    ``speculative.py:588``), evaluated by the replay; other fields are left out (they read as unknown)."""
    import ast as _ast

    out: dict[str, Any] = {}
    for st in r.class_node.body if r.class_node is not None else []:
        if isinstance(st, _ast.AnnAssign) and isinstance(st.target, _ast.Name) and isinstance(st.value, _ast.BinOp) \
                and all(isinstance(x, (_ast.Constant, _ast.BinOp, _ast.operator)) for x in _ast.walk(st.value)):
            p = Path(frames=[{}])
            try:
                v = r.ev(st.value, p)
            except Exception:  # noqa: BLE001 - a default the replay cannot compute stays unknown
                continue
            if isinstance(v, (int, float)) and p.raised is None:
                out[st.target.id] = v
    return out


#: annotation names that admit nothing but their own type (pydantic refuses ``None`` for them)
_NOT_NONE = frozenset({"int", "str", "bool", "float", "dict", "list", "tuple", "set", "Literal"})


def admits_none(ann: Any, aliases: dict[str, Any], depth: int = 0) -> bool | None:
    """Whether pydantic accepts an explicit ``None`` for a field annotated ``ann`` (an ``ast`` expression): ``True`` for
    ``X | None``, ``Optional[X]``, ``Any``; ``False`` when every name in it is a builtin type or ``Literal`` without
    ``None`` (``int``; ``SpeculativeMethod``, a module-level ``Literal`` alias in ``aliases``, followed); ``None`` when a
    name is neither (a class or alias the replay does not resolve: not decided). pydantic's lax mode: an ``int`` field
    given ``None`` is "Input should be a valid integer" (``int_type``), checked against vLLM 0.34.0 (oracle grid 4)."""
    import ast as _ast

    names = [n.id for n in _ast.walk(ann) if isinstance(n, _ast.Name)]
    if any(isinstance(n, _ast.Constant) and n.value is None for n in _ast.walk(ann)) or {"Optional", "Any"} & set(names):
        return True
    answers = [False if n in _NOT_NONE else admits_none(aliases[n], aliases, depth + 1) if n in aliases and depth < 4
               else None for n in names]
    return True if True in answers else None if None in answers or not names else False


def _init_fields(node: Any) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The pydantic init fields of the class ``node``: name -> its ``Field(gt=/ge=)`` bounds, and name -> annotation."""
    import ast as _ast

    fields: dict[str, Any] = {}
    anns: dict[str, Any] = {}
    for st in node.body:
        if isinstance(st, _ast.AnnAssign) and isinstance(st.target, _ast.Name) and "ClassVar" not in _ast.unparse(st.annotation):
            call = st.value if isinstance(st.value, _ast.Call) else None
            kw = {k.arg: k.value for k in call.keywords} if call is not None else {}
            init = kw.get("init")
            if isinstance(init, _ast.Constant) and init.value is False:
                continue
            fields[st.target.id] = {k: c.value for k in ("gt", "ge") if isinstance(c := kw.get(k), _ast.Constant)}
            anns[st.target.id] = st.annotation
    return fields, anns


def module_aliases(module: Any) -> dict[str, Any]:
    """Module-level ``NAME = Literal[...]`` / ``NAME: TypeAlias = ...`` type aliases of ``module``: name -> expression."""
    import ast as _ast

    out: dict[str, Any] = {}
    for st in getattr(module, "body", []):
        if isinstance(st, _ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], _ast.Name) \
                and isinstance(st.value, (_ast.Subscript, _ast.BinOp, _ast.Name)):
            out[st.targets[0].id] = st.value
        elif isinstance(st, _ast.AnnAssign) and isinstance(st.target, _ast.Name) and st.value is not None \
                and "TypeAlias" in _ast.unparse(st.annotation):
            out[st.target.id] = st.value
    return out


def pydantic_refusal(r: Replay, view: Any, spec: dict[str, Any], module: Any = None) -> Any:
    """What pydantic refuses before ``__post_init__`` runs, when ``SpeculativeConfig`` is a pydantic dataclass made by
    ``@config`` with ``ConfigDict(extra="forbid")`` (``vllm/config/utils.py``: 0.24.0 :69, 0.33.0 :71, 0.34.0 :72; ``vllm
    serve`` passes the JSON to ``SpeculativeConfig(**...)``): a key that is not an init field ("Unexpected keyword
    argument"; a ``field(init=False)`` is not one), an explicit ``null`` for a field whose annotation does not admit
    ``None`` (:func:`admits_none`; ``num_speculative_tokens: int = Field(default=None, gt=0)``: the default is never
    validated, a given ``None`` is), a value pydantic's lax mode cannot make an ``int`` for an ``int`` field
    (:func:`~mtp_audit.engines.vllm.launch.lax_int.lax_int`: ``2.5``, ``"two"``) and an integer outside a
    ``Field(gt=/ge=)`` bound ("Input should be greater than ..."). A :class:`Raised` ``ValidationError`` (no
    ``file:line``: pydantic raises it), else ``None``."""
    import ast as _ast

    from mtp_audit.engines.code.statements import Raised
    from mtp_audit.engines.vllm.launch.lax_int import NOT_AN_INT, lax_int

    node = r.class_node
    utils = (getattr(view, "sources", None) or {}).get("vllm/config/utils.py") or b""
    if node is None or b'extra="forbid"' not in utils or not any(_ast.unparse(d) == "config" for d in node.decorator_list):
        return None
    fields, anns = _init_fields(node)
    aliases = module_aliases(module)
    errors = [f"{k}: Unexpected keyword argument" for k in spec if k not in fields]
    errors += [f"{k}: Input should be a valid {_ast.unparse(anns[k])} (got None)" for k in spec
               if k in anns and spec[k] is None and admits_none(anns[k], aliases) is False]
    errors += [f"{k}: Input should be a valid integer, got {spec[k]!r}" for k in spec if k in anns and spec[k] is not None
               and _ast.unparse(anns[k]) in ("int", "int | None") and lax_int(spec[k]) is NOT_AN_INT]
    for k, bounds in fields.items():
        v = spec.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            if "gt" in bounds and not v > bounds["gt"]:
                errors.append(f"{k}: Input should be greater than {bounds['gt']}")
            elif "ge" in bounds and not v >= bounds["ge"]:
                errors.append(f"{k}: Input should be greater than or equal to {bounds['ge']}")
    if not errors:
        return None
    n = len(errors)
    # no file:line: pydantic raises it, not the replayed code; decide.py reads a falsy location as exactly that. Raised
    # declares ``location: str`` for the replayer's own raises (engines/code, shared with sglang, whose readers need a str)
    return Raised("ValidationError", f"{n} validation error{'s' if n > 1 else ''} for SpeculativeConfig: " + "; ".join(errors),
                  None)  # type: ignore[arg-type]


def _link(view: Any, module: Any, r: Replay, hooks: _Hooks) -> Any:
    """The :class:`~mtp_audit.engines.vllm.speculators.SpeculatorLink` of a release whose ``SpeculativeConfig``
    module imports from the speculator package (0.34.0+), with the replay's ``self`` given its methods as values; ``None``
    for a release that keeps the per-method logic in the class (0.33.0 and before: nothing changes for them)."""
    from mtp_audit.engines.vllm.speculators import SpeculatorLink

    version = str(((view.report.facts.get("vllm") or {}).get("version")) or "?")
    link = SpeculatorLink(getattr(view, "sources", None) or {}, r.hooks, r, version, lambda archs: declared_speculator(view, archs))
    if not link.bind_imports(r, module):
        return None
    base = r.hooks["ModelConfig"]

    def model_config(rp: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        obj = base(rp, p, args, kwargs, n)
        hf = obj.get("hf_config") if isinstance(obj, Obj) else None
        obj.attrs["speculator_config_class"] = declared_speculator(view, hf.get("architectures") if isinstance(hf, Obj) else R_UNKNOWN)
        return obj

    for hooks_of in [r.hooks] + [x.hooks for x in link.replays.values() if x is not None]:
        hooks_of["ModelConfig"] = model_config
    link.hooks["ModelConfig"] = model_config
    hooks.link = link
    return link


def _field_validators(r: Replay, link: Any, self_obj: Obj, spec: dict[str, Any]) -> Path | None:
    """Run the class's ``@field_validator("x")`` methods on the given keys before ``__post_init__`` (pydantic validates
    fields first: 0.34.0 ``_validate_method``, ``speculative.py:1623-1635``, refuses an unknown method name); the path
    that raised, else ``None`` (a known returned value replaces the given one)."""
    import ast as _ast

    for name, fn in r.methods.items():
        fields = [a.value for d in fn.decorator_list if isinstance(d, _ast.Call) and _ast.unparse(d.func).endswith("field_validator")
                  for a in d.args if isinstance(a, _ast.Constant)]
        for f in fields:
            if f not in spec:
                continue
            paths = r.call(name, link.spec_proxy, spec[f])
            if len(paths) == 1 and paths[0].raised is not None:
                return paths[0]
            if len(paths) == 1 and paths[0].lost is None and paths[0].ret is not R_UNKNOWN and not isinstance(paths[0].ret, Obj):
                self_obj.attrs[f] = paths[0].ret
    return None


def _with_speculator_config(r: Replay, p: Path) -> Path:
    """``self.speculator_config`` (a property: ``get_speculator_config_class(self)(self)``, 0.34.0 ``speculative.py:1419``)
    on a path that finished ``__post_init__``: the class value, read by ``_verify_args`` for its class attributes."""
    import ast as _ast

    p.frames.append({"self": p.bound})
    try:
        v = r.ev(_ast.parse("get_speculator_config_class(self)", mode="eval").body, p)
    except Exception:  # noqa: BLE001 - _Exit: the path ended (raised / lost) while resolving it
        v = R_UNKNOWN
    finally:
        p.frames.pop()
    if isinstance(p.bound, Obj):
        p.bound.attrs["speculator_config"] = v
    return p


def declared_speculator(view: Any, archs: Any) -> Any:
    """The qualname of the ``SpeculatorConfig`` a draft model class declares (``speculator_config_class = X`` in its
    class body, 0.34.0 ``model_executor/models/registry.py:976-1022``), ``None`` when it declares none, :data:`R_UNKNOWN`
    when the architecture or its module is not known. The registry's module is followed through the imports that bring
    the class in (0.34.0 ``vllm/models/qwen3_5/__init__.py`` imports it from ``.nvidia.mtp`` or the older module, by
    platform): every candidate must agree."""
    archs_of = getattr(view, "_archs", None) or {}
    if not isinstance(archs, list) or not archs:
        return R_UNKNOWN
    entry = next((archs_of.get(a) for a in archs if a in archs_of), None)
    if entry is None:
        return None if archs_of else R_UNKNOWN
    mod = entry["module"] if "." in entry["module"] else f"vllm.model_executor.models.{entry['module']}"
    found = _declared_in(getattr(view, "sources", None) or {}, mod, entry["class"], 0)
    return next(iter(found)) if len(found) == 1 else R_UNKNOWN


def _declared_in(sources: Any, dotted: str, cls: str, depth: int) -> set[Any]:
    """The declarations class ``cls`` of module ``dotted`` can have (a set of qualnames / ``None`` / :data:`R_UNKNOWN`)."""
    import ast as _ast

    from mtp_audit.engines.vllm.speculators import module_rel

    rel, data = module_rel(dotted, sources)
    try:
        tree = _ast.parse(data.decode("utf-8")) if data is not None and depth < 4 else None
    except (SyntaxError, UnicodeDecodeError, ValueError, MemoryError, RecursionError):
        tree = None
    if tree is None:
        return {R_UNKNOWN}
    package = dotted if rel.endswith("__init__.py") else dotted.rsplit(".", 1)[0]

    def absolute(st: _ast.ImportFrom) -> str:
        if not st.level:
            return st.module or ""
        base = package.rsplit(".", st.level - 1)[0] if st.level > 1 else package
        return f"{base}.{st.module}" if st.module else base

    imports = {a.asname or a.name: (absolute(st), a.name) for st in _ast.walk(tree) if isinstance(st, _ast.ImportFrom) for a in st.names}
    for node in tree.body:
        if isinstance(node, _ast.ClassDef) and node.name == cls:
            for st in node.body:
                if isinstance(st, _ast.Assign) and any(isinstance(t, _ast.Name) and t.id == "speculator_config_class" for t in st.targets):
                    v = st.value
                    return {".".join(imports[v.id]) if isinstance(v, _ast.Name) and v.id in imports else R_UNKNOWN}
            return {None}
    sources_of = [(absolute(st), a.name) for st in _ast.walk(tree) if isinstance(st, _ast.ImportFrom)
                  for a in st.names if (a.asname or a.name) == cls]
    out: set[Any] = set()
    for m, name in sources_of:
        out |= _declared_in(sources, m, name, depth + 1)
    return out or {R_UNKNOWN}


def _vocab_native(k: LaunchKnowns, model: Any) -> Native:
    """``ModelConfig.get_vocab_size()`` (the hf text config's ``vocab_size``) for checkpoint ``model``, from its
    config.json; unknown when it does not say."""
    v = k.vocab_of(model) if k.vocab_of is not None and isinstance(model, str) else None
    return Native("get_vocab_size", lambda *_a: v if isinstance(v, int) else R_UNKNOWN)


def _target_obj(k: LaunchKnowns) -> Obj:
    hf = Obj("PretrainedConfig", {"model_type": k.target.model_type, "architectures": k.target.architectures})
    text = Obj("PretrainedConfig", {"model_type": k.target_text_model_type}) if k.target_text_model_type else hf
    return Obj("ModelConfig", {"model": k.target_model, "model_weights": "", "quantization": k.quantization, "hf_config": hf,
                               "hf_text_config": text, "hf_overrides": None, "max_model_len": k.target_max_len,
                               "architectures": k.target.architectures, "get_vocab_size": _vocab_native(k, k.target_model)})
