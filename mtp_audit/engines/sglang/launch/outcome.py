""""What will happen": the launch's outcome in plain words, the verdict, the corrected command, and
the difference between two SGLang versions.

``facts["launch"]["summary"]`` holds the headline values (rendered by the shared headline-facts
mechanism); ``facts["launch"]["closing"]`` holds the same story as sentences, which the text and
Markdown renderers print at the end of the report (:func:`mtp_audit.formats.summary.closing_sections`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mtp_audit.engines.outcome import COULD_NOT_TELL, FIX_FIRST, GO, VERDICT_RANK, fp4_text, verdict, verdict_sentence
from mtp_audit.report import Finding, Gap, Severity


def _resolved(pf: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The preflight's resolved backend ``key`` (``facts["preflight"]["resolved"][key]``: ``value``, ``how``,
    ``source``), or ``None``."""
    rows = pf.get("resolved")
    r = rows.get(key) if isinstance(rows, Mapping) else None
    return r if isinstance(r, Mapping) else None


def _backend(pf: dict[str, Any], key: str, fp4: str | None, audited: bool = True) -> str:
    r = _resolved(pf, key)
    if r and r.get("value"):
        how = r.get("how")
        src = r.get("source") or ""
        return f"{r['value']} ({how}" + (f"; {src}" if how != "explicit" and src else "") + ")"
    if r:
        return f"unknown ({r.get('source')})"
    if not fp4 and not audited:
        return "unknown (the checkpoint was not audited)"
    if not fp4:
        return "not checked (the checkpoint is not FP4; only FP4 backends are checked)"
    return "not resolved (GPU capability unknown or below 10.0; see the preflight facts)"


def _model_override(ctx: Any, field: str, resolved: str) -> str:
    """``resolved`` unless a per-model override certainly rewrites ``field`` for this launch (its architecture is
    registered and its guard holds: 0.5.23 ``model_overrides/minimax_m2.py:28`` turns ``auto`` into
    ``flashinfer_trtllm_routed`` for MiniMax-M2 with modelopt_fp4 on SM100); an override whose guard cannot be told
    is appended as "instead when", and when it would change the value the answer is "unknown: ..." (that
    question only: 0.5.23 ``nemotron_h.py:121`` ``flashinfer_cutlass`` on SM120 under guards on the hook's own locals).
    """
    hits = [r for r in ctx.model_overrides if r["argument"] == field]
    sure = [r for r in hits if r["certain"]]
    if sure:
        r = sure[0]
        return f"{', '.join(r['to'])} (model override at {r['location']}; {'logged' if r['logged'] else 'silent'})"
    value = resolved.split(" ", 1)[0]
    other = [r for r in hits if value not in r["to"]]
    for r in hits[:1]:
        resolved += f"; {', '.join(r['to'])} instead when {r['condition']} ({r['location']})"
    if other and not resolved.startswith(("unknown", "not ")):
        # an override that may apply and would change the value: which one runs cannot be told
        return f"unknown: {resolved}" + "".join(f"; or {', '.join(r['to'])} ({r['location']})" for r in other if r is not hits[0])
    return resolved


