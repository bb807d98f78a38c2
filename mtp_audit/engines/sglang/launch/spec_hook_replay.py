"""SGLang's speculative-parameter hook replayed statement by statement for one launch (MTP300 when it certainly raises).

The release's own hook (0.5.23 ``arg_groups/speculative_hook.py:1072`` ``_handle_eagle_family`` for EAGLE / EAGLE3 /
STANDALONE, ``:1285`` ``_handle_ngram`` for NGRAM; which one is the release's dispatch, ``spec_info.py:256-266``) comes
from the sglang analyzer's ``speculative_hooks`` facts and runs in :class:`mtp_audit.engines.code.statements.Replay`
with Python's semantics: ``--speculative-num-steps 2`` alone leaves ``speculative_eagle_topk`` ``None``, and
``cfg.speculative_eagle_topk > 1`` raises ``TypeError: '>' not supported between instances of 'NoneType' and 'int'``
(0.5.23 ``:1274``; ``:1177`` first when the attention backend is ``trtllm_mha``).

What the replay binds: the ``speculative_*`` fields (the command's value, else the field's declared default, typed
by its declaration), the model path, the checkpoint's architecture, the algorithm after the alias, the device (``cuda``
on an NVIDIA GPU) and whatever the command gives. A field an earlier resolution step may rewrite (``page_size``,
``attention_backend``) is unknown unless the command gives it, and any field a model override of the checkpoint's
architecture may write is unknown even when given. A given page size is taken as read: SGLang's page constraints
(0.5.23 ``overrides.py:1144-1200``, ``:1274-1296``) move it only between sizes above 1 (``fa4`` without topk to 128),
so the page-size tests decide the same, though a message may name the size before the move. An unknown test forks
the path; only a raise on every path is a prediction.

SGLang's helpers outside the hook, as the replay sees them (each SGLang 0.5.23 ``arg_groups/overrides.py`` /
``runtime_context.py``): ``resolving_view`` / ``resolved_view`` read the record with its declared resolutions,
``declare_resolution(args, source, **fields)`` declares fields, ``model_config_of(args).hf_config`` is the target's
config, ``attention_backends_of(view)`` the (prefill, decode) attention backends, each the base one unless set
(``model_override_base.py:138-152``; known only when the command gives the base one),
``attn_dp_enabled_of(view)`` the ``enable_dp_attention`` field; ``current_platform.is_out_of_tree()`` is false on an
NVIDIA GPU (SGLang's CUDA platform is in tree).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mtp_audit.engines.code.statements import UNKNOWN, Obj, Path, Replay


@dataclass
class HookOutcome:
    """What the replayed hook does: ``raised`` (every path raises: ``[(type, message, location)]``, distinct), else
    ``None``; ``hook`` its name and ``location``; ``gap`` why it was not replayed."""

    hook: str | None = None
    location: str | None = None
    raised: list[tuple[str, str, str]] | None = None
    gap: str | None = None
    assumed: list[str] = field(default_factory=list)
    #: operands that were ``None`` where an operator failed (``cfg.speculative_eagle_topk``), over every raising path
    none_operands: list[str] = field(default_factory=list)
    #: whether any path raises (``raised`` is set only when every path does)
    some_raise: bool = False
    #: the values of :data:`RESOLVED` on the paths that do not raise (``[value, ...]`` distinct, ``UNKNOWN`` included)
    resolved: dict[str, list[Any]] = field(default_factory=dict)
    #: log lines of those paths that name one of :data:`RESOLVED` (``(message, file:line)``)
    logs: list[tuple[str, str]] = field(default_factory=list)


#: The speculative parameters the hook decides (0.5.23 ``speculative_hook.py:1159-1173`` the auto choice, ``:1255-1266``
#: ``speculative_num_draft_tokens`` adjusted to ``speculative_num_steps + 1`` when ``speculative_eagle_topk == 1``).
RESOLVED = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
#: The evidence label naming the hook of MTP300 when that hook raises for the launch (the server stops at start-up):
#: no other MTP300 (the parser's, an unknown algorithm name) carries it, so the launch's outcome tells them apart by it.
HOOK = "hook"


def pick_hook(facts: dict[str, Any], algorithm: str | None) -> tuple[str, str, dict[str, Any]] | None:
    """``(rel, name, functions of rel)`` of the hook the release's dispatch calls for ``algorithm`` (the first call of
    the ``if``/``elif`` chain whose predicate accepts it); ``None`` when none does or its source is not cached."""
    if not facts or not algorithm:
        return None
    preds = facts.get("predicates") or {}
    for call in facts.get("dispatch") or []:
        if any(algorithm in (preds.get(p) or ()) for p in call["predicates"]):
            for rel, fns in (facts.get("functions") or {}).items():
                if call["hook"] in fns:
                    return rel, call["hook"], fns
            return None
    return None


def _module(fns: dict[str, Any]) -> ast.Module | None:
    body: list[ast.stmt] = []
    for rec in fns.values():
        try:
            tree = ast.parse(rec["source"])
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        ast.increment_lineno(tree, int(rec["line"]) - 1)
        body.extend(tree.body)
    return ast.Module(body=body, type_ignores=[])


def typed_default(rec: dict[str, Any]) -> Any:
    """A CLI argument's declared default as the value the record holds (``"10"`` of an ``int`` field -> ``10``);
    :data:`UNKNOWN` for a default written as an expression."""
    d = rec.get("default")
    if rec.get("default_expr"):
        return UNKNOWN
    if d is None:
        return False if rec.get("action") == "store_true" else None
    return typed(rec, d)


def typed(rec: dict[str, Any], text: Any) -> Any:
    """``text`` converted as the argument's declared type (``int``/``float``/``bool``/``str``); :data:`UNKNOWN` when it
    does not convert."""
    if not isinstance(text, str):
        return text
    kind = rec.get("type") or ("bool" if rec.get("action") == "store_true" else "str")
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            return {"True": True, "False": False, "true": True, "false": False}.get(text, UNKNOWN)
    except ValueError:
        return UNKNOWN
    return text


def bind_record(cli: Mapping[str, Any], given: dict[str, Any], overridden: set[str]) -> dict[str, Any]:
    """The server-args values the replay starts from: each ``speculative_*`` field's default (:func:`typed_default`)
    unless a model override of the architecture may write it (``overridden``), then the command's values (``given``:
    dest -> raw value, typed by the declaration; unknown where ``overridden``)."""
    by_dest = {rec.get("dest"): rec for rec in cli.values() if rec.get("dest")}
    out: dict[str, Any] = {}
    for dest, rec in by_dest.items():
        if dest.startswith("speculative_") and dest not in overridden:
            out[dest] = typed_default(rec)
    for dest, raw in given.items():
        rec = by_dest.get(dest) or {}
        out[dest] = UNKNOWN if dest in overridden else (
            True if raw is None and rec.get("action") == "store_true" else typed(rec, raw))
    return out


def _hooks(arch: str | None, nvidia: bool | None, record: Obj) -> dict[str, Any]:
    hf = Obj("PretrainedConfig", {"architectures": [arch] if arch else UNKNOWN})
    model_config = Obj("ModelConfig", {"hf_config": hf})

    def same(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        return args[0] if args else UNKNOWN

    def declare(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        if args and isinstance(args[0], Obj):
            args[0].attrs.update(kwargs)
        return None

    def backends(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        # 0.5.23 model_override_base.py:138-152: (prefill or base, decode or base)
        view = args[0] if args and isinstance(args[0], Obj) else None
        if view is None:
            return UNKNOWN
        base = view.get("attention_backend")
        out = []
        for phase in ("prefill_attention_backend", "decode_attention_backend"):
            v = view.get(phase)
            if v is UNKNOWN or (not v and base is UNKNOWN):
                return UNKNOWN
            out.append(v if v else base)
        return tuple(out)

    def dp(r: Replay, p: Path, args: list[Any], kwargs: dict[str, Any], n: Any) -> Any:
        return args[0].get("enable_dp_attention") if args and isinstance(args[0], Obj) else UNKNOWN

    platform = Obj("Platform", {"is_hip": False, "is_npu": False} if nvidia else {})
    return {"resolving_view": same, "resolved_view": same, "declare_resolution": declare,
            "model_config_of": lambda r, p, a, k, n: model_config, "attention_backends_of": backends,
            "attn_dp_enabled_of": dp, "get_platform": lambda r, p, a, k, n: platform,
            "current_platform.is_out_of_tree": lambda r, p, a, k, n: False if nvidia else UNKNOWN}


def replay_hook(facts: dict[str, Any], algorithm: str | None, values: dict[str, Any], *, arch: str | None,
                nvidia: bool | None) -> HookOutcome:
    """Replay the release's speculative hook for ``algorithm`` on a record holding ``values`` (server-args field ->
    value; missing ones unknown). Never raises: an unparsable cached source or a replay that loses its way is a
    ``gap``."""
    picked = pick_hook(facts, algorithm)
    if picked is None:
        return HookOutcome(gap=f"no cached speculative hook for {algorithm}")
    rel, name, fns = picked
    loc = f"{rel}:{fns[name]['line']}"
    module = _module(fns)
    if module is None:
        return HookOutcome(hook=name, location=loc, gap=f"{rel}: the cached source of {name} does not parse")
    record = Obj("ServerArgs", values)
    r = Replay(module, rel, hooks=_hooks(arch, nvidia, record))
    try:
        paths = r.call_keeping(name, record, record)
    except (RecursionError, MemoryError):
        return HookOutcome(hook=name, location=loc, gap=f"{rel}: {name} nests too deeply to replay")
    lost = [p.lost for p in paths if p.lost]
    if lost:
        return HookOutcome(hook=name, location=loc, gap=lost[0])
    nones = sorted({o for p in paths if p.raised for o in p.raised.none_operands})
    some = any(p.raised is not None for p in paths)
    if paths and all(p.raised is not None for p in paths):
        seen = {(p.raised.type, p.raised.message, p.raised.location): None for p in paths if p.raised}
        assumed = _deciding_tests(paths)
        return HookOutcome(hook=name, location=loc, raised=list(seen), assumed=assumed, none_operands=nones, some_raise=True)
    ok = [p for p in paths if p.raised is None]
    resolved: dict[str, list[Any]] = {}
    for f in RESOLVED:
        for p in ok:
            v = p.bound.get(f) if isinstance(p.bound, Obj) else UNKNOWN
            if not any(v is x or v == x for x in resolved.get(f, [])):
                resolved.setdefault(f, []).append(v)
    logs = list(dict.fromkeys(lg for p in ok for lg in p.logs if any(f in lg[0] for f in RESOLVED)))
    return HookOutcome(hook=name, location=loc, none_operands=nones, some_raise=some, resolved=resolved, logs=logs)


def _deciding_tests(paths: list[Path]) -> list[str]:
    """The forked tests that decide where the paths raise: those whose true paths and false paths raise at disjoint
    sets of lines (``text (file:line)``)."""
    where: dict[tuple[str, str], dict[bool, set[str]]] = {}
    for p in paths:
        for t, v, at in p.assumed:
            where.setdefault((t, at), {}).setdefault(bool(v), set()).add(p.raised.location if p.raised else "")
    return sorted(f"{t} ({at})" for (t, at), by in where.items() if len(by) == 2 and not (by[True] & by[False]))


def check_speculative_hook(ctx: Any) -> None:
    """MTP300 when the release's speculative hook raises on every path for this launch (the server stops at start-up),
    with the exception and the deciding ``file:line``; ``ctx.spec_hook`` keeps the outcome (``None``: not replayed)."""
    from mtp_audit.engines.outcome import loc_of
    from mtp_audit.report import Evidence

    sg = ctx.sg or {}
    facts = sg.get("speculative_hooks") or {}
    ctx.spec_hook = None
    if not facts or ctx.algo_runs_as is None or ctx.algo_conditional or any(f.rule_id == "MTP300" for f in ctx.findings):
        return
    given = {dest: o.value for o in ctx.cmd.options if (dest := ctx.release.dest(o.flag)) is not None}
    arch = ctx.arch(ctx.ck)
    overridden = {r.get("argument") for r in ctx.model_overrides}
    # the per-phase attention backends stay None unless given (or a model override of the architecture sets them)
    phases = {f: None for f in ("prefill_attention_backend", "decode_attention_backend") if f not in overridden}
    values = {**phases, **bind_record(ctx.release.cli, given, overridden)}
    values.update(speculative_algorithm=ctx.algo_runs_as, model_path=ctx.model_path)
    nvidia = bool(ctx.gpus()) and ctx.cc is not None
    # the device: the given one without its index, else get_device() -- "cuda" on an NVIDIA GPU (0.5.23
    # arg_groups/serving_hook.py:648-658, utils/common.py:1083-1085)
    if isinstance(values.get("device"), str):
        values["device"] = values["device"].split(":")[0]
    elif nvidia and values.get("device") is None:
        values["device"] = "cuda"
    out = replay_hook(facts, ctx.algo_runs_as, values, arch=arch, nvidia=nvidia or None)
    ctx.spec_hook = out
    if not out.raised:
        return
    flags = " ".join(f"{o.flag} {o.value}" if o.value is not None else o.flag for o in ctx.cmd.options
                     if o.flag.startswith("--speculative"))
    nones = none_flags(out, ctx.release.cli, values)
    fix = find_fix(facts, nones, values, arch=arch, nvidia=nvidia or None)
    ctx.spec_fix = fix
    ctx.add("MTP300", f"SGLang {ctx.sglang_version} stops at start-up with {flags}: {out.hook} ({out.location}) raises "
            + raised_words(out) + "".join(f"; {f} is None there ({fl} not given)" for f, fl in nones), "--speculative-algorithm",
            evidence=[Evidence("raised at", w, loc_of(w)) for _t, _m, w in out.raised]
            + [Evidence(HOOK, out.hook or "", loc_of(out.location))]
            + [Evidence("None", f"{f} ({fl} not given, default None)") for f, fl in nones],
            remediation=_remedy(first_raise(out), nones, fix))


def raised_words(out: HookOutcome) -> str:
    """``TypeError: <message> at <file:line>`` for each distinct exception (the same one at several lines: ``at A or
    B``), and the tests that decide between them."""
    by_exc: dict[tuple[str, str], list[str]] = {}
    for t, m, w in out.raised or []:
        by_exc.setdefault((t, m), []).append(w)
    words = "; or ".join(f"{t}: {m[:200]} at {' or '.join(ws)}" for (t, m), ws in by_exc.items())
    if len(out.raised or []) > 1 and out.assumed:
        words += f" (which one depends on {'; '.join(out.assumed[:3])})"
    return words


def first_raise(out: HookOutcome) -> tuple[str, str, str]:
    return (out.raised or [("", "", "")])[0]


def none_flags(out: HookOutcome, cli: Mapping[str, Any], values: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(field, flag)]``: the server-args fields that were ``None`` where the hook's operator failed
    (``cfg.speculative_eagle_topk`` in ``cfg.speculative_eagle_topk > 1``), each with the flag that sets it, when the
    launch left it ``None`` (not given, declared default ``None``)."""
    by_dest = {rec.get("dest"): flag for flag, rec in cli.items() if rec.get("dest")}
    out_: list[tuple[str, str]] = []
    for op in out.none_operands:
        name = op.rsplit(".", 1)[-1]
        if "." in op and name in by_dest and values.get(name, UNKNOWN) is None and (name, by_dest[name]) not in out_:
            out_.append((name, by_dest[name]))
    return out_


