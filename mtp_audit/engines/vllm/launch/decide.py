"""The statement-order replay of ``SpeculativeConfig`` (:func:`mtp_audit.engines.vllm.launch.spec_config_replay.replay_spec_config`)
applied to one launch: it decides whether vLLM refuses the speculative config (the exception, its message and the
``file:line`` that raises it), the method that runs, ``num_speculative_tokens`` and the draft architecture.

The fact-based steps of :mod:`mtp_audit.engines.vllm.launch.evaluate` (the alias, the rewrites, the ``n_predict``
rules) still write the trace and the explanatory findings (MTP321, MTP323); where the replay decides, its answer
replaces theirs (their MTP320 refusals and their "not decided" gaps are dropped, the replay's refusal is added).
Where the replay cannot decide (a test on a value the launch does not know changes the outcome), their answer
stands and the undecided tests are listed.
"""

from __future__ import annotations

import math
from typing import Any

from mtp_audit.engines.outcome import loc_of
from mtp_audit.engines.vllm.launch.spec_config_replay import (
    R_UNKNOWN,
    DraftFacts,
    LaunchKnowns,
    SpecReplay,
    n_predict_of,
    replay_spec_config,
)
from mtp_audit.report import Evidence, Severity


def _arch(ck: dict[str, Any] | None) -> Any:
    archs = ((ck or {}).get("config") or {}).get("architectures")
    return list(archs) if archs else R_UNKNOWN


def draft_facts(ctx: Any, ck: dict[str, Any] | None) -> DraftFacts | None:
    """:class:`DraftFacts` of an audited checkpoint after this vLLM's ``hf_config_override`` (``None``: not audited)."""
    cfg = (ck or {}).get("config") if ck else None
    if not isinstance(cfg, dict):
        return None
    mt, archs = cfg.get("model_type"), _arch(ck)
    class_mt = mt
    arch0 = archs[0] if isinstance(archs, list) and archs else None
    view = ctx.view.draft(mt, arch0) if ctx.view is not None else None
    n: Any = None
    if view and view.get("rewritten"):
        expr = view.get("n_predict_from")
        value, how = n_predict_of(expr, ck, class_lookup(ctx.view, mt))
        if value is None and isinstance(expr, str) and expr.isidentifier():
            from mtp_audit.engines.vllm.launch.config_class import imported_int

            value, how = imported_int(getattr(ctx.view, "sources", None), getattr(ctx.view, "spec_text", None), expr)
            how = how if value is not None else f"{expr} (not read statically)"
        n = value if value is not None else (R_UNKNOWN if "not decided" in how or "not read" in how else None)
        mt = view.get("model_type") or mt
        archs = view.get("architectures") or archs
    elif view is None:
        n = R_UNKNOWN
    return DraftFacts(mt, archs, n, bool(cfg.get("text_config")), _config_class(cfg), class_model_type=class_mt)


def checkpoint_model_type(ck: dict[str, Any] | None) -> Any:
    """``model_type`` of an audited checkpoint's config.json (``None``: not audited or not said)."""
    cfg = ck.get("config") if isinstance(ck, dict) else None
    return cfg.get("model_type") if isinstance(cfg, dict) else None


def class_lookup(view: Any, model_type: Any) -> Any:
    """Attribute name -> whether the config class vLLM builds a ``model_type`` checkpoint from defines it
    (:func:`mtp_audit.engines.vllm.launch.config_class.class_defines` on the release under audit)."""
    from mtp_audit.engines.vllm.launch.config_class import class_defines

    return lambda name: class_defines(getattr(view, "sources", None), getattr(view, "requires", None), model_type, name)


def _config_class(cfg: dict[str, Any]) -> str:
    arch = (cfg.get("architectures") or ["PretrainedConfig"])[0]
    for suffix in ("ForConditionalGeneration", "ForCausalLM", "Model"):
        if arch.endswith(suffix):
            return arch[: -len(suffix)] + "Config"
    return "PretrainedConfig"


