"""Three-valued evaluation of the ``if`` conditions the sglang analyzer records next to each rewrite
(``facts["sglang"]["auto_resolutions"][i]["condition"]``, the source text of the guarding tests).

Only what a launch audit knows is evaluated: the checkpoint's architecture (``model_arch``,
``hf_config.architectures[0]``), the GPU's compute capability (``is_sm100_supported()`` and friends in
``sglang/srt/utils/common.py``, which test the capability *major*: 0.5.9 lines 243-266;
``get_platform().is_sm100`` from 0.5.15 on), the platform (``is_hip()`` is false on an NVIDIA GPU),
environment variables (``envs.NAME.get()``, ``get_bool_env_var("NAME")``) and server arguments
(``self.x`` / ``server_args.x`` / ``cfg.x`` / ``view.x`` compared with literals). Anything else is
unknown (``None``), and unknown never turns into true or false.

The condition text is parsed with :func:`ast.parse` as data (never evaluated by Python).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

#: Capability predicates of SGLang -> the compute capability majors they accept.
SM_PREDICATES: dict[str, tuple[int, ...]] = {
    "is_sm100_supported": (10,),
    "is_sm120_supported": (12,),
    "is_sm90_supported": (9,),
    "is_blackwell_supported": (10, 12),
    "is_blackwell": (10, 12),
    "is_sm100": (10,),
    "is_sm120": (12,),
    "is_sm90": (9,),
    "is_hopper": (9,),
}
_ARG_OWNERS = ("self", "server_args", "cfg", "view", "args")
_TRUE = ("1", "true", "yes", "on")


@dataclass
class Known:
    """What the launch audit knows when evaluating a condition.

    Attributes:
        arch: ``config.json`` ``architectures[0]`` of the checkpoint, or ``None``.
        cc: compute capability of GPU 0 as ``(major, minor)``, or ``None``.
        nvidia: ``True`` when the GPUs are NVIDIA (so ``is_hip()`` is false), ``None`` unknown.
        env: environment variables of the launch.
        args: server argument ``dest`` -> value as SGLang sees it (``None`` when not given and the
            default is ``None``); a ``dest`` missing from the mapping is unknown.
    """

    arch: str | None = None
    cc: tuple[int, int] | None = None
    nvidia: bool | None = None
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """Result of :func:`evaluate`: ``value`` is ``True``/``False``/``None`` (unknown); ``reasons`` are
    the known-false (or known-true) atoms that decided it, in plain words."""

    value: bool | None
    reasons: tuple[str, ...] = ()


def evaluate(condition: str, known: Known) -> Verdict:
    """Evaluate ``condition`` (Python source text) under ``known``.

    An empty condition is true (an unconditional rewrite). Text that does not parse is unknown.
    """
    text = " ".join((condition or "").split())
    if not text:
        return Verdict(True, ())
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return Verdict(None, ())
    return _eval(node, known)


def _name(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover
        return "?"


def _eval(node: ast.AST, k: Known) -> Verdict:
    if isinstance(node, ast.BoolOp):
        parts = [_eval(v, k) for v in node.values]
        if isinstance(node.op, ast.And):
            false = [p for p in parts if p.value is False]
            if false:
                return Verdict(False, tuple(r for p in false for r in p.reasons))
            if all(p.value is True for p in parts):
                return Verdict(True, tuple(r for p in parts for r in p.reasons))
            return Verdict(None, ())
        true = [p for p in parts if p.value is True]
        if true:
            return Verdict(True, true[0].reasons)
        if all(p.value is False for p in parts):
            return Verdict(False, tuple(r for p in parts for r in p.reasons))
        return Verdict(None, ())
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = _eval(node.operand, k)
        return Verdict(None if v.value is None else not v.value, tuple(f"not: {r}" for r in v.reasons))
    if isinstance(node, ast.Call):
        return _call(node, k)
    if isinstance(node, ast.Attribute):
        return _attribute(node, k)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node, k)
    return Verdict(None, ())


def _sm(pred: str, k: Known) -> Verdict:
    majors = SM_PREDICATES[pred]
    if k.cc is None:
        return Verdict(None, ())
    ok = k.cc[0] in majors
    want = "/".join(f"SM{m}x" for m in majors)
    return Verdict(ok, (f"{pred}: needs compute capability major {', '.join(map(str, majors))} ({want}); GPU 0 is {k.cc[0]}.{k.cc[1]}",))


def _call(node: ast.Call, k: Known) -> Verdict:
    fn = _name(node.func)
    last = fn.split(".")[-1]
    if last in SM_PREDICATES and not node.args:
        return _sm(last, k)
    if last in ("is_hip", "is_npu", "is_xpu", "is_cpu") and not node.args:
        if k.nvidia is None:
            return Verdict(None, ())
        return Verdict(False, (f"{last}(): the GPUs are NVIDIA (CUDA)",)) if k.nvidia else Verdict(None, ())
    if last == "is_cuda" and not node.args:
        return Verdict(True, ()) if k.nvidia else Verdict(None, ())
    if fn.startswith("envs.") and last == "get" and fn.count(".") == 2:
        return _env(fn.split(".")[1], k)
    if last in ("get_bool_env_var",) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return _env(node.args[0].value, k)
    return Verdict(None, ())


def _env(name: str, k: Known) -> Verdict:
    if name not in k.env:
        return Verdict(None, ())
    on = k.env[name].strip().lower() in _TRUE
    return Verdict(on, (f"{name}={k.env[name]}",))


def _attribute(node: ast.Attribute, k: Known) -> Verdict:
    if isinstance(node.value, ast.Call) and _name(node.value.func).endswith("get_platform") and node.attr in SM_PREDICATES:
        return _sm(node.attr, k)
    if isinstance(node.value, ast.Call) and _name(node.value.func).endswith("get_platform") and node.attr == "is_hip":
        return Verdict(False, ("get_platform().is_hip: the GPUs are NVIDIA (CUDA)",)) if k.nvidia else Verdict(None, ())
    return Verdict(None, ())


def _subject(node: ast.AST, k: Known) -> tuple[bool, Any, str]:
    """(known, value, label) of the left side of a comparison."""
    text = _name(node)
    if text in ("model_arch", "arch") or text.endswith("architectures[0]"):
        return k.arch is not None, k.arch, "architecture"
    if isinstance(node, ast.Attribute) and _name(node.value) in _ARG_OWNERS:
        if node.attr in k.args:
            return True, k.args[node.attr], f"--{node.attr.replace('_', '-')}"
    if isinstance(node, ast.Name) and node.id in k.args:
        return True, k.args[node.id], f"--{node.id.replace('_', '-')}"
    return False, None, text


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False, None


def _compare(node: ast.Compare, k: Known) -> Verdict:
    known, value, label = _subject(node.left, k)
    ok, lit = _literal(node.comparators[0])
    if not known or not ok:
        return Verdict(None, ())
    op = node.ops[0]
    if isinstance(op, (ast.Eq, ast.Is)):
        res = value == lit
    elif isinstance(op, (ast.NotEq, ast.IsNot)):
        res = value != lit
    elif isinstance(op, ast.In) and isinstance(lit, (list, tuple, set, frozenset)):
        res = value in lit
    elif isinstance(op, ast.NotIn) and isinstance(lit, (list, tuple, set, frozenset)):
        res = value not in lit
    else:
        return Verdict(None, ())
    sym = {ast.Eq: "==", ast.Is: "is", ast.NotEq: "!=", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}[type(op)]
    shown = repr(lit) if not isinstance(lit, (list, tuple, set, frozenset)) else f"[{len(lit)} listed values]"
    return Verdict(res, (f"{label} is {value!r}; the condition needs {label} {sym} {shown}",))