def _candidates(facts: dict[str, Any], field_name: str) -> list[Any]:
    """Literals the cached hook functions compare ``<x>.field_name`` with (``cfg.speculative_eagle_topk > 1`` -> 1), in
    source order: the values the hook itself treats as boundaries."""
    out: list[Any] = []
    for fns in (facts.get("functions") or {}).values():
        module = _module(fns)
        for node in ast.walk(module) if module is not None else ():
            if not isinstance(node, ast.Compare) or len(node.ops) != 1:
                continue
            sides = [node.left, node.comparators[0]]
            if not any(isinstance(x, ast.Attribute) and x.attr == field_name for x in sides):
                continue
            for x in sides:
                elts = x.elts if isinstance(x, (ast.Tuple, ast.List, ast.Set)) else [x]
                for e in elts:
                    if isinstance(e, ast.Constant) and type(e.value) in (int, float, str) and e.value not in out:
                        out.append(e.value)
    return out


def find_fix(facts: dict[str, Any], nones: list[tuple[str, str]], values: dict[str, Any], *, arch: str | None,
             nvidia: bool | None) -> tuple[str, Any] | None:
    """``(flag, value)`` that makes the hook raise on no path when the field it sets is ``None``: the hook is replayed
    again with each literal it compares the field with (:func:`_candidates`); ``None`` when none does."""
    for field_name, flag in nones:
        for c in _candidates(facts, field_name):
            again = replay_hook(facts, values.get("speculative_algorithm"), dict(values, **{field_name: c}), arch=arch, nvidia=nvidia)
            if again.gap is None and not again.some_raise and again.hook is not None:
                return flag, c
    return None