def max_len_bound(model: Any, cwd: Any) -> int | None:
    """An upper bound of the ``max_model_len`` vLLM derives for checkpoint ``model`` (``_get_and_verify_max_len``,
    ``vllm/config/model.py``: the least of its length keys times a RoPE ``factor``, or ``model_max_length``): the largest
    number of its ``config.json`` times its largest ``factor`` (:mod:`mtp_audit.engines.vllm.launch.lookahead`); ``None``
    when the folder has no readable ``config.json`` or a ``sentence_bert_config.json`` (whose ``max_seq_length`` vLLM
    reads as well)."""
    from pathlib import Path

    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json
    from mtp_audit.engines.vllm.launch.lookahead import config_length_bound

    if not isinstance(model, str):
        return None
    folder = Path(model).expanduser()
    if (folder if folder.is_absolute() else Path(cwd) / folder).joinpath("sentence_bert_config.json").exists():
        return None
    cfg, _why = model_config_json(model, cwd)
    if not isinstance(cfg, dict):
        return None
    return config_length_bound(cfg)


def _floor(view: Any, model: Any, cwd: Any, model_type: Any = None, machine_tf: tuple[str, str] | None = None) -> Any:
    from mtp_audit.engines.vllm.launch.max_len import length_floor

    return length_floor(view, model, cwd, model_type=model_type, machine_tf=machine_tf)[0] if view is not None else None


def _ceiling(view: Any, model: Any, cwd: Any, model_type: Any = None, machine_tf: tuple[str, str] | None = None) -> Any:
    """The least upper bound known of the draft's derived length: its exact value
    (:func:`mtp_audit.engines.vllm.launch.max_len.length_exact`) where decided, else :func:`max_len_bound`."""
    from mtp_audit.engines.vllm.launch.max_len import length_exact

    bound = max_len_bound(model, cwd)
    exact = length_exact(view, model, cwd, model_type, machine_tf)[0] if view is not None else None
    if exact == math.inf:
        # no length key at all: the given max_model_len is returned as is (0.34.0 vllm/config/model.py:2623-2627)
        return None
    if exact is None or bound is None:
        return bound
    return min(bound, exact)


def _ceiling_machine(view: Any, model: Any, cwd: Any, model_type: Any, machine_tf: tuple[str, str] | None) -> list[tuple[str, str]]:
    """The machine facts :func:`_ceiling` rests on: ``[("transformers", "VERSION [where seen]")]`` when the machine's
    transformers (``machine_tf``) gives a lower ceiling than the launch alone does (its config class's defaults decided
    the length), else ``[]``."""
    from mtp_audit.engines.vllm.distributions import TRANSFORMERS

    if machine_tf is None or _ceiling(view, model, cwd, model_type, machine_tf) == _ceiling(view, model, cwd, model_type):
        return []
    return [(TRANSFORMERS, f"{machine_tf[0]} installed [{machine_tf[1]}]")]


