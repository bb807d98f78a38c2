"""The attention backend of one vLLM launch: the launch's values for :func:`mtp_audit.engines.vllm.launch.attention.
select_attention` (from the command, the checkpoint's ``config.json`` and the declared machine), rule MTP332 when vLLM
refuses the choice at start-up, and the text the report shows.

The model's values follow vLLM's ``ModelConfig`` (0.33.0 ``vllm/config/model.py``): MLA when ``use_mla`` (``is_deepseek_mla``:
the DeepSeek-type model types with ``kv_lora_rank``; ``VLLM_MLA_DISABLE=1`` turns it off, :2068), the head size
``kv_lora_rank + qk_rope_head_dim`` for MLA, else ``head_dim`` or ``hidden_size // num_attention_heads``; the sparse
indexer when the config has ``index_topk`` (DeepSeek-V3.2, GLM-5); attention sinks for ``gpt_oss``. The KV-cache dtype
is ``--kv-cache-dtype`` (``auto`` when not given, unknown when the checkpoint's quantization declares a KV-cache
scheme); ``--block-size`` counts only when given (0.24+ ``get_attn_backend`` passes ``None`` otherwise).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from mtp_audit.engines.code.statements import UNKNOWN
from mtp_audit.engines.outcome import loc_of
from mtp_audit.engines.vllm.launch.attention import (
    CAPABILITY_UNKNOWN,
    AttnKnowns,
    AttnSelection,
    select_attention_cached,
)
from mtp_audit.report import Evidence

if TYPE_CHECKING:
    from mtp_audit.checkpoint.typed import CheckpointAnswer
    from mtp_audit.preflight.typed import MachineAnswer

#: model types vLLM 0.33.0 treats as DeepSeek-type MLA when ``kv_lora_rank`` is set
#: (vllm/transformers_utils/model_arch_config_convertor.py:294-321, ``is_deepseek_mla``)
MLA_MODEL_TYPES = ("axk1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "deepseek_v41", "dots3_note",
                   "deepseek_mtp", "k3_dspark", "glm5_next", "glm5_next_text", "glm_moe_dsa", "glm4_moe_lite",
                   "glm4_moe_lite_mtp", "kimi_k2", "kimi_linear", "longcat_flash", "pangu_ultra_moe", "pangu_ultra_moe_mtp",
                   "bailing_hybrid", "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp", "hy_v4", "hy_v4_mtp")
TORCH_NAMES = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "half": "torch.float16", "float32": "torch.float32",
               "float": "torch.float32"}


def model_config_json(model: str, cwd: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The model folder's ``config.json`` (bounded read), or ``(None, why)`` for a hub id or an unreadable file."""
    from pathlib import Path

    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_json_bounded

    folder = Path(model).expanduser()
    folder = folder if folder.is_absolute() else Path(cwd) / folder
    if not (folder / "config.json").is_file():
        return None, f"{model}: no local config.json (the model's head size and MLA use are unknown)"
    try:
        cfg = read_json_bounded(folder / "config.json")
    except InputError as exc:
        return None, exc.problem
    return (cfg, None) if isinstance(cfg, dict) else (None, f"{model}/config.json is not a JSON object")


