"""SGLang start-up decisions as facts a launch can replay: per-model override functions (0.5.20 on:
``srt/arg_groups/model_overrides/*.py``, each registered for architectures with a decorator such as
``@_register_for("MiniMaxM2ForCausalLM")``) and the ``assert`` statements that restrict a backend field
(the attention registry: 0.5.12 ``srt/layers/attention/attention_registry.py:253`` accepts only
triton / trtllm_mha / fa4 / flashinfer for hybrid GDN models on Blackwell).

Which files are read is derived (:data:`mtp_audit.engines.sglang.scan.PASSES`): every server-argument file
holding a rewrite candidate (so every ``model_overrides`` file that stores ``overrides[...]`` or returns a
dict), and every file with an ``assert`` on a backend field. Nothing is listed by file name.

:func:`guard_value` evaluates a recorded condition against what a launch knows (checkpoint architecture and
quantization, the command's flags, the GPU family) with :func:`mtp_audit.engines.code.evaluator.evaluate`:
``True`` / ``False``, or ``None`` when a name it depends on is unknown. A rewrite or an assert reaches a
headline only when its guard is not ``False`` (0.5.23's ``FROZEN_KV_MTP ... and is_gemma4_draft`` never
headlines a Qwen3.5 launch).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mtp_audit.engines.code.evaluator import UNKNOWN, evaluate, message_text
from mtp_audit.engines.code.index import ModuleIndex
from mtp_audit.engines.sglang.names import ASSERTED_SOURCE
from mtp_audit.engines.sglang.rewrites import comparisons, early_exit_text, is_literal, literal

_ASSERTED = re.compile(r"^(" + ASSERTED_SOURCE + r")$")
#: Architecture names as SGLang's registries spell them (``MiniMaxM2ForCausalLM``, ``Qwen3_5MoeForConditionalGeneration``).
_ARCH = re.compile(r"^[A-Z]\w*(For\w+|Model|MTP|NextN)$")


def _cond_text(ix: ModuleIndex, guards: tuple[tuple[ast.If, bool], ...]) -> str:
    parts = []
    for node, in_body in guards:
        t = ix.normalized(node.test, parens=True)
        parts.append(f"({t})" if in_body else f"not ({t})")
    return " and ".join(parts)


def _with_exits(ix: ModuleIndex, site: Any, condition: str) -> str:
    """``condition`` preceded by the early exits the statement is only reached past (``early_exit_text``)."""
    exits = early_exit_text(ix, site.ctx.unit, site.node.lineno) if site.ctx.unit is not None else ""
    return " and ".join(c for c in (exits, condition) if c)


def registrations(ix: ModuleIndex) -> list[dict[str, Any]]:
    """Functions registered for architectures by a decorator call with architecture-name string arguments.

    Returns ``[{"function", "line", "architectures": [str], "decorator": str}]`` (line of the ``def``).
    """
    out = []
    for node, _owner in ix.units:
        for d in node.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            archs = [a.value for a in d.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and _ARCH.match(a.value)]
            for a in d.args:  # @_register_for(("A", "B")) / [..]
                v = literal(a)
                if isinstance(v, list):
                    archs += [x for x in v if isinstance(x, str) and _ARCH.match(x)]
            if archs:
                out.append({"function": node.name, "line": node.lineno, "architectures": archs,
                            "decorator": ix.normalized(d.func)})
    return out


def backend_asserts(ix: ModuleIndex) -> list[dict[str, Any]]:
    """``assert`` statements whose test restricts a backend field (:data:`ASSERTED_SOURCE`) to literals.

    Returns ``[{"field", "accepts": [str] | None, "rejects": [str] | None, "test", "condition", "message",
    "location": "path:line", "function"}]``: ``accepts`` from ``x.F == "a" or x.F == "b"`` / ``x.F in {...}``,
    ``rejects`` from ``x.F != "a"``; ``condition`` the ``if`` branches around it inside its function.
    """
    out = []
    consts = _module_string_sets(ix) if ix.asserts else {}
    for site in ix.asserts:
        out += named_set_asserts(ix, site, consts)
        node: ast.Assert = site.node
        accepts: dict[str, list[str]] = {}
        for subj, op, lits in comparisons(node.test):
            field = subj.split(".")[-1]
            if _ASSERTED.match(field) and op in ("==", "in"):
                accepts.setdefault(field, []).extend(lits)
        rejects: dict[str, list[str]] = {}
        for cmp in ast.walk(node.test):
            if isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], (ast.NotEq, ast.NotIn)) \
                    and isinstance(cmp.left, ast.Attribute) and _ASSERTED.match(cmp.left.attr):
                v = literal(cmp.comparators[0])
                if is_literal(v):
                    rejects.setdefault(cmp.left.attr, []).extend(str(x) for x in (v if isinstance(v, list) else [v]))
        for field in sorted(set(accepts) | set(rejects)):
            out.append({"field": field, "accepts": accepts.get(field), "rejects": rejects.get(field),
                        "test": ix.normalized(node.test), "condition": _with_exits(ix, site, _cond_text(ix, site.ctx.guards)),
                        "message": message_text(node.msg), "location": f"{ix.rel}:{node.lineno}",
                        "function": site.ctx.unit.name if site.ctx.unit is not None else None})
    return out


#: A runner attribute that holds a backend field's value for one phase (0.5.21 ``attention_registry.py:442``
#: ``prefill_be = runner.prefill_attention_backend_str``): the field is the name without ``_str``.
_PHASE_FIELD = re.compile(r"^((?:\w+_)?(?:" + ASSERTED_SOURCE + r"))(?:_str)?$")


def _string_list(node: ast.AST, consts: dict[str, list[str]]) -> list[str] | None:
    """A set / list / tuple display of strings, or a module-level name bound to one; else ``None``."""
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    v = literal(node)
    return [str(x) for x in v] if isinstance(v, list) and all(isinstance(x, str) for x in v) else None


def _module_string_sets(ix: ModuleIndex) -> dict[str, list[str]]:
    """``NAME = {"a", "b"}`` at module level (0.5.22 ``HYBRID_GDN_SM100_BACKENDS``), name -> strings in source order."""
    out: dict[str, list[str]] = {}
    for st in ix.tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            vals = _string_list(st.value, out)
            if vals is not None:
                out[st.targets[0].id] = vals
    return out


def _merged_guards(outer: tuple, inner: tuple) -> tuple:
    """The guards of a local's assignment followed by those of the assert not already among them."""
    seen = {(id(n), b) for n, b in inner}
    return tuple(inner) + tuple(g for g in outer if (id(g[0]), g[1]) not in seen)


