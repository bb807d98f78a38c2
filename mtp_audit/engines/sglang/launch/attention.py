"""The attention backend of an SGLang launch and the start-up asserts that refuse it (MTP313).

SGLang builds the attention backend after the server arguments are resolved; for hybrid linear-attention models its
``attn_backend_wrapper`` then asserts which full-attention backends a GPU family accepts (0.5.12
``srt/layers/attention/attention_registry.py:253``: triton / trtllm_mha / fa4 / flashinfer for hybrid GDN models on
Blackwell; 0.5.18-0.5.20 ``:398`` / ``:440``: on SM100/SM103 only triton / trtllm_mha / fa4, on SM120/SM121 triton /
trtllm_mha / flashinfer; 0.5.21 on: flashinfer accepted on SM100 too, 0.5.22 on through ``HYBRID_GDN_SM100_BACKENDS``).
Those asserts are read from the release's own source (:func:`mtp_audit.engines.sglang.startup_facts.backend_asserts`) and
evaluated here against the backends the command gives, the GPU family and the checkpoint's kind of linear attention
(:func:`linear_attention_kind`, from config.json's own keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer
from mtp_audit.engines.sglang.release import Release
from mtp_audit.report import Evidence

#: The command's attention-backend options, the server-args field each sets.
ATTENTION_FLAGS = {"--attention-backend": "attention_backend", "--prefill-attention-backend": "prefill_attention_backend",
                   "--decode-attention-backend": "decode_attention_backend"}


def linear_attention_kind(config: Mapping[str, Any] | None) -> str | None:
    """The kind of linear attention a model config declares, from its own keys (the top level or ``text_config``):

    - ``"gdn"`` (Gated DeltaNet: Qwen3-Next, Qwen3.5 / Qwen3.6): ``linear_conv_kernel_dim`` and ``linear_key_head_dim``
      with ``full_attention_interval`` or ``layer_types`` naming ``linear_attention`` (Qwen/Qwen3-Next-80B-A3B-Thinking,
      Qwen/Qwen3.5-27B, -122B-A10B, -397B-A17B config.json);
    - ``"mamba2"``: a ``hybrid_override_pattern`` with ``M`` layers (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4) or
      ``layer_types`` naming ``mamba``;
    - ``"kda"``: a ``linear_attn_config`` with ``kda_layers`` (Kimi Linear);
    - ``"lightning-minimax"``: an ``attn_type_list`` with a ``0`` (MiniMax-Text-01 / M1 lightning layers; MiniMax-M2.5's
      list is all ``1``: none).

    ``None`` for a config without linear attention. Never raises on odd values (non-dict configs read as none).
    """
    if not isinstance(config, Mapping):
        return None
    for cfg in (config, config.get("text_config")):
        if not isinstance(cfg, Mapping):
            continue
        layer_types = cfg.get("layer_types")
        types = layer_types if isinstance(layer_types, list) else []
        if "linear_conv_kernel_dim" in cfg and "linear_key_head_dim" in cfg and (
                "full_attention_interval" in cfg or "linear_attention" in types):
            return "gdn"
        pattern = cfg.get("hybrid_override_pattern")
        if (isinstance(pattern, str) and "M" in pattern) or "mamba" in types:
            return "mamba2"
        lac = cfg.get("linear_attn_config")
        if isinstance(lac, dict) and lac.get("kda_layers"):
            return "kda"
        atl = cfg.get("attn_type_list")
        if isinstance(atl, list) and 0 in atl:
            return "lightning-minimax"
    return None


def read_model_config(model_path: str | None, cwd: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(config.json of the model, None)``, or ``(None, why)`` when it is not read. A local folder's file is read
    bounded (:func:`mtp_audit.sources.bounded.read_json_bounded`); a hub id's only from the caches, never the network
    (:func:`hub_config`). Data, never code. Only for a model whose checkpoint audit holds no ``config.json``
    (:func:`model_config`): what that audit read is never read again."""
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_json_bounded

    if not model_path:
        return None, "no --model-path"
    path = (cwd / model_path) / "config.json"
    if not path.is_file():
        return hub_config(model_path) if not (cwd / model_path).exists() else (None, f"{model_path}/config.json is not a file")
    try:
        cfg = read_json_bounded(path, display=f"{model_path}/config.json")
    except (InputError, OSError, ValueError) as exc:
        return None, f"{model_path}/config.json not read ({exc})"
    return (cfg, None) if isinstance(cfg, dict) else (None, f"{model_path}/config.json is not a JSON object")


def model_config(answer: CheckpointAnswer | None, model_path: str | None, cwd: Path) -> tuple[Mapping[str, Any] | None, str | None]:
    """``(config.json of the model, None)`` or ``(None, why)``: the mapping the checkpoint audit read (``answer.config``,
    read once per audit), else :func:`read_model_config` (a hub id the audit could not reach is looked up in the caches
    only; a path the audit did not read says why)."""
    if model_path and answer is not None and answer.config is not None:
        return answer.config, None
    return read_model_config(model_path, cwd)


def hub_config(spec: str) -> tuple[dict[str, Any] | None, str | None]:
    """config.json of a hub id ``org/name[@revision]`` from the Hugging Face cache or the mtp-audit cache (offline:
    :func:`mtp_audit.sources.hub.audit_source_for`), or ``(None, why)``."""
    from mtp_audit.errors import InputError
    from mtp_audit.sources.hub import audit_source_for, is_hub_spec

    if not is_hub_spec(spec):
        return None, f"{spec} is neither a local folder nor a hub id"
    try:
        src = audit_source_for(spec, offline=True)
        try:
            cfg = src.read_json("config.json")
        finally:
            close = getattr(src, "close", None)
            if close is not None:
                close()
    except (InputError, OSError, ValueError) as exc:
        return None, f"{spec}: config.json not in the caches ({str(exc).splitlines()[0][:120]})"
    except Exception as exc:  # noqa: BLE001 - ReadProblem and the like: the kind stays unknown, never a crash
        return None, f"{spec}: config.json not read ({type(exc).__name__})"
    return (cfg, None) if isinstance(cfg, dict) else (None, f"{spec}: config.json is not a JSON object")