def build_outcome(ctx: Any, findings: Sequence[Finding], gaps: Sequence[Gap]) -> dict[str, Any]:
    """The outcome of one evaluation (:class:`mtp_audit.engines.sglang.launch.evaluate.Ctx`), given every analyzer's
    findings and gaps. Returns ``{"summary": {...}, "answer": [line, (corrected command)], "closing": {...},
    "verdict", "corrected_command", ...}``."""
    from mtp_audit.engines.sglang.launch.context import ckpt_fp4
    from mtp_audit.engines.sglang.launch.correct import corrected_command

    v = verdict(findings, gaps)
    pf = ctx.pf or {}
    fp4 = ckpt_fp4(ctx.ck)
    from mtp_audit.engines.sglang.launch.spec_hook_replay import resolved_words

    texts = {"spec": _speculative_text(ctx), "spec_params": resolved_words(ctx.spec_hook), **_draft_texts(ctx),
             "mtp": _mtp_weights_text(ctx), "gpus": _gpu_text(ctx),
             "fp4_gemm": _backend(pf, "fp4_gemm_backend", fp4, ctx.ck is not None),
             "moe": _model_override(ctx, "moe_runner_backend", _backend(pf, "moe_runner_backend", fp4, ctx.ck is not None)),
             "fp4_ckpt": fp4 or ("no" if ctx.ck is not None else "unknown (checkpoint not audited)"),
             "fp4_verdict": fp4_text(pf, ctx.fp4_needed, ctx.ck) if pf.get("summary") else None}
    errors = [f for f in findings if f.severity >= Severity.ERROR]
    fixed_cmd, changed = corrected_command(ctx, list(findings))
    blocking = [g for g in gaps if g.blocking]
    compare = _compare_values(ctx, texts, errors, v, fixed_cmd)
    still = sorted({f.rule_id for f in errors if not _fixed_by(f, changed, ctx)})
    return {
        "summary": _summary(ctx, texts, v, fixed_cmd),
        "answer": _answer(ctx, compare, findings, errors, blocking, v, fixed_cmd, still),
        "compare": compare,
        "closing": {"title": "What will happen", "lines": _closing_lines(ctx, texts, findings, errors, blocking, v, fixed_cmd, still)},
        "verdict": v,
        "corrected_command": fixed_cmd,
        "changed_flags": changed,
        "speculative": {"requested": ctx.algo_requested, "runs_as": ctx.algo_runs_as,
                        "remap": ctx.algo_remap, "conditional": ctx.algo_conditional},
        "draft": dict(ctx.draft),
        "model_overrides": list(ctx.model_overrides),
        "startup_asserts": list(ctx.startup_asserts),
        "attention": dict(ctx.attention_facts),
        "parallel": _parallel_facts(ctx.parallel, ctx.visible),
        "command": ctx.cmd.to_dict(),
        "env": {k: {"value": ctx.env[k], "source": ctx.env_source.get(k)} for k in sorted(ctx.env)},
        **({"corrected_check": dict(ctx.corrected_check)} if ctx.corrected_check is not None else {}),
    }


def _problems(cmd: Any) -> tuple[list[Any], list[Any]]:
    """``(rejected, abbreviated)`` option problems of the command."""
    return ([p for p in cmd.problems if p.kind != "abbreviation"], [p for p in cmd.problems if p.kind == "abbreviation"])


def _speculative_text(ctx: Any) -> str:
    """What runs as the speculative algorithm: requested, rewritten (where, logged or silent), conditional rewrites."""
    if ctx.algo_requested is None:
        spec = "none requested (one token per step)"
    elif ctx.algo_remap is not None:
        r = ctx.algo_remap
        spec = (f"{ctx.algo_requested} runs as {ctx.algo_runs_as} ({'logged' if r.get('logged') else 'silent'} rewrite at {r['location']})")
    else:
        spec = f"{ctx.algo_runs_as} (no rewrite)"
    for r in ctx.algo_conditional:
        spec += f"; {r['to'][0]} instead when {r['condition']} ({r['location']})"
    return spec


def _draft_texts(ctx: Any) -> dict[str, str]:
    """``{"draft_model", "draft_arch"}``: which checkpoint drafts, and the architecture chain to the class built."""
    d = ctx.draft
    if not d.get("uses_draft"):
        return {"draft_model": "none" if ctx.algo_requested is None else f"none ({ctx.algo_runs_as} uses no draft model)",
                "draft_arch": "n/a"}
    same = ctx.draft_path is None or ctx.draft_is_target
    draft_model = (f"the target checkpoint itself ({d.get('path')}; {d.get('path_source')})" if same
                   else f"{d.get('path')} ({d.get('path_source')})")
    arch = d.get("architecture")
    if arch is None:
        draft_arch = "unknown (draft checkpoint not audited)"
    elif ctx.sg is None:
        draft_arch = f"{arch} -> unknown (no SGLang facts)"
    elif d.get("override"):
        ov = d["override"]
        reg = d.get("draft_class_location")
        draft_arch = (f"{arch} -> {d['draft_class']} (override at {ov['location']}; "
                      + (f"EntryClass at {reg})" if reg else "NOT registered in EntryClass)"))
    elif d.get("draft_class_is_mtp"):
        draft_arch = f"{arch} (already an MTP class; EntryClass at {d.get('draft_class_location')})"
    else:
        draft_arch = f"{arch} -> no override: the full target class {arch} is built as the draft"
    return {"draft_model": draft_model, "draft_arch": draft_arch}


