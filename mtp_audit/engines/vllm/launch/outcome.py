""""What will happen" for a vLLM command: the method after aliasing and auto-detection, the proposer, the
draft model and its architecture, ``num_speculative_tokens`` against the MTP layers, the verdict and the
corrected command (evaluated once more before it is shown). Same shape as the SGLang form's outcome
(:func:`mtp_audit.engines.sglang.launch.outcome.build_outcome`): ``summary`` (headline values), ``closing`` (sentences)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtp_audit.engines.argv import shell_join
from mtp_audit.engines.outcome import fmt_bytes, fp4_text
from mtp_audit.engines.outcome import (
    COULD_NOT_TELL,
    FIX_FIRST,
    GO,
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
    cmd = ctx.cmd
    d = ctx.draft
    spec = cmd.spec
    if spec is None:
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
    if not d or ctx.method in (None,) and not d:
        draft_model = "none" if spec is None else "n/a"
        draft_arch = "n/a"
    else:
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
    if ctx.k is not None:
        k_line = (f"{ctx.k} (given)" if ctx.k_requested is not None else f"{ctx.k} (not given: the draft's n_predict)")
        if ctx.n_layers is not None:
            k_line += f" for {ctx.n_layers} MTP layer(s)"
    elif spec is not None and ctx.k_requested is not None:
        k_line = f"{ctx.k_requested} (given)"
    else:
        k_line = "n/a" if spec is None else "not set"
    dck = ctx.ck if d.get("is_target") else ctx.draft_ck
    s = (dck or ctx.ck or {}).get("summary") or {}
    if s.get("mode") == "config-only":
        mtp_line = f"not checked (config only; config.json declares {s.get('mtp_layers_declared')} MTP layer(s))"
    elif s.get("mtp_tensors") is not None:
        n = s["mtp_tensors"]
        b = s.get("mtp_bytes")
        mtp_line = f"{n:,} MTP tensors" + (f", {fmt_bytes(b)}" + (" (estimated)" if s.get("mtp_bytes_estimated") else "") if b else "")
        if spec is None and n:
            mtp_line += ", not loaded (no speculative decoding)"
    else:
        mtp_line = "unknown (checkpoint not audited)"
    pf = ctx.pf or {}
    gpus = ((pf.get("machine") or {}).get("gpus") or [])
    if gpus:
        names = sorted({f"{(g.get('name') or {}).get('value') or '?'} (compute capability "
                        f"{'.'.join(map(str, (g.get('compute_capability') or {}).get('value') or [])) or '?'})" for g in gpus})
        gpu_line = f"{len(gpus)} x " + ", ".join(names)
    else:
        gpu_line = "none seen"
    fp4_verdict = fp4_text(pf, ctx.fp4_needed, ctx.ck)
    errors = [f for f in findings if f.severity >= Severity.ERROR]
    blocking = [g for g in gaps if g.blocking]
    fixed_cmd = None
    corrected_check = None
    if corrected is not None:
        toks, sub = corrected
        fixed_cmd = shell_join(toks)
        if sub is not None:
            rest = sorted({f.rule_id for f in sub.ctx.findings if f.severity >= Severity.ERROR})
            sc = sub.ctx
            short = (f"{sc.method_requested} runs as {sc.method}" if sc.method_requested and sc.method_requested != sc.method
                     else str(sc.method))
            corrected_check = {"verdict": sub.outcome["verdict"], "method": short,
                               "num_speculative_tokens": sub.outcome["summary"]["num_speculative_tokens"], "errors_left": rest}
    summary: dict[str, Any] = {
        "vllm": ctx.version,
        "command": f"{cmd.entry}: model {cmd.model or '(none)'}; speculative config "
                   + (spec_text(spec) if spec is not None else "none")
                   + (f" (from {', '.join(sorted({s.form for s in cmd.spec_sources}))})" if cmd.spec_sources else ""),
        "method": method,
        "proposer": _proposer_text(ctx.proposer),
        "draft_model": draft_model,
        "draft_architecture": draft_arch,
        "num_speculative_tokens": k_line,
        "mtp_weights": mtp_line,
        "gpus": gpu_line,
        "native_fp4": fp4_verdict,
        "quantization": quant_line(ctx),
        "verdict": v,
        "corrected_command": fixed_cmd or ("none needed" if v == GO else "no command-line fix known"),
    }
    lines = [
        f"{ctx.name} reads the command through {cmd.entry}" + (f"; speculative config {spec_text(spec)}." if spec is not None else "; no speculative config."),
        f"Method: {method}.",
        f"Proposer: {summary['proposer']}.",
        f"Draft model: {draft_model}.",
        f"Draft architecture: {draft_arch}.",
        f"num_speculative_tokens: {k_line}.",
        f"MTP weights: {mtp_line}.",
        f"Quantization: {quant_line(ctx)}.",
        f"GPUs: {gpu_line}; native FP4: {fp4_verdict}.",
    ]
    lines.append(verdict_sentence(v, errors, blocking, findings))
    if fixed_cmd:
        tail = ""
        if corrected_check:
            tail = (f" (checked: method {corrected_check['method']}; num_speculative_tokens {corrected_check['num_speculative_tokens']}; "
                    + (f"still failing: {', '.join(corrected_check['errors_left'])}" if corrected_check["errors_left"] else "no launch error left")
                    + ")")
        lines.append(f"Corrected command: {fixed_cmd}{tail}")
    elif v == FIX_FIRST:
        lines.append("Corrected command: none known; the errors are not fixed by a flag (see each finding's fix).")
    # the answer the text report opens with: the verdict, what runs, and the corrected command
    if spec is None:
        runs = "no speculative decoding"
    elif ctx.method is None:
        runs = "method unknown"
    else:
        runs = (f"{ctx.method_requested} runs as {ctx.method}" if ctx.method_requested and ctx.method_requested != ctx.method else f"method {ctx.method}")
        if d.get("architectures") and not ctx.fails:
            runs += f", draft {'the target' if d.get('is_target') else d.get('path')} ({', '.join(d['architectures'])})"
        if ctx.k is not None and not ctx.fails:
            runs += f", {ctx.k} token(s)"
        p = ctx.proposer or {}
        cls = next((p[r]["class"] for r in ("v2", "v1", "v0") if r in p and p[r].get("class")), None)
        if cls and not ctx.fails:
            runs += f", {cls}"
    if v == FIX_FIRST:
        head = f"fix first: {len(errors)} error(s) ({', '.join(sorted({f.rule_id for f in errors}))}); vLLM {ctx.version}: {runs}"
    elif v == COULD_NOT_TELL:
        # what runs is said even when the verdict is open (the blocking gap is about another question)
        head = f"could not tell: {blocking[0].message}; vLLM {ctx.version}: {runs}"
    else:
        warn = sorted({f.rule_id for f in findings if f.severity == Severity.WARNING})
        head = f"go: vLLM {ctx.version}: {runs}" + (f"; warnings: {', '.join(warn)}" if warn else "")
    answer = [head]
    if fixed_cmd:
        answer.append(f"corrected command: {fixed_cmd}" + (f" (checked: {corrected_check['verdict']})" if corrected_check else ""))
    return {"summary": summary, "answer": answer, "closing": {"title": "What will happen", "lines": lines}, "verdict": v,
            "corrected_command": fixed_cmd, "corrected_check": corrected_check, "engine": "vllm",
            "speculative": {"requested": ctx.method_requested, "runs_as": ctx.method, "trace": list(ctx.trace),
                            "num_speculative_tokens": ctx.k, "mtp_layers": ctx.n_layers, "proposer": ctx.proposer},
            "draft": dict(d), "parallel": ctx.parallel, "command": cmd.to_dict(), "env": {k: {"value": ctx.env[k]} for k in sorted(ctx.env)}}


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
