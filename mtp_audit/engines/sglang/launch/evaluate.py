"""``mtp-audit launch``: run the three analyzers on one SGLang launch command and cross-check them.

Inputs flow through the analyzers' public functions only: :func:`mtp_audit.engines.sglang.audit_sglang`
(flag table, remaps, draft-architecture overrides, EntryClass registry, env vars),
:func:`mtp_audit.checkpoint.audit_checkpoint` (architecture, MTP tensors, their dtype and bytes,
quantization) and :func:`mtp_audit.preflight.preflight` (GPUs, capability, memory, effective FP4
backends after this SGLang version's ``auto`` resolution, its MTP2xx findings). The checks here
(MTP300-MTP314, :mod:`mtp_audit.engines.sglang.launch.rules`) are the ones no single analyzer can make.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer, checkpoint_answer
from mtp_audit.engines.base import Analyzers
from mtp_audit.engines.outcome import fmt_bytes, loc_of, mtp_errors_as_warnings
from mtp_audit.engines.sglang.launch.command import (
    ENTRY_LAUNCH_SERVER,
    LaunchCommand,
    parse_command,
    rebuild,
)
from mtp_audit.engines.sglang.launch.conditions import Known, evaluate
from mtp_audit.engines.sglang.launch.context import (
    ANALYZER,
    COMPLETE_CONDITION_SHAPES,
    DRAFT,
    DRAFT_ALGORITHMS,
    FP4_QUANT_FORMAT,
    MEM_FRACTION,
    MODEL,
    MTP_ALGORITHMS,
    MTP_FLAGS,
    QUANT,
    SPEC,
    TP,
    Ctx,
    ckpt_fp4,
    reads_mtp_layer,
)
from mtp_audit.engines.sglang.launch.correct import corrected_command
from mtp_audit.engines.sglang.launch.spec_hook_replay import check_speculative_hook
from mtp_audit.engines.sglang.release import Release
from mtp_audit.engines.sglang.startup_facts import grounded, guard_value, predict_asserts, predict_overrides
from mtp_audit.errors import InputError
from mtp_audit.preflight.typed import machine_answer
from mtp_audit.report import Evidence, Gap, Report, Severity
from mtp_audit.report import questions as Q

_ENV_INTEREST = re.compile(r"NEXTN|MTP|SPEC|FP4")
_TRUTHY = ("1", "true", "yes", "on")


def collect_env(cmd: LaunchCommand, extra: Mapping[str, str] | None, environ: Mapping[str, str] | None,
                sg: dict[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """Environment variables of the launch and where each came from.

    Order (later wins): the current environment (only names this SGLang reads, or names with NEXTN,
    MTP, SPEC or FP4 that start with ``SGLANG_``/``SGL_``/``FLASHINFER_``), then ``KEY=VALUE`` before the
    program in the command, then ``--env KEY=VALUE``.
    """
    read = {e["name"] for e in Release.of(sg).env_vars}
    env: dict[str, str] = {}
    src: dict[str, str] = {}
    for k, v in sorted((environ or {}).items()):
        if k in read or (k.startswith(("SGLANG_", "SGL_", "FLASHINFER_")) and _ENV_INTEREST.search(k)):
            env[k], src[k] = v, "environment"
    for k, v in cmd.env.items():
        env[k], src[k] = v, "command"
    for k, v in (extra or {}).items():
        env[k], src[k] = v, "--env"
    return env, src


def normalized_argv(cmd: LaunchCommand) -> list[str]:
    """The command as this SGLang parsed it (abbreviations expanded), for the preflight."""
    out = ["python", "-m", "sglang.launch_server"]
    for o in cmd.options:
        if isinstance(o.value, list):
            out += [o.option_string, *o.value]
        elif o.value is None:
            out.append(o.option_string)
        else:
            out += [o.option_string, o.value]
    return out


# --- the speculative chain ---------------------------------------------------------------------


def resolve_algorithm(ctx: Ctx) -> None:
    """What ``--speculative-algorithm`` becomes after this SGLang's remaps (``facts["remaps"]``).

    A remap counts when its condition is true given only the algorithm (0.5.9 ``self.speculative_algorithm
    == "NEXTN"``) or it is the enum alias lookup (0.5.20 on); remaps under other conditions (0.5.23:
    ``and is_gemma4_draft``) are kept as "unless" notes.
    """
    value = ctx.cmd.get(*SPEC)
    if isinstance(value, list):
        value = value[0] if value else None
    ctx.algo_requested = value
    if value is None:
        return
    sg = ctx.sg or {}
    if any(n.get("argument") == "speculative_algorithm" and n.get("kind") == "upper" for n in sg.get("normalisations", [])):
        value = value.upper()
    ctx.algo_runs_as = value
    for r in sg.get("remaps", []):
        if r.get("from") != value or r.get("to") == [value]:
            continue
        v = evaluate(r.get("condition", ""), Known(args={"speculative_algorithm": value})).value
        if v is True or r.get("shape") == "enum-alias-lookup":
            if ctx.algo_remap is None:
                ctx.algo_runs_as, ctx.algo_remap = r["to"][0], r
        elif v is None and guard_value(r.get("condition"), replay_known(ctx, {"speculative_algorithm": value})) is not False:
            # a guard the checkpoint rules out (0.5.23 ``... and is_gemma4_draft`` for a Qwen3.5 checkpoint) is dropped
            ctx.algo_conditional.append(r)


def replay_known(ctx: Ctx, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the launch knows, in the form :mod:`mtp_audit.engines.sglang.startup_facts` evaluates guards with:
    the checkpoint's architecture and quantization, the GPU family from compute capability 0 (``sm90``,
    ``sm100`` for 10.x, ``sm120`` for 12.x) and the server arguments (``fields``, else the command's)."""
    known = ctx.known()
    cc = ctx.cc
    gpu = None if cc is None else {9: "sm90", 10: "sm100", 12: "sm120"}.get(cc[0], f"sm{cc[0]}{cc[1]}")
    args = dict(known.args) if fields is None else fields
    out = {"architecture": known.arch or ctx.config_architecture, "quantization": known.args.get("quantization"), "gpu": gpu,
           "fields": args,
           "registered": [e["class"] for e in ctx.release.entry_classes]}
    ck = ctx.ck
    types = [t for t in ((ck.model_type, ck.text_model_type) if ck is not None else ()) if t] or ctx.model_types
    if types:
        out["model_types"] = list(types)
    if ctx.linear_attention_note is None:
        out["linear_attention"] = ctx.linear_attention
    return out


#: The per-phase attention backends stay ``None`` unless the command gives them: SGLang's registry then takes
#: ``--attention-backend`` (0.5.17 ``attention_registry.py:405-411`` branches on ``if prefill_be and decode_be``; the
#: B300 report https://github.com/sgl-project/sglang/issues/35080 shows the other branch's message, "Got
#: attention_backend=flashinfer", for a command without them).
PHASES_NOT_GIVEN = {"prefill_attention_backend": None, "decode_attention_backend": None}


def resolve_model_overrides(ctx: Ctx) -> None:
    """The per-model override rewrites (``facts["model_overrides"]``) and start-up asserts
    (``facts["backend_asserts"]``) that apply to this launch, with their guards evaluated against the checkpoint,
    the command and the GPU (:func:`mtp_audit.engines.sglang.startup_facts.predict_overrides` / ``predict_asserts``)."""
    if not ctx.sg:
        return
    known = replay_known(ctx)
    known["fields"] = {k: ("auto" if v is None and k.endswith("moe_runner_backend") else v) for k, v in known["fields"].items()}
    ctx.model_overrides = predict_overrides(ctx.sg, known)
    # asserts run after every resolution: only a value the user gave explicitly is known to reach them, and only an
    # assert whose guard certainly holds is a prediction (a guard on a local name of the hook is not told)
    given: dict[str, Any] = dict(PHASES_NOT_GIVEN)
    for o in ctx.cmd.options:
        dest = ctx.release.dest(o.flag) if o.value is not None else None
        if dest is not None:  # an option without a declared dest (a tree the parser could not read) names no field
            given[dest] = o.value
    # a prediction only when the guard holds on the machine and the model alone (the command's flags hidden): an
    # assert whose guard is only about flags, or that has none, sits in a helper whose callers decide whether it runs
    # (0.5.23 mamba_hook.py:161 validate_mamba_no_buffer; 0.5.20 deepseek_v4_hook.py:189, DeepSeek-V4 models only)
    ctx.startup_asserts = [a for a in predict_asserts(ctx.sg, dict(known, fields=given)) if a["certain"]
                           and grounded(a["condition"], known)]


