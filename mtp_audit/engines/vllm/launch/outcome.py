""""What will happen" for a vLLM command: the method after aliasing and auto-detection, the proposer, the
draft model and its architecture, ``num_speculative_tokens`` against the MTP layers, the verdict and the
corrected command (evaluated once more before it is shown). Same shape as the SGLang form's outcome
(:func:`mtp_audit.engines.sglang.launch.outcome.build_outcome`): ``summary`` (headline values), ``closing`` (sentences)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtp_audit.engines.argv import shell_join
from mtp_audit.engines.outcome import (
    COULD_NOT_TELL,
    FIX_FIRST,
    GO,
    fmt_bytes,
    fp4_text,
    verdict,
    verdict_sentence,
)
from mtp_audit.report import Finding, Gap, Severity


def _proposer_text(p: dict[str, Any]) -> str:
    """``V2 MTPSpeculator (file:line) - X instead if ... , by default; V1 EagleProposer (file:line), when ...``."""
    if not p:
        return "n/a"
    parts = []
    for r in ("v2", "v1", "v0"):
        if r not in p:
            continue
        x = p[r]
        t = f"{r.upper()} {x['class']} ({x['location']})" if x.get("class") else f"{r.upper()} unknown"
        if x.get("unless"):
            t += " - " + "; ".join(u.replace(" if ", " instead if ", 1) for u in x["unless"])
        parts.append(t)
    if p["runner"] == "auto" and len(parts) == 2:
        return f"{parts[0]}, by default; {parts[1]}, when the V2 runner does not support a feature [{p['why']}]"
    return "; ".join(parts) + f" [{p['why']}]"


def build_vllm_outcome(ctx: Any, findings: Sequence[Finding], gaps: Sequence[Gap],
                       corrected: tuple[list[str], Any] | None) -> dict[str, Any]:
    """The outcome of one vLLM evaluation (:class:`mtp_audit.engines.vllm.launch.evaluate.VCtx`); ``corrected`` is the
    corrected command's tokens and its own evaluation (``None``: no fix known)."""
    v = verdict(findings, gaps)
    cmd, d, spec = ctx.cmd, ctx.draft, ctx.cmd.spec
    draft_model, draft_arch = _draft_texts(ctx)
    fixed_cmd, corrected_check = _corrected_check(corrected)
    summary: dict[str, Any] = {
        "vllm": ctx.version,
        "command": f"{cmd.entry}: model {cmd.model or '(none)'}; speculative config "
                   + (spec_text(spec) if spec is not None else "none")
                   + (f" (from {', '.join(sorted({s.form for s in cmd.spec_sources}))})" if cmd.spec_sources else ""),
        "method": _method_text(ctx),
        "proposer": _proposer_text(ctx.proposer),
        "draft_model": draft_model,
        "draft_architecture": draft_arch,
        "num_speculative_tokens": _k_line(ctx),
        "mtp_weights": _mtp_line(ctx),
        "gpus": _gpu_line(ctx.pf or {}),
        "native_fp4": fp4_text(ctx.pf or {}, ctx.fp4_needed, ctx.ck),
        "quantization": quant_line(ctx),
        "backends": backends_line(ctx),
        "verdict": v,
        "corrected_command": fixed_cmd or ("none needed" if v == GO else "no command-line fix known"),
    }
    errors = [f for f in findings if f.severity >= Severity.ERROR]
    blocking = [g for g in gaps if g.blocking]
    lines = _closing_lines(ctx, summary, v, errors, blocking, findings, fixed_cmd, corrected_check)
    answer = [_head(ctx, v, errors, blocking, findings)]
    if fixed_cmd:
        answer.append(f"corrected command: {fixed_cmd}" + (f" (checked: {corrected_check['verdict']})" if corrected_check else ""))
    return {"summary": summary, "answer": answer, "closing": {"title": "What will happen", "lines": lines}, "verdict": v,
            "corrected_command": fixed_cmd, "corrected_check": corrected_check, "engine": "vllm",
            "speculative": {"requested": ctx.method_requested, "runs_as": ctx.method, "trace": list(ctx.trace),
                            "num_speculative_tokens": ctx.k, "mtp_layers": ctx.n_layers, "proposer": ctx.proposer},
            "draft": dict(d), "parallel": ctx.parallel, "command": cmd.to_dict(), "env": {k: {"value": ctx.env[k]} for k in sorted(ctx.env)},
            "attention": _attention_facts(ctx)}