def _local_bindings(ix: ModuleIndex, site: Any, consts: dict[str, list[str]]) -> tuple[dict[str, str], dict[str, list[Any]]]:
    """``(aliases, sets)`` of the assert's function before the assert: ``aliases`` local name -> backend field
    (``prefill_be = runner.prefill_attention_backend_str`` -> ``prefill_attention_backend``), ``sets`` local name ->
    ``[(strings, Site of the assignment)]`` (``allowed = {"triton", ...}`` in each branch, or a module constant).
    ``aliases["<source>:" + name]`` keeps the attribute text each alias was bound to (for the guard's text)."""
    aliases: dict[str, str] = {}
    sets: dict[str, list[Any]] = {}
    line = site.node.lineno
    for a in ix.assigns:
        node = a.node
        if a.ctx.unit is not site.ctx.unit or node.lineno >= line or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name, value = node.targets[0].id, node.value
        m = _PHASE_FIELD.match(value.attr) if isinstance(value, ast.Attribute) else None
        if m:
            aliases[name] = m.group(1)
            aliases["<source>:" + name] = ix.normalized(value)
            continue
        vals = _string_list(value, consts)
        if vals is not None:
            sets.setdefault(name, []).append((vals, a))
    return aliases, sets


def named_set_asserts(ix: ModuleIndex, site: Any, consts: dict[str, list[str]]) -> list[dict[str, Any]]:
    """``assert x in NAME`` where ``x`` is a backend field (or a local bound to one) and ``NAME`` a set of strings
    bound in the same function (one record per binding, its branch's guards added: 0.5.21
    ``attention_registry.py:435/441`` bind ``allowed`` per GPU family) or at module level (0.5.22
    ``HYBRID_GDN_SM100_BACKENDS``). Records have the shape of :func:`backend_asserts` plus ``"set_location"``."""
    node: ast.Assert = site.node
    if site.ctx.unit is None:
        return []
    aliases, sets = _local_bindings(ix, site, consts)
    out = []
    for cmp in ast.walk(node.test):
        if not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], (ast.In, ast.NotIn))
                and isinstance(cmp.comparators[0], ast.Name)):
            continue
        left = cmp.left
        m = _PHASE_FIELD.match(left.attr) if isinstance(left, ast.Attribute) else None
        field = m.group(1) if m else aliases.get(left.id) if isinstance(left, ast.Name) else None
        name = cmp.comparators[0].id
        bindings = sets.get(name) or ([(consts[name], None)] if name in consts else [])
        if field is None:
            continue
        for vals, bound in bindings:
            guards = _merged_guards(site.ctx.guards, bound.ctx.guards) if bound is not None else site.ctx.guards
            accepts = vals if isinstance(cmp.ops[0], ast.In) else None
            out.append({"field": field, "accepts": accepts, "rejects": None if accepts is not None else vals,
                        "test": ix.normalized(node.test), "condition": _with_sources(_with_exits(ix, site, _cond_text(ix, guards)), aliases),
                        "message": message_text(node.msg), "location": f"{ix.rel}:{node.lineno}",
                        "function": site.ctx.unit.name,
                        "set_location": f"{ix.rel}:{(bound.node if bound is not None else node).lineno}" if bound is not None
                        else f"{ix.rel}:{_const_line(ix, name)}"})
    return out