def resolve_draft(ctx: Ctx) -> None:
    """The draft model SGLang loads: path, architecture after the draft-architecture override, and
    whether that class is registered (``facts["draft_arch_overrides"]``, ``["entry_classes"]``)."""
    d: dict[str, Any] = {"uses_draft": ctx.algo_runs_as in DRAFT_ALGORITHMS}
    ctx.draft = d
    if not d["uses_draft"]:
        return
    sg = ctx.sg or {}
    fills = sg.get("draft_model_path_fills", [])
    if ctx.draft_path is not None and not ctx.draft_is_target:
        d["path"], d["path_source"] = ctx.draft_path, "--speculative-draft-model-path"
    else:
        d["path"] = ctx.model_path
        implicit = next((f for f in fills if f.get("kind") == "implicit"), None) or (fills[0] if fills else None)
        d["path_source"] = ("--speculative-draft-model-path (same checkpoint as --model-path)" if ctx.draft_path is not None else
                            f"defaults to --model-path ({implicit['location']})" if implicit else "defaults to --model-path")
    ck = ctx.ck if (ctx.draft_path is None or ctx.draft_is_target) else ctx.draft_ck
    arch = ctx.arch(ck)
    d["architecture"] = arch
    if ck is not None:
        d["mtp_tensors"] = ck.summary.mtp_tensors
        d["mtp_dtypes"] = dict(ck.mtp.dtypes)
        d["mtp_bytes"] = ck.mtp_bytes.value
        d["mtp_bytes_estimated"] = ck.mtp_bytes.estimated
        d["mtp_attention_bytes"] = ck.mtp.attention_bytes
        d["mtp_embed_head_bytes"] = ck.mtp.embed_head_bytes
        d["mode"] = ck.summary.mode
    if arch is None or not sg:
        return
    rows = [o for o in sg.get("draft_arch_overrides", []) if o.get("from") == arch]
    classes = {e["class"]: e for e in sg.get("entry_classes", [])} or {e["class"]: e for e in sg.get("mtp_classes", [])}
    d["override"] = rows[0] if rows else None
    if rows:
        registered = [o for o in rows if o["to"] in classes]
        pick = registered[0] if registered else rows[0]
        d["override"] = pick
        d["draft_class"] = pick["to"]
        d["draft_class_registered"] = pick["to"] in classes
        d["draft_class_location"] = classes[pick["to"]]["entry_location"] if pick["to"] in classes else None
    else:
        mtp_names = {e["class"] for e in sg.get("mtp_classes", [])}
        d["draft_class"] = arch
        d["draft_class_registered"] = arch in classes
        d["draft_class_is_mtp"] = arch in mtp_names
        d["draft_class_location"] = classes[arch]["entry_location"] if arch in classes else None


# --- cross-checks --------------------------------------------------------------------------------


def check_command(ctx: Ctx) -> None:
    """MTP300 (argparse would reject the command) and MTP301 (prefix abbreviations)."""
    v = ctx.sglang_version
    for p in ctx.cmd.problems:
        sym = f"argv[{p.index}]" if p.index is not None else "argv"
        if p.kind == "abbreviation":
            ctx.add("MTP301", f"{p.message}: it works in SGLang {v} only while no other option starts with "
                    f"{p.token.split('=', 1)[0]}; a release that adds one turns it into 'ambiguous option' and the server exits",
                    sym, evidence=[Evidence("parser", "argparse.ArgumentParser(allow_abbrev=True)", loc_of(ctx.release.parser.get("location")))],
                    remediation=f"write it in full: {p.fix[0]}" if p.fix else None)
            continue
        ev = [Evidence("token", p.token)]
        flag = ctx.cmd.names.get(p.token) if p.kind == "required" else None
        rec = ctx.release.option(flag) if flag else None
        if rec:
            ev.append(Evidence("declared at", rec["location"], loc_of(rec["location"])))
        fix = None
        if p.fix is not None:
            fix = ("use " + " ".join(p.fix)) if p.fix else "remove it"
        elif p.kind == "unknown":
            fix = f"remove it: SGLang {v} has no such option (check `mtp-audit sglang` for its flags)"
        elif p.kind == "ambiguous":
            fix = "write the option in full"
        what = "the server will not start" if p.kind != "help" else "nothing is launched"
        ctx.add("MTP300", f"SGLang {v} rejects the command ({what}): {p.message}", sym, evidence=ev, remediation=fix)
    check_algorithm_name(ctx)


def check_algorithm_name(ctx: Ctx) -> None:
    """MTP300 for a ``--speculative-algorithm`` name the enum lookup of this SGLang does not know: the flag is free-form
    (0.5.20 on), so argparse takes any name and ``SpeculativeAlgorithm.from_string`` raises at start-up (0.5.23
    ``spec_info.py:65`` ``ValueError: Unknown speculative algorithm name: MTP``; the enum members and the alias set
    ``_RESERVED_ALIASES`` come from the sglang analyzer's ``aliases`` facts). A plugin may register more names."""
    value = ctx.algo_requested
    lookup = next((a for a in ctx.release.aliases if a.get("enum_members") and a.get("unknown_raises")), None)
    if not isinstance(value, str) or lookup is None:
        return
    known = [m for m in lookup["enum_members"] if m != "NONE"] + list(lookup.get("members") or [])
    if value.upper() in known:
        return
    r = lookup["unknown_raises"]
    msg = r["message"].replace("{name}", value)
    ctx.add("MTP300", f"SGLang {ctx.sglang_version} rejects --speculative-algorithm {value} at start-up (the server will not "
            f"start): {lookup['function']} raises {r['exception']}: {msg} ({r['location']}); the names it knows are "
            f"{', '.join(known)}, unless a plugin registers {value.upper()}", SPEC[0],
            evidence=[Evidence("raised at", r["location"], loc_of(r["location"])),
                      Evidence("enum lookup", lookup["function"], loc_of(lookup["location"]))],
            remediation="use NEXTN (or EAGLE) for a checkpoint's own MTP layers")


def check_architecture(ctx: Ctx) -> None:
    """MTP303 (the target architecture has no EntryClass in this SGLang) and MTP302 (the draft
    architecture does not end in a registered MTP class)."""
    sg = ctx.sg
    if not sg or not sg.get("entry_classes"):
        if sg is not None and ctx.draft.get("uses_draft"):
            ctx.gap("the sglang facts list no EntryClass registrations; the draft architecture chain was not checked")
        return
    classes = {e["class"] for e in sg["entry_classes"]}
    arch = ctx.arch(ctx.ck)
    v = ctx.sglang_version
    if arch is not None and arch not in classes:
        near = sorted(c for c in classes if c.split("For")[0] == arch.split("For")[0])
        ctx.add("MTP303", f"SGLang {v} registers no model class named {arch} (config.json architectures[0]): the target will not load "
                f"('Model architectures [{arch!r}] are not supported for now')",
                "config.json:/architectures/0",
                evidence=[Evidence("architecture", arch), Evidence("same-family classes in this version", ", ".join(near) or "none")],
                remediation="use an SGLang version whose EntryClass lists this architecture (mtp-audit sglang NEW shows entry_classes)")
    d = ctx.draft
    if not d.get("uses_draft") or d.get("architecture") is None:
        return
    darch = d["architecture"]
    ov = d.get("override")
    if ov is not None and not d.get("draft_class_registered"):
        ctx.add("MTP302", f"SGLang {v} maps the draft architecture {darch} to {ov['to']}, but no EntryClass registers {ov['to']}: "
                "the draft model cannot be built", "--speculative-algorithm",
                evidence=[Evidence("override", f"{darch} -> {ov['to']}", loc_of(ov.get("location")))],
                remediation="use an SGLang version that ships the MTP class, or run without speculative decoding")
    elif ov is None and not d.get("draft_class_is_mtp"):
        fam = darch.split("For")[0]
        sib_rows = [o for o in sg.get("draft_arch_overrides", []) if o.get("from", "").split("For")[0] == fam]
        siblings = sorted({f"{o['from']} -> {o['to']}" for o in sib_rows})
        table = (sib_rows or sg.get("draft_arch_overrides", []))[:1]
        ctx.add("MTP302", f"SGLang {v} has no draft-architecture override for {darch}: with {ctx.algo_requested} "
                f"(runs as {ctx.algo_runs_as}) the draft worker builds {darch} itself, the full target class, instead of an "
                "MTP/NextN head, so the checkpoint's MTP weights are not what drafts",
                "--speculative-algorithm",
                evidence=[Evidence("draft architecture", darch), Evidence("overrides for this family", "; ".join(siblings) or "none")]
                + [Evidence("override table (nearest row)" if sib_rows else "override table", o["location"]) for o in table],
                remediation=_no_override_fix(ctx))