def target_max_len(ctx: Any, model_path: str | None, cwd: Any) -> Any:
    """The target ``ModelConfig.max_model_len`` as ``SpeculativeConfig`` sees it: ``--max-model-len N`` when ``N`` is at
    or below a lower bound of the derived length (the target's own check passes and keeps it); without it (or ``-1``,
    auto-fit later) ``int(derived)`` (0.34.0 ``vllm/config/model.py:2683-2697``; ``check_max_model_len`` returns it
    unchanged, ``vllm/platforms/interface.py:1443``) between the lower bound of
    :func:`mtp_audit.engines.vllm.launch.max_len.length_floor` and :func:`max_len_bound`; :data:`R_UNKNOWN` otherwise."""
    from mtp_audit.engines.code.statements import Bounded
    from mtp_audit.engines.vllm.launch.config_class import machine_transformers
    from mtp_audit.engines.vllm.launch.max_len import length_floor

    given = ctx.cmd.get("--max-model-len")
    if ctx.view is None or not isinstance(model_path, str) or given is not None and given not in ("-1",) \
            and not (isinstance(given, str) and given.isdigit()) or ctx.cmd.get("--hf-overrides") is not None \
            or ctx.cmd.get("--disable-sliding-window") is not None or ctx.cmd.get("--runner") not in (None, "auto", "generate") or ctx.cmd.get("--convert") not in (None, "none"):
        return R_UNKNOWN
    tf = machine_transformers(ctx.machine)
    floor, _why = length_floor(ctx.view, model_path, cwd, target=True, machine_tf=tf)
    if floor is None:
        return R_UNKNOWN
    if given is not None and given != "-1":
        return int(given) if int(given) <= floor else R_UNKNOWN
    exact = _ceiling(ctx.view, model_path, cwd, machine_tf=tf)
    if exact is not None and exact == floor:
        return int(floor)
    return Bounded(int(floor), max_len_bound(model_path, cwd), "the target's derived max_model_len")


def knowns(ctx: Any, model_path: str | None, cwd: Any = ".") -> LaunchKnowns:
    """What the launch fixes for the replay: the spec as given, the target (its audited config), ``--quantization``,
    ``--model-impl`` and the draft checkpoints the launch audited."""
    from mtp_audit.engines.vllm.launch.config_class import machine_transformers

    spec = dict(ctx.cmd.spec or {})
    tck = ctx.ck
    tf = machine_transformers(ctx.machine)
    tcfg = ((tck or {}).get("config") or {}) if tck else {}
    target = DraftFacts(tcfg.get("model_type", R_UNKNOWN) if tck else R_UNKNOWN, _arch(tck))
    impl = ctx.cmd.get("--model-impl")
    native = ctx.view.registered(target.architectures[0]) if ctx.view is not None and isinstance(target.architectures, list) else None
    using_tf = False if (native is not None and impl in (None, "auto", "vllm")) else (True if impl == "transformers" else R_UNKNOWN)

    def draft_of(model: str) -> DraftFacts | None:
        if model == model_path or ctx.draft_is_target and model == spec.get("model"):
            return draft_facts(ctx, tck)
        return draft_facts(ctx, ctx.draft_ck)

    def registered(arch: str) -> Any:
        if ctx.view is None or not getattr(ctx.view, "_archs", None):
            return R_UNKNOWN
        return ctx.view.registered(arch)

    return LaunchKnowns(spec=spec, target_model=model_path, target=target, target_text_model_type=tcfg.get("text_model_type"),
                        quantization=ctx.cmd.get("--quantization") or ctx.cmd.get("-q"), using_transformers=using_tf,
                        draft_of=draft_of, registered=registered, parallel=parallel_knowns(ctx.cmd),
                        max_len_bound=(lambda model, mt=None: None) if ctx.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
                        else (lambda model, mt=None: _ceiling(ctx.view, model, cwd, mt, tf)), vocab_of=lambda model: vocab_size_of(model, cwd),
                        max_len_floor=lambda model, mt=None: _floor(ctx.view, model, cwd, mt, tf),
                        max_len_machine=lambda model, mt=None: _ceiling_machine(ctx.view, model, cwd, mt, tf),
                        target_max_len=target_max_len(ctx, model_path, cwd),
                        head_dtype_is_dtype=lambda model: no_head_dtype(model, cwd),
                        draft_quant=lambda model, q, hf=None: draft_quantization(ctx.view, model, q, cwd, hf),
                        requires=getattr(ctx.view, "requires", None),
                        installed=ctx.machine.installed if ctx.machine is not None else None)