def _remedy(raised: tuple[str, str, str], nones: list[tuple[str, str]] | None = None, fix: tuple[str, Any] | None = None) -> str:
    if fix is not None:
        field_name = next(f for f, fl in nones or () if fl == fix[0])
        return (f"{fix[0]} {fix[1]} ({field_name} is None at {raised[2]} because {fix[0]} is not given; replayed with "
                f"{fix[0]} {fix[1]}, the hook raises on no path)")
    if nones:
        return (f"no flag value found that the replayed hook accepts: {', '.join(f for f, _ in nones)} is None at {raised[2]} "
                f"({', '.join(fl for _, fl in nones)} not given); give --speculative-num-steps, --speculative-eagle-topk and "
                "--speculative-num-draft-tokens together, or none of them")
    if raised[0] == "TypeError" and "NoneType" in raised[1]:
        return ("give --speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens together "
                "(e.g. 3 1 4), or none of them")
    return f"change what {raised[2]} refuses: {raised[1][:160]}"


def resolved_words(out: HookOutcome | None) -> str | None:
    """``steps 3, topk 1, draft tokens 4`` after the hook (a value that differs between paths or is not known:
    ``unknown``), with the log lines that name them (``SGLang logs "..." at file:line``); ``None`` when the hook was not
    replayed or raises on every path."""
    if out is None or out.raised or out.gap or not out.resolved:
        return None
    names = {"speculative_num_steps": "steps", "speculative_eagle_topk": "topk", "speculative_num_draft_tokens": "draft tokens"}
    parts = []
    for f in RESOLVED:
        vals = out.resolved.get(f) or [UNKNOWN]
        known = len(vals) == 1 and vals[0] is not UNKNOWN
        parts.append(f"{names[f]} {vals[0] if known else 'unknown'}")
    words = ", ".join(parts)
    for msg, where in out.logs[:2]:
        words += f' (SGLang logs "{msg[:120]}" at {where})'
    return words