def check_draft_api(ctx: Ctx) -> None:
    """MTP314 when the worker of the algorithm the launch runs as reads, at start-up, an attribute the resolved draft
    class does not define (``facts["draft_api"]``, :mod:`mtp_audit.engines.sglang.draft_api`): SGLang 0.5.9
    ``speculative/eagle_worker.py:168`` calls ``model.set_embed(embed)`` for EAGLE3, which
    ``DeepseekV3ForCausalLMNextN`` and ``Qwen3_5ForCausalLMMTP`` lack, so the server stops with ``AttributeError``.
    An attribute is required only where every worker file that branches on the algorithm reads it. A class whose
    chain could not be resolved is a blocking gap."""
    d = ctx.draft
    cls = d.get("draft_class") if d.get("uses_draft") else None
    if not cls or not d.get("draft_class_registered", d.get("draft_class_is_mtp")):
        return
    rows = [r for r in ctx.release.worker_requires if r["algorithm"] == ctx.algo_runs_as]
    info = ctx.release.draft_class_api.get(cls)
    if not rows or info is None:
        return
    missing = set(info["missing"])
    need = [r for r in rows if r["attribute"] in missing and set(r["unless_has"]) <= missing]
    files = {r["file"] for r in rows}
    attrs = sorted(a for a in {r["attribute"] for r in need} if {r["file"] for r in need if r["attribute"] == a} == files)
    if attrs and info.get("unresolved") is None:
        first = sorted((next(r for r in need if r["attribute"] == a) for a in attrs),
                       key=lambda r: (r["file"], int(r["location"].rsplit(":", 1)[1])))
        attrs = [r["attribute"] for r in first]
        ctx.add("MTP314", f"SGLang {ctx.sglang_version}'s {ctx.algo_runs_as} worker calls {', '.join('model.' + a for a in attrs)} on "
                f"the draft model at start-up, and the draft class {cls} does not define {'it' if len(attrs) == 1 else 'them'}: "
                f"the server will not start (AttributeError at {first[0]['location']})", "--speculative-algorithm",
                evidence=[Evidence("worker reads", f"model.{r['attribute']}", loc_of(r["location"])) for r in first]
                + [Evidence("draft class chain", " -> ".join(info["chain"]), loc_of(info["chain"][0]) if info["chain"] else None)],
                remediation=_no_override_fix(ctx))
    elif info.get("unresolved") and any((set(r["unless_has"]) | {r["attribute"]}) & missing for r in rows):
        ctx.gap(f"whether the {ctx.algo_runs_as} worker finds {', '.join(sorted({r['attribute'] for r in rows}))} on the draft "
                f"class {cls} could not be told: {info['unresolved']}", blocking=True)


#: The speculative sizes that count drafts: a value below 1 means no draft step, no candidate or no token. SGLang 0.5.9
#: ``server_args.py`` declares them ``type=int`` with no range check and derives ``speculative_num_draft_tokens =
#: speculative_num_steps + 1`` for topk 1 (:2444-2450), so ``-1`` steps gives 0 draft tokens; 0.5.23
#: ``arg_groups/speculative_hook.py:1040-1041`` raises "MTP requires positive speculative_num_steps." on some paths only.
SPEC_SIZES = ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")


def check_speculative_sizes(ctx: Ctx) -> None:
    """A blocking gap for a speculative size below 1 (:data:`SPEC_SIZES`) that no replayed start-up check of this
    release refuses (an MTP300 from the hook replay already answers): what the release's later rewrites, draft loop and
    CUDA-graph sizes do with it is not replayed, so whether the server starts and drafts is not told; never a pass."""
    if not ctx.draft.get("uses_draft"):
        return
    for flag in SPEC_SIZES:
        raw = ctx.cmd.get(flag)
        try:
            n = int(raw) if isinstance(raw, str) else None
        except ValueError:
            continue  # argparse refuses it: MTP300 from the parser
        refused = any(f.rule_id == "MTP300" for f in ctx.findings)  # the release already refuses this launch
        if n is not None and n < 1 and not refused:
            decl = ctx.release.option(flag).get("location")
            ctx.gap(f"{flag} {n}: a speculative size below 1; SGLang {ctx.sglang_version} declares it type=int"
                    + (f" ({decl})" if decl else "") + " and no replayed start-up check refuses it: whether a later rewrite "
                    "replaces it or the draft loop and CUDA-graph sizes take it, and so whether the server starts and drafts, "
                    "could not be told", blocking=True)


def _no_override_fix(ctx: Ctx) -> str:
    """The remediation for "no draft-architecture override" that fits its cause. With an algorithm that needs a
    separate draft model (EAGLE3, STANDALONE: not in ``MTP_ALGORITHMS``) and no --speculative-draft-model-path, the
    cause is the missing draft path (SGLang falls back to the target checkpoint as the draft; docs/sglang.md MTP105),
    so the fix is that flag, not another SGLang version. With an MTP algorithm (NEXTN / EAGLE) the cause is the
    version's override table."""
    if ctx.algo_runs_as not in MTP_ALGORITHMS and ctx.draft_path is None:
        return (f"add --speculative-draft-model-path with the {ctx.algo_runs_as} draft model trained for this target: "
                f"{ctx.algo_runs_as} does not draft with the checkpoint's MTP heads, and without a draft path SGLang "
                "loads the target checkpoint itself as the draft (or use --speculative-algorithm NEXTN to draft with "
                "its MTP heads)")
    return ("use an SGLang version whose configs/model_config.py maps this architecture to its MTP class "
            "(compare versions with --compare-sglang), or drop --speculative-algorithm")


def check_mtp_weights(ctx: Ctx) -> None:
    """MTP304 (the draft reads an MTP layer, :func:`reads_mtp_layer`, but the draft checkpoint has no MTP tensors)
    and MTP305 (MTP tensors present, no speculative flag)."""
    d = ctx.draft
    v = ctx.sglang_version
    if reads_mtp_layer(ctx):
        ck = ctx.ck if (ctx.draft_path is None or ctx.draft_is_target) else ctx.draft_ck
        if ck is None:
            return
        s = ck.summary
        n = s.mtp_tensors
        if s.mode == "config-only":
            ctx.gap(f"{d.get('path')}: config only, MTP tensors of the draft not checked", blocking=True)
            return
        if n == 0:
            declared = s.mtp_layers_declared or 0
            # a separate draft without MTP tensors while the target ships its own: drafting from the target fixes it
            # (SGLang's draft path defaults to --model-path, configs/model_config.py), no need to drop speculative decoding
            own = (ctx.ck.summary.mtp_tensors if ctx.ck is not None else None) or 0
            separate = ctx.draft_path is not None and not ctx.draft_is_target and ctx.ck is not None
            own_fix = (f"drop --speculative-draft-model-path {ctx.draft_path}: the target {ctx.model_path} has {own:,} MTP tensors of "
                       "its own, which SGLang drafts with when no draft path is given (the corrected command does)") if separate and own else None
            ctx.add("MTP304", f"--speculative-algorithm {ctx.algo_requested} (runs as {ctx.algo_runs_as}) loads its draft from "
                    f"{d.get('path')} ({d.get('path_source')}), which has no MTP tensors"
                    + (f" although config.json declares {declared} MTP layer(s)" if declared else "")
                    + (f" ({s.tensors:,} tensors checked)" if isinstance(s.tensors, int) else "") + ": the draft has no weights to load"
                    + ("" if ctx.algo_runs_as in MTP_ALGORITHMS else
                       f" (without --speculative-draft-model-path SGLang builds the target's MTP class {d.get('draft_class')} as the draft, "
                       "as for NEXTN)"),
                    "--speculative-algorithm",
                    evidence=[Evidence("draft checkpoint", str(d.get("path"))), Evidence("MTP tensors", "0"),
                              Evidence("architecture", str(d.get("architecture")))],
                    remediation=own_fix or ((f"add --speculative-draft-model-path with the {ctx.algo_runs_as} draft model trained for "
                                             "this target, or " if ctx.algo_runs_as not in MTP_ALGORITHMS else "")
                                            + "drop the --speculative-* options (the corrected command does), or use a checkpoint that ships "
                                            "its mtp.* / NextN weights"))
            if own_fix:
                ctx.fixes[ctx.cmd.flag_of(*DRAFT) or DRAFT[0]] = None
            else:
                ctx.drop_prefixes = ctx.drop_prefixes + ("--speculative-",)
    if ctx.algo_requested is None and ctx.ck is not None:
        s = ctx.ck.summary
        n = s.mtp_tensors or 0
        if n > 0:
            cli = ctx.release.cli if ctx.release.cli_read else None
            names = set(ctx.cmd.names) if ctx.cmd.names else set()
            flags = [(f, val) for f, val in MTP_FLAGS if not cli or f in names]
            b = ctx.ck.mtp_bytes.value
            extra = ""
            if cli is not None and not names & {"--speculative-algorithm"}:
                extra = f"; SGLang {v} has no --speculative-algorithm option"
            ctx.add("MTP305", f"the checkpoint carries {n:,} MTP tensors ({s.mtp_format}"
                    + (f", {fmt_bytes(b)}" if b else "") + ") but the command requests no speculative decoding: "
                    "SGLang skips the mtp.* weights and decodes one token per step" + extra,
                    "--speculative-algorithm",
                    evidence=[Evidence("MTP layers found", str(s.mtp_layers_found)), Evidence("MTP tensors", f"{n:,}")],
                    remediation=("add " + " ".join(f"{f} {val}" for f, val in flags)) if flags and not extra else "")