def draft_quantization(view: Any, model: str, quantization: str | None, cwd: Any, hf: dict[str, Any] | None = None) -> Any:
    """The quantization chain of the draft ``ModelConfig`` (``quantization`` from the speculative config) on checkpoint
    ``model``'s own quantization config (:func:`quant_config_of`), replayed by
    :func:`mtp_audit.engines.vllm.launch.quant.resolve_quantization`; ``None`` when that config cannot be read (a hub id,
    an unreadable file). ``hf``: the draft's ``model_type`` / ``architectures`` after ``hf_config_override`` (which the
    overrides test: 0.34.0 ``vllm/models/deepseek_v41/quant_config.py:180-191`` answers only for ``deepseek_v4*``), by
    default its config.json's."""
    import json

    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json
    from mtp_audit.engines.vllm.launch.quant import resolve_quantization

    if not hasattr(view, "sources"):
        return None
    cfg, where = quant_config_of(model, cwd)
    if cfg is None and where is not None:
        return None
    if hf is None:
        raw, _why = model_config_json(model, cwd)
        hf = {k: raw[k] for k in ("model_type", "architectures") if isinstance(raw, dict) and raw.get(k) is not None}
    key = json.dumps(cfg, sort_keys=True, default=str) + f"\0{quantization}\0{sorted(hf.items())}"
    memo = view.__dict__.setdefault("_quant_memo", {})
    if key not in memo:
        memo[key] = resolve_quantization(view.sources, cfg, quantization, hf)
    return memo[key]


def no_head_dtype(model: Any, cwd: Any) -> bool:
    """Whether checkpoint ``model``'s config.json sets no ``head_dtype`` (top level or ``text_config``)."""
    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json

    cfg, _why = model_config_json(model, cwd) if isinstance(model, str) else (None, None)
    return isinstance(cfg, dict) and "head_dtype" not in cfg and "head_dtype" not in (cfg.get("text_config") or {})


def vocab_size_of(model: Any, cwd: Any) -> int | None:
    """``vocab_size`` of checkpoint ``model``'s config.json (its ``text_config``'s when it has one: vLLM's
    ``get_vocab_size`` reads the text config), ``None`` when it does not say."""
    from mtp_audit.engines.vllm.launch.attn_launch import model_config_json

    cfg, _why = model_config_json(model, cwd) if isinstance(model, str) else (None, None)
    if not isinstance(cfg, dict):
        return None
    tc = cfg.get("text_config")
    text = tc if isinstance(tc, dict) else cfg
    v = text.get("vocab_size")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


#: ``ParallelConfig`` field -> the ``vllm serve`` options that set it (default 1: ``vllm/config/parallel.py``)
PARALLEL_FIELDS = {"tensor_parallel_size": ("--tensor-parallel-size", "-tp"),
                   "decode_context_parallel_size": ("--decode-context-parallel-size", "-dcp")}


def parallel_knowns(cmd: Any) -> dict[str, Any]:
    """The target ``ParallelConfig`` sizes the command fixes, for the draft checks that compare with them
    (``_verify_and_get_draft_tp``: 0.33.0 / 0.34.0 ``speculative.py``); a value that is not an integer is left out."""
    out: dict[str, Any] = {}
    for name, opts in PARALLEL_FIELDS.items():
        given = next((cmd.get(o) for o in opts if cmd.get(o) is not None), None)
        if given is None:
            out[name] = 1
        elif str(given).strip().isdigit():
            out[name] = int(str(given).strip())
    return out