def _mtp_weights_text(ctx: Any) -> str:
    """The MTP weights the draft loads (tensors, dtypes, bytes, per GPU under the command's TP), or why none."""
    from mtp_audit.engines.outcome import fmt_bytes
    from mtp_audit.engines.sglang.launch.context import TP, reads_mtp_layer

    d = ctx.draft
    if reads_mtp_layer(ctx) and d.get("mtp_tensors") is not None:
        n = d.get("mtp_tensors") or 0
        dt = ", ".join(f"{k} {c:,}" for k, c in sorted((d.get("mtp_dtypes") or {}).items()))
        b = d.get("mtp_bytes") or 0
        tp = ctx.cmd.get(*TP) or "1"
        pg = d.get("mtp_bytes_per_gpu")
        per = f", about {fmt_bytes(pg)} per GPU under --tp-size {tp}" if b and pg else ""
        return f"{n:,} tensors" + (f" ({dt})" if dt else "") + (f", {fmt_bytes(b)}" if b else "") + per
    if ctx.ck is not None and ctx.algo_requested is None:
        n = ctx.ck.summary.mtp_tensors or 0
        return f"{n:,} MTP tensors in the checkpoint, not loaded (no speculative decoding)" if n else "the checkpoint has no MTP tensors"
    return "n/a"


def _gpu_text(ctx: Any) -> str:
    """The GPUs seen, the GPUs the command needs, and the CUDA_VISIBLE_DEVICES that applies."""
    gpus = ctx.gpus()
    if gpus:
        names = sorted({f"{g['name'] or '?'} (compute capability {'.'.join(map(str, g['cc'])) if g['cc'] else '?'})" for g in gpus})
        gpu_line = f"{len(gpus)} x " + ", ".join(names)
    else:
        gpu_line = "none seen"
    plan, vis = ctx.parallel, ctx.visible
    if gpus and vis is not None and vis.listed != "exact":
        gpu_line = "at least " + gpu_line + " (the GPU list is cut)"
    if plan is not None and not plan.invalid:
        gpu_line += f"; the command needs {plan.needed} ({plan.formula})"
        if vis is not None and vis.value is not None:
            gpu_line += f"; CUDA_VISIBLE_DEVICES={vis.value} ({vis.source})"
    return gpu_line


def _summary(ctx: Any, texts: dict[str, Any], v: str, fixed_cmd: str | None) -> dict[str, Any]:
    """The headline values of "what will happen" (``facts.launch.summary``)."""
    rejected, abbrev = _problems(ctx.cmd)
    summary = {
        "sglang": ctx.sglang_version,
        "command": f"{ctx.cmd.entry}: {len(ctx.cmd.options)} options, {len(rejected)} rejected, {len(abbrev)} abbreviated",
        "speculative_algorithm": texts["spec"],
        "draft_model": texts["draft_model"],
        "draft_architecture": texts["draft_arch"],
        "mtp_weights": texts["mtp"],
        "checkpoint_fp4": texts["fp4_ckpt"],
        "gpus": texts["gpus"],
        "fp4_gemm_backend": texts["fp4_gemm"],
        "moe_runner_backend": texts["moe"],
        "attention_backend": ctx.attention_text,
        "native_fp4": texts["fp4_verdict"] or "unknown",
        "verdict": v,
        "corrected_command": fixed_cmd or ("none needed" if v == GO else "no command-line fix known"),
    }
    if texts.get("spec_params"):  # the speculative hook was replayed and starts: what it decides
        summary["speculative_parameters"] = texts["spec_params"]
    if ctx.startup_asserts:  # only when one applies: SGLang stops at start-up with AssertionError
        summary["startup_assert"] = "; ".join(
            f"AssertionError at {a['location']} ({a['field']} {a['value']!s} not accepted): {a['message'][:120]}"
            for a in ctx.startup_asserts[:2])
    return summary