def check_draft_elsewhere(ctx: Ctx) -> None:
    """MTP306: NEXTN with ``--speculative-draft-model-path`` pointing at another checkpoint."""
    if ctx.draft_path is None or ctx.draft_is_target or ctx.algo_requested is None:
        return
    if (ctx.algo_requested or "").upper() != "NEXTN" and ctx.algo_runs_as not in MTP_ALGORITHMS:
        return
    d = ctx.draft
    dck = ctx.draft_ck
    own = ctx.ck.summary.mtp_tensors if ctx.ck is not None else None
    what = (f"{d.get('architecture')} -> {d.get('draft_class')}" if d.get("architecture") else "a checkpoint that was not audited")
    ctx.add("MTP306", f"--speculative-algorithm {ctx.algo_requested} runs as {ctx.algo_runs_as} with the draft from "
            f"--speculative-draft-model-path {ctx.draft_path} ({what}; {dck.summary.mtp_tensors if dck is not None else '?'} MTP "
            f"tensors), not from --model-path {ctx.model_path}" + (f", whose own {own:,} MTP tensors are not loaded" if own else ""),
            "--speculative-draft-model-path",
            evidence=[Evidence("target", f"{ctx.model_path} ({ctx.arch(ctx.ck)})"), Evidence("draft", f"{ctx.draft_path} ({d.get('architecture')})")],
            remediation="drop --speculative-draft-model-path to draft with the target's own MTP heads, or keep it if this draft is intended")


def resolve_gpus(ctx: Ctx) -> None:
    """Set ``ctx.visible``: the preflight's GPUs as this launch's processes see them.

    A ``CUDA_VISIBLE_DEVICES`` written before the program or given with ``--env`` is applied to every GPU
    the driver listed (``MachineFacts.all_gpus``); otherwise the preflight's list stands (a live collection
    has already applied this process's own ``CUDA_VISIBLE_DEVICES``). ``CUDA_DEVICE_ORDER`` is read the
    same way. See :func:`mtp_audit.preflight.visible.cuda_visible` for the rules (CUDA docs).
    """
    from mtp_audit.preflight.visible import machine_visible

    if ctx.machine is None:
        return
    ctx.visible = machine_visible(ctx.machine.facts, ctx.env, ctx.env_source)


def _gpu_list(gpus: Sequence[Any]) -> str:
    if not gpus:
        return "none"
    names: dict[str, list[str]] = {}
    for g in gpus:
        names.setdefault(str(g.name.value) if g.name.present else "unnamed GPU", []).append(str(g.index))
    return "; ".join(f"{n} x{len(ix)} (index {', '.join(ix)})" for n, ix in names.items())


def check_gpus(ctx: Ctx) -> None:
    """MTP311 (the command needs more GPUs than this node shows it) and MTP312 (parallel sizes SGLang
    rejects at start-up). The layout is :func:`mtp_audit.engines.sglang.launch.parallel.plan_sglang`."""
    from mtp_audit.engines.sglang.launch.parallel import SGLANG_SOURCES, plan_sglang
    from mtp_audit.preflight.visible import nvidia_visible_note

    plan = plan_sglang(ctx.cmd.get)
    ctx.parallel = plan
    if plan.invalid:
        return  # a non-integer size is MTP300 (argparse "invalid int value")
    where = next((o.option_string for o in ctx.cmd.options
                  if o.flag in {ctx.cmd.names.get(n, n) for n in ("--tp-size", "--tensor-parallel-size")}), None) or "--model-path"
    for key, msg in plan.problems:
        ctx.add("MTP312", f"SGLang {ctx.sglang_version} refuses these parallel sizes at start-up: {msg}", where,
                evidence=[Evidence("sizes", plan.formula), Evidence("enforced at", SGLANG_SOURCES[key])],
                remediation=("make --ep-size a divisor of --tp-size (1 or --tp-size are always valid)" if key == "ep" else
                             "make --tp-size a multiple of the DP size" if key == "dp_attention" else
                             "make --tp-size x --pp-size a multiple of --nnodes" if key == "nnodes" else
                             "use --enable-dp-attention for data parallelism across nodes, or one node"))
    vis = ctx.visible
    nv = nvidia_visible_note(ctx.env.get("NVIDIA_VISIBLE_DEVICES"), ctx.env_source.get("NVIDIA_VISIBLE_DEVICES", "environment")) \
        if ctx.env_source.get("NVIDIA_VISIBLE_DEVICES") in ("command", "--env") else None
    m = ctx.machine
    listed = m is not None and m.gpu_list_missing is None
    hides_all = vis is not None and vis.value is not None and not vis.value.strip()
    if vis is None or (not listed and not hides_all):
        why = (m.gpu_list_missing if m is not None else None) or "no GPU listed"
        if _too_few_in_command(ctx, plan, where):
            return
        if plan.needed > 1:
            ctx.gap(f"the command needs {plan.needed} GPUs on this node ({plan.formula}) but the GPUs are unknown ({why})", blocking=True,
                    why_open=m.gpu_count.why_open if m is not None else None)
        return
    ev = [Evidence("needs", f"{plan.needed} visible CUDA device(s): {plan.formula}"),
          Evidence("process placement", SGLANG_SOURCES["gpu_id"]),
          Evidence("visible", f"{vis.count}: {_gpu_list(vis.gpus)}" + (f" + at most {len(vis.mig)} MIG device(s)" if vis.mig else ""))]
    ev += [Evidence("CUDA_VISIBLE_DEVICES", n) for n in vis.notes]
    if vis.value is None:
        ev.append(Evidence("CUDA_VISIBLE_DEVICES", "unset: every GPU the driver lists is visible"))
    if nv:
        ev.append(Evidence("NVIDIA_VISIBLE_DEVICES", nv))
    total = len(m.all_gpus) if m is not None else 0
    covered = vis.covers(plan.needed)
    if covered is None and vis.listed != "exact":
        ctx.gap(f"GPU count: the command needs {plan.needed} GPU(s) on this node ({plan.formula}); {vis.describe_count()} "
                "are visible: could not tell (give the whole nvidia-smi output, or nvidia-smi -q / --query-gpu)", blocking=True)
        return
    if covered is False:
        wider = (f"widen CUDA_VISIBLE_DEVICES (the driver lists {total} GPUs)" if total >= plan.needed else
                 f"run on a node with at least {plan.needed} GPUs")
        fewer = f"lower --tp-size to {vis.count}" if vis.count and plan.tp > vis.count and plan.pp == 1 and plan.replicas == 1 else \
            "lower the parallel sizes"
        ctx.add("MTP311", f"the command needs {plan.needed} GPU(s) on this node ({plan.formula}) but {vis.count} "
                f"{'is' if vis.count == 1 else 'are'} visible: SGLang starts one process per GPU and "
                f"{'the first process' if vis.count == 0 else f'process {vis.count}'} fails with 'invalid device ordinal'",
                where, evidence=ev, remediation=f"{fewer}, or {wider}")
        return
    if covered is None:
        ctx.gap(f"the command needs {plan.needed} GPU(s) on this node ({plan.formula}); {vis.count} whole GPU(s) are surely visible "
                f"and the rest of CUDA_VISIBLE_DEVICES could not be matched to the GPUs listed ({'; '.join(vis.notes)})", blocking=True)
        return
    # enough GPUs: no finding; facts.launch.parallel and the "gpus" headline say what was checked


def _too_few_in_command(ctx: Ctx, plan: Any, where: str) -> bool:
    """MTP311 from the command alone, when the machine's GPUs are unknown: its own ``CUDA_VISIBLE_DEVICES`` shows at
    most :func:`mtp_audit.preflight.visible.visible_at_most` devices whatever the machine. SGLang gives process ``i``
    CUDA device ``gpu_id`` (``SGLANG_SOURCES["gpu_id"]``) and selects it with torch (0.5.9
    srt/model_executor/model_runner.py:734 ``set_device(self.gpu_id)``; srt/utils/common.py:516-517
    ``assert gpu_id < torch.cuda.device_count()``), and torch counts only the devices the variable leaves.
    Returns whether the finding was added."""
    from mtp_audit.engines.sglang.launch.parallel import SGLANG_SOURCES
    from mtp_audit.preflight.visible import visible_at_most

    src, value = ctx.env_source.get("CUDA_VISIBLE_DEVICES"), ctx.env.get("CUDA_VISIBLE_DEVICES")
    most = visible_at_most(value) if value is not None and src in ("command", "--env") else None
    if most is None or most >= plan.needed:
        return False
    ctx.add("MTP311", f"the command needs {plan.needed} GPU(s) on this node ({plan.formula}) but CUDA_VISIBLE_DEVICES={value} "
            f"({src}) leaves at most {most} visible on any machine: SGLang starts one process per GPU and "
            f"{'the first process' if most == 0 else f'process {most}'} fails with 'invalid device ordinal'", where,
            evidence=[Evidence("needs", f"{plan.needed} visible CUDA device(s): {plan.formula}"),
                      Evidence("process placement", SGLANG_SOURCES["gpu_id"]),
                      Evidence("device selected", "sglang 0.5.9 srt/model_executor/model_runner.py:734 (torch set_device(gpu_id): "
                                                  "torch counts the devices CUDA_VISIBLE_DEVICES leaves)"),
                      Evidence("CUDA_VISIBLE_DEVICES", f"{value} ({src}): at most {most} device(s), each entry names at most one")],
            remediation=(f"lower --tp-size to {most}, or " if most and plan.tp > most and plan.pp == 1 and plan.replicas == 1
                         else "lower the parallel sizes, or ") + f"list at least {plan.needed} GPUs in CUDA_VISIBLE_DEVICES")
    return True