def apply_replay(ctx: Any, model_path: str | None, findings_before: int, gaps_before: int, cwd: Any = ".") -> SpecReplay | None:
    """Run the replay for ``ctx``'s speculative config and let it decide (module docstring). ``findings_before`` /
    ``gaps_before``: how many findings and gaps ``ctx`` held before the fact-based steps ran (theirs come after)."""
    if ctx.cmd.spec is None or ctx.view is None or _rejected_before(ctx):
        return None
    rp = replay_spec_config(ctx.view, knowns(ctx, model_path, cwd))
    ctx.replay = rp
    if rp.gap is not None:
        # the source that decides cannot be read: what vLLM does with this speculative config is "could not tell", not
        # what the rewrite facts of the same unreadable file would guess
        _drop_fact_answers(ctx, findings_before, gaps_before)
        ctx.fails = any(f.rule_id in ("MTP320", "MTP322", "MTP324") and f.severity >= Severity.ERROR for f in ctx.findings)
        ctx.method, ctx.method_decided, ctx.k = None, False, ctx.k_requested
        ctx.gap(f"the statement-order replay of SpeculativeConfig could not run ({rp.gap}): what vLLM does with this "
                "speculative config is not decided", blocking=True)
        return rp
    raised = rp.raised
    if raised is R_UNKNOWN and rp.moved():
        # the replay could not follow the release (a module, table or class it names is gone, or a call it reached
        # forks in ways the launch does not decide): could not tell, never the fact-based guess of an older layout
        _drop_fact_answers(ctx, findings_before, gaps_before)
        ctx.fails = any(f.rule_id in ("MTP320", "MTP322", "MTP324") and f.severity >= Severity.ERROR for f in ctx.findings)
        ctx.method, ctx.method_decided, ctx.k = None, False, ctx.k_requested
        why = rp.moved()[0]
        ctx.gap(("" if why.startswith("could not tell") else "could not tell: ") + why
                + ": what vLLM does with this speculative config is not decided", blocking=True)
        return rp
    if raised is R_UNKNOWN:
        undecided = rp.why()
        refused = any(p.raised is not None for p in rp.paths)
        if refused:
            # one of the outcomes is a refusal: whether the server starts is not decided, so neither the fact-based "runs"
            # nor its method stand (0.33.0 suffix: ImportError unless arctic-inference is installed, speculative.py:1727)
            _drop_fact_answers(ctx, findings_before, gaps_before)
            ctx.method, ctx.method_decided, ctx.k = None, False, ctx.k_requested
        ctx.gap("the statement-order replay of SpeculativeConfig does not decide whether vLLM accepts this speculative config: "
                + "; ".join(undecided[:4]) + ("" if undecided else "paths disagree")
                + ("; one outcome is a refusal (" + next(str(p.raised) for p in rp.paths if p.raised is not None)[:200] + ")"
                   if refused else ""), blocking=refused)
        return rp
    _drop_fact_answers(ctx, findings_before, gaps_before)
    if raised is None:
        ctx.fails = any(f.rule_id in ("MTP320", "MTP322", "MTP324") and f.severity >= Severity.ERROR for f in ctx.findings)
        ctx.method_decided = True
        for attr, value in (("method", rp.final("method")), ("k", rp.final("num_speculative_tokens"))):
            if value is not R_UNKNOWN:
                setattr(ctx, attr, value)
        archs = rp.draft_architectures()
        if archs is not R_UNKNOWN:
            ctx.draft["architectures_replayed"] = archs
        _draft_path(ctx, rp, model_path)
        return rp
    # nothing after the raising statement runs: the n_predict default and the reuse notice (MTP323) never happen
    ctx.findings[findings_before:] = [f for f in ctx.findings[findings_before:] if f.rule_id != "MTP323"]
    ctx.k = ctx.k_requested
    _refuse(ctx, raised, rp)
    return rp


def _draft_path(ctx: Any, rp: SpecReplay, model_path: str | None) -> None:
    """The draft checkpoint the replay built the draft ``ModelConfig`` from, when the fact-based steps did not find it
    (0.34.0 moved the draft = target default into ``MTPSpeculatorConfig.default_model``)."""
    from mtp_audit.engines.code.statements import Obj

    if ctx.draft.get("path") is not None:
        return
    d = rp.final("draft_model_config")
    model = d.get("model") if isinstance(d, Obj) else None
    if isinstance(model, str):
        ctx.draft["path"], ctx.draft["is_target"] = model, model == model_path
        ctx.draft_is_target = ctx.draft_is_target or model == model_path