def _compare_values(ctx: Any, texts: dict[str, Any], errors: list[Finding], v: str, fixed_cmd: str | None) -> dict[str, Any]:
    """Location-free values, compared between SGLang versions (line numbers move with every release)."""
    d = ctx.draft
    pf = ctx.pf or {}
    ov = d.get("override") or {}
    rejected, abbrev = _problems(ctx.cmd)
    return {
        "command": (f"{len(rejected)} rejected" + (f" ({', '.join(sorted(p.token for p in rejected))})" if rejected else "")
                    + f", {len(abbrev)} abbreviated" + (f" ({', '.join(sorted(p.token for p in abbrev))})" if abbrev else "")),
        "speculative_algorithm": ("none" if ctx.algo_requested is None else f"{ctx.algo_requested} runs as {ctx.algo_runs_as}"
                                  + "".join(f"; {r['to'][0]} when {r['condition']}" for r in ctx.algo_conditional)),
        "draft_model": ("none" if not d.get("uses_draft") else "the target checkpoint" if (ctx.draft_path is None or ctx.draft_is_target)
                        else str(d.get("path"))),
        "draft_architecture": ("n/a" if not d.get("uses_draft") else
                               f"{d.get('architecture')} -> {d.get('draft_class')}" + ("" if d.get("draft_class_registered") else " (not registered)")
                               if ov or d.get("draft_class_is_mtp") else f"{d.get('architecture')} -> no override"),
        "mtp_weights": texts["mtp"],
        "fp4_gemm_backend": _backend_value(pf, "fp4_gemm_backend"),
        "moe_runner_backend": _backend_value(pf, "moe_runner_backend"),
        "native_fp4": texts["fp4_verdict"] or "unknown",
        "attention_backend": ctx.attention_compare,
        "errors": ", ".join(sorted({f.rule_id for f in errors})) or "none",
        "verdict": v,
        "corrected_command": fixed_cmd or "none",
    }


def _closing_lines(ctx: Any, texts: dict[str, Any], findings: Sequence[Finding], errors: list[Finding], blocking: list[Gap],
                   v: str, fixed_cmd: str | None, still: list[str]) -> list[str]:
    """"What will happen" as sentences, ending with the verdict and the corrected command."""
    rejected, abbrev = _problems(ctx.cmd)
    lines = [
        f"{ctx.sg_name} reads the command through {ctx.cmd.entry}"
        + (f": {len(rejected)} option(s) rejected" if rejected else ": every option accepted")
        + (f", {len(abbrev)} only as abbreviation(s)" if abbrev else "") + ".",
        f"Speculative decoding: {texts['spec']}"
        + (f"; after SGLang's resolution: {texts['spec_params']}" if texts.get("spec_params") else "") + ".",
        f"Draft model: {texts['draft_model']}.",
        f"Draft architecture: {texts['draft_arch']}.",
        f"MTP weights: {texts['mtp']}.",
        f"GPUs: {texts['gpus']}; native FP4: {texts['fp4_verdict'] or 'unknown'}.",
        f"FP4 checkpoint: {texts['fp4_ckpt']}; FP4 GEMM backend: {texts['fp4_gemm']}; MoE runner backend: {texts['moe']}.",
        f"Attention backend: {ctx.attention_text}.",
        verdict_sentence(v, errors, blocking, findings),
    ]
    if fixed_cmd:
        lines.append(f"Corrected command: {fixed_cmd}" + (f" (still to fix outside the command: {', '.join(still)})" if still else ""))
        chk = ctx.corrected_check
        if chk is not None:
            lines.append(f"Corrected command evaluated again: {chk['verdict']}"
                         + (f" ({len(chk['errors'])} error(s): {', '.join(chk['errors'])})" if chk["errors"] else " (no error)")
                         + ("; the speculative hook starts" if not chk["hook_raises"] else "; the speculative hook still raises") + ".")
    elif v == FIX_FIRST:
        lines.append("Corrected command: none known; the errors are not fixed by a flag (see each finding's fix).")
    return lines


def _answer(ctx: Any, compare: dict[str, Any], findings: Sequence[Finding], errors: list[Finding], blocking: list[Gap], v: str,
            fixed_cmd: str | None, still: list[str]) -> list[str]:
    """The answer the text report opens with: the verdict, what runs (with the speculative parameters after SGLang's
    resolution, where its hook was replayed), and the corrected command."""
    from mtp_audit.engines.sglang.launch.spec_hook_replay import resolved_words

    d = ctx.draft
    runs = compare["speculative_algorithm"]
    if ctx.sg is None and ctx.algo_requested is not None:
        runs = f"{ctx.algo_requested} requested (what it runs as is read from the SGLang source: pass --sglang)"
    elif d.get("uses_draft"):
        runs += f", draft {compare['draft_model']}" + (f" ({d['draft_class']})" if d.get("draft_class") else "")
    params = resolved_words(ctx.spec_hook)
    if params:
        runs += f"; {params.split(' (SGLang logs', 1)[0]}"
    if v == FIX_FIRST:
        head = f"fix first: {len(errors)} error(s) ({', '.join(sorted({f.rule_id for f in errors}))}); speculative decoding: {runs}"
    elif v == COULD_NOT_TELL:
        # what runs is said even when the verdict is open (the blocking gap is about another question)
        head = f"could not tell: {blocking[0].message}; SGLang {ctx.sglang_version}: speculative decoding: {runs}"
    else:
        warn = sorted({f.rule_id for f in findings if f.severity == Severity.WARNING})
        head = f"go: speculative decoding: {runs}; FP4 GEMM {compare['fp4_gemm_backend']}, MoE {compare['moe_runner_backend']}" + (
            f"; warnings: {', '.join(warn)}" if warn else "")
    answer = [head]
    if fixed_cmd:
        answer.append(f"corrected command: {fixed_cmd}" + (f" (still to fix outside the command: {', '.join(still)})" if still else ""))
    return answer