def launch_config(answer: CheckpointAnswer | None, model: str, cwd: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``config.json`` of the launch's ``model``: the mapping its checkpoint audit read (``answer.config``, read once per
    audit; a copy, so nothing here changes the answer), else :func:`model_config_json` (a hub id or a config the audit
    did not read: ``(None, why)``, "could not tell" downstream)."""
    if answer is not None and answer.config is not None:
        return copy.deepcopy(dict(answer.config)), None
    return model_config_json(model, cwd)


#: ``parallel_config`` fields backends read, and the options that set them (0.33.0 vllm/engine/arg_utils.py:1212, :1236)
PARALLEL_FIELDS = {"tensor_parallel_size": ("--tensor-parallel-size", "-tp"),
                   "decode_context_parallel_size": ("--decode-context-parallel-size", "-dcp"),
                   "prefill_context_parallel_size": ("--prefill-context-parallel-size", "-pcp")}


def _int_option(cmd: Any, *names: str) -> Any:
    v = cmd.get(*names)
    if v is None:
        return 1  # vLLM's default for each of these sizes
    return int(v) if isinstance(v, str) and v.isdigit() else UNKNOWN


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    tc = cfg.get("text_config")
    return {**cfg, **tc} if isinstance(tc, dict) else cfg


def _attention_config_json(cmd: Any) -> dict[str, Any]:
    """``--attention-config`` / ``-ac`` as a JSON object (``{}`` when absent or not an object)."""
    raw = cmd.get("--attention-config", "-ac")
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        data = None
    return {str(key): v for key, v in data.items() if key != "backend"} if isinstance(data, dict) else {}


def _selected(cmd: Any, env: dict[str, str], version_env: bool) -> tuple[str | None, str | None]:
    """The backend the launch chooses and where: ``--attention-backend``, ``--attention-config``/``-ac`` JSON
    ``backend``, ``--attention-config.backend``, or ``VLLM_ATTENTION_BACKEND`` when this vLLM reads it."""
    v = cmd.get("--attention-backend")
    if isinstance(v, str):
        return v, "--attention-backend"
    v = cmd.get("--attention-config.backend")
    if isinstance(v, str):
        return v, "--attention-config.backend"
    raw = cmd.get("--attention-config", "-ac")
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("backend"), str):
        return data["backend"], "--attention-config"
    if version_env and env.get("VLLM_ATTENTION_BACKEND"):
        return env["VLLM_ATTENTION_BACKEND"], "VLLM_ATTENTION_BACKEND"
    return None, None


def attention_knowns(cfg: dict[str, Any] | None, cmd: Any, env: dict[str, str], capability: Any, reads_env: bool) -> AttnKnowns:
    """The launch's :class:`AttnKnowns` (module docstring); ``cfg``: config.json (``None``: not read), ``capability``:
    ``(major, minor)`` of the machine's GPUs (:data:`UNKNOWN` when unknown or mixed), ``reads_env``: this vLLM's
    ``envs.py`` defines ``VLLM_ATTENTION_BACKEND``."""
    selected, where = _selected(cmd, env, reads_env)
    kv = cmd.get("--kv-cache-dtype")
    bs = cmd.get("--block-size")
    k = AttnKnowns(capability=capability, head_size=UNKNOWN, dtype=UNKNOWN, selected=selected, selected_from=where,
                   kv_cache_dtype=kv if isinstance(kv, str) else "auto",
                   block_size=int(bs) if isinstance(bs, str) and bs.isdigit() else None)
    k.parallel = {name: _int_option(cmd, *opts) for name, opts in PARALLEL_FIELDS.items()}
    k.attention_config = _attention_config_json(cmd)
    k.environ = {key: str(v) for key, v in env.items() if key.startswith("VLLM_")}
    if cfg is None:
        k.use_mla = k.use_sparse = k.has_sink = UNKNOWN
        return k
    t = _text_config(cfg)
    k.hf_config = t
    mla = t.get("model_type") in MLA_MODEL_TYPES and t.get("kv_lora_rank") is not None and env.get("VLLM_MLA_DISABLE") not in ("1", "true", "True")
    k.use_mla = mla
    k.use_sparse = t.get("index_topk") is not None
    k.has_sink = t.get("model_type") == "gpt_oss"
    if mla and isinstance(t.get("qk_rope_head_dim"), int):
        k.head_size = int(t["kv_lora_rank"]) + int(t["qk_rope_head_dim"])
    elif isinstance(t.get("head_dim"), int):
        k.head_size = t["head_dim"]
    elif isinstance(t.get("hidden_size"), int) and isinstance(t.get("num_attention_heads"), int) and t["num_attention_heads"]:
        k.head_size = t["hidden_size"] // t["num_attention_heads"]
    dt = cmd.get("--dtype")
    dt = dt if isinstance(dt, str) and dt != "auto" else (t.get("torch_dtype") or t.get("dtype") or cfg.get("torch_dtype") or cfg.get("dtype"))
    k.dtype = TORCH_NAMES.get(str(dt), UNKNOWN)
    tp = cmd.get("--tensor-parallel-size", "-tp")
    heads = t.get("num_attention_heads")
    if mla and isinstance(heads, int):
        k.num_heads = heads // int(tp) if isinstance(tp, str) and tp.isdigit() and int(tp) else heads
    return k


ARG_UTILS = "vllm/engine/arg_utils.py"


def resolve_kv_auto(sources: Any, quant_cfg: dict[str, Any] | None) -> Any:
    """What ``--kv-cache-dtype auto`` becomes for a checkpoint's quantization config: this release's
    ``resolve_kv_cache_dtype_string`` (0.33.0 ``vllm/utils/torch_utils.py:498``, called from ``arg_utils.py``; the
    checkpoint's ``kv_cache_quant_algo`` / ``kv_cache_scheme``), replayed on the normalised config; ``"auto"`` without a
    quantization config; :data:`UNKNOWN` when the release has no such function or the replay cannot decide."""
    import ast

    from mtp_audit.engines.vllm.launch.attention import World
    from mtp_audit.engines.vllm.launch.quant import module_rel, normalized_quant_config, parsed_module

    if quant_cfg is None:
        return "auto"
    module = parsed_module(sources, ARG_UTILS)
    target = next((module_rel(sources, ARG_UTILS, n) for n in ast.walk(module) if isinstance(n, ast.ImportFrom)
                   and any(a.name == "resolve_kv_cache_dtype_string" for a in n.names)), None) if module else None
    norm = normalized_quant_config(sources, quant_cfg)
    if target is None or not isinstance(norm, dict):
        return UNKNOWN
    from mtp_audit.engines.code.statements import HookRaise, Obj

    hf = Obj("PretrainedConfig", {"quantization_config": norm}, strict=True)
    try:
        out = World(sources).run(target, None, "resolve_kv_cache_dtype_string", None, ["auto", Obj("ModelConfig", {"hf_config": hf})], {})
    except HookRaise:
        return UNKNOWN
    return out if isinstance(out, str) else UNKNOWN


def gpu_capability(machine: MachineAnswer | None) -> Any:
    """The compute capability all the machine's GPUs share (its typed answer), else :data:`UNKNOWN`."""
    gpus = machine.gpus if machine is not None else ()
    caps = {tuple(g.compute_capability.value or ()) for g in gpus}
    if len(caps) != 1:
        return UNKNOWN
    cap = next(iter(caps))
    return cap if len(cap) == 2 and all(isinstance(x, int) for x in cap) else UNKNOWN


def capability_missing(machine: MachineAnswer | None) -> str:
    """Why :func:`gpu_capability` has no answer for the machine's typed answer: no machine, no GPU listed (with the
    facts' own reason), GPUs of different capabilities, or the first GPU's missing reason (an Intel XPU has no NVIDIA
    compute capability)."""
    gpus = machine.gpus if machine is not None else ()
    origin = machine.origin if machine is not None else None
    if not gpus:
        if not origin or origin == "none":
            return "no machine declared or seen"
        listed = machine.gpu_list_missing if machine is not None else None
        return f"the machine facts ({origin}) list no GPU" + (f": {listed}" if listed else "")
    caps = sorted({".".join(map(str, g.compute_capability.value or ())) for g in gpus} - {""})
    if len(caps) > 1:
        return f"the GPUs differ: {', '.join(caps)}"
    missing = next((g.compute_capability.source.how for g in gpus if g.compute_capability.value is None), None)
    return f"{origin}: {missing}" if missing else f"{origin}: not given"


def capability_why_open(machine: MachineAnswer | None) -> str | None:
    """Why the machine fact :func:`capability_missing` names is open (:attr:`mtp_audit.known.Known.why_open`): that of
    the GPU list when the machine facts list no GPU, else that of the first GPU without a compute capability;
    ``None`` when there is no machine, when the GPUs differ, or when the fact was looked for."""
    if machine is None or not machine.origin or machine.origin == "none":
        return None
    if not machine.gpus:
        return machine.gpu_count.why_open
    if len({g.cc for g in machine.gpus if g.cc is not None}) > 1:
        return None
    return next((g.compute_capability.why_open for g in machine.gpus if g.compute_capability.value is None), None)


def check_attention(ctx: Any, cfg: dict[str, Any] | None, cfg_problem: str | None, draft_cfg: Any = None,
                    quant_cfg: dict[str, Any] | None = None) -> None:
    """Replay the attention-backend selection for ``ctx``'s launch (target, then the draft model's layers when a
    speculative config loads one); ``ctx.attention`` holds what runs and where it was decided; MTP332 when vLLM refuses
    the choice at start-up; an undecided answer is a gap (blocking only when one of the possible outcomes is a refusal).
    ``draft_cfg``: the draft checkpoint's config.json (``None``: the target is its own draft or there is no draft);
    ``quant_cfg``: the quantization config vLLM reads (:func:`mtp_audit.engines.vllm.launch.decide.quant_config_of`), for
    what ``--kv-cache-dtype auto`` becomes (:func:`resolve_kv_auto`)."""
    if ctx.view is None or not hasattr(ctx.view, "sources"):
        return
    envs_py = ctx.view.sources.get("vllm/envs.py") or b""
    reads_env = b'"VLLM_ATTENTION_BACKEND"' in envs_py  # this release's envs.py defines (and so reads) it
    k = attention_knowns(cfg, ctx.cmd, ctx.env, gpu_capability(ctx.machine), reads_env)
    if k.kv_cache_dtype == "auto":  # given or not: vLLM resolves "auto" from the checkpoint (arg_utils.py create_engine_config)
        k.kv_cache_dtype = resolve_kv_auto(ctx.view.sources, quant_cfg)
    sel = _select(ctx, k)
    ctx.attention = {"knowns": k, "selection": sel, "config_problem": cfg_problem}
    _judge(ctx, k, sel, "")
    dk = draft_knowns(ctx, k, cfg if draft_cfg is None else draft_cfg)
    if dk is not None and not ctx.fails:
        dsel = _select(ctx, dk)
        ctx.attention["draft"] = {"knowns": dk, "selection": dsel}
        _judge(ctx, dk, dsel, "the draft model's ")


def _select(ctx: Any, k: AttnKnowns) -> AttnSelection:
    memo = ctx.view.__dict__.setdefault("_attn_memo", {})
    key = repr((k.capability, k.head_size, k.dtype, k.kv_cache_dtype, k.block_size, k.use_mla, k.use_sparse, k.has_sink,
                k.num_heads, k.selected, sorted((k.hf_config or {}).items(), key=str), sorted(k.parallel.items()),
                sorted(k.attention_config.items(), key=str), sorted(k.environ.items())))
    if key not in memo:
        memo[key] = select_attention_cached(ctx.view.sources, k)
    return memo[key]


def _judge(ctx: Any, k: AttnKnowns, sel: AttnSelection, whose: str) -> None:
    if sel.raised is not None:
        ctx.fails = True
        r = sel.raised
        chosen = f"{k.selected_from} {k.selected}" if k.selected else "the automatic selection"
        ctx.add("MTP332", f"vLLM {ctx.version} refuses {whose or 'the '}attention backend ({chosen}) at start-up: {r.type}: {r.message} "
                f"({r.location}); {_machine_text(k)}", k.selected_from or ("--speculative-config" if whose else "model"),
                evidence=[Evidence("raised", f"{r.type}: {r.message}", loc_of(r.location))]
                + [Evidence("selection replayed from", str(sel.platform))],
                remediation=_fix(k, sel))
        return
    if sel.gap is not None or sel.backend is UNKNOWN:
        why, why_open = sel.gap or "; ".join(sel.undecided[:4]), None
        if sel.gap is not None and sel.gap.startswith(CAPABILITY_UNKNOWN):
            why, why_open = f"{CAPABILITY_UNKNOWN} ({capability_missing(ctx.machine)})", capability_why_open(ctx.machine)
        may_fail = any("Error" in u for u in sel.undecided[:1])
        ctx.gap(f"the attention backend vLLM selects for {'the draft model' if whose else 'the model'} is not decided ({why})",
                blocking=may_fail, why_open=why_open)


def draft_overrides(ctx: Any) -> list[tuple[str, str, str]]:
    """This release's ``_DRAFT_VLLM_CONFIG_OVERRIDES`` (0.33.0 ``vllm/config/speculative.py:396``): the
    ``speculative_config`` keys that replace a target setting for the draft (``attention_backend`` ->
    ``attention_config.backend``, ``kv_cache_dtype`` -> ``cache_config.cache_dtype``); empty when the release has none
    (the draft then shares the target's settings)."""
    import ast

    data = getattr(ctx.view, "spec_bytes", None)
    try:
        module = ast.parse(data.decode("utf-8")) if data else None
    except (SyntaxError, UnicodeDecodeError, ValueError, MemoryError, RecursionError):
        return []
    for node in module.body if module else []:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_DRAFT_VLLM_CONFIG_OVERRIDES" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return []
            return [tuple(x) for x in value if isinstance(x, tuple) and len(x) == 3]
    return []


def draft_knowns(ctx: Any, k: AttnKnowns, draft_cfg: dict[str, Any] | None) -> AttnKnowns | None:
    """The draft model's :class:`AttnKnowns`: its own config.json (the target's when it is its own draft, e.g. MTP),
    the target's attention choice and KV-cache dtype unless the speculative config overrides them
    (:func:`draft_overrides`); ``None`` when the launch loads no draft model."""
    import dataclasses

    from mtp_audit.engines.vllm.launch.methods import NO_DRAFT

    spec = ctx.cmd.spec or {}
    if ctx.cmd.spec is None or ctx.method is None or not ctx.draft.get("path") or str(ctx.method) in NO_DRAFT:
        return None  # no draft model is built (ngram, suffix ... or a refused config)
    d = attention_knowns(draft_cfg, ctx.cmd, ctx.env, k.capability, False) if draft_cfg is not None else dataclasses.replace(k)
    d.selected, d.selected_from, d.kv_cache_dtype = k.selected, k.selected_from, k.kv_cache_dtype
    for key, _sub, _field in draft_overrides(ctx):
        if key == "attention_backend" and isinstance(spec.get(key), str):
            d.selected, d.selected_from = spec[key], "speculative_config.attention_backend"
        if key == "kv_cache_dtype" and isinstance(spec.get(key), str):
            d.kv_cache_dtype = spec[key]
    return d


def _machine_text(k: AttnKnowns) -> str:
    cap = ".".join(map(str, k.capability)) if isinstance(k.capability, tuple) else "?"
    parts = [f"SM {cap}", f"head size {k.head_size if k.head_size is not UNKNOWN else '?'}", f"kv-cache dtype {k.kv_cache_dtype if k.kv_cache_dtype is not UNKNOWN else '?'}"]
    if k.use_mla is True:
        parts.append("MLA")
    if k.use_sparse is True:
        parts.append("sparse indexer")
    if k.block_size is not None:
        parts.append(f"--block-size {k.block_size}")
    return ", ".join(parts)


def _fix(k: AttnKnowns, sel: AttnSelection) -> str:
    if k.selected:
        ok = [name for name, reasons in sel.checked if reasons == []]
        return (f"drop {k.selected_from} (let vLLM choose)" + (f", or choose one the replay found valid: {', '.join(ok)}" if ok else "")
                + "; the finding names the reasons vLLM gives")
    return "change --kv-cache-dtype / --block-size so that one backend accepts this model on this GPU (the finding lists vLLM's reasons)"


def attention_text(ctx: Any) -> str:
    """``FLASH_ATTN (auto; decided at vllm/platforms/cuda.py:518)`` or why not decided, for the Backends line, and the
    draft model's when a speculative config loads one."""
    a = getattr(ctx, "attention", None) or {}
    given = ctx.cmd.get("--attention-backend") or ctx.env.get("VLLM_ATTENTION_BACKEND")
    if a.get("selection") is None:
        return f"{given} (given; the selection was not replayed)" if given else "auto (the selection was not replayed)"
    text = _one_text(a["knowns"], a["selection"])
    d = a.get("draft")
    if d:
        same = repr(d["selection"].backend) == repr(a["selection"].backend) and d["selection"].raised is None
        text += "; draft: " + ("the same (its layers select with the same values)" if same and d["knowns"].hf_config == a["knowns"].hf_config
                               else _one_text(d["knowns"], d["selection"]))
    return text


def _one_text(k: AttnKnowns, sel: AttnSelection) -> str:
    how = f"{k.selected_from} {k.selected}" if k.selected else "auto"
    mla = "MLA " if k.use_mla is True else ""
    if sel.raised is not None:
        return f"{mla}refused ({how}): MTP332"
    if sel.backend is UNKNOWN:
        why = sel.gap or "; ".join(sel.undecided[:3])
        return f"{mla}not decided ({how}; {why})"
    return f"{mla}{sel.backend} ({how}; decided at {sel.decided_at})"


def attention_facts(ctx: Any) -> dict[str, Any] | None:
    """``facts["launch"]["attention"]``: for the model (and ``draft``) the backend, the ``file:line`` that decided it,
    vLLM's refusal, the undecided tests, what was assumed of the installed tree, each backend checked with vLLM's reasons,
    and the values the replay used."""
    a = getattr(ctx, "attention", None) or {}
    if not a.get("selection"):
        return None

    def one(k: AttnKnowns, sel: AttnSelection) -> dict[str, Any]:
        def v(x: Any) -> Any:
            return None if x is UNKNOWN else x

        return {"backend": v(sel.backend), "class_path": v(sel.class_path), "decided_at": sel.decided_at,
                "raised": {"type": sel.raised.type, "message": sel.raised.message, "location": sel.raised.location} if sel.raised else None,
                "decided": sel.backend is not UNKNOWN or sel.raised is not None, "undecided": list(sel.undecided), "gap": sel.gap,
                "assumed": list(sel.assumed), "platform": sel.platform,
                "checked": [{"backend": n, "invalid_reasons": v(r) if not isinstance(r, str) else [r]} for n, r in sel.checked],
                "values": {"capability": list(k.capability) if isinstance(k.capability, tuple) else None, "head_size": v(k.head_size),
                           "dtype": v(k.dtype), "kv_cache_dtype": v(k.kv_cache_dtype), "block_size": v(k.block_size), "use_mla": v(k.use_mla),
                           "use_sparse": v(k.use_sparse), "has_sink": v(k.has_sink), "num_heads": v(k.num_heads),
                           "selected": k.selected, "selected_from": k.selected_from}}

    out = one(a["knowns"], a["selection"])
    if a.get("draft"):
        out["draft"] = one(a["draft"]["knowns"], a["draft"]["selection"])
    return out