def _rejected_before(ctx: Any) -> bool:
    """The command or the validated ``method`` Literal already refused the config (vLLM stops before ``__post_init__``):
    pydantic's refusal (``ctx.refused_by_validation``), or an MTP320 of the argument parser (located at another
    option than ``--speculative-config``)."""
    return ctx.refused_by_validation or any(f.rule_id == "MTP320" and f.location.symbol != "--speculative-config" for f in ctx.findings)


def _drop_fact_answers(ctx: Any, findings_before: int, gaps_before: int) -> None:
    """Drop what the fact-based steps answered after ``findings_before`` / ``gaps_before``: their MTP320 and the gaps they
    recorded as theirs (``ctx.fact_gaps``), which the replay answers instead; other gaps stay, whatever their words."""
    ctx.findings[findings_before:] = [f for f in ctx.findings[findings_before:] if f.rule_id != "MTP320"]
    ctx.gaps[gaps_before:] = [g for g in ctx.gaps[gaps_before:] if g not in ctx.fact_gaps]  # the replay answers them


def _refuse(ctx: Any, raised: Any, rp: SpecReplay) -> None:
    """MTP320 with the replayed exception; the fix for the ``None`` comparison: give ``num_speculative_tokens``."""
    n = ((ctx.ck or {}).get("mtp") or {}).get("declared_layers") or 1
    fix = None
    if "num_speculative_tokens" not in (ctx.cmd.spec or {}) and (raised.type == "TypeError" and "NoneType" in raised.message
                                                                or "num_speculative_tokens" in raised.message):
        fix = f'add "num_speculative_tokens": {int(n)} (the checkpoint\'s MTP layer count)'
        ctx.spec_fix = dict(ctx.spec_fix or ctx.cmd.spec or {}, num_speculative_tokens=int(n))
        ctx.spec_changed = True
    path = rp.paths[0]
    ctx.method = path.bound.get("method") if path.bound is not None else ctx.method
    if ctx.method is R_UNKNOWN:
        ctx.method = None
    where = f"({raised.location})" if raised.location else "(pydantic, validating the fields before __post_init__)"
    ctx.reject(f"{raised.type}: {raised.message} {where} while SpeculativeConfig is built",
               evidence=[Evidence("raised", f"{raised.type}: {raised.message}", loc_of(raised.location) if raised.location else None)]
               + [Evidence("replayed from", str(rp.rel))] + [Evidence(f"machine: {label}", value) for label, value in rp.machine],
               remediation=fix or _install_fix(rp) or "change the speculative config so that this statement does not raise")


def _install_fix(rp: SpecReplay) -> str | None:
    """The fix for a refusal the machine's packages decided (``arctic-inference`` not installed): install it."""
    missing = [label for label, value in rp.machine if value.startswith("not installed")]
    if not missing:
        return None
    return (f"install {', '.join(missing)} on the serving machine (pip install {' '.join(missing)}, at the version vLLM's "
            "message names), or choose another speculative method")