def _parallel_facts(plan: Any, vis: Any) -> dict[str, Any] | None:
    """``facts.launch.parallel``: the plan and the visible devices it was held against."""
    if plan is None:
        return None
    return {**plan.to_dict(), "visible": None if vis is None else {
        "count": vis.count, "gpus": [g.index for g in vis.gpus], "mig": list(vis.mig), "cuda_visible_devices": vis.value,
        "source": vis.source or None, "exact": vis.exact and vis.listed == "exact", "notes": list(vis.notes)}
        | ({"extent": vis.listed, "listed": vis.listed_source} if vis.listed != "exact" else {})}


def _backend_value(pf: dict[str, Any], key: str) -> str:
    r = _resolved(pf, key)
    return f"{r['value']} ({r.get('how')})" if r is not None and r.get("value") else "not resolved"


def _fixed_by(f: Finding, changed: list[str], ctx: Any) -> bool:
    """Whether the corrected command addresses finding ``f`` (its remediation names a changed flag). MTP300 of the
    speculative hook (evidence :data:`~mtp_audit.engines.sglang.launch.spec_hook_replay.HOOK`) is addressed when the
    corrected command, replayed again, no longer raises."""
    from mtp_audit.engines.sglang.launch.spec_hook_replay import HOOK

    if f.rule_id == "MTP300" and ctx.corrected_check is not None and any(e.label == HOOK for e in f.evidence):
        return not ctx.corrected_check["hook_raises"]  # the corrected command was replayed again
    if f.rule_id in ("MTP300", "MTP301"):
        return any(p.fix is not None for p in ctx.cmd.problems)
    if f.rule_id in ("MTP311", "MTP312"):
        return False  # the corrected command never changes parallel sizes (that changes the deployment)
    if f.rule_id == "MTP304":
        return bool(ctx.drop_prefixes) or any(ctx.cmd.flag_of(o) in changed for o in ("--speculative-draft-model-path", "--speculative-draft-model"))
    for c in changed:
        if c.rstrip("*") and (f.remediation or "").split(" (")[0].find(c.rstrip("*")) >= 0:
            return True
    return False


def diff_outcomes(old: dict[str, Any], new: dict[str, Any], old_version: str, new_version: str) -> tuple[list[Finding], dict[str, Any]]:
    """MTP310 findings and ``{"old_version", "new_version", "changes": {key: {"old", "new"}}}`` for
    every headline of "what will happen" that differs between two SGLang versions, compared on
    location-free values (``outcome["compare"]``: a moved line number is not a change)."""
    from mtp_audit.engines.sglang.launch.rules import RULES_BY_ID
    from mtp_audit.report import Evidence, Location

    rule = RULES_BY_ID["MTP310"]
    changes: dict[str, Any] = {}
    findings: list[Finding] = []
    for key in old["compare"]:
        a, b = old["compare"].get(key), new["compare"].get(key)
        if a != b:
            changes[key] = {"old": a, "new": b}
    for key, ch in changes.items():
        worse = key == "verdict" and VERDICT_RANK.get(ch["new"], 0) > VERDICT_RANK.get(ch["old"], 0)
        findings.append(rule.finding(f"{key.replace('_', ' ')} changes: SGLang {old_version}: {ch['old']}; SGLang {new_version}: {ch['new']}",
                                     Location(symbol=f"what-will-happen:{key}"),
                                     evidence=[Evidence(f"SGLang {old_version}", str(ch["old"])), Evidence(f"SGLang {new_version}", str(ch["new"]))],
                                     severity=Severity.WARNING if worse else None, remediation=""))
    return findings, {"old_version": old_version, "new_version": new_version, "changes": changes}