def _method_text(ctx: Any) -> str:
    """The method after aliasing and auto-detection, with its trace (``Method:`` line)."""
    if ctx.cmd.spec is None:
        method = "none requested (one token per step)"
    elif ctx.method is None:
        method = f"{ctx.method_requested or '(no method)'} -> unknown"
    else:
        method = (f"{ctx.method_requested} runs as {ctx.method}" if ctx.method_requested and ctx.method_requested != ctx.method
                  else f"{ctx.method}" + (" (as given)" if ctx.method_requested else " (not given; chosen by vLLM)"))
        if ctx.trace:
            method += " [" + "; ".join(ctx.trace) + "]"
    if ctx.fails:
        method += " - rejected before the model loads"
    return method


def prompt_drafting(ctx: Any) -> str | None:
    """For a method whose proposer loads no draft model (``NO_DRAFT``: vLLM still fills ``draft_model_config`` with the
    target's, 0.34.0 ``vllm/config/speculative.py`` "Unused fields" for ngram / suffix, but nothing is built from it),
    what drafts instead and, when the checkpoint declares MTP layers, that they are not used; ``None`` otherwise."""
    from mtp_audit.engines.vllm.launch.methods import NO_DRAFT

    m = str(ctx.method) if ctx.method is not None else None
    if ctx.cmd.spec is None or m not in NO_DRAFT:
        return None
    what = ("drafts from the prompt (n-gram matching), not with a draft model" if "ngram" in m else
            "drafts from the prompt and earlier outputs (suffix decoding), not with a draft model" if m == "suffix" else
            f"builds no draft model ({m})")
    n = ctx.ck_answer.mtp.declared_layers if ctx.ck_answer is not None else None
    return what + (f": the checkpoint's {n} MTP layer(s) are not used" if n else "")


def _draft_texts(ctx: Any) -> tuple[str, str]:
    """``(draft model, draft architecture)`` lines: the architecture after ``hf_config_override`` (with its registry
    location), and after the EAGLE wrapping the replay followed (``Eagle<Arch>``) when it differs."""
    d, cmd = ctx.draft, ctx.cmd
    if not d:
        return ("none" if cmd.spec is None else "n/a"), "n/a"
    prompt = prompt_drafting(ctx)
    if prompt is not None:
        return f"none: {ctx.method} {prompt}", "n/a (no draft model is built)"
    draft_model = (f"the target checkpoint itself ({cmd.model})" if d.get("is_target") else str(d.get("path")))
    fr = d.get("from") or {}
    ov = d.get("override") or {}
    if fr.get("architecture") is None and fr.get("model_type") is None:
        draft_arch = "unknown (draft checkpoint not audited)"
    elif ov.get("rewritten") and ov.get("architectures"):
        reg = ov.get("registered") or {}
        regs = "; ".join(f"{a}: registry {loc}" if loc else f"{a}: NOT registered" for a, loc in reg.items()) or "registry not read"
        draft_arch = (f"{fr.get('architecture')} (model_type {fr.get('model_type')}) -> {', '.join(ov['architectures'])} "
                      f"(model_type {ov.get('model_type')}; hf_config_override {ov.get('location')}; {regs})")
    else:
        draft_arch = f"{fr.get('architecture')} (model_type {fr.get('model_type')}): hf_config_override does not rewrite it"
    replayed = d.get("architectures_replayed")
    if isinstance(replayed, list) and replayed and replayed != (ov.get("architectures") or [fr.get("architecture")]):
        draft_arch += f" -> {', '.join(replayed)} (EAGLEConfig wraps the draft, {ctx.view.spec_rel if ctx.view else 'speculative.py'})"
    return draft_model, draft_arch