def check_memory(ctx: Ctx) -> None:
    """MTP307: bytes of the draft's MTP weights per GPU vs GPU memory, split as SGLang shards them.

    Per GPU = attention bytes / attention-TP (``tp / dp`` with DP attention: each DP group holds a whole
    copy of the attention weights, ``layers/dp_attention.py`` 0.5.9 :234) + every other MTP byte / tp
    (experts over ``ep x moe_tp = tp``; embedding and head vocab-parallel over tp). Approximate: norms,
    the router and ``eh_proj``/``fc`` are replicated in SGLang but counted as split (< 1% of a MoE MTP
    layer); without the safetensors headers the attention share is unknown and counted as split over tp.
    """
    from mtp_audit.engines.sglang.launch.parallel import plan_sglang

    d = ctx.draft
    if not reads_mtp_layer(ctx):
        return
    b = d.get("mtp_bytes")
    if not b:
        return
    plan = ctx.parallel or plan_sglang(ctx.cmd.get)
    if plan.invalid:
        return
    tp, ep = plan.tp, plan.ep
    attn_tp = max(1, tp // plan.attn_dp)
    attn = d.get("mtp_attention_bytes")
    if isinstance(attn, int) and 0 <= attn <= b:
        per_gpu = attn / attn_tp + (b - attn) / tp
        split = (f"attention {fmt_bytes(attn)} over attention-TP {attn_tp}"
                 + (f" (tp {tp} / DP attention {plan.attn_dp}: every DP group holds a whole copy)" if plan.attn_dp > 1 else "")
                 + f"; the other {fmt_bytes(b - attn)} (experts over ep {ep} x moe-TP {tp // max(ep, 1)} = tp {tp}, "
                 "embedding and head vocab-parallel) over tp; norms, router and fc/eh_proj counted as split though SGLang "
                 "replicates them (< 1%)")
    else:
        per_gpu = b / tp
        split = (f"all {fmt_bytes(b)} over tp {tp} (the attention share is unknown: safetensors headers not read"
                 + (f"; with DP attention {plan.attn_dp} the attention part really sits on tp / {plan.attn_dp} = {attn_tp} GPUs, "
                    "so this is an underestimate" if plan.attn_dp > 1 else "") + ")")
    d["mtp_bytes_per_gpu"] = per_gpu
    steady, freed = steady_per_gpu(d, per_gpu, tp)
    gpus = ctx.gpus()
    mems = [g["memory_bytes"] for g in gpus if g["memory_bytes"]]
    dtypes = ", ".join(f"{k} {v:,}" for k, v in sorted((d.get("mtp_dtypes") or {}).items())) or "dtype not read"
    ev = [Evidence("MTP bytes", fmt_bytes(b) + (" (estimated)" if d.get("mtp_bytes_estimated") else "")),
          Evidence("MTP tensors", dtypes), Evidence("--tp-size / --ep-size / DP attention", f"{tp} / {ep} / {plan.attn_dp}"),
          Evidence("split", split)]
    if freed:
        ev.append(Evidence("steady state", f"{fmt_bytes(steady)} per GPU: the MTP layer's own embed_tokens and shared_head.head "
                           f"({fmt_bytes(freed)}) are loaded, then freed when the EAGLE worker shares the target's "
                           f"({EMBED_HEAD_SOURCE})"))
    when = (f" at load (peak), {fmt_bytes(steady)} per GPU in steady state once the target's embedding and LM head replace "
            "the MTP layer's own") if freed else ""
    if not mems:
        first = next((g for g in gpus if g["memory_missing"]), None)
        why = first["memory_missing"] if first is not None else "no GPU listed"
        ctx.gap(f"GPU memory unknown ({why}); the draft's {fmt_bytes(per_gpu)} per GPU were not compared with it",
                why_open=first["memory_why_open"] if first is not None else None)
        ctx.add("MTP307", f"the draft's MTP weights take about {fmt_bytes(per_gpu)} per GPU{when} under {tp_words(ctx, tp)} (GPU memory unknown)",
                _tp_symbol(ctx), evidence=ev, severity=Severity.INFO, remediation="")
        return
    mem = min(mems)
    frac = per_gpu / mem
    ev.append(Evidence("GPU memory (smallest visible GPU)", fmt_bytes(mem)))
    if len(gpus) < plan.needed:
        ev.append(Evidence("GPUs visible", f"{len(gpus)} of the {plan.needed} needed (MTP311)"))
    mf = ctx.cmd.get(*MEM_FRACTION)
    if per_gpu > mem:
        sev, tail = Severity.ERROR, "more than a whole GPU: the draft cannot be loaded"
    elif frac >= 0.10:
        sev, tail = Severity.WARNING, ("SGLang loads the draft after sizing the target's KV cache with --mem-fraction-static"
                                       + (f" {mf}" if mf else "") + ", so this comes out of the remaining memory; expect a smaller KV cache or an out-of-memory at start-up")
    else:
        sev, tail = Severity.INFO, "small next to the GPU"
    ctx.add("MTP307", f"the draft's MTP weights ({dtypes}) take about {fmt_bytes(per_gpu)} per GPU{when} under {tp_words(ctx, tp)}, "
            f"{frac:.1%} of the {fmt_bytes(mem)} GPU: {tail}", _tp_symbol(ctx), evidence=ev, severity=sev,
            remediation="" if sev == Severity.INFO else "raise --tp-size, lower --mem-fraction-static, or quantize the MTP layer")


#: Where the MTP layer's own embedding and LM head are swapped for the target's (see
#: :data:`mtp_audit.checkpoint.accounting.EMBED_HEAD`).
EMBED_HEAD_SOURCE = ("sglang 0.5.23 speculative/eagle_worker_v2.py:377-378 set_embed_and_head; "
                     "models/deepseek_v2.py:3442-3448 deletes embed_tokens.weight and lm_head.weight")


def steady_per_gpu(d: dict[str, Any], peak: float, tp: int) -> tuple[float, int]:
    """``(steady-state bytes per GPU, bytes freed)``: the load-time ``peak`` less the MTP layer's own embedding and LM
    head (vocab-parallel over ``tp``), which SGLang's EAGLE worker frees once it shares the target's; ``(peak, 0)``
    when the layer has none or their bytes are unknown. Recorded in ``d["mtp_bytes_per_gpu_steady"]``."""
    freed = d.get("mtp_embed_head_bytes")
    freed = freed if isinstance(freed, int) and 0 < freed <= (d.get("mtp_bytes") or 0) else 0
    steady = peak - freed / max(tp, 1)
    d["mtp_bytes_per_gpu_steady"] = steady
    return steady, freed


def tp_words(ctx: Ctx, tp: int) -> str:
    """``--tp-size 8`` as the size the memory split uses; without an SGLang option table, how the command wrote it
    (``--tp-size 8 (written --tp; read without an SGLang option table ...)``)."""
    flag = ctx.cmd.flag_of(*TP) or TP[0]
    written = next((o.typed.split("=", 1)[0] for o in reversed(ctx.cmd.options) if o.flag == flag), None)
    words = f"--tp-size {tp}"
    if ctx.cmd.parsed_with == "heuristic" and written is not None and written != "--tp-size":
        words += f" (written {written}; read without an SGLang option table, as argparse's prefix match would)"
    return words


def _tp_symbol(ctx: Ctx) -> str:
    """Where MTP307 points: the tensor-parallel option as written, else ``--model-path`` (the checkpoint whose
    MTP bytes it counts) when ``--tp-size`` is not given."""
    for o in ctx.cmd.options:
        if ctx.cmd.flag_of(*TP) == o.flag:
            return o.option_string
    return "--model-path"


def check_attention(ctx: Ctx) -> None:
    """MTP313: a backend assert of this SGLang that certainly fails for the launch (its guard holds for the GPU family,
    the checkpoint's linear-attention kind and the command; the value the command gives is outside the set it
    accepts), so the server dies with ``AssertionError`` at start-up; and ``ctx.attention_text``, the attention
    backend and the gate that decides it (:mod:`mtp_audit.engines.sglang.launch.attention`)."""
    from mtp_audit.engines.sglang.launch.attention import (
        ATTENTION_FLAGS,
        assert_evidence,
        backend_text,
        failing_asserts,
        fix_value,
        given_backends,
    )
    from mtp_audit.engines.sglang.startup_facts import holding_asserts

    if not ctx.sg:
        return
    known = replay_known(ctx)
    given = given_backends(ctx.cmd, ctx.release)
    known["fields"] = {**PHASES_NOT_GIVEN, **{f: v for f, (v, _) in given.items()}}
    failing = failing_asserts(ctx.startup_asserts)
    gates = holding_asserts(ctx.sg, known, tuple(ATTENTION_FLAGS.values()))
    ctx.attention_text = backend_text(given, [a for a in failing if a["field"] in ATTENTION_FLAGS.values()], gates,
                                      ctx.linear_attention, ctx.linear_attention_note, ctx.model_overrides)
    why_kind = (f"{ctx.linear_attention or 'none'} (config.json of {ctx.model_path})" if ctx.linear_attention_note is None
                else f"unknown ({ctx.linear_attention_note})")
    shown = ", ".join(f"{f} {v}" for f, (v, _) in sorted(given.items())) or "not given"
    att_fail = [a for a in failing if a["field"] in ATTENTION_FLAGS.values()]
    gate = f"the gate accepts {', '.join(gates[0].get('accepts') or [])}" if gates else ""
    ctx.attention_compare = shown + ("; refused at start-up (AssertionError)" if att_fail else
                                     f"; {'accepted: ' if given else ''}{gate}" if gates else "")
    ctx.attention_facts = {"given": {f: v for f, (v, _) in given.items()}, "linear_attention": ctx.linear_attention,
                           "linear_attention_unknown": ctx.linear_attention_note, "gates": [g["location"] for g in gates],
                           "refused_by": [a["location"] for a in att_fail], "text": ctx.attention_text}
    for a in failing:
        fix = fix_value(a, known.get("gpu"))
        src = given.get(a["field"]) or (given.get("attention_backend") if a["field"].endswith("_attention_backend") else None)
        opt = src[1] if src else None
        ctx.add("MTP313", f"SGLang {ctx.sglang_version} stops at start-up with AssertionError at {a['location']}: "
                f"{_field_words(a.get('fields') or [a['field']])} {a['value']} is not one of {', '.join(a.get('accepts') or [])} "
                f"on {_gpu_family(known.get('gpu'))}"
                + (f" ({a['message'][:160]})" if a.get("message") else ""), opt or a["field"],
                evidence=assert_evidence(a, known, why_kind),
                remediation=(f"use {opt} {fix} (accepted at {a['location']})" if opt and fix else
                             "use a backend the assert accepts"))
        if opt and fix:
            flag = ctx.cmd.flag_of(opt) or opt
            ctx.fixes.setdefault(flag, fix)


def _field_words(fields: list[str]) -> str:
    """``["decode_attention_backend", "prefill_attention_backend"]`` -> ``"prefill and decode attention backend"``."""
    if all(f.endswith("_attention_backend") for f in fields):
        phases = sorted((f.removesuffix("_attention_backend") for f in fields), key=lambda p: p != "prefill")
        return " and ".join(phases) + " attention backend"
    return " and ".join(fields)


def _gpu_family(gpu: str | None) -> str:
    return {"sm100": "SM100/SM103", "sm120": "SM120/SM121", "sm90": "SM90"}.get(gpu or "", gpu or "this GPU")


def check_quantization(ctx: Ctx) -> None:
    """MTP308: an FP4 ``--quantization`` that does not fit the checkpoint's own quantization."""
    q = ctx.cmd.get(*QUANT)
    if not isinstance(q, str) or ctx.ck is None:
        return
    want = FP4_QUANT_FORMAT.get(q.lower())
    have = ckpt_fp4(ctx.ck)
    quants = ctx.ck.quantization
    if q.lower() not in FP4_QUANT_FORMAT:
        return
    if not quants and q.lower() != "nvfp4_online":
        ctx.add("MTP308", f"--quantization {q} on a checkpoint with no quantization config ({ctx.ck.summary.trunk_format} "
                "weights): SGLang keeps the CLI method when the checkpoint declares none and builds FP4 layers that the "
                "checkpoint's tensors do not fit", "--quantization",
                evidence=[Evidence("checkpoint quantization", "none (no hf_quant_config.json, no quantization_config)")],
                remediation=f"drop --quantization {q} (for on-the-fly NVFP4 on SM100 use --quantization nvfp4_online)")
        ctx.fixes[ctx.cmd.flag_of(*QUANT) or "--quantization"] = None
    elif want and have and want != have:
        ctx.add("MTP308", f"--quantization {q} expects {want} weights but the checkpoint is {have}", "--quantization",
                evidence=[Evidence("checkpoint", f"{have} ({quants[0].source})")],
                remediation=f"drop --quantization {q} and let SGLang read the checkpoint's quantization config")
        ctx.fixes[ctx.cmd.flag_of(*QUANT) or "--quantization"] = None


def _near(read: str, rewrite: dict[str, Any]) -> bool:
    """Whether an env-var read is the test of ``rewrite`` (same file, between its ``if`` and its assignment)."""
    rp, _, rl = read.rpartition(":")
    lp, _, ll = str(rewrite.get("location", "")).rpartition(":")
    tp, _, tl = str(rewrite.get("test_location") or "").rpartition(":")
    if not (rl.isdigit() and ll.isdigit()) or rp != lp:
        return False
    lo = int(tl) if tp == rp and tl.isdigit() else int(ll)
    return min(lo, int(ll)) - 2 <= int(rl) <= max(lo, int(ll)) + 2


def _model_files(ctx: Ctx) -> set[str]:
    classes = {e["class"]: e["file"] for e in ctx.release.entry_classes}
    out = set()
    for c in (ctx.arch(ctx.ck), ctx.draft.get("draft_class"), ctx.draft.get("architecture")):
        if c and c in classes:
            out.add(classes[c])
    return out


#: Rewrites as ``(item text, the condition evaluator's reasons)``.
_Rewrites = list[tuple[str, tuple[str, ...]]]


def _split_rewrites(mine: list[dict[str, Any]], known: Known) -> tuple[_Rewrites, _Rewrites, _Rewrites]:
    """The rewrites an environment variable guards, by whether their condition holds for this launch:
    ``(applied, ignored, unknown)``; a rewrite in a hook function is at most unknown (earlier returns are not
    recorded)."""
    applied: _Rewrites = []
    ignored: _Rewrites = []
    unknown: _Rewrites = []
    for r in mine:
        res = evaluate(r.get("condition", ""), known)
        item = f"{r['argument']} -> {', '.join(r['to'])} ({r['location']})"
        value = res.value
        if value is True and r.get("shape") not in COMPLETE_CONDITION_SHAPES:
            # a hook function may return before this line (0.5.23 _deepseek_spec_moe_resolution returns {}
            # unless DeepSeek family on ROCm); those guards are not part of the recorded condition
            value = None
            item += " (in a hook function: earlier returns are not recorded)"
        (applied if value is True else ignored if value is False else unknown).append((item, res.reasons))
    return applied, ignored, unknown


def check_env(ctx: Ctx) -> None:
    """MTP309: environment variables of the launch that this SGLang reads, what they change, and
    whether they are ignored for this GPU / model."""
    sg = ctx.sg
    if sg is None:
        if ctx.env:
            ctx.gap("environment variables not checked: no SGLang facts")
        return
    reads = {e["name"]: e for e in sg.get("env_vars", [])}
    rewrites = list(sg.get("auto_resolutions", [])) + list(sg.get("remaps", []))
    known = ctx.known()
    files = _model_files(ctx)
    v = ctx.sglang_version
    for name in sorted(ctx.env):
        val = ctx.env[name]
        src = ctx.env_source.get(name, "")
        sym = f"env:{name}"
        if name == "NVIDIA_VISIBLE_DEVICES" and src in ("command", "--env"):
            from mtp_audit.preflight.visible import nvidia_visible_note

            ctx.add("MTP309", f"{nvidia_visible_note(val, src)}: the GPUs this launch sees are not restricted by it", sym,
                    evidence=[Evidence("read by", "the NVIDIA container runtime hook at container creation (NVIDIA Container Toolkit docs), "
                                                  "not by CUDA or SGLang")],
                    severity=Severity.WARNING, remediation="restrict GPUs with CUDA_VISIBLE_DEVICES, or set NVIDIA_VISIBLE_DEVICES "
                                                           "where the container is created (docker run -e / the pod spec)")
            continue
        if name not in reads:
            if _ENV_INTEREST.search(name):
                ctx.add("MTP309", f"{name}={val} ({src}) is never read by SGLang {v}: it has no effect", sym,
                        evidence=[Evidence("searched", "every .py file of the SGLang tree (envs.NAME, get_*env*(\"NAME\"), os.environ)")],
                        severity=Severity.WARNING, remediation=f"remove {name} (or check the SGLang version that reads it with --compare-sglang)")
            elif src != "environment" and name not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):  # check_gpus reads them
                ctx.gap(f"{name}: not checked (the sglang analyzer records variables whose names contain NEXTN, MTP, SPEC or FP4)")
            continue
        e = reads[name]
        mine = [r for r in rewrites if re.search(rf"\b{re.escape(name)}\b", r.get("condition") or "")]
        evs = [Evidence("read at", loc) for loc in e.get("read", [])[:6]]
        applied, ignored, unknown = _split_rewrites(mine, known)
        other_reads = [loc for loc in e.get("read", []) if not any(_near(loc, r) for r in mine)]
        model_reads = [loc for loc in other_reads if "/srt/models/" in loc]
        other_model = [loc for loc in model_reads if loc.split(":")[0] not in files]
        rest = [loc for loc in other_reads if loc not in model_reads]
        for item, _ in applied:
            evs.append(Evidence("applies", item))
        for item, reasons in ignored:
            evs.append(Evidence("does not apply", f"{item}: {'; '.join(r for r in reasons if name not in r)}"))
        for item, _ in unknown:
            evs.append(Evidence("may apply", item))
        if other_model:
            evs.append(Evidence("model code outside this launch's model files", ", ".join(other_model[:4])))
        if applied:
            ctx.add("MTP309", f"{name}={val} ({src}) changes this launch in SGLang {v}: " + "; ".join(i for i, _ in applied), sym,
                    evidence=evs, severity=Severity.INFO, remediation="")
        elif mine and not unknown and not rest and len(other_model) == len(model_reads):
            why = "; ".join(dict.fromkeys(r for _, rs in ignored for r in rs if name not in r))
            ctx.add("MTP309", f"{name}={val} ({src}) is ignored by SGLang {v} on this GPU and model: every rewrite it guards needs "
                    f"something this launch does not have ({why})"
                    + (f", and its other reads are in model code this launch does not load ({', '.join(other_model[:2])})" if other_model else ""),
                    sym, evidence=evs, severity=Severity.WARNING, remediation=f"remove {name}; it does nothing here")
        elif not mine and model_reads and len(other_model) == len(model_reads) and not rest:
            ctx.add("MTP309", f"{name}={val} ({src}) is read by SGLang {v} only in model code this launch does not load "
                    f"({', '.join(other_model[:3])}): it has no effect here", sym, evidence=evs, severity=Severity.WARNING,
                    remediation=f"remove {name}; it does nothing for this model")
        else:
            ctx.add("MTP309", f"{name}={val} ({src}) is read by SGLang {v}"
                    + (f"; it may change {', '.join(i for i, _ in unknown)}" if unknown else "")
                    + (f"; read at {', '.join((rest or model_reads)[:3])}" if (rest or model_reads) else "")
                    + ": its effect on this launch could not be decided from the source", sym, evidence=evs, severity=Severity.INFO,
                    remediation="")