def given_backends(cmd: Any, release: Release) -> dict[str, tuple[str, str]]:
    """The attention backends the command gives: field -> ``(value, option as written)``."""
    out: dict[str, tuple[str, str]] = {}
    for o in cmd.options:
        dest = release.dest(o.flag) or ATTENTION_FLAGS.get(o.flag)
        if isinstance(dest, str) and dest in ATTENTION_FLAGS.values() and isinstance(o.value, str):
            out[dest] = (o.value, o.option_string)
    return out


def failing_asserts(asserts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The certain failing asserts, one per source line (the prefill and decode records of one ``assert`` are one
    failure), in source order."""
    seen: dict[str, dict[str, Any]] = {}
    for a in asserts:
        if a["certain"]:
            first = seen.setdefault(a["location"], dict(a, fields=[]))
            if a["field"] not in first["fields"]:
                first["fields"].append(a["field"])
    return list(seen.values())


#: How "What will happen" names a kind of linear attention (:func:`linear_attention_kind`).
KIND_WORDS = {"gdn": "hybrid GDN (Gated DeltaNet)", "mamba2": "hybrid Mamba2", "kda": "hybrid KDA",
              "lightning-minimax": "lightning-attention"}


def _family(gpu: str | None) -> str:
    return {"sm100": "SM100/SM103", "sm120": "SM120/SM121", "sm90": "SM90"}.get(gpu or "", gpu or "unknown GPU")


def assert_evidence(a: dict[str, Any], known: dict[str, Any], why_kind: str) -> list[Evidence]:
    """The evidence lines of an MTP313 finding: the assert, the set it checks against and where it is bound, the
    guard that holds and the facts that make it hold."""
    from mtp_audit.engines.outcome import loc_of

    accepted = a.get("accepts") or []
    ev = [Evidence("assert", a["location"], loc_of(a["location"])),
          Evidence("accepted", ", ".join(accepted) + (f" (bound at {a['set_location']})" if a.get("set_location") else ""),
                   loc_of(a.get("set_location"))),
          Evidence("guard (holds)", a["condition"] or "(none)"),
          Evidence("GPU family", _family(known.get("gpu"))),
          Evidence("linear attention", why_kind)]
    return ev


def fix_value(a: dict[str, Any], gpu: str | None) -> str | None:
    """A backend the failing assert accepts, the one SGLang itself defaults to where it can: ``trtllm_mha`` on
    SM100/SM103 (``get_default_attn_backend``'s MHA choice there), else ``flashinfer``, else ``triton``."""
    accepted = a.get("accepts") or []
    for b in (("trtllm_mha",) if gpu == "sm100" else ()) + ("flashinfer", "triton"):
        if b in accepted:
            return b
    return accepted[0] if accepted else None


def default_words(overrides: list[dict[str, Any]]) -> str:
    """Who picks the attention backend when the command gives none: the per-model override of the checkpoint's
    architecture that certainly sets it (0.5.23 ``model_overrides/mimo_v2.py:28``: fa4 on SM100), the ones that may
    (a guard inside the hook is not recorded, or the value is computed: 0.5.23 ``model_overrides/qwen3_5.py:47``
    ``sm100_default_attn_backend``), else SGLang's generic ``get_default_attn_backend`` (not replayed)."""
    hits = [r for r in overrides if r.get("argument") == "attention_backend"]
    sure = [r for r in hits if r.get("certain") and not any(str(t).startswith("<") for t in r.get("to") or [])]
    if sure:
        r = sure[0]
        return f"not given: {', '.join(r['to'])} (model override at {r['location']}; {'logged' if r.get('logged') else 'silent'})"
    words = "not given: SGLang picks it at start-up"
    if hits:
        parts = []
        for r in hits[:2]:
            to = ", ".join(str(t).strip("<>") for t in r.get("to") or [])
            parts.append(f"the model override at {r['location']} may set it to {to}"
                         + (f" when {r['condition']}" if r.get("condition") else " (its guard is inside the hook)"))
        words += " (" + "; or ".join(parts) + "; else get_default_attn_backend; not replayed)"
    else:
        words += " (get_default_attn_backend; not replayed)"
    return words


def backend_text(given: dict[str, tuple[str, str]], failing: list[dict[str, Any]], gates: list[dict[str, Any]],
                 kind: str | None, config_note: str | None, overrides: Sequence[dict[str, Any]] = ()) -> str:
    """The "attention backend" words of "What will happen": what the command gives (or who picks it at start-up:
    :func:`default_words`), and the hybrid gate that refuses or accepts it, with its ``file:line``."""
    if given:
        words = ", ".join(f"{f.replace('_backend', '').replace('_', ' ')} {v} ({opt})" for f, (v, opt) in sorted(given.items()))
    else:
        words = default_words(list(overrides))
    if failing:
        a = failing[0]
        return words + f"; refused by the assert at {a['location']} (accepts {', '.join(a.get('accepts') or [])}): AssertionError at start-up"
    if gates:
        g = gates[0]
        return words + f"; the {KIND_WORDS.get(kind or '', 'hybrid')} gate at {g['location']} accepts {', '.join(g.get('accepts') or [])} here" + (
            f" (bound at {g['set_location']})" if g.get("set_location") else "")
    if config_note:
        return words + f"; the linear-attention kind is unknown ({config_note})"
    return words