def _k_line(ctx: Any) -> str:
    if ctx.k is not None:
        k_line = (f"{ctx.k} (given)" if ctx.k_requested is not None else f"{ctx.k} (not given: the draft's n_predict)")
        return k_line + (f" for {ctx.n_layers} MTP layer(s)" if ctx.n_layers is not None else "")
    if ctx.cmd.spec is not None and ctx.k_requested is not None:
        return f"{ctx.k_requested} (given)"
    return "n/a" if ctx.cmd.spec is None else "not set"


def _mtp_line(ctx: Any) -> str:
    dck = ctx.ck if ctx.draft.get("is_target") else ctx.draft_ck
    s = (dck or ctx.ck or {}).get("summary") or {}
    if s.get("mode") == "config-only":
        return f"not checked (config only; config.json declares {s.get('mtp_layers_declared')} MTP layer(s))"
    if s.get("mtp_tensors") is None:
        return "unknown (checkpoint not audited)"
    n, b = s["mtp_tensors"], s.get("mtp_bytes")
    line = f"{n:,} MTP tensors" + (f", {fmt_bytes(b)}" + (" (estimated)" if s.get("mtp_bytes_estimated") else "") if b else "")
    return line + (", not loaded (no speculative decoding)" if ctx.cmd.spec is None and n else "")


def _gpu_line(pf: dict[str, Any]) -> str:
    gpus = ((pf.get("machine") or {}).get("gpus") or [])
    if not gpus:
        return "none seen"
    names = sorted({f"{(g.get('name') or {}).get('value') or '?'} (compute capability "
                    f"{'.'.join(map(str, (g.get('compute_capability') or {}).get('value') or [])) or '?'})" for g in gpus})
    return f"{len(gpus)} x " + ", ".join(names)


def _corrected_check(corrected: tuple[list[str], Any] | None) -> tuple[str | None, dict[str, Any] | None]:
    """The corrected command as one line and what its own evaluation says (``None``: no fix known / not evaluated)."""
    if corrected is None:
        return None, None
    toks, sub = corrected
    if sub is None:
        return shell_join(toks), None
    rest = sorted({f.rule_id for f in sub.ctx.findings if f.severity >= Severity.ERROR})
    sc = sub.ctx
    short = (f"{sc.method_requested} runs as {sc.method}" if sc.method_requested and sc.method_requested != sc.method else str(sc.method))
    return shell_join(toks), {"verdict": sub.outcome["verdict"], "method": short,
                              "num_speculative_tokens": sub.outcome["summary"]["num_speculative_tokens"], "errors_left": rest}


def _closing_lines(ctx: Any, summary: dict[str, Any], v: str, errors: list[Finding], blocking: list[Gap], findings: Sequence[Finding],
                   fixed_cmd: str | None, corrected_check: dict[str, Any] | None) -> list[str]:
    """The "What will happen" sentences."""
    spec = ctx.cmd.spec
    lines = [
        f"{ctx.name} reads the command through {ctx.cmd.entry}" + (f"; speculative config {spec_text(spec)}." if spec is not None else "; no speculative config."),
        f"Method: {summary['method']}.",
        f"Proposer: {summary['proposer']}.",
        f"Draft model: {summary['draft_model']}.",
        f"Draft architecture: {summary['draft_architecture']}.",
        f"num_speculative_tokens: {summary['num_speculative_tokens']}.",
        f"MTP weights: {summary['mtp_weights']}.",
        f"Quantization: {summary['quantization']}.",
        f"Backends: {summary['backends']}.",
        f"GPUs: {summary['gpus']}; native FP4: {summary['native_fp4']}.",
        verdict_sentence(v, errors, blocking, findings),
    ]
    if fixed_cmd:
        tail = ""
        if corrected_check:
            tail = (f" (checked: method {corrected_check['method']}; num_speculative_tokens {corrected_check['num_speculative_tokens']}; "
                    + (f"still failing: {', '.join(corrected_check['errors_left'])}" if corrected_check["errors_left"] else "no launch error left")
                    + ")")
        lines.append(f"Corrected command: {fixed_cmd}{tail}")
    elif v == FIX_FIRST:
        lines.append("Corrected command: none known; the errors are not fixed by a flag (see each finding's fix).")
    return lines