def _with_sources(text: str, aliases: dict[str, str]) -> str:
    """A guard's text with each backend alias replaced by the attribute it was bound to (0.5.17
    ``attention_registry.py:406``: ``if prefill_be and decode_be`` reads ``runner.server_args.prefill_attention_backend
    and ...``), so the guard is evaluated on the field."""
    for key, src in aliases.items():
        if key.startswith("<source>:"):
            text = re.sub(r"\b" + re.escape(key.split(":", 1)[1]) + r"\b", src, text)
    return text


def _const_line(ix: ModuleIndex, name: str) -> int:
    for st in ix.tree.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
            return st.lineno
    return 0


def file_facts(ix: ModuleIndex, *, asserts: bool) -> dict[str, Any]:
    """The replay facts of one indexed file (cached with its scan result): ``registrations`` always (the
    server pass), ``asserts`` when the asserts pass wants the file."""
    out: dict[str, Any] = {"registrations": registrations(ix)}
    if asserts:
        out["asserts"] = backend_asserts(ix)
    return out


# --- evaluation against a launch ------------------------------------------------------------------

#: Platform predicates SGLang guards are written with, by GPU family (``sm100`` covers SM100/SM103).
_PLATFORM = {
    "is_blackwell": ("sm100", "sm103", "sm120", "sm121"), "is_sm100": ("sm100", "sm103"),
    "is_sm100_supported": ("sm100", "sm103"), "is_sm90_supported": ("sm90", "sm100", "sm103"),
    "is_sm120_supported": ("sm120", "sm121"), "is_sm120": ("sm120", "sm121"), "is_hopper": ("sm90",),
    "is_hip": ("rocm",), "is_npu": ("npu",), "is_cuda": ("sm80", "sm89", "sm90", "sm100", "sm103", "sm120", "sm121"),
}


#: Runner attributes (0.5.12 ``runner.hybrid_gdn_config``) or functions of the model config (0.5.18 on,
#: ``configs/hybrid_arch.py``: ``hybrid_gdn_config(runner.model_config)``) that return the hybrid linear-attention
#: config of one kind (``None`` for another kind; ``mambaish_config`` / ``linear_attn_config``: any kind).
_HYBRID_CONFIGS = {"hybrid_gdn_config": "gdn", "mamba2_config": "mamba2", "hybrid_kda_config": "kda", "kimi_linear_config": "kda",
                   "hybrid_lightning_config": "lightning", "mambaish_config": None, "linear_attn_config": None}
_FAMILY_DRAFT = re.compile(r"^is_([a-z][a-z0-9_]*?)_draft$")
#: A stand-in for a config object that is present (truthy, not ``None``).
_PRESENT = "<present>"


