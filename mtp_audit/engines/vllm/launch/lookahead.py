"""``num_speculative_tokens`` against the scheduler's token budget: vLLM's ``VllmConfig`` refuses a speculative config
whose draft slots do not fit in one batch (MTP320).

What vLLM 0.33.0 does with ``num_speculative_tokens`` (read in the wheel):

- ``SpeculativeConfig.num_speculative_tokens: int = Field(default=None, gt=0)`` (``vllm/config/speculative.py:413``):
  a type check and a lower bound only; pydantic's ``int`` takes any Python integer, ``json.loads`` of
  ``99999999999999999999999`` is one; the MTP divisibility rule (:1604-1612) passes for a multiple of the layers;
- ``VllmConfig.num_lookahead_tokens`` (``vllm/config/vllm.py:626``) is ``num_speculative_tokens`` for the
  eagle-family methods (``use_eagle()``: eagle, eagle3, mtp, dflash, dspark, ``speculative.py:2120``) and ``draft_model``
  (``+ 1`` for dflash fill-in drafting);
- ``VllmConfig._set_max_num_scheduled_tokens`` (called from ``__post_init__``, :1948) raises
  ``ValueError("VllmConfig does not have enough slots to schedule a token and support the speculative decoding
  settings. Got max_num_batched_tokens=... and num_lookahead_tokens=...")`` when ``max_num_batched_tokens <=
  num_lookahead_tokens`` (:2371): config creation, before any weight loads;
- ``max_num_batched_tokens`` left out is ``EngineArgs._set_default_args``' default (``vllm/engine/arg_utils.py``):
  at most 16384 from ``get_batch_defaults`` (:2975-3032), doubled for ``--performance-mode throughput`` (:3186),
  raised to ``max_model_len`` when chunked prefill is off (:3196) or to one multimodal item for multimodal prefix-LM
  models (:3216), then lowered to ``max_num_seqs * max_model_len`` (:3221): so at most ``max(32768, max_model_len)``
  for a text model. ``max_model_len`` is ``--max-model-len`` when given, else derived from config.json
  (``_get_and_verify_max_len``, ``vllm/config/model.py``): the least of its length keys times a RoPE ``factor``, 2048
  when none is present; every such value is a number of config.json, so the largest number there times its largest
  ``factor`` bounds it from above.

The check is exact with ``--max-num-batched-tokens``; without it, it reports only a ``num_speculative_tokens`` at or above
that upper bound (no bound is invented: a smaller value that a default might still refuse is not reported).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from mtp_audit.engines.outcome import loc_of
from mtp_audit.report import Evidence

#: the ``VllmConfig`` check (``vllm/config/vllm.py:2371`` in 0.33.0); a release without it is not checked
_CHECK = re.compile(rb"^[ \t]*if max_num_batched_tokens <= self\.num_lookahead_tokens\b", re.M)
#: methods whose lookahead is ``num_speculative_tokens`` (``use_eagle()`` or ``uses_draft_model()``; dflash adds one)
_LOOKAHEAD_METHODS = ("eagle", "eagle3", "mtp", "dflash", "dspark", "draft_model")
#: the largest default ``max_num_batched_tokens`` for a text model before ``max_model_len`` (16384 doubled)
_DEFAULT_CEILING = 2 * 16384
NL = b"\n"


def check_lookahead(ctx: Any, cwd: Path) -> None:
    """MTP320 when ``max_num_batched_tokens <= num_lookahead_tokens`` (module docstring); nothing when the release lacks
    the check, the method reserves no lookahead, or the bound cannot be established."""
    k, method = ctx.k if isinstance(ctx.k, int) else ctx.k_requested, ctx.method or ctx.method_requested
    if ctx.fails or ctx.view is None or not isinstance(k, int) or method not in _LOOKAHEAD_METHODS:
        return
    src = (getattr(ctx.view, "sources", None) or {}).get("vllm/config/vllm.py") or b""
    m = _CHECK.search(src)
    if m is None:
        return
    where = f"vllm/config/vllm.py:{src.count(NL, 0, m.start()) + 1}"
    lookahead = k + 1 if method == "dflash" else k
    given = _int_option(ctx.cmd.get("--max-num-batched-tokens"))
    if given is not None:
        if given <= lookahead:
            _reject(ctx, lookahead, f"max_num_batched_tokens={given} (--max-num-batched-tokens)", where)
        return
    if ctx.cmd.get("--max-num-batched-tokens") is not None or ctx.cmd.get("--hf-overrides") is not None:
        return
    ceiling = _default_ceiling(ctx, cwd)
    if ceiling is not None and lookahead >= ceiling:
        _reject(ctx, lookahead, f"max_num_batched_tokens left to its default, at most {ceiling:,} here "
                "(vllm/engine/arg_utils.py:2975-3221: at most max(2 x 16384, max_model_len) for a text model)", where)


def _reject(ctx: Any, lookahead: int, budget: str, where: str) -> None:
    ctx.fails = True
    ctx.add("MTP320", f"vLLM {ctx.version} rejects the speculative config (the server will not start): num_speculative_tokens"
            f"={lookahead if ctx.method != 'dflash' else lookahead - 1} needs num_lookahead_tokens={lookahead} draft slots per "
            f"request and {budget} is not larger: 'VllmConfig does not have enough slots to schedule a token and support "
            f"the speculative decoding settings' ({where}, ValueError at config creation, before the model loads)",
            "--speculative-config", evidence=[Evidence("num_lookahead_tokens", str(lookahead), loc_of(where))],
            remediation="lower num_speculative_tokens to the checkpoint's MTP layers (or a small multiple of them)")


def _int_option(v: Any) -> int | None:
    return int(v) if isinstance(v, str) and re.fullmatch(r"\d+", v) else None


def _default_ceiling(ctx: Any, cwd: Path) -> int | None:
    """An upper bound of the default ``max_num_batched_tokens`` (module docstring); ``None`` for a multimodal config
    (the per-item raise is not bounded here) or an unreadable one."""
    mml = ctx.cmd.get("--max-model-len")
    if mml is not None:
        n = _int_option(mml)
        return max(_DEFAULT_CEILING, n) if n is not None else None
    from mtp_audit.engines.vllm.launch.attn_launch import launch_config

    # config.json as the checkpoint audit read it (once per audit); a hub id or an unread config: no bound
    cfg, _problem = launch_config(ctx.ck_answer, ctx.cmd.model, cwd) if ctx.cmd.model else (None, None)
    if not isinstance(cfg, dict) or any(key in cfg for key in ("vision_config", "audio_config", "text_config")):
        return None
    return max(_DEFAULT_CEILING, config_length_bound(cfg))


def config_length_bound(cfg: dict[str, Any]) -> int:
    """An upper bound of the ``max_model_len`` vLLM derives from ``config.json`` ``cfg`` (module docstring): its largest
    number (at least 2048) times its largest RoPE ``factor``."""
    nums = list(_numbers(cfg))
    factors = [f for f in _factors(cfg) if f > 1]
    return math.ceil(max([2048, *nums]) * (max(factors) if factors else 1))


def _numbers(x: Any) -> Any:
    """Every finite number in a JSON value (booleans excepted)."""
    if isinstance(x, bool):
        return
    if isinstance(x, (int, float)) and x == x and abs(x) != float("inf"):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from _numbers(v)


def _factors(x: Any) -> Any:
    """Every numeric ``factor`` in a JSON value (RoPE scaling parameters)."""
    if isinstance(x, dict):
        for key, v in x.items():
            if key == "factor" and isinstance(v, (int, float)) and not isinstance(v, bool):
                yield v
            else:
                yield from _factors(v)
    elif isinstance(x, list):
        for v in x:
            yield from _factors(v)