CHECKS = (check_command, check_architecture, check_draft_api, check_mtp_weights, check_draft_elsewhere, check_gpus, check_memory, check_quantization,
          check_env, check_attention, check_speculative_hook, check_speculative_sizes)


# --- one evaluation ------------------------------------------------------------------------------


@dataclass
class Evaluation:
    """The result for one SGLang version: the context, the sub-reports and the outcome."""

    ctx: Ctx
    reports: list[Report]
    outcome: dict[str, Any]


def evaluate_launch(argv: Sequence[str], *, sg_report: Report | None, sg_gap: Gap | None, analyzers: Analyzers,
                    env: Mapping[str, str] | None, environ: Mapping[str, str] | None, cwd: Path, _depth: int = 0) -> Evaluation:
    """Parse, audit and cross-check ``argv`` against one SGLang (``sg_report``).

    ``analyzers`` audits the checkpoints the command names and the machine. When the command
    has spelling fixes (misspelt flags, abbreviations, choice case), the spelling-corrected command is
    evaluated as well (at most two levels deep) and its value fixes make up the corrected command.
    """
    from mtp_audit.engines.sglang.launch.outcome import build_outcome

    sg = dict(sg_report.facts.get("sglang") or {}) if sg_report is not None else None
    cmd = parse_command(list(argv), sg)
    envs, src = collect_env(cmd, env, environ, sg)

    mp = cmd.get(*MODEL)
    mp = mp if isinstance(mp, str) else None
    reports: list[Report] = []
    gaps: list[Gap] = [sg_gap] if sg_gap else []
    ck, ck_report, ck_gap = _checkpoint_of(analyzers, mp, "--model-path")
    reports += [ck_report] if ck_report is not None else []
    gaps += [ck_gap] if ck_gap is not None else []
    dp = cmd.get(*DRAFT)
    dp = dp if isinstance(dp, str) else None
    same = dp is not None and mp is not None and (dp == mp or (cwd / dp).resolve() == (cwd / mp).resolve())
    draft_ck, draft_report, draft_gap = _checkpoint_of(analyzers, dp if not same else None, "--speculative-draft-model-path")
    draft_gaps = list(draft_report.gaps) if draft_report is not None else []
    pf_report = analyzers.preflight(normalized_argv(cmd), engine=None, engine_facts={"sglang": sg}, use_engine_analyzer=False)
    reports.append(pf_report)
    if sg_report is not None:
        reports.insert(0, _flows_of_this_command(sg_report, cmd))
    ctx = Ctx(cmd=cmd, sg=sg, sg_name=sg_report.targets[0].name if sg_report else "no SGLang", ck=ck, model_path=mp,
              draft_ck=draft_ck, draft_path=dp, draft_is_target=same, pf=dict(pf_report.facts.get("preflight") or {}),
              env=envs, env_source=src, gaps=gaps, machine=machine_answer(pf_report))
    if cmd.parsed_with == "heuristic":
        ctx.gap("the command was split heuristically (no SGLang option table): unknown or abbreviated flags were not checked", blocking=True)
    if any(o.flag == "--config" for o in cmd.options):
        ctx.gap("--config FILE: the options inside the config file were not read")
    _linear_attention(ctx, cwd)
    resolve_gpus(ctx)
    resolve_algorithm(ctx)
    resolve_model_overrides(ctx)
    if sg_report is not None:
        reports[0] = _rewrites_that_can_apply(ctx, reports[0])
    if ctx.algo_requested is None and ck is not None:
        reports = [mtp_errors_as_warnings(r, "SGLang", "--speculative-algorithm") if r.targets and r.targets[0].analyzer == "checkpoint" else r for r in reports]
    resolve_draft(ctx)
    if dp is not None and not same:
        _draft_gaps(ctx, dp, draft_ck, draft_gaps, draft_gap)
        if ctx.draft.get("uses_draft") and ck is not None:  # the draft's own weights draft: the target's MTP layers stay unloaded
            why = (f"the draft comes from --speculative-draft-model-path {dp}, so SGLang does not load this checkpoint's MTP "
                   "weights")
            reports = [mtp_errors_as_warnings(r, "SGLang", "--speculative-algorithm", reason=why)
                       if r.targets and r.targets[0].analyzer == "checkpoint" else r for r in reports]
    for check in CHECKS:
        check(ctx)
    reports = scope_launch(ctx, reports)
    all_findings = [f for r in reports for f in r.findings] + ctx.findings
    all_gaps = [g for r in reports for g in r.gaps] + ctx.gaps
    if _depth < 2 and cmd.parsed_with != "heuristic":
        # a misspelt flag hides its value from every check (the preflight resolves the backend as if the flag were
        # absent): evaluate the spelling-corrected command too, and take its value fixes for the corrected command
        spelled = rebuild(cmd, {})
        if spelled != list(cmd.argv):
            try:
                sub = evaluate_launch(spelled, sg_report=sg_report, sg_gap=sg_gap, analyzers=analyzers, env=env, environ=environ,
                                      cwd=cwd, _depth=_depth + 1)
                ctx.respelled = (spelled, sub.ctx, [f for r in sub.reports for f in r.findings] + sub.ctx.findings)
            except InputError:
                pass
    outcome = build_outcome(ctx, all_findings, all_gaps)
    if _depth == 0 and ctx.spec_fix is not None and outcome["corrected_command"]:
        all_findings = _recheck_corrected(ctx, all_findings, sg_report, sg_gap, analyzers, env, environ, cwd)
        outcome = build_outcome(ctx, all_findings, all_gaps)
    return Evaluation(ctx, reports, outcome)