def _runs(ctx: Any) -> str:
    """What runs, in a few words, for the first line (the draft, tokens and proposer only when nothing refuses)."""
    d = ctx.draft
    if ctx.cmd.spec is None:
        return "no speculative decoding"
    if ctx.method is None:
        return "method unknown"
    runs = (f"{ctx.method_requested} runs as {ctx.method}" if ctx.method_requested and ctx.method_requested != ctx.method else f"method {ctx.method}")
    if ctx.fails:
        return runs
    prompt = prompt_drafting(ctx)
    archs = None if prompt is not None else d.get("architectures_replayed") or d.get("architectures")
    if archs:
        runs += f", draft {'the target' if d.get('is_target') else d.get('path')} ({', '.join(archs)})"
    if ctx.k is not None:
        runs += f", {ctx.k} token(s)"
    p = ctx.proposer or {}
    cls = next((p[r]["class"] for r in ("v2", "v1", "v0") if r in p and p[r].get("class")), None)
    return runs + (f", {cls}" if cls else "") + (f"; {prompt}" if prompt is not None else "")


def _head(ctx: Any, v: str, errors: list[Finding], blocking: list[Gap], findings: Sequence[Finding]) -> str:
    """The answer's first line: the verdict, what runs (also when the verdict is open), in vLLM's words."""
    runs = _runs(ctx)
    if v == FIX_FIRST:
        return f"fix first: {len(errors)} error(s) ({', '.join(sorted({f.rule_id for f in errors}))}); vLLM {ctx.version}: {runs}"
    if v == COULD_NOT_TELL:
        # what runs is said even when the verdict is open (the blocking gap is about another question)
        return f"could not tell: {blocking[0].message}; vLLM {ctx.version}: {runs}"
    warn = sorted({f.rule_id for f in findings if f.severity == Severity.WARNING})
    return f"go: vLLM {ctx.version}: {runs}" + (f"; warnings: {', '.join(warn)}" if warn else "")


def _attention_facts(ctx: Any) -> Any:
    from mtp_audit.engines.vllm.launch.attn_launch import attention_facts

    return attention_facts(ctx)


def backends_line(ctx: Any) -> str:
    """The MoE and FP4 linear backends as the preflight resolves the command's flags and variables for this vLLM
    (``facts.preflight.summary``), and the attention backend vLLM's own selection code picks, replayed
    (:func:`mtp_audit.engines.vllm.launch.attn_launch.attention_text`)."""
    from mtp_audit.engines.vllm.launch.attn_launch import attention_text

    s = (ctx.pf or {}).get("summary") or {}
    return (f"MoE {s.get('moe_backend') or 'n/a'}, FP4 linear {s.get('linear_backend') or 'n/a'} (preflight, vLLM FP4/MoE matrix); "
            f"attention {attention_text(ctx)}")


def quant_line(ctx: Any) -> str:
    """The quantization method vLLM keeps and the file:line that decided it (replayed), or why it is unknown."""
    q = ctx.quant or {}
    if not q:
        return "not replayed"
    if not q.get("decided"):
        return f"not decided ({q.get('why') or 'see the gaps'})"
    if any(f.rule_id == "MTP329" for f in ctx.findings):
        return "refused (MTP329)"
    m = q.get("method")
    if m is None:
        return "none (no quantization config, no --quantization)"
    src = f"from {q['from']}" if q.get("from") else "from --quantization"
    return f"{m} ({src}" + (f"; decided at {q['decided_at']}" if q.get("decided_at") else "") + ")"


def spec_text(spec: dict[str, Any]) -> str:
    """The speculative config as compact JSON."""
    from mtp_audit.engines.vllm.launch.command import spec_json

    return spec_json(spec)