def quant_config_of(model: str | None, cwd: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The checkpoint's quantization config as vLLM reads it (``config.json`` ``quantization_config``, else
    ``hf_quant_config.json``; 0.33.0 vllm/transformers_utils/config.py:951-961; else its ``text_config``'s, 0.34.0
    vllm/transformers_utils/model_arch_config_convertor.py:285-292) for a local model folder, and the file it came from. ``(None, None)`` for none; a hub id or an unreadable file is ``(None, "...problem...")``."""
    from pathlib import Path

    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_json_bounded

    if model is None:
        return None, None
    folder = Path(model).expanduser()
    folder = folder if folder.is_absolute() else Path(cwd) / folder
    if not folder.is_dir():
        return None, f"{model} is not a local folder: its quantization config was not read"
    try:
        cfg = read_json_bounded(folder / "config.json") if (folder / "config.json").is_file() else {}
        q = cfg.get("quantization_config") if isinstance(cfg, dict) else None
        if isinstance(q, dict):
            return q, "config.json"
        if (folder / "hf_quant_config.json").is_file():
            h = read_json_bounded(folder / "hf_quant_config.json")
            return (h, "hf_quant_config.json") if isinstance(h, dict) else (None, "hf_quant_config.json is not a JSON object")
        # then the text config's, for a composite config (0.34.0 model_arch_config_convertor.py:285-292)
        tc = cfg.get("text_config") if isinstance(cfg, dict) else None
        tq = tc.get("quantization_config") if isinstance(tc, dict) else None
        if isinstance(tq, dict):
            return tq, "config.json text_config"
    except InputError as exc:
        return None, f"{exc.problem}"
    return None, None


def check_quantization(ctx: Any, cwd: Any) -> None:
    """MTP329 (the quantization chain raises) and MTP330 (``--quantization`` silently replaced), from
    :func:`mtp_audit.engines.vllm.launch.quant.resolve_quantization`; ``ctx.quant`` holds what runs and which file:line
    decided it."""
    from mtp_audit.engines.vllm.launch.quant import resolve_quantization

    if ctx.view is None or not hasattr(ctx.view, "sources"):
        return
    user = ctx.cmd.get("--quantization") or ctx.cmd.get("-q")
    cfg, where = quant_config_of(ctx.cmd.model, cwd)
    if cfg is None and where is not None:
        ctx.quant = {"method": None, "decided": False, "why": where}
        if user:
            ctx.gap(f"--quantization {user}: {where}; whether vLLM keeps it was not replayed")
        return
    tcfg = ((ctx.ck or {}).get("config") or {})
    hf = {k: tcfg[k] for k in ("model_type", "architectures") if tcfg.get(k) is not None}
    import json

    key = json.dumps(cfg, sort_keys=True, default=str) + f"\0{user}\0{sorted(hf.items())}"
    memo = ctx.view.__dict__.setdefault("_quant_memo", {})  # the corrected command asks again for the same checkpoint
    if key not in memo:
        memo[key] = resolve_quantization(ctx.view.sources, cfg, user, hf)
    res = memo[key]
    decided = res.method is not R_UNKNOWN and res.raised is None
    ctx.quant = {"method": res.method if decided else None, "decided": decided or res.raised is not None, "decided_at": res.decided_at,
                 "from": where, "trace": res.trace, "given": user}
    if res.gap:
        ctx.gap(f"the quantization method was not replayed: {res.gap}")
    elif res.raised is not None:
        ctx.fails = True
        ctx.add("MTP329", f"vLLM {ctx.version} refuses the quantization ({where or 'no quantization config'}"
                + (f", --quantization {user}" if user else "") + f"): {res.raised.type}: {res.raised.message} ({res.raised.location}); "
                "the server exits while building ModelConfig", "--quantization" if user else "model",
                evidence=[Evidence("raised", f"{res.raised.type}: {res.raised.message}", loc_of(res.raised.location))]
                + [Evidence("quantization config", json_short(cfg))],
                remediation="drop --quantization (vLLM reads the method from the checkpoint)" if user and "does not match" in res.raised.message
                else "use a vLLM release that knows this checkpoint's quantization scheme")
    elif not decided:
        ctx.gap("the quantization method vLLM keeps was not decided by the replay: " + "; ".join(res.trace[:3]))
    elif res.overridden:
        ctx.add("MTP330", f"--quantization {user} runs as {res.method!r} in vLLM {ctx.version}, silently: "
                f"{res.decided_at} answers first in the override chain (vllm/config/model.py _verify_quantization)",
                "--quantization", evidence=[Evidence("override", str(res.method), loc_of(res.decided_at))]
                + [Evidence("quantization config", json_short(cfg))],
                remediation=f"write --quantization {res.method} (or drop it)", severity=Severity.WARNING)


def json_short(cfg: Any) -> str:
    """A quantization config as compact JSON, cut at 200 characters."""
    import json

    text = json.dumps(cfg, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else text[:197] + "..."