def launch_lookup(known: dict[str, Any]):
    """A ``lookup`` for :func:`evaluate` from what a launch knows.

    ``known``: ``{"fields": {server-args field: value}, "architecture": str | None, "quantization": str | None,
    "gpu": "sm100" | "sm90" | ... | None, "hybrid_linear_attention": bool | None, "names": {name: value}}``.
    A dotted name resolves by its last part: a server-args field in ``fields`` (``cfg.moe_runner_backend``,
    ``runner.server_args.x``), ``.quantization`` of a model config, ``model_arch``, a platform predicate
    (``is_blackwell()``, ``get_platform().is_sm100``) when the GPU family is known, the hybrid linear-attention
    configs (``runner.hybrid_gdn_config``, ``runner.mambaish_config``: present or ``None``), and a draft-family
    flag ``is_<family>_draft`` (0.5.23 ``is_gemma4_draft``): true exactly when the checkpoint's architecture
    starts with that family (the NEXTN draft is the target itself). Anything else is unknown.
    """
    fields = known.get("fields") or {}
    names = known.get("names") or {}
    gpu = known.get("gpu")

    def lookup(name: str) -> Any:
        if name in names:
            return names[name]
        last = name.rsplit(".", 1)[-1]
        bare = last.removesuffix("()")
        if bare in _PLATFORM:
            return UNKNOWN if gpu is None else gpu in _PLATFORM[bare]
        if last in fields:
            return fields[last]
        if last == "quantization" and "model_config" in name and known.get("quantization") is not None:
            return known["quantization"]
        if last in ("model_arch",) and known.get("architecture"):
            return known["architecture"]
        if bare in _HYBRID_CONFIGS:
            return _hybrid_config(known, _HYBRID_CONFIGS[bare])
        m = _FAMILY_DRAFT.match(name)
        if m and known.get("architecture"):
            return known["architecture"].lower().replace("_", "").startswith(m.group(1).replace("_", ""))
        if name.startswith(_ISINSTANCE):
            return _config_class_is(known, name[len(_ISINSTANCE):].split("__"))
        if bare != last and bare.startswith("is_"):
            return _other_family(known, bare)
        return UNKNOWN

    return lookup


#: How :func:`guard_value` names ``isinstance(x, AConfig)`` / ``isinstance(x, (AConfig, BConfig))`` for the lookup.
_ISINSTANCE = "__isinstance__"


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _config_class_is(known: dict[str, Any], classes: list[str]) -> Any:
    """``isinstance(<a model config>, classes)`` for the checkpoint: SGLang picks the config class by ``model_type``
    (``qwen3_5_moe`` -> ``Qwen3_5MoeConfig``), so true when a class is the model type's name plus ``Config``, false when
    no class shares a prefix with the checkpoint's model types (0.5.23 ``attention_registry.py:369`` ``Dots3Config``
    for a Qwen3.5 checkpoint), unknown otherwise or when the model types are not known."""
    types = [_squash(t) for t in known.get("model_types") or [] if t]
    if not types or not all(c.endswith("Config") for c in classes):
        return UNKNOWN
    names = [_squash(c.removesuffix("Config")) for c in classes]
    if any(n == t for n in names for t in types):
        return True
    if any(n.startswith(t) or t.startswith(n) for n in names for t in types):
        return UNKNOWN
    return False


def _other_family(known: dict[str, Any], predicate: str) -> Any:
    """A model-family predicate called on the model config (0.5.23 ``is_minimax_sparse(runner.model_config.hf_config)``)
    for a checkpoint of another family: false when the word after ``is_`` (four letters or more) starts a model class this
    SGLang registers and the checkpoint's architecture does not start with it; unknown otherwise (a MiniMax-M2.5
    checkpoint is not told whether it is "minimax sparse")."""
    family = predicate[3:].split("_", 1)[0]
    arch = _squash(known.get("architecture") or "")
    registered = known.get("registered") or ()
    if len(family) < 4 or not arch or not any(_squash(c).startswith(family) for c in registered):
        return UNKNOWN
    return UNKNOWN if arch.startswith(family) else False