def compare_outcomes(old: Any, new: Any) -> Any:
    """``new`` (an :class:`~mtp_audit.engines.base.EngineOutcome` at the newer SGLang) with the MTP310 findings of
    :func:`diff_outcomes` added, ``facts["diff"]`` (with ``old_summary``), the summary's ``compared_with`` and the
    closing and answer lines that say what changed since ``old``."""
    import dataclasses

    ov, nv = old.version, new.version
    extra, diff = diff_outcomes(old.facts, new.facts, ov, nv)
    diff["old_summary"] = old.facts["summary"]
    facts = dict(new.facts, diff=diff)
    facts["summary"] = dict(facts["summary"], compared_with=f"SGLang {ov}: {len(diff['changes'])} change(s)")
    lines = list(facts["closing"]["lines"])
    if diff["changes"]:
        lines += [f"Changed from SGLang {ov}: {k.replace('_', ' ')}: was {c['old']}; now {c['new']}." for k, c in diff["changes"].items()]
    else:
        lines.append(f"Compared with SGLang {ov}: nothing in what will happen changes.")
    facts["closing"] = {"title": f"What will happen (SGLang {nv}, compared with {ov})", "lines": lines}
    facts["answer"] = [f"{facts['answer'][0]}; compared with SGLang {ov}: {len(diff['changes'])} change(s)", *facts["answer"][1:]]
    return dataclasses.replace(new, name=f"{new.name} (sglang {ov} -> {nv})", findings=new.findings + extra, facts=facts)


def upgrade_rewrites(old: Any, compared: Any) -> Any:
    """``compared`` (the new release's outcome after :func:`compare_outcomes`) with the upgrade's added rewrites that
    concern this launch (:func:`mtp_audit.engines.sglang.diff.diff_facts` with what the new evaluation knows: the
    checkpoint's architecture, the command's values and the declared defaults, the GPU family): one whose guard holds
    keeps its MTP110 severity (an error for a silent override of an MTP/FP4 flag), one whose guard cannot be told is
    at most a warning, one whose guard is false is left out. Added to the sglang analyzer's sub-report (warnings and
    errors only); ``facts["diff"]["rewrites"]`` counts them. Unchanged when either release was not read."""
    import dataclasses

    from mtp_audit.engines.sglang.diff import diff_facts
    from mtp_audit.report import Finding as _Finding

    if not old.context or not compared.context:
        return compared
    findings, changes = diff_facts(old.context["sglang"], compared.context["sglang"], known=compared.context["known"])
    kept = [f for f in findings if f.rule_id == "MTP110" and f.severity >= Severity.WARNING]
    applies = [when for f, when in changes["applies"] if f.severity >= Severity.WARNING]  # every one is MTP110
    counts = {"apply": sum(1 for w in applies if w is True), "could_not_tell": sum(1 for w in applies if w is not True)}
    facts = dict(compared.facts, diff=dict(compared.facts["diff"], rewrites=counts))
    reports = list(compared.reports)
    at = next((i for i, r in enumerate(reports) if r.targets and r.targets[0].analyzer == "sglang"), None)
    if at is not None and kept:
        r = reports[at]
        reports[at] = dataclasses.replace(r, findings=tuple(sorted(set(r.findings) | set(kept), key=_Finding.sort_key)),
                                          rule_ids=tuple(sorted(set(r.rule_ids) | {"MTP110"})))
        _count_rewrites(facts, old.version, len(kept), counts)
    return dataclasses.replace(compared, facts=facts, reports=reports)


def _count_rewrites(facts: dict[str, Any], old_version: str, n: int, counts: dict[str, int]) -> None:
    """The answer, summary and closing lines of a compared launch with the ``n`` new rewrites listed (MTP110) counted
    beside the changes of what will happen, so the headline does not say "0 change(s)" above a list of them."""
    d = facts["diff"]
    was = f"SGLang {old_version}: {len(d['changes'])} change(s)"
    now = (f"{was} in what will happen, {n} new silent rewrite(s) concern this launch ({counts['apply']} apply, "
           f"{counts['could_not_tell']} could not tell)")
    facts["summary"] = dict(facts["summary"], compared_with=now)
    facts["answer"] = [facts["answer"][0].replace(f"compared with {was}", f"compared with {now}"), *facts["answer"][1:]]
    closing = facts["closing"]
    facts["closing"] = dict(closing, lines=[*closing["lines"], f"New since SGLang {old_version}: {n} silent rewrite(s) concern "
                                            f"this launch ({counts['apply']} apply, {counts['could_not_tell']} could not tell "
                                            "whether they apply): the MTP110 findings."])
