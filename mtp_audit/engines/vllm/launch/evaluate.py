"""``mtp-audit launch -- vllm serve ...``: what vLLM will run for the command's speculative config,
cross-checked with the checkpoint and the machine (rules MTP320-MTP328, :mod:`mtp_audit.engines.sglang.launch.rules`).

Inputs flow through the analyzers' public functions only: :func:`mtp_audit.engines.vllm.open_for_launch`
(the vLLM facts of docs/vllm.md, plus ``hf_config_override`` run on this checkpoint's config),
:func:`mtp_audit.checkpoint.audit_checkpoint` (architecture, ``model_type``, MTP layers and tensors) and
:func:`mtp_audit.preflight.preflight` (GPUs and FP4 capability).

``SpeculativeConfig.__post_init__`` is replayed in the order the source has it (0.11.0
``vllm/config/speculative.py:213-353``, 0.33.0 :1236-1499), from the analyzer's facts, not from a table:

1. the validated ``method`` Literal (pydantic checks the field before ``__post_init__`` runs);
2. the MTP alias (``facts.mtp_alias``: ``deepseek_mtp`` ... -> ``mtp``, logged);
3. ``model is None and num_speculative_tokens is not None``: the ``model``-field rewrites
   (``draft-target`` for ``mtp``: the target checkpoint is its own draft; ``ngram`` ...), else vLLM raises
   ``ValueError("num_speculative_tokens was provided but without speculative model.")``;
4. with a model: the draft ``ModelConfig`` is built with ``hf_config_override`` (the draft architecture),
   then the ``auto-detect`` rewrites in source order (skipped for the methods they keep: ``eagle``,
   ``eagle3`` [+ ``dflash``, ``dspark``]); falling through keeps ``draft_model`` (0.33.0 :1495) and
   raises ``NotImplementedError`` for anything else (0.11.0 :348-353 sets ``draft_model`` and raises);
5. the ``num_speculative_tokens`` rules (``facts.n_predict_rules``): the silent default to the draft's
   ``n_predict``, the divisibility ``ValueError``, the reuse-one-layer warning; ``None`` left over is
   ``_verify_args``' ``ValueError("num_speculative_tokens must be provided ...")`` (0.11.0 :520, 0.33.0 :1947);
6. the proposer of the runner (``facts.proposers``; V1 ``gpu_model_runner.py`` vs V2 ``spec_decode``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint.typed import CheckpointAnswer, as_checkpoint_answer, checkpoint_answer
from mtp_audit.engines.base import Analyzers
from mtp_audit.engines.outcome import fmt_bytes, fp4_needed, loc_of, mtp_errors_as_warnings, scope_gaps
from mtp_audit.engines.vllm import release as vllm_release
from mtp_audit.engines.vllm.launch.command import (
    SPEC_SHORTHAND,
    VllmCommand,
    parse_vllm_command,
    rebuild_vllm,
    spec_json,
)
from mtp_audit.engines.vllm.launch.depth import check_depth
from mtp_audit.engines.vllm.launch.lookahead import check_lookahead
from mtp_audit.engines.vllm.launch.methods import NO_DRAFT
from mtp_audit.engines.vllm.launch.spec_config_replay import UNKNOWN, Evaluator, n_predict_of, pydantic_validated
from mtp_audit.errors import InputError
from mtp_audit.preflight.typed import MachineAnswer, machine_answer
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity

ANALYZER = "launch"
#: parallel-size options read by :func:`check_gpus` (``mtp_audit.engines.sglang.launch.parallel`` VLLM_* spellings)
PARALLEL_OPTIONS = ("--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--data-parallel-size", "-dp",
                    "--data-parallel-size-local", "-dpl", "--enable-expert-parallel", "-ep", "--nnodes", "-n")
#: options read by the attention-backend replay (:mod:`mtp_audit.engines.vllm.launch.attn_launch`)
ATTENTION_OPTIONS = ("--attention-backend", "--attention-config", "-ac", "--attention-config.backend", "--kv-cache-dtype",
                     "--block-size", "--dtype", "--decode-context-parallel-size", "-dcp", "--prefill-context-parallel-size", "-pcp")


@dataclass
class VCtx:
    """What one vLLM launch evaluation knows; filled by :func:`evaluate_vllm`."""

    cmd: VllmCommand
    vf: dict[str, Any] | None
    view: Any
    name: str
    #: the typed view of ``vf`` (:class:`mtp_audit.engines.vllm.release.VllmRelease`; built once per evaluation)
    release: vllm_release.VllmRelease = field(default_factory=vllm_release.VllmRelease)
    ck: dict[str, Any] | None = None
    draft_ck: dict[str, Any] | None = None
    #: the typed answers of the target's and the draft's checkpoint audits (:func:`mtp_audit.checkpoint.typed.checkpoint_answer`;
    #: ``None``: not audited), beside the ``ck`` / ``draft_ck`` documents they were written with
    ck_answer: CheckpointAnswer | None = None
    draft_ck_answer: CheckpointAnswer | None = None
    #: the machine's typed answer (:func:`mtp_audit.preflight.typed.machine_answer`; ``None``: no machine facts)
    machine: MachineAnswer | None = None
    draft_path: str | None = None
    draft_is_target: bool = False
    pf: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    env_source: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    method_requested: str | None = None
    method: str | None = None
    method_decided: bool = True
    fails: bool = False
    #: pydantic refused the speculative config before ``__post_init__`` (MTP320 of :func:`_validated`: a
    #: ``num_speculative_tokens`` that is not an integer, a ``method`` outside the validated Literal)
    refused_by_validation: bool = False
    #: the gaps the fact-based steps gave (a method default, an auto-detection test or the draft's n_predict not
    #: decided statically), which the statement-order replay answers instead when it runs
    #: (:func:`mtp_audit.engines.vllm.launch.decide.apply_replay`)
    fact_gaps: list[Gap] = field(default_factory=list)
    draft: dict[str, Any] = field(default_factory=dict)
    k_requested: int | None = None
    k: int | None = None
    n_layers: int | None = None
    proposer: dict[str, Any] = field(default_factory=dict)
    spec_fix: dict[str, Any] | None = None
    spec_changed: bool = False
    model_fix: bool = False
    parallel: dict[str, Any] | None = None
    #: whether the launch runs FP4 kernels (:func:`mtp_audit.engines.outcome.fp4_needed`; ``None``: unknown)
    fp4_needed: bool | None = None
    #: the quantization method vLLM keeps (:func:`mtp_audit.engines.vllm.launch.decide.check_quantization`)
    quant: dict[str, Any] | None = None
    #: the statement-order replay's result (:class:`mtp_audit.engines.vllm.launch.spec_config_replay.SpecReplay`), when it ran
    replay: Any = None
    #: the attention-backend selection (:func:`mtp_audit.engines.vllm.launch.attn_launch.check_attention`)
    attention: dict[str, Any] | None = None

    @property
    def draft_answer(self) -> CheckpointAnswer | None:
        """The typed answer of the checkpoint the draft is loaded from (the target's when it is its own draft)."""
        return self.ck_answer if self.draft_is_target else self.draft_ck_answer

    @property
    def version(self) -> str:
        """``"0.33.0"`` or ``"(version unknown)"``."""
        return str(self.release.version or "(version unknown)")

    def add(self, rule_id: str, message: str, symbol: str, *, evidence: Sequence[Evidence] = (),
            remediation: str | None = None, severity: Severity | None = None) -> None:
        """Append a finding of launch rule ``rule_id``."""
        from mtp_audit.engines.vllm.launch.rules import RULES_BY_ID

        self.findings.append(RULES_BY_ID[rule_id].finding(message, Location(symbol=symbol), evidence=tuple(evidence),
                                                          remediation=remediation, severity=severity))

    def gap(self, message: str, blocking: bool = False, why_open: str | None = None) -> None:
        """Record something the launch audit could not decide; ``why_open``: why it is open (the
        :attr:`~mtp_audit.known.Known.why_open` of the machine fact it rests on)."""
        self.gaps.append(Gap(ANALYZER, message, None, blocking, why_open=why_open))

    def fact_gap(self, message: str, blocking: bool = False) -> None:
        """A gap of a fact-based step that the replay answers instead (:attr:`fact_gaps`)."""
        self.gap(message, blocking)
        self.fact_gaps.append(self.gaps[-1])

    def reject(self, message: str, evidence: Sequence[Evidence] = (), remediation: str | None = None) -> None:
        """MTP320: vLLM refuses the speculative config; the server exits before the model loads."""
        self.fails = True
        self.add("MTP320", f"vLLM {self.version} rejects the speculative config (the server will not start): {message}",
                 "--speculative-config", evidence=evidence, remediation=remediation)


def _arch(ck: CheckpointAnswer | None) -> str | None:
    return ck.architecture if ck is not None else None


def _model_type(ck: CheckpointAnswer | None) -> str | None:
    return ck.model_type if ck is not None else None


def _literal(value: str) -> Any:
    """A rewrite's ``value`` source text as a Python value when it is a literal (``"'mtp'"`` -> ``mtp``)."""
    import ast

    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return None


def resolve(ctx: VCtx, model_path: str | None) -> None:
    """Replay ``SpeculativeConfig.__post_init__`` for ``ctx.cmd.spec`` (module docstring, steps 1-5)."""
    spec = ctx.cmd.spec
    if spec is None:
        return
    if pydantic_validated(ctx.vf):
        _convert_k(ctx, spec)
    fix = dict(spec)
    m, model, k = spec.get("method"), spec.get("model"), spec.get("num_speculative_tokens")
    ctx.method_requested = m if isinstance(m, str) else None
    ctx.k_requested = k if isinstance(k, int) else None
    if not _validated(ctx, m, k, fix):
        return
    alias = ctx.release.mtp_alias
    if isinstance(m, str) and alias is not None and m in alias.members:
        ctx.trace.append(f"method {m} -> mtp (alias, {'logged' if alias.logged else 'silent'}, {alias.location})")
        m = "mtp"
    env = {"self.method": m, "self.model": model, "self.num_speculative_tokens": k, "self.target_model_config": "<target>",
           "self.target_model_config.hf_text_config.model_type": (ctx.ck_answer.text_model_type if ctx.ck_answer else None)
           or _model_type(ctx.ck_answer),
           "self.target_model_config.hf_config.model_type": _model_type(ctx.ck_answer)}
    ev = Evaluator(env, getattr(ctx.view, "predicate_conditions", {}))
    if m is None:
        m = _default_method(ctx, ev)
    if model is None:
        model = _without_model(ctx, ev, m, k, fix, model_path)
        if model is None:
            return
    if m in NO_DRAFT:
        ctx.method = m
        return
    ctx.draft_path = str(model) if model is not None else None
    detect(ctx, ev, m, model)


def _convert_k(ctx: VCtx, spec: dict[str, Any]) -> None:
    """``num_speculative_tokens`` as pydantic hands it to vLLM (:func:`~mtp_audit.engines.vllm.launch.lax_int.lax_int`:
    ``"2"`` is 2), written back into the command's spec for the replay; a value pydantic refuses is left as typed."""
    from mtp_audit.engines.vllm.launch.lax_int import NOT_AN_INT, lax_int

    k = spec.get("num_speculative_tokens")
    n = lax_int(k)
    if n is not NOT_AN_INT and k is not None and type(k) is not int:  # "2", 2.0, True: converted
        spec["num_speculative_tokens"] = n
        ctx.trace.append(f"num_speculative_tokens {k!r} -> {n} (pydantic lax mode)")


def _validated(ctx: VCtx, m: Any, k: Any, fix: dict[str, Any]) -> bool:
    """Step 1: ``num_speculative_tokens`` is an integer and ``method`` is in the validated Literal (pydantic checks both
    before ``__post_init__``); ``False`` after an MTP320."""
    sc = ctx.release.spec_config
    lit, validated, members = sc.method_literal, sc.validated, ctx.release.alias_members
    if k is not None and not isinstance(k, int):
        # a pydantic SpeculativeConfig raises it while validating its fields (pydantic's lax mode, lax_int.py): a
        # ValidationError with no vLLM file:line; a plain dataclass (before 0.24.0) takes any value and fails later
        ctx.reject(("ValidationError: 1 validation error for SpeculativeConfig: num_speculative_tokens: Input should be a "
                    f"valid integer, got {k!r} (pydantic)") if validated else f"num_speculative_tokens={k!r} is not an integer",
                   remediation="give num_speculative_tokens as a JSON number")
        ctx.refused_by_validation = True
        return False
    if isinstance(m, str) and validated and lit is not None and lit.values and m not in lit.values and not method_admits_str(ctx):
        better = "mtp" if "mtp" in lit.values and (m in members or m.endswith("_mtp")) else None
        alias_set = ctx.release.mtp_alias.set if ctx.release.mtp_alias is not None else None
        # pydantic raises it before __post_init__: a ValidationError, no vLLM file:line (the Literal's is in the evidence)
        ctx.reject(f"ValidationError: method {m!r} is not one of the {len(lit.values)} values of the validated {lit.name} Literal "
                   f"declared at {lit.location} (pydantic)" + (f"; {m!r} is in the MTP alias set {alias_set}, which this version's "
                                                   "validator does not accept" if m in members else ""),
                   evidence=[Evidence("Literal", lit.name or "?", loc_of(lit.location)),
                             Evidence("validated by", str(sc.validated_by))],
                   remediation=f'use "method": "{better}"' if better else "use a method this vLLM accepts (mtp-audit vllm lists them)")
        ctx.refused_by_validation = True
        if better:
            fix["method"] = better
            ctx.spec_fix, ctx.spec_changed = fix, True
        return False
    return True


def method_admits_str(ctx: VCtx) -> bool:
    """Whether the ``method`` field's annotation admits any string besides the Literal (0.34.0 ``method: SpeculativeMethod
    | str | None``, ``speculative.py:461``: a ``@field_validator("method")`` decides, which the statement replay runs)."""
    loc = str(ctx.release.spec_config.method_field or "")
    text = getattr(ctx.view, "spec_text", None) or ""
    line = int(loc.rsplit(":", 1)[1]) if loc.rsplit(":", 1)[-1].isdigit() else 0
    rows = text.splitlines()
    ann = rows[line - 1] if 0 < line <= len(rows) else ""
    return bool(re.search(r"^\s*method\s*:[^=]*\|\s*str\b", ann))


def _default_method(ctx: VCtx, ev: Evaluator) -> Any:
    """Step 2b: the method vLLM fills in when none is given (the first ``default-fill`` rewrite whose test holds)."""
    m = None
    for r in ctx.release.rewrites_of("method", ("default-fill",)):
        t = ev.truth(r["condition"])
        if t is True:
            m = _literal(r["value"])
            ctx.trace.append(f"no method given -> {m} ({r['location']}, silent)")
            break
        if t is UNKNOWN:
            ctx.fact_gap(f"the method default at {r['location']} ({r['condition']}) was not decided statically; taken as not applying")
    ev.env["self.method"] = m
    return m


def _without_model(ctx: VCtx, ev: Evaluator, m: Any, k: Any, fix: dict[str, Any], model_path: str | None) -> Any:
    """Step 3: no ``model`` given: the ``model``-field rewrites (the target as its own draft for ``mtp``), or the
    refusals; the draft path, or ``None`` when the replay of this launch ends here."""
    rel = ctx.release
    if k is None:
        ctx.method = m
        if m in NO_DRAFT:
            return None
        n = (ctx.ck_answer.mtp.declared_layers if ctx.ck_answer else None) or 1
        fix["num_speculative_tokens"] = int(n)
        ctx.spec_fix, ctx.spec_changed = fix, True
        ctx.reject(f"method {ctx.method_requested or m!r} without \"num_speculative_tokens\" and without \"model\": no draft config is "
                   "built (the draft = target rewrite needs num_speculative_tokens), so _verify_args raises 'num_speculative_tokens must "
                   "be provided with speculative model unless the draft model config contains an n_predict parameter'",
                   evidence=[Evidence("draft = target needs", "self.model is None and self.num_speculative_tokens is not None",
                                      loc_of(next((r["location"] for r in rel.rewrites_of("model", ("draft-target",))), None)))],
                   remediation=f'add "num_speculative_tokens": {int(n)} (the checkpoint\'s MTP layer count)')
        return None
    hit = next((r for r in rel.rewrites_of("model", ("draft-target", "default-fill")) if ev.truth(r["condition"]) is True), None)
    if hit is None or hit["kind"] != "draft-target":
        ctx.method = m
        if hit is None:
            ctx.reject(f"method {m!r} with num_speculative_tokens but no model: vLLM raises 'num_speculative_tokens was provided but "
                       "without speculative model.'", remediation='add "model", or use "method": "mtp" on a checkpoint with MTP layers')
        return None
    ctx.draft_is_target = True
    ctx.trace.append(f"no model given -> the target checkpoint is the draft ({hit['location']}, silent)")
    q = next((r for r in rel.rewrites_of("quantization", ("inherited-quantization",)) if ev.truth(r["condition"]) is not False), None)
    if q:
        ctx.trace.append(f"quantization inherited from the target ({q['location']})")
    return model_path


def detect(ctx: VCtx, ev: Evaluator, m: str | None, model: Any) -> None:
    """Step 4: the draft architecture after ``hf_config_override`` and the auto-detection ``elif`` chain."""
    dck = ctx.ck if ctx.draft_is_target else ctx.draft_ck
    d = ctx.draft
    d["path"] = ctx.draft_path
    d["is_target"] = ctx.draft_is_target
    mt, arch = _model_type(ctx.draft_answer), _arch(ctx.draft_answer)
    d["from"] = {"model_type": mt, "architecture": arch}
    view = ctx.view.draft(mt, arch) if ctx.view is not None and dck is not None else None
    d["override"] = view
    if dck is None:
        ctx.method, ctx.method_decided = m, False
        ctx.gap(f"draft model {model}: not audited; its architecture, and so the method vLLM detects, are unknown", blocking=True)
        return
    new_mt = view["model_type"] if view else mt
    archs = (view or {}).get("architectures") or ([arch] if arch else [])
    d["model_type"], d["architectures"] = new_mt, archs
    ev.env.update({"self.draft_model_config": "<draft>", "self.draft_model_config.model": str(model),
                   "self.draft_model_config.hf_config.model_type": new_mt, "self.draft_model_config.hf_config": "<hf>",
                   "self.draft_model_config.architectures": list(archs), "self.draft_model_config.hf_config.architectures": list(archs)})
    ev.env.update(getattr(ctx.view, "strings", {}))
    alias = ctx.release.mtp_alias
    if alias is not None and alias.set:
        ev.env[alias.set] = list(alias.members) + ["mtp"]
    native = ctx.view.registered(_arch(ctx.ck_answer) or "") if ctx.view is not None and ctx.ck is not None else None
    impl = ctx.cmd.get("--model-impl")
    ev.env["using_transformers_mtp"] = False if (native is not None and impl in (None, "auto", "vllm")) else UNKNOWN
    detectors = ctx.release.rewrites_of("method", ("auto-detect",))
    kept = detectors[0]["kept"] if detectors else []
    before = m
    if m in kept:
        ctx.trace.append(f"method {m} is kept as given (auto-detection skipped for {', '.join(kept)})")
    else:
        decided = False
        for r in detectors:
            if r["detector"] is None:
                m = _literal(r["value"])
                ctx.trace.append(f"no detector matched -> {m} ({r['location']}, silent)")
                decided = True
                if before is not None and m != before:
                    ctx.add("MTP321", f"vLLM {ctx.version} replaces the explicit method {ctx.method_requested!r} with {m!r}, silently: no "
                            f"auto-detection test matches the draft {model} (model_type {new_mt} after hf_config_override), so the else "
                            f"branch sets {m!r} ({r['location']})", "--speculative-config",
                            evidence=[Evidence("else branch", f"self.method = {r['value']}", loc_of(r["location"])),
                                      Evidence("draft after hf_config_override", f"model_type {new_mt}, architectures {archs}")],
                            remediation=f'check the startup log: vLLM {ctx.version} runs {m!r}', severity=Severity.WARNING)
                break
            t = ev.truth(r["detector"])
            if t is True:
                m = _literal(r["value"])
                ctx.trace.append(f"auto-detected {m}: {r['detector']} ({r['location']}, {'logged' if r['logged'] else 'silent'})")
                decided = True
                if before is not None and m != before:
                    ctx.add("MTP321", f"vLLM {ctx.version} replaces the explicit method {ctx.method_requested!r} with {m!r}, silently: the draft "
                            f"{model} matches {r['detector']} ({r['location']})", "--speculative-config",
                            evidence=[Evidence("auto-detect", r["detector"], loc_of(r["location"])),
                                      Evidence("draft after hf_config_override", f"model_type {new_mt}, architectures {archs}")],
                            remediation=f'write "method": "{m}" to say what runs', severity=Severity.WARNING)
                break
            if t is UNKNOWN:
                ctx.method, ctx.method_decided = None, False
                ctx.fact_gap(f"auto-detection test {r['detector']} ({r['location']}) could not be decided for draft {model}: the method "
                             "vLLM runs is unknown", blocking=True)
                return
        if not decided and m != "draft_model":
            ctx.method = m
            ctx.reject(f"method {m!r} on draft {model} (model_type {new_mt} after hf_config_override): no auto-detection test matches and the "
                       "method is not draft_model, so vLLM raises NotImplementedError('Unsupported speculative method')",
                       evidence=[Evidence("draft model_type", str(new_mt)), Evidence("MTP model types", ", ".join(ctx.release.alias_members))],
                       remediation="use a checkpoint whose model_type vLLM maps to an MTP draft, or drop --speculative-config")
            return
    ctx.method = m


def check_numbers(ctx: VCtx) -> None:
    """Step 5: MTP323 (the ``num_speculative_tokens`` vs MTP-layer rules, ``facts.n_predict_rules``)."""
    if ctx.fails or not ctx.method_decided or ctx.method in NO_DRAFT or ctx.method is None or ctx.cmd.spec is None:
        return
    rules = ctx.release.n_predict_rules
    dck = ctx.ck if ctx.draft_is_target else ctx.draft_ck
    expr = (ctx.draft.get("override") or {}).get("n_predict_from")
    from mtp_audit.engines.vllm.launch.decide import checkpoint_model_type, class_lookup

    lookup = class_lookup(ctx.view, checkpoint_model_type(dck))
    n, how = n_predict_of(expr, dck, lookup) if (ctx.draft.get("override") or {}).get("rewritten") else (None, "hf_config_override writes no n_predict for this draft")
    ctx.n_layers = n
    ctx.draft["n_predict"] = {"value": n, "how": how}
    k = ctx.k_requested
    ev_n = [Evidence("n_predict", how)]
    if n is None and "not decided" in how:
        if k is None:
            ctx.fact_gap(f"num_speculative_tokens is not given and the draft's n_predict is not decided ({how}): vLLM either defaults it "
                         "to n_predict or raises 'num_speculative_tokens must be provided'; give num_speculative_tokens", blocking=True)
        elif k > 1:
            ctx.fact_gap(f"num_speculative_tokens={k}: the draft's n_predict is not decided ({how}); the divisibility rule "
                         f"({rules.divisible_error}) was not checked")
        ctx.k = k
        return
    if k is None:
        if n is None:
            ctx.reject("num_speculative_tokens is not given and the draft config has no n_predict: _verify_args raises 'num_speculative_tokens "
                       "must be provided'", evidence=ev_n, remediation='add "num_speculative_tokens": 1')
            ctx.spec_fix = dict(ctx.spec_fix or ctx.cmd.spec or {}, num_speculative_tokens=1)
            ctx.spec_changed = True
            return
        ctx.k = n
        ctx.add("MTP323", f"num_speculative_tokens is not given: vLLM {ctx.version} sets it to the draft's n_predict = {n} (the checkpoint's MTP layer "
                f"count), silently ({rules.default})", "--speculative-config",
                evidence=ev_n + [Evidence("default", "self.num_speculative_tokens = n_predict", loc_of(rules.default))],
                remediation="", severity=Severity.INFO)
        return
    ctx.k = k
    if k <= 0:
        ctx.reject(f"num_speculative_tokens={k}: _verify_args raises 'Expected num_speculative_tokens to be greater than zero'",
                   remediation='use "num_speculative_tokens": 1')
        return
    if n and k > n and k % n != 0 and rules.divisible_error:
        ctx.reject(f"num_speculative_tokens={k} is not a multiple of the draft's {n} MTP layer(s): 'num_speculative_tokens:{k} must be divisible by "
                   f"n_predict={n}' ({rules.divisible_error})", evidence=ev_n + [Evidence("raise", "ValueError", loc_of(rules.divisible_error))],
                   remediation=f'use "num_speculative_tokens": {n} (or a multiple of {n})')
        ctx.spec_fix = dict(ctx.spec_fix or ctx.cmd.spec or {}, num_speculative_tokens=n)
        ctx.spec_changed = True
        return
    cond = rules.reuse_warning_condition
    if rules.reuse_warning and cond and drafts_with_mtp(ctx):
        ev = Evaluator({"self.num_speculative_tokens": k, "self.draft_model_config.hf_config.model_type": ctx.draft.get("model_type")})
        if ev.truth(cond) is True:
            ctx.add("MTP323", f"num_speculative_tokens={k} with {n if n is not None else 'an unknown number of'} MTP layer(s): vLLM {ctx.version} runs "
                    + ("the same MTP layer" if n == 1 else "the MTP layers") + f" {k} times per step and logs 'Enabling num_speculative_tokens > 1 "
                    f"will run multiple times of forward on same MTP layer, which may result in lower acceptance rate' ({rules.reuse_warning})",
                    "--speculative-config", evidence=ev_n + [Evidence("warning guard", cond, loc_of(rules.reuse_warning))],
                    remediation="", severity=Severity.INFO)


def drafts_with_mtp(ctx: VCtx) -> bool:
    """Whether the draft is an MTP head: the method is ``mtp`` (0.11+), a per-model MTP method (0.9-0.10
    ``deepseek_mtp``), or the draft's ``model_type`` after ``hf_config_override`` is an MTP type (0.8.5 runs
    ``draft_model`` on a ``deepseek_mtp`` draft through V0)."""
    return ctx.method == "mtp" or str(ctx.method or "").endswith("_mtp") or str(ctx.draft.get("model_type") or "").endswith("_mtp")


def check_draft(ctx: VCtx) -> None:
    """MTP322 (the draft architecture after ``hf_config_override`` is not registered) and MTP324 (an MTP
    method, but the draft checkpoint has no MTP tensors)."""
    if not drafts_with_mtp(ctx) or not ctx.method_decided or ctx.fails:
        return
    d = ctx.draft
    view = d.get("override") or {}
    reg = view.get("registered")
    if view.get("conditional") or view.get("dynamic"):
        ctx.gap(f"the draft architecture {view.get('architectures')} depends on a test or an f-string hf_config_override does not decide "
                "statically; which class is built is not certain")
    if reg is not None:
        missing = [a for a, loc in reg.items() if loc is None]
        if missing and not view.get("conditional"):
            ctx.add("MTP322", f"vLLM {ctx.version} rewrites the draft to {', '.join(missing)} ({view.get('location')}), but its model registry "
                    "has no such architecture: the draft model cannot be built", "--speculative-config",
                    evidence=[Evidence("hf_config_override", f"{d['from']} -> {view.get('model_type')} {view.get('architectures')}", loc_of(view.get("location")))],
                    remediation="use a vLLM version that registers the MTP class (mtp-audit vllm lists mtp_classes)")
            ctx.fails = True
    dck = ctx.draft_answer
    s = dck.summary if dck is not None else None
    if s is None:
        return
    if s.mode == "config-only":
        ctx.gap(f"{d.get('path')}: config only, the draft's MTP tensors were not checked", blocking=True)
        return
    if s.mtp_tensors == 0:
        declared = s.mtp_layers_declared or 0
        ctx.add("MTP324", f"method {ctx.method} loads an MTP draft from {d.get('path')}" + (" (the target itself)" if ctx.draft_is_target else "")
                + ", which has no MTP tensors" + (f" although config.json declares {declared} MTP layer(s)" if declared else "")
                + (f" ({s.tensors:,} tensors checked)" if isinstance(s.tensors, int) else "") + ": the draft has no weights to load",
                "--speculative-config", evidence=[Evidence("MTP tensors", "0"), Evidence("architecture", str(_arch(dck)))],
                remediation="drop --speculative-config (the corrected command does), or use a checkpoint that ships its MTP weights")
        ctx.fails = True
        ctx.spec_fix, ctx.spec_changed = None, True


def pick_proposer(ctx: VCtx) -> None:
    """Step 6: the runner (``VLLM_USE_V2_MODEL_RUNNER``, ``facts.runner``) and the proposer class for the method."""
    rel = ctx.release
    if ctx.method is None or not ctx.method_decided or ctx.fails:
        return
    if ctx.replay is not None and getattr(ctx.replay, "linked", False):
        _speculator_of_class(ctx)
        return
    runner = rel.runner
    setting = ctx.env.get("VLLM_USE_V2_MODEL_RUNNER")
    oracle = rel.v1_oracle
    if oracle is not None:
        # 0.8-0.10: EngineArgs._is_v1_supported_oracle reads the *given* method (before __post_init__) and falls back
        # to the V0 engine for any other (0.8.5 vllm/engine/arg_utils.py:1422-1440, _raise_or_fallback :1649)
        asked = ctx.method_requested if ctx.method_requested is not None else (ctx.cmd.spec or {}).get("model")
        if asked not in oracle.accepted:
            v1_forced = str(ctx.env.get("VLLM_USE_V1", "")).strip().lower() in ("1", "true")
            if v1_forced:
                ctx.reject(f"VLLM_USE_V1=1 with method {asked!r}, which the V1 oracle does not accept ({oracle.location}): "
                           "NotImplementedError('VLLM_USE_V1=1 is not supported with Speculative Decoding')",
                           remediation="unset VLLM_USE_V1 (vLLM then falls back to V0)")
                return
            v0 = rel.v0_spec_decode
            mtp = ctx.draft.get("model_type") == "deepseek_mtp"
            ctx.proposer = {"runner": "v0", "why": f"the V1 oracle accepts only {', '.join(oracle.accepted)} ({oracle.location}); "
                                                   "vLLM logs 'Falling back to V0'",
                            "v0": {"class": "SpecDecodeWorker + MultiStepWorker" + (" (MTP: draft model_type deepseek_mtp)" if mtp else ""),
                                   "location": v0, "unless": []}}
            if v0 is None:
                ctx.gap("the V0 spec-decode worker (vllm/spec_decode/spec_decode_worker.py) was not found: the V0 proposer is unknown")
            return
    if not runner.v2_runner_exists:
        which, why = "v1", "this vLLM has no V2 model runner"
    elif setting is not None and runner.env:
        which = "v2" if setting.strip().lower() in ("1", "true") else "v1"
        why = f"VLLM_USE_V2_MODEL_RUNNER={setting}"
    elif str(runner.default or "").startswith("v1"):
        which, why = "v1", f"VLLM_USE_V2_MODEL_RUNNER default {runner.env_default}"
    else:
        which, why = "auto", f"{runner.default} ({runner.auto_location})"
    out: dict[str, Any] = {"runner": which, "why": why}
    for r in ("v1", "v2") if which == "auto" else (which,):
        chain = rel.proposers_of(r, ctx.method)
        env = {"self.method": ctx.method, "self.draft_model_config": "<draft>", "self.speculative_config": "<spec>",
               "self.draft_model_config.hf_config.model_type": ctx.draft.get("model_type"),
               "self.draft_model_config.hf_config": "<hf>", "self.num_speculative_tokens": ctx.k,
               }
        dck = ctx.draft_answer
        if dck is not None and str(dck.mtp.declared_by or "").rsplit("/", 1)[-1] == "num_nextn_predict_layers":
            env["self.draft_model_config.hf_config.num_nextn_predict_layers"] = dck.mtp.declared_layers
        ev = Evaluator(env, getattr(ctx.view, "predicate_conditions", {}))
        picked, maybe = None, []
        for p in chain:
            when = p.get("when") or "always"
            if when == "always":
                picked = p
                break
            test = when[3:] if when.startswith("if ") else when
            test = re.sub(r"\b(self\.)?speculative_config\.", "self.", test)
            t = ev.truth(test)
            if t is True or (t is UNKNOWN and not ("use_" in test or "method" in test)):
                # a gate unrelated to the method (0.11.0 ``if self.speculative_config and get_pp_group().is_last_rank``)
                picked = p
                break
            if t is UNKNOWN:
                maybe.append(p)
        out[r] = {"class": picked["class"] if picked else None, "location": picked["location"] if picked else None,
                  "unless": [f"{p['class']} {p['when']} ({p['location']})" for p in maybe]}
        if picked is None and not maybe:
            _no_proposer(ctx, rel, r, which)
    ctx.proposer = out


def _no_proposer(ctx: VCtx, rel: vllm_release.VllmRelease, r: str, which: str) -> None:
    """Runner ``r`` dispatches no proposer for the method: could not tell when its dispatch cannot be read
    (:func:`dispatch_unread`), else MTP320 unless the runner is chosen automatically and the other one has it."""
    if which == "auto" and _other_runner_has(rel, r, ctx.method):
        # with the runner chosen automatically, a method the V2 runner lacks runs on V1 (0.24.0 vllm/config/vllm.py:522-548
        # use_v2_model_runner falls back, logged); only a method neither runner dispatches is refused
        return
    unread = dispatch_unread(rel, r)
    if unread is not None:
        # the file that would say which proposer runs is gone or has a shape the scan does not know: that is "could
        # not tell", never "vLLM refuses" (0.34.0 has no gpu_model_runner.py)
        ctx.gap(f"could not tell: vLLM {ctx.version} moved the proposer dispatch ({unread}): which proposer runs method "
                f"{ctx.method!r}, and whether the {r.upper()} runner has one, is not decided", blocking=True)
        return
    ctx.reject(f"the {r.upper()} runner has no proposer for method {ctx.method!r}",
               evidence=[Evidence(f"{r} dispatch", ", ".join(sorted(rel.dispatch(r))) or "none")],
               remediation="use a method this vLLM's runner dispatches (mtp-audit vllm lists proposers)")


def _speculator_of_class(ctx: VCtx) -> None:
    """The speculator of a release that names it in each ``SpeculatorConfig`` class (0.34.0: the V2 runner's
    ``init_speculator`` resolves ``speculative_config.speculator_config.speculator_class`` by qualname and raises
    ``NotImplementedError("<method> is not supported yet.")`` when a class names none,
    ``vllm/v1/worker/gpu/spec_decode/__init__.py:18-48``)."""
    from mtp_audit.engines.code.statements import Obj

    cls = ctx.replay.final("speculator_config")
    qual = cls.get("speculator_class") if isinstance(cls, Obj) else UNKNOWN
    where = f"{cls.get('__qualname__')}.speculator_class" if isinstance(cls, Obj) else None
    if isinstance(qual, str):
        ctx.proposer = {"runner": "v2", "why": f"{cls.name} names it (speculator_class); the V2 runner resolves it by qualname",
                        "v2": {"class": qual.rsplit(".", 1)[-1], "location": where, "unless": []}}
    elif qual is None:
        ctx.reject(f"{cls.name} names no speculator_class, so the model runner's init_speculator raises NotImplementedError("
                   f"'{ctx.method} is not supported yet.')", evidence=[Evidence("speculator config", str(cls.get("__qualname__")))],
                   remediation="use a method whose SpeculatorConfig names a speculator (mtp-audit vllm lists them)")
    else:
        ctx.gap(f"could not tell: which speculator class vLLM {ctx.version} builds for method {ctx.method!r} (the replay did not "
                "decide its SpeculatorConfig class)", blocking=False)


#: the runner files :func:`pick_proposer` reads a proposer dispatch from (``facts.vllm.files`` roles)
DISPATCH_FILES = {"v1": ("runner_v1", "vllm/v1/worker/gpu_model_runner.py"), "v2": ("runner_v2", "vllm/v1/worker/gpu/spec_decode/__init__.py")}


def dispatch_unread(release: vllm_release.VllmRelease, runner: str) -> str | None:
    """Why the proposer dispatch of ``runner`` (``"v1"``/``"v2"``) cannot be read from this tree, or ``None`` when it
    was: its file is not in the tree (0.34.0 removed ``vllm/v1/worker/gpu_model_runner.py``), or the file constructs no
    ``XProposer(...)`` / ``XSpeculator(...)`` by name for any method (0.34.0's ``init_speculator`` resolves
    ``speculator_class`` by qualname, ``vllm/v1/worker/gpu/spec_decode/__init__.py:18-48``)."""
    role, default = DISPATCH_FILES[runner]
    path = release.files.get(role)
    if path is None:
        return f"{default} is not in this tree"
    if not release.dispatch(runner):
        return f"{path} constructs no proposer class by name"
    return None


def _other_runner_has(release: vllm_release.VllmRelease, runner: str, method: Any) -> bool:
    """Whether the other model runner (V1 for V2 and back) dispatches a proposer for ``method``."""
    return bool(release.proposers_of("v1" if runner == "v2" else "v2", method))


def check_unused(ctx: VCtx) -> None:
    """MTP325: the checkpoint carries MTP heads but the command has no speculative config (not said when the command
    gives one that vLLM refuses: MTP320 says why it does not start)."""
    if ctx.cmd.spec is not None or ctx.ck_answer is None or (ctx.fails and ctx.cmd.spec_sources):
        return
    s = ctx.ck_answer.summary
    n = s.mtp_tensors or 0
    layers = s.mtp_layers_found or s.mtp_layers_declared or 1
    if n > 0:
        b = ctx.ck_answer.mtp.bytes.value
        ctx.add("MTP325", f"the checkpoint carries {n:,} MTP tensors in {layers} layer(s)" + (f" ({fmt_bytes(b)})" if b else "")
                + " but the command has no --speculative-config: vLLM skips them and decodes one token per step", "--speculative-config",
                evidence=[Evidence("MTP layers", str(layers)), Evidence("MTP tensors", f"{n:,}")],
                remediation=f"add --speculative-config '{spec_json({'method': 'mtp', 'num_speculative_tokens': int(layers)})}'")


#: the names the vLLM analyzer records (``facts.vllm.env_vars``: docs/vllm.md; the same filter as its scanner), so a
#: launch variable matching it that the facts do not list is one this vLLM does not define
ENV_INTEREST = re.compile(r"SPEC|MTP|EAGLE|DRAFT|NGRAM|FP4|MOE|MARLIN|USE_V1$|V2_MODEL_RUNNER|NVFP4|MXFP4|TRTLLM|CUTLASS_MOE|DEEPEP")


def check_env(ctx: VCtx) -> None:
    """MTP326: a ``VLLM_*`` spec-decode / FP4 / MoE variable of the launch that this vLLM does not define (0.24 retired
    ten FP4/MoE variables in favour of ``--moe-backend``; an old setting then only warns)."""
    if ctx.vf is None:
        return
    defined = ctx.release.env_var_names
    for name in sorted(ctx.env):
        if not name.startswith("VLLM_") or not ENV_INTEREST.search(name) or name in defined:
            continue
        where = ctx.release.unknown_env_check
        hard = bool(where) and "--fail-on-environ-validation" in ctx.cmd.options and "--no-fail-on-environ-validation" not in ctx.cmd.options
        # 0.33.0 vllm/platforms/interface.py:1463-1466: validate_environ(hard_fail) raises with --fail-on-environ-validation
        ctx.add("MTP326", f"{name}={ctx.env[name]} is not defined by vLLM {ctx.version} (vllm/envs.py): "
                + (f"with --fail-on-environ-validation vLLM raises 'Unknown vLLM environment variable detected' ({where}) and the "
                   "server does not start" if hard else "it has no effect"
                   + (f"; vLLM logs 'Unknown vLLM environment variable detected' ({where})" if where else ", silently")),
                f"env:{name}", evidence=[Evidence("defined spec/FP4/MoE variables", f"{len(defined)} in vllm/envs.py")],
                severity=Severity.ERROR if hard else None,
                remediation=f"remove {name}" + ("; FP4/MoE kernels are chosen with --moe-backend from 0.24 on" if re.search("MOE|FP4", name) else ""))


def check_gpus(ctx: VCtx) -> None:
    """MTP328: the vLLM command needs more GPUs on this node than are visible. GPUs needed come from
    :func:`mtp_audit.engines.sglang.launch.parallel.plan_vllm` (``tp x pp / nnodes`` x local DP ranks: 0.20.0 ``vllm/config/parallel.py``
    ``world_size = pp x tp``); the visible ones are the preflight's GPUs after a ``CUDA_VISIBLE_DEVICES`` of the launch
    (:func:`mtp_audit.preflight.visible.cuda_visible`, CUDA's rules). Unknown GPUs with more than one needed: a blocking gap."""
    from mtp_audit.engines.vllm.launch.parallel import plan_vllm
    from mtp_audit.preflight.visible import machine_visible

    plan = plan_vllm(ctx.cmd.get)
    ctx.parallel = plan.to_dict()
    if plan.invalid:
        ctx.gap(f"parallel sizes {', '.join(plan.invalid)} are not integers: the GPUs needed were not computed")
        return
    machine = ctx.machine.facts if ctx.machine is not None else None
    vis = machine_visible(machine, ctx.env, ctx.env_source) if machine is not None else None
    if vis is not None and ctx.env_source.get("CUDA_VISIBLE_DEVICES") not in ("command", "--env"):
        vis = replace(vis, source="", notes=())  # the machine's own variable: already applied, nothing to say
    hides_all = vis is not None and vis.value is not None and not vis.value.strip()
    if vis is None or (machine is not None and not machine.gpu_list.present and not hides_all):
        if _too_few_in_command(ctx, plan):
            return
        if plan.needed > 1:
            ctx.gap(f"the command needs {plan.needed} GPUs on this node ({plan.formula}) but the GPUs are unknown "
                    f"({(ctx.machine.gpu_list_missing if ctx.machine else None) or 'no GPU listed'})", blocking=True,
                    why_open=ctx.machine.gpu_count.why_open if ctx.machine else None)
        return
    covered = vis.covers(plan.needed)
    if covered is None and vis.listed != "exact":
        ctx.gap(f"GPU count: the command needs {plan.needed} GPU(s) on this node ({plan.formula}); {vis.describe_count()} are "
                "visible: could not tell (give the whole nvidia-smi output, or nvidia-smi -q / --query-gpu)", blocking=True)
    elif covered is False:
        tp_opt = next((o for o in ("--tensor-parallel-size",) if o in ctx.cmd.options), "--tensor-parallel-size")
        ctx.add("MTP328", f"the command needs {plan.needed} GPU(s) on this node ({plan.formula}) but {vis.count} "
                f"{'is' if vis.count == 1 else 'are'} visible: vLLM {ctx.version} cannot place its {plan.needed} workers and stops "
                "before loading the model", tp_opt,
                evidence=[Evidence("needs", plan.formula), Evidence("visible", str(vis.count))] + [Evidence("CUDA_VISIBLE_DEVICES", n) for n in vis.notes],
                remediation=(f"lower --tensor-parallel-size to {vis.count}" if vis.count and plan.pp == 1 and plan.replicas == 1 and plan.tp > vis.count
                             else "lower the parallel sizes") + ", or run on a node with enough GPUs")
    elif covered is None:
        ctx.gap(f"the command needs {plan.needed} GPU(s) ({plan.formula}); {vis.count} are surely visible and the rest of "
                f"CUDA_VISIBLE_DEVICES could not be matched ({'; '.join(vis.notes)})", blocking=True)


def _too_few_in_command(ctx: VCtx, plan: Any) -> bool:
    """MTP328 from the command alone, when the machine's GPUs are unknown: its own ``CUDA_VISIBLE_DEVICES`` shows at
    most :func:`mtp_audit.preflight.visible.visible_at_most` devices whatever the machine. vLLM counts the devices torch
    sees after the variable (0.33.0 vllm/platforms/cuda.py:634-635 ``device_count`` -> ``_cuda_device_count_stateless``,
    :58-80, torch's NVML count) and refuses a single-node world larger than that (vllm/config/parallel.py:1066-1077
    "World size (N) is larger than the number of available GPUs (M) in this node"). Returns whether it was added."""
    from mtp_audit.preflight.visible import visible_at_most

    src, value = ctx.env_source.get("CUDA_VISIBLE_DEVICES"), ctx.env.get("CUDA_VISIBLE_DEVICES")
    most = visible_at_most(value) if value is not None and src in ("command", "--env") else None
    if most is None or most >= plan.needed:
        return False
    ctx.add("MTP328", f"the command needs {plan.needed} GPU(s) on this node ({plan.formula}) but CUDA_VISIBLE_DEVICES={value} "
            f"({src}) leaves at most {most} visible on any machine: vLLM {ctx.version} cannot place its {plan.needed} workers "
            "and stops before loading the model", "--tensor-parallel-size",
            evidence=[Evidence("needs", plan.formula),
                      Evidence("refused at", "vllm 0.33.0 vllm/config/parallel.py:1066-1077 (device_count: vllm/platforms/cuda.py:634-635)"),
                      Evidence("CUDA_VISIBLE_DEVICES", f"{value} ({src}): at most {most} device(s), each entry names at most one")],
            remediation=(f"lower --tensor-parallel-size to {most}, or " if most and plan.pp == 1 and plan.replicas == 1 and plan.tp > most
                         else "lower the parallel sizes, or ") + f"list at least {plan.needed} GPUs in CUDA_VISIBLE_DEVICES")
    return True


def check_command(ctx: VCtx) -> None:
    """MTP320 for what vLLM's parser and ``create_speculative_config`` reject."""
    for kind, tok, msg in ctx.cmd.problems:
        if kind == "dotted-replaces-json":
            ctx.gap(msg)
            continue
        if kind == "positional-ignored":
            ctx.model_fix = True
            ctx.add("MTP327", f"{msg} (vllm/entrypoints/cli/serve.py copies it; the api_server entry point does not): vLLM {ctx.version} "
                    "serves ModelConfig's default model (Qwen/Qwen3-0.6B in 0.11.0 and 0.33.0, vllm/config/model.py), not "
                    f"{tok}; the rest of this report is about {tok}, the model meant", "argv",
                    evidence=[Evidence("positional", tok), Evidence("entry point", ctx.cmd.entry)],
                    remediation=f"write --model {tok} (the corrected command does), or use vllm serve {tok}")
            continue
        if kind == "expected-one-argument":
            ctx.fails = True
            ctx.add("MTP320", f"vLLM {ctx.version}'s argument parser exits before the server starts: '{msg}' ({tok} takes one value "
                    "and the command gives none: it ends the command or another option follows it)", tok,
                    evidence=[Evidence("option", tok)], remediation=f"give {tok} its value, or remove it")
            continue
        if kind == "no-model":  # vllm serve's model_tag is optional (nargs='?'); ModelConfig.model has a default
            ctx.add("MTP327", f"{msg}: vLLM {ctx.version} starts and serves ModelConfig's default model (Qwen/Qwen3-0.6B from "
                    "0.11.0, vllm/config/model.py; facebook/opt-125m in 0.8.5-0.9.2), which has no MTP head: the speculative "
                    "config and this report's checkpoint questions are about no checkpoint you meant", "argv",
                    evidence=[Evidence("entry point", ctx.cmd.entry)], remediation="give the model: vllm serve MODEL ...")
            continue
        ctx.reject(msg, evidence=[Evidence("token", tok)],
                   remediation="drop the --spec-* option (the value is in --speculative-config already)" if kind == "mutually-exclusive"
                   else "write --speculative-config as a JSON object, e.g. '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'")
        if kind == "mutually-exclusive":
            ctx.spec_fix = dict(ctx.cmd.spec or {})
            ctx.spec_changed = True
    if not ctx.release.spec_flags and ctx.vf is not None:
        for opt in ("--spec-method", "--spec-model", "--spec-tokens"):
            if opt in ctx.cmd.options:
                ctx.fails = True
                ctx.add("MTP320", f"vLLM {ctx.version} has no {opt} option (the --spec-* shorthand appears in later versions): 'unrecognized "
                        f"arguments: {opt}'", opt, remediation="use --speculative-config JSON instead")
    read = ("--model", "--speculative-config", "--model-impl", "--fail-on-environ-validation", "--no-fail-on-environ-validation",
            *SPEC_SHORTHAND, *PARALLEL_OPTIONS, *ATTENTION_OPTIONS)
    others = sorted(o for o in ctx.cmd.options if o not in read)
    foreign = [o for o in others if o in FOREIGN_OPTIONS]
    for opt in foreign:
        ctx.fails = True
        ctx.add("MTP331", f"{opt} is {FOREIGN_OPTIONS[opt]}: vLLM {ctx.version} exits with 'unrecognized arguments: {opt}'", opt,
                evidence=[Evidence("option", opt)])
    _check_declared(ctx, [o for o in others if o not in foreign])
    spec = ctx.cmd.spec or {}
    if "tensor_parallel_size" in spec:
        ctx.gap("speculative config key tensor_parallel_size: newer vLLM rejects it ('Please pass draft_tensor_parallel_size'); not checked for this version")


def _check_declared(ctx: VCtx, others: list[str]) -> None:
    """The options no cross-check reads, held against the option names this release's parser files declare
    (:func:`mtp_audit.engines.vllm.launch.options.undeclared`): one it does not declare may be argparse's
    'unrecognized arguments' exit, so whether the server starts cannot be told (a blocking gap); without the files,
    a note as before."""
    from mtp_audit.engines.vllm.launch.options import PARSER_FILES, undeclared

    if not others:
        return
    missing = undeclared(ctx.view.sources, others) if ctx.view is not None and hasattr(ctx.view, "sources") else None
    if missing is None:
        ctx.gap(f"vLLM's option table is not read: {', '.join(others[:8])}{' ...' if len(others) > 8 else ''} not checked "
                "(a misspelt or removed option is not reported)")
    elif missing:
        ctx.gap(f"whether vLLM {ctx.version} starts: {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}: not declared "
                f"in its argument parser ({', '.join(r for r in PARSER_FILES if ctx.view.sources.get(r))}): argparse exits "
                "with 'unrecognized arguments' unless it is an unambiguous prefix of an option or made some other way",
                blocking=True)


_SGLANG = "SGLang's option (vLLM reads --speculative-config JSON for speculative decoding)"
#: Other engines' options people paste into vLLM commands; none is a vLLM option in the releases checked (0.8.5-0.33.0).
FOREIGN_OPTIONS: dict[str, str] = {
    "--speculative-algorithm": _SGLANG, "--speculative-num-steps": _SGLANG, "--speculative-eagle-topk": _SGLANG,
    "--speculative-num-draft-tokens": _SGLANG, "--speculative-draft-model-path": _SGLANG, "--speculative-draft-model": _SGLANG,
    "--model-path": "SGLang's option (vLLM takes the model as the first argument or --model)",
    "--tp-size": "SGLang's option (vLLM spells it --tensor-parallel-size or -tp)",
    "--spec-type": "llama.cpp's option (vLLM reads --speculative-config JSON)",
    "--extra_llm_api_options": "TensorRT-LLM's option",
}


@dataclass
class VEvaluation:
    """The result of one vLLM launch evaluation."""

    ctx: VCtx
    reports: list[Report]
    outcome: dict[str, Any]


#: vLLM analyzer warnings the launch decides for its command: MTP401 (an explicit method may be replaced: MTP321 says
#: whether it is) and MTP408 (a lint of the tree's code, nothing the command can change)
DECIDED_BY_LAUNCH = ("MTP401", "MTP408")


def _applies(rule_id: str, ck: CheckpointAnswer | None) -> bool | None:
    """Whether a vLLM tree warning concerns this launch's checkpoint: MTP407 (speculators checkpoints) only when
    its config.json has a ``speculators_config``; MTP410 (enforce_eager forced for DeepSeek-V3.2) only for
    ``model_type`` ``deepseek_v32``. ``None``: not decided here (or the checkpoint was not audited, or has no config)."""
    if ck is None or not ck.config_present:
        return None
    if rule_id == "MTP407":
        return ck.speculators
    if rule_id == "MTP410":
        return "deepseek_v32" in (ck.model_type, ck.text_model_type)
    return None


def tree_errors_relaxed(report: Report, ck: CheckpointAnswer | Mapping[str, Any] | None = None) -> Report:
    """The vLLM analyzer's report with its errors, and the warnings in :data:`DECIDED_BY_LAUNCH`, turned into info:
    they describe the vLLM tree (e.g. MTP402, an alias the validator rejects), and what of them applies to this
    command is reported by the launch checks (MTP320 names the rejected method, MTP321 the replaced one); a tree
    defect the command does not touch cannot stop this launch. MTP407 (speculators checkpoints) and MTP410 (forced
    enforce_eager) become info when the audited checkpoint ``ck`` (its typed answer, or its ``facts["checkpoint"]``
    document) shows they do not concern it (:func:`_applies`); other warnings stay."""
    import dataclasses

    answer = as_checkpoint_answer(ck)

    out = [dataclasses.replace(f, severity=Severity.INFO, message=f.message + " (info for this launch: a fact about the vLLM tree; "
                               "what of it applies to this command is reported by the MTP32x launch checks)")
           if f.severity >= Severity.ERROR or (f.rule_id in DECIDED_BY_LAUNCH and f.severity >= Severity.WARNING) else
           dataclasses.replace(f, severity=Severity.INFO, message=f.message + " (info for this launch: it does not apply to "
                               "this checkpoint)")
           if f.severity >= Severity.WARNING and _applies(f.rule_id, answer) is False else f
           for f in report.findings]
    return dataclasses.replace(report, findings=tuple(out))


def tree_facts_verbose(report: Report) -> Report:
    """The vLLM tree report for a launch: its info findings (facts about the tree, e.g. MTP400-MTP411, that the launch
    checks already turned into what concerns this command) leave the findings list and become the closing section
    "vLLM tree facts" (``facts["vllm"]["closing"]``), which the text report prints only with ``-v``; JSON keeps them there.
    Warnings and errors stay findings."""
    import dataclasses

    info = [f for f in report.findings if f.severity < Severity.WARNING]
    if not info:
        return report
    facts = dict(report.facts)
    vf = dict(facts.get("vllm") or {})
    vf["closing"] = {"title": "vLLM tree facts (not specific to this launch)",
                     "lines": [f"{f.rule_id} {f.location.path or ''}{':' + str(f.location.line) if f.location and f.location.line else ''}: "
                               f"{f.message}" for f in info]}
    facts["vllm"] = vf
    return dataclasses.replace(report, findings=tuple(f for f in report.findings if f.severity >= Severity.WARNING), facts=facts)


def _without_sglang_answer(report: Report) -> Report:
    """A checkpoint report without its "Will SGLang use the MTP heads?" closing (the vLLM launch answers for vLLM)."""
    import dataclasses

    facts = dict(report.facts)
    if isinstance(facts.get("checkpoint"), dict) and "closing" in facts["checkpoint"]:
        facts["checkpoint"] = {k: v for k, v in facts["checkpoint"].items() if k != "closing"}
    return dataclasses.replace(report, facts=facts)


def evaluate_vllm(argv: Sequence[str], *, view: Any, view_gap: Gap | None, analyzers: Analyzers, env: Mapping[str, str] | None,
                  environ: Mapping[str, str] | None, cwd: Path, _depth: int = 0) -> VEvaluation:
    """Parse, audit and cross-check one vLLM command against one vLLM (``view``, from :meth:`mtp_audit.engines.vllm.launch.VllmEngine.release`).

    ``analyzers`` audits the checkpoints the command names and the machine. A corrected command is evaluated once more
    before it is shown (``outcome["corrected_check"]``).
    """
    from mtp_audit.engines.vllm.launch.outcome import build_vllm_outcome

    vf = dict(view.report.facts.get("vllm") or {}) if view is not None else None
    release = vllm_release.VllmRelease.from_facts(vf)
    cmd = parse_vllm_command(list(argv), spec_shorthand=bool(release.spec_flags) if vf is not None else True)
    ctx = VCtx(cmd=cmd, vf=vf, view=view, name=view.report.targets[0].name if view is not None else "no vLLM", release=release)
    if view_gap is not None:
        ctx.gaps.append(view_gap)
    _launch_env(ctx, environ, env)
    reports = _audit_target(ctx, analyzers)
    check_command(ctx)
    pf = _machine(ctx, argv, analyzers)
    _resolve_speculative(ctx, analyzers, cwd)
    pick_proposer(ctx)
    check_lookahead(ctx, cwd)
    check_unused(ctx)
    check_env(ctx)
    reports = _machine_and_scope(ctx, pf, reports)
    check_depth(ctx)
    _attention(ctx, cwd)
    corrected = _corrected(ctx, view, view_gap, analyzers, env, environ, cwd) if _depth == 0 else None
    all_findings = [f for r in reports for f in r.findings] + ctx.findings
    all_gaps = [g for r in reports for g in r.gaps] + ctx.gaps
    outcome = build_vllm_outcome(ctx, all_findings, all_gaps, corrected)
    return VEvaluation(ctx, reports, outcome)


def _attention(ctx: VCtx, cwd: Path) -> None:
    """The attention backend vLLM selects for this launch (:func:`mtp_audit.engines.vllm.launch.attn_launch.check_attention`)."""
    from mtp_audit.engines.vllm.launch.attn_launch import check_attention, launch_config

    if ctx.view is None or ctx.cmd.model is None:
        return
    cfg, problem = launch_config(ctx.ck_answer, ctx.cmd.model, cwd)
    draft_cfg = None
    if ctx.draft_path and not ctx.draft_is_target and ctx.draft_path != ctx.cmd.model:
        draft_cfg, _why = launch_config(ctx.draft_ck_answer, ctx.draft_path, cwd)
    from mtp_audit.engines.vllm.launch.decide import quant_config_of

    quant_cfg, _where = quant_config_of(ctx.cmd.model, cwd)
    check_attention(ctx, cfg, problem, draft_cfg, quant_cfg)


def _launch_env(ctx: VCtx, environ: Mapping[str, str] | None, env: Mapping[str, str] | None) -> None:
    """The launch's environment: the variables this vLLM reads from the current environment, then the command's
    ``KEY=VALUE`` prefixes, then ``--env`` (each records where it came from)."""
    read = ctx.release.env_var_names
    for k, val in sorted((environ or {}).items()):
        if k in read or k in ("VLLM_USE_V2_MODEL_RUNNER", "VLLM_USE_V1", "VLLM_ATTENTION_BACKEND", "VLLM_MLA_DISABLE"):
            ctx.env[k], ctx.env_source[k] = val, "environment"
    for k, val in ctx.cmd.env.items():
        ctx.env[k], ctx.env_source[k] = val, "command"
    for k, val in (env or {}).items():
        ctx.env[k], ctx.env_source[k] = val, "--env"


def _audit_target(ctx: VCtx, analyzers: Analyzers) -> list[Report]:
    """The served checkpoint's report (its SGLang closing removed), recorded in ``ctx.ck``."""
    reports: list[Report] = []
    if ctx.cmd.model is not None:
        r, g = analyzers.checkpoint(ctx.cmd.model, "model")
        if r is not None:
            reports.append(_without_sglang_answer(r))
            ctx.ck = dict(r.facts.get("checkpoint") or {}) or None
            ctx.ck_answer = checkpoint_answer(r) if ctx.ck is not None else None
        if g is not None:
            ctx.gaps.append(g)
    return reports


def _audit_draft(ctx: VCtx, analyzers: Analyzers, cwd: Path) -> None:
    """The draft checkpoint of ``speculative_config.model`` when it is another folder than the target (else the target
    is its own draft)."""
    cmd = ctx.cmd
    dm = (cmd.spec or {}).get("model")
    if dm in NO_DRAFT:
        # ``"model": "ngram"`` names a method, not a checkpoint (0.33.0 speculative.py:1241, 0.34.0 :1368)
        return
    if isinstance(dm, str) and cmd.model is not None and dm != cmd.model and (cwd / dm).resolve() != (cwd / cmd.model).resolve():
        r, g = analyzers.checkpoint(dm, "speculative_config.model")
        if r is not None:
            ctx.draft_ck = dict(r.facts.get("checkpoint") or {}) or None
            ctx.draft_ck_answer = checkpoint_answer(r) if ctx.draft_ck is not None else None
            ctx.gaps += [Gap(x.analyzer, f"draft {dm}: {x.message}", x.path, x.blocking) for x in r.gaps]
        if g is not None:
            ctx.gaps.append(g)
    elif isinstance(dm, str):
        ctx.draft_is_target = True


def _resolve_speculative(ctx: VCtx, analyzers: Analyzers, cwd: Path) -> None:
    """What vLLM makes of the speculative config and the quantization: the rewrite facts (trace, MTP321/MTP323), then
    the statement-order replay that decides (:mod:`mtp_audit.engines.vllm.launch.decide`)."""
    from mtp_audit.engines.vllm.launch.decide import apply_replay, check_quantization

    cmd, vf = ctx.cmd, ctx.vf
    if vf is None and cmd.spec is not None:
        ctx.method_decided = False
    elif cmd.spec is not None:
        _audit_draft(ctx, analyzers, cwd)
    n_findings, n_gaps = len(ctx.findings), len(ctx.gaps)
    if cmd.spec is not None and vf is not None and not ctx.fails:
        resolve(ctx, cmd.model)
    check_numbers(ctx)
    check_draft(ctx)
    if vf is not None:
        apply_replay(ctx, cmd.model, n_findings, n_gaps, cwd=cwd)
        check_quantization(ctx, cwd)


def _machine(ctx: VCtx, argv: Sequence[str], analyzers: Analyzers) -> Report:
    """The preflight report (its vLLM checks at this release), its facts in ``ctx.pf`` and its typed answer in
    ``ctx.machine``: run before the speculative replay, which reads the machine's packages (``has_arctic_inference()``)."""
    # the preflight reads the command's FP4/MoE options with vLLM's semantics (mtp_audit.preflight.launch.parse_launch)
    pf = analyzers.preflight(list(argv), engine="vllm", use_engine_analyzer=False,
                            engine_facts={"vllm": {"version": ctx.release.version}})
    ctx.pf = dict(pf.facts.get("preflight") or {})
    ctx.machine = machine_answer(pf)
    return pf


def _machine_and_scope(ctx: VCtx, pf: Report, reports: list[Report]) -> list[Report]:
    """The GPU count, the preflight report ``pf`` (:func:`_machine`), the vLLM tree report, and the gaps scoped to
    what this launch's verdict depends on (:func:`mtp_audit.engines.outcome.scope_gaps`; the launch's own gaps about
    machine facts ``--no-machine`` left unexamined: :func:`mtp_audit.engines.outcome.machine_notes`)."""
    from mtp_audit.engines.outcome import machine_notes

    cmd = ctx.cmd
    if cmd.spec is None and ctx.ck is not None:
        reports = [mtp_errors_as_warnings(r, "vLLM", "--speculative-config") if r.targets and r.targets[0].analyzer == "checkpoint" else r
                   for r in reports]
    check_gpus(ctx)
    reports.append(pf)
    if ctx.view is not None:
        reports.insert(0, tree_facts_verbose(tree_errors_relaxed(ctx.view.report, ctx.ck_answer)))
    # a gap blocks only the question that depends on it: no FP4 kernels -> the FP4 verdict is a note; no speculative
    # config -> the checkpoint's MTP checks are notes
    ctx.fp4_needed = fp4_needed(ctx.ck_answer, (ctx.quant or {}).get("method") or cmd.get("--quantization") or cmd.get("-q"))
    ctx.gaps[:] = machine_notes(ctx.gaps)  # --no-machine: the machine facts not examined are notes
    return scope_gaps(reports, fp4=ctx.fp4_needed, speculative=cmd.spec is not None, spec_flag="--speculative-config")


def _corrected(ctx: VCtx, view: Any, view_gap: Gap | None, analyzers: Analyzers, env: Mapping[str, str] | None,
               environ: Mapping[str, str] | None, cwd: Path) -> tuple[list[str], VEvaluation | None] | None:
    """The corrected command and its own evaluation (``None``: nothing to correct)."""
    cmd = ctx.cmd
    if not (ctx.spec_changed or ctx.model_fix) or cmd.model is None:
        return None
    toks = rebuild_vllm(cmd, ctx.spec_fix, model_option=ctx.model_fix) if ctx.spec_changed else rebuild_vllm(cmd, model_option=True)
    try:
        sub = evaluate_vllm(toks, view=view, view_gap=view_gap, analyzers=analyzers, env=env, environ=environ, cwd=cwd, _depth=1)
    except InputError:
        sub = None
    return toks, sub