def _recheck_corrected(ctx: Ctx, findings: list[Any], sg_report: Report | None, sg_gap: Gap | None, analyzers: Analyzers,
                       env: Mapping[str, str] | None, environ: Mapping[str, str] | None, cwd: Path) -> list[Any]:
    """Evaluate the corrected command again when it carries a value the speculative hook's replay found
    (``ctx.spec_fix``) and keep the result in ``ctx.corrected_check``. When the hook still raises for it, the fix is
    withdrawn: the finding's remediation says that no fix is known, and ``findings`` is returned with it."""
    import dataclasses

    from mtp_audit.engines.argv import shell_join
    from mtp_audit.engines.outcome import verdict
    from mtp_audit.engines.sglang.launch.correct import corrected_tokens

    toks, _ = corrected_tokens(ctx, findings)
    if toks is None:
        return findings
    sub = evaluate_launch(toks, sg_report=sg_report, sg_gap=sg_gap, analyzers=analyzers, env=env, environ=environ, cwd=cwd, _depth=2)
    sub_findings = [f for r in sub.reports for f in r.findings] + sub.ctx.findings
    sub_gaps = [g for r in sub.reports for g in r.gaps] + sub.ctx.gaps
    raises = bool(sub.ctx.spec_hook is not None and sub.ctx.spec_hook.raised)
    ctx.corrected_check = {"command": shell_join(toks), "verdict": verdict(sub_findings, sub_gaps),
                           "errors": sorted({f.rule_id for f in sub_findings if f.severity >= Severity.ERROR}), "hook_raises": raises}
    if not raises:
        return findings
    flag, value = ctx.spec_fix
    ctx.spec_fix = None

    def withdrawn(f: Any) -> Any:
        if f.rule_id == "MTP300" and (f.remediation or "").startswith(f"{flag} {value} ("):
            return dataclasses.replace(f, remediation=f"no fix known: with {flag} {value} the replayed hook still raises")
        return f

    ctx.findings = [withdrawn(f) for f in ctx.findings]
    return [withdrawn(f) for f in findings]