def _name_isinstance(expr: ast.AST) -> ast.AST:
    """``expr`` with every ``isinstance(x, Name)`` / ``isinstance(x, (Name, ...))`` replaced by one name the lookup
    reads (:data:`_ISINSTANCE`); other nodes unchanged."""

    class _T(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                names = [k.id for k in kinds if isinstance(k, ast.Name)]
                if len(names) == len(kinds):
                    return ast.copy_location(ast.Name(id=_ISINSTANCE + "__".join(names), ctx=ast.Load()), node)
            return node

    return _T().visit(expr)


def _hybrid_config(known: dict[str, Any], kind: str | None) -> Any:
    """A hybrid-config accessor's value for a launch: present or ``None``, from ``known["linear_attention"]`` (the
    checkpoint's linear-attention kind, ``None`` for none) or the older ``known["hybrid_linear_attention"]`` (a
    bool: any kind); unknown when neither is known."""
    if "linear_attention" in known:
        have = known["linear_attention"]
        if have is None:
            return None
        if have not in ("gdn", "mamba2", "kda", "lightning"):
            return UNKNOWN  # a kind SGLang's accessors are not known to map (MiniMax lightning layers)
        return _PRESENT if kind is None or kind == have else None
    hybrid = known.get("hybrid_linear_attention")
    if hybrid is None:
        return UNKNOWN
    return _PRESENT if hybrid else None


def grounded(condition: str | None, known: dict[str, Any]) -> bool:
    """Whether a guard is about the machine or the model, not only about flags: with the command's values hidden it is
    true, or it is undecided but a platform predicate or a hybrid-config accessor in it is decided by the launch's
    facts (0.5.17 ``attention_registry.py:406``: ``hybrid_gdn_config(...) is not None and is_blackwell() and ...
    prefill and decode backends given``). A guard of flags alone (0.5.20 ``deepseek_v4_hook.py:189``:
    ``cfg.speculative_algorithm is not None``, in a hook only DeepSeek-V4 models run) or no guard is not."""
    if not condition:
        return False
    hidden = dict(known, fields={})
    v = guard_value(condition, hidden)
    if v is not None:
        return v
    base = launch_lookup(hidden)
    decided: list[str] = []

    def lookup(name: str) -> Any:
        out = base(name)
        bare = name.rsplit(".", 1)[-1].removesuffix("()")
        if out is not UNKNOWN and (bare in _PLATFORM or bare in _HYBRID_CONFIGS):
            decided.append(name)
        return out

    try:
        evaluate(_name_isinstance(ast.parse(condition.strip(), mode="eval").body), lookup)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return bool(decided)


def guard_value(condition: str | None, known: dict[str, Any]) -> bool | None:
    """Whether a recorded ``condition`` holds for a launch (``None``: cannot tell; an empty condition holds)."""
    if not condition:
        return True
    try:
        tree = ast.parse(condition.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    out = evaluate(_name_isinstance(tree), launch_lookup(known))
    return out.truth()


def field_value(fields: dict[str, Any], field: str) -> Any:
    """A backend field's value for a launch: the field itself, else for a phase field (``prefill_attention_backend``,
    ``decode_attention_backend``) the general one it falls back to (``attention_backend``: SGLang's
    ``ModelRunner`` takes ``prefill_attention_backend or attention_backend``); :data:`UNKNOWN` when neither is known."""
    v = fields.get(field, UNKNOWN)
    if (v is UNKNOWN or v is None) and field.endswith("_attention_backend"):
        return fields.get("attention_backend", UNKNOWN)
    return v


def predict_asserts(facts: dict[str, Any], known: dict[str, Any]) -> list[dict[str, Any]]:
    """Backend asserts a launch fails: those whose guard holds (or whose guard cannot be told, marked
    ``"certain": False``) and whose field value (known) is outside ``accepts`` or inside ``rejects``.

    Returns the assert facts with ``"value"`` and ``"certain"`` added.
    """
    fields = known.get("fields") or {}
    out = []
    for a in facts.get("backend_asserts") or []:
        value = field_value(fields, a["field"])
        if value is UNKNOWN or value is None:
            continue
        fails = (a["accepts"] is not None and str(value) not in a["accepts"]) or (
            a["rejects"] is not None and str(value) in a["rejects"])
        if not fails:
            continue
        g = guard_value(a["condition"], known)
        if g is False:
            continue
        out.append(dict(a, value=value, certain=g is True))
    return out


def holding_asserts(facts: dict[str, Any], known: dict[str, Any], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The asserts on ``fields`` whose guard certainly holds for a launch (whether or not the value passes): the
    gates that decide a backend there, e.g. the hybrid GDN gate on SM100 that accepts ``flashinfer`` from 0.5.21 on."""
    return [a for a in facts.get("backend_asserts") or [] if a["field"] in fields and a["condition"]
            and guard_value(a["condition"], known) is True]


def predict_overrides(facts: dict[str, Any], known: dict[str, Any]) -> list[dict[str, Any]]:
    """Model-override rewrites that apply to a launch: the checkpoint's architecture is registered for the
    function and the rewrite's guard is not false. Returns the records of ``facts["model_overrides"]`` with
    ``"certain"`` added."""
    arch = known.get("architecture")
    out = []
    for r in facts.get("model_overrides") or []:
        if arch is None or arch not in r["architectures"]:
            continue
        g = guard_value(r["condition"], known)
        if g is False:
            continue
        out.append(dict(r, certain=g is True))
    return out