def _linear_attention(ctx: Ctx, cwd: Path) -> None:
    """``ctx.linear_attention`` from the model's config.json as the checkpoint audit read it (else from the caches:
    :func:`~mtp_audit.engines.sglang.launch.attention.model_config`; ``ctx.linear_attention_note`` says why not)."""
    from mtp_audit.engines.sglang.launch.attention import linear_attention_kind, model_config

    cfg, why = model_config(ctx.ck, ctx.model_path, cwd)
    ctx.linear_attention, ctx.linear_attention_note = (linear_attention_kind(cfg), None) if cfg is not None else (None, why)
    if cfg is not None:
        text_config = cfg.get("text_config")
        text = text_config if isinstance(text_config, Mapping) else {}
        ctx.model_types = [t for t in (cfg.get("model_type"), text.get("model_type")) if isinstance(t, str) and t]
        archs = cfg.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            ctx.config_architecture = archs[0]


def scope_launch(ctx: Ctx, reports: list[Report]) -> list[Report]:
    """The gaps scoped to what this launch's verdict depends on (:func:`mtp_audit.engines.outcome.scope_gaps`): no FP4
    kernels (:func:`mtp_audit.engines.outcome.fp4_needed` of the checkpoint and ``--quantization``) -> the native FP4
    verdict is a note; no ``--speculative-algorithm`` -> the checkpoint's MTP checks are notes. Sets
    ``ctx.fp4_needed``; the launch's own gaps are scoped in place, the sub-reports returned scoped. The machine's
    torch pin (MTP209) of an SGLang release the machine is not shown to have installed is a warning
    (:func:`relax_other_release_pin`)."""
    from mtp_audit.engines.outcome import fp4_needed, scope_gap, scope_gaps

    q = ctx.cmd.get(*QUANT)
    ctx.fp4_needed = fp4_needed(ctx.ck, q if isinstance(q, str) else None)
    speculative = ctx.algo_requested is not None
    ctx.gaps = [scope_gap(g, fp4=ctx.fp4_needed, speculative=speculative, spec_flag="--speculative-algorithm") for g in ctx.gaps]
    reports = scope_gaps(reports, fp4=ctx.fp4_needed, speculative=speculative, spec_flag="--speculative-algorithm")
    return [relax_other_release_pin(ctx, r) if r.targets and r.targets[0].analyzer == "preflight" else r for r in reports]


def relax_other_release_pin(ctx: Ctx, report: Report) -> Report:
    """The preflight report with MTP209 ("sglang X pins torch==Y ... but torch Z is installed") a warning unless the
    machine is shown to have this very release installed: severity follows the consequence, as vLLM's MTP339.

    - release X is installed (the machine's sglang is X): an error as before (its sgl-kernel is built for torch Y
      and fails to load beside torch Z);
    - another SGLang is installed (``--sglang 0.5.23`` against a dump of an older install), or SGLang is shown as not
      installed (live "not installed", check_env "Module Not Found"): a warning, installing release X brings the
      torch it pins (pip replaces torch Z);
    - the record does not show SGLang at all (a vLLM collect_env, a prose paste): a warning as well (installing is
      the case the record shows), with a note that the error case (X already installed beside torch Z) could not
      be told.

    The release's pin is told from an installed package's ``Requires-Dist`` pin (also MTP209) by its evidence
    (:data:`~mtp_audit.engines.sglang.kernels.PIN_SOURCE`); the preflight read the pins of the release audited here.
    """
    import dataclasses

    from mtp_audit.engines.sglang.kernels import PIN_SOURCE

    pkg = ctx.machine.facts.package("sglang") if ctx.machine is not None else None
    installed = pkg.value if pkg is not None and pkg.present else None
    audited = ctx.release.version
    if pkg is None or not audited or (installed and str(installed) == str(audited)):
        return report
    shown_absent = (pkg.missing or "").startswith("not installed")
    why = (f" (a warning for this launch: the machine has sglang {installed} installed, not {audited}; installing sglang "
           f"{audited} brings the torch it pins)" if installed else
           " (a warning: SGLang not installed; installing it replaces torch)" if shown_absent else
           " (a warning: no SGLang recorded; installing it replaces torch)")
    out, relaxed = [], False
    for f in report.findings:
        if f.rule_id == "MTP209" and f.severity >= Severity.ERROR and any(e.label == PIN_SOURCE for e in f.evidence):
            f = dataclasses.replace(f, severity=Severity.WARNING, message=f.message + why)
            relaxed = True
        out.append(f)
    gaps = report.gaps
    if relaxed and not installed and not shown_absent:
        gaps += (Gap("preflight", f"whether sglang {audited} is already installed beside that torch is not shown ({pkg.missing}): "
                     "if it is, its sgl-kernel fails to load (MTP209 would be an error)", None, False, Q.STACK),)
    return dataclasses.replace(report, findings=tuple(out), gaps=gaps)


def _checkpoint_of(analyzers: Analyzers, path: str | None, flag: str) -> tuple[CheckpointAnswer | None, Report | None, Gap | None]:
    """``(typed checkpoint answer, report, gap)`` of a model path the command gives (nothing for ``None``); an
    unreachable hub id gives a report with no facts, so no answer."""
    if path is None:
        return None, None, None
    report, gap = analyzers.checkpoint(path, flag)
    return checkpoint_answer(report), report, gap


def _draft_gaps(ctx: Ctx, dp: str, draft_ck: CheckpointAnswer | None, report_gaps: list[Gap], path_gap: Gap | None) -> None:
    """The draft checkpoint's gaps, blocking only when the algorithm loads a draft (docs/launch.md: a hub repo id with no
    local folder is "could not tell"); a draft path without a draft algorithm is never read. ``report_gaps``: those of
    the draft's checkpoint report, said with the flag and path; ``path_gap``: the one for a path not found here
    (:func:`mtp_audit.launch.analyzers.audit_model`), which already names them."""
    uses = bool(ctx.draft.get("uses_draft"))
    draft_gaps = [Gap(g.analyzer, f"--speculative-draft-model-path {dp}: {g.message}", g.path, g.blocking) for g in report_gaps]
    draft_gaps += [path_gap] if path_gap is not None else []
    ctx.gaps += [Gap(g.analyzer, g.message, g.path, g.blocking and uses) for g in draft_gaps]
    if uses and draft_ck is None and not any(g.blocking for g in draft_gaps):
        ctx.gap(f"--speculative-draft-model-path {dp}: the draft checkpoint was not audited; its architecture and MTP "
                "weights are unknown", blocking=True)


def _rewrites_that_can_apply(ctx: Ctx, report: Report) -> Report:
    """The SGLang report without the MTP101 findings (a rewrite of ``--speculative-algorithm``) whose guard is false
    for this launch: 0.5.23 ``speculative_hook.py:76`` rewrites NEXTN to FROZEN_KV_MTP only ``and is_gemma4_draft``,
    which a Qwen3.5 or GLM-5 checkpoint is not (:func:`mtp_audit.engines.sglang.startup_facts.guard_value` with the
    checkpoint's architecture). A guard that cannot be told keeps the finding."""
    import dataclasses

    known = replay_known(ctx, {})  # the flags hidden: only what the checkpoint and the machine rule out drops a rewrite
    keep = []
    for f in report.findings:
        cond = next((e.value for e in f.evidence if e.label == "condition"), None) if f.rule_id == "MTP101" else None
        if cond and known.get("architecture") and guard_value(cond, known) is False:
            continue
        keep.append(f)
    return dataclasses.replace(report, findings=tuple(keep)) if len(keep) != len(report.findings) else report


def _flows_of_this_command(report: Report, cmd: Any) -> Report:
    """The SGLang report without the MTP106 findings (an explicit value undone downstream) about a flag value this
    command does not pass: for a launch, only ``--speculative-draft-model-quantization unquant`` actually given is
    relevant. The finding's first evidence line is ``"<flag> <literal> -> None"``
    (:func:`mtp_audit.engines.sglang.checks.flow_findings`)."""
    import dataclasses

    keep = []
    for f in report.findings:
        if f.rule_id == "MTP106" and f.evidence:
            flag, _, rest = f.evidence[0].value.partition(" ")
            literal = rest.rsplit(" -> ", 1)[0]
            if cmd.get(flag) != literal:
                continue
        keep.append(f)
    return dataclasses.replace(report, findings=tuple(keep))


__all__ = ["ANALYZER", "Ctx", "Evaluation", "evaluate_launch", "corrected_command", "normalized_argv",
           "collect_env", "ENTRY_LAUNCH_SERVER"]
