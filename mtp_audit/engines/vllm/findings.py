"""Findings MTP400-MTP411 from one vLLM tree's facts (see :func:`mtp_audit.engines.vllm.audit.link`).

Severity follows consequence (rules' docs): a logged alias is information, a silent override of a
value the user set is a warning, a value the validator rejects although the code would accept it,
or a draft class that is not registered, is an error (the engine fails to start).
"""

from __future__ import annotations

from typing import Any

from mtp_audit.engines.vllm._shared import Evidence, Finding, Location
from mtp_audit.engines.vllm.release import VllmRelease, registered


def loc(text: str | None) -> Location:
    """``"path:line"`` -> :class:`Location` (``None`` -> an empty location)."""
    if not text:
        return Location()
    path, _, line = text.rpartition(":")
    return Location(path=path, line=int(line)) if line.isdigit() else Location(path=text)


def _strip(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


def evaluate(facts: dict[str, Any]) -> list[Finding]:
    """All single-tree findings of ``facts`` (``report.facts["vllm"]``, read through
    :class:`~mtp_audit.engines.vllm.release.VllmRelease`); never raises on partial facts (missing parts give no finding)."""
    out: list[Finding] = []
    release = VllmRelease.from_facts(facts)
    for step in (_alias_findings, _rewrite_findings, _draft_findings, _tree_findings, _proposer_findings):
        step(release, out)
    return out


def _alias_findings(release: VllmRelease, out: list[Finding]) -> None:
    """MTP400 (the MTP alias) and MTP402 (an alias the validated Literal rejects)."""
    from mtp_audit.engines.vllm.rules import BY_ID

    alias, sc = release.mtp_alias, release.spec_config
    lit = sc.method_literal
    if alias is not None:
        how = "logged (a deprecation warning)" if alias.logged else "silent"
        out.append(BY_ID["MTP400"].finding(
            f"method {', '.join(alias.members)} is an alias: vLLM rewrites it to 'mtp' (EAGLE machinery, the target checkpoint as "
            f"its own draft); the rewrite is {how}", loc(alias.location),
            evidence=[Evidence("alias set", f"{alias.set or 'literal'} ({alias.set_kind or 'tuple'})", loc(alias.set_location)),
                      *([Evidence("log call", "logger.warning before the write", loc(alias.location))] if alias.logged else [])]))
        missing = release.lints.aliases_not_in_literal
        if missing and sc.validated and lit is not None:
            out.append(BY_ID["MTP402"].finding(
                f"method {', '.join(missing)} is in the alias set but not in the validated {lit.name} Literal: "
                f"{{\"method\": \"{missing[0]}\"}} fails validation before the alias code can run", loc(lit.location),
                evidence=[Evidence("alias set", ", ".join(alias.members), loc(alias.set_location)),
                          Evidence("validated by", sc.validated_by or "pydantic")]))


def _rewrite_findings(release: VllmRelease, out: list[Finding]) -> None:
    """MTP401 (silent auto-detection), MTP403 (draft = target, inherited quantization), MTP410 (forced enforce_eager)."""
    from mtp_audit.engines.vllm.rules import BY_ID

    for r in release.rewrites:
        if r["field"] == "method" and r["kind"] == "auto-detect" and not r["logged"]:
            to = _strip(r["value"])
            kept = ", ".join(r["kept"]) or "nothing"
            det = r["detector"] or "no earlier detector matched (fallback)"
            out.append(BY_ID["MTP401"].finding(
                f"an explicit method other than {kept} is silently replaced by '{to}' when {det}", loc(r["location"]),
                evidence=[Evidence("keeps only", kept, loc(r["test_location"])), Evidence("condition", r["condition"] or "(always)")]))
        elif r["kind"] in ("draft-target", "inherited-quantization"):
            what = "the draft model is the target checkpoint" if r["kind"] == "draft-target" else \
                "the draft's quantization is copied from the target"
            out.append(BY_ID["MTP403"].finding(
                f"{what} ({r['field']} = {r['value']}) when {r['condition'] or 'always'}; "
                f"{'logged' if r['logged'] else 'silent'}", loc(r["location"]),
                evidence=[Evidence("condition", r["condition"] or "(always)", loc(r["test_location"]))]))
        elif r["kind"] == "forced" and r["field"] == "enforce_eager" and r["value"] == "True" and not r["logged"]:
            out.append(BY_ID["MTP410"].finding(
                f"enforce_eager is forced to True when {r['condition']}: a user's enforce_eager=false (CUDA graphs) is ignored, silently",
                loc(r["location"]), evidence=[Evidence("condition", r["condition"], loc(r["test_location"]))]))


def _draft_findings(release: VllmRelease, out: list[Finding]) -> None:
    """MTP404 (hf_config_override's rewrites) and MTP405 (a draft architecture the registry lacks)."""
    from mtp_audit.engines.vllm.rules import BY_ID

    chains = release.draft_chains
    if chains:
        shown = [c for c in chains if not c["value"].endswith("_mtp")][:6]
        ev = [Evidence(f"{c['key']} {c['value']}", f"{c['model_type'] or '(model_type kept)'} / {', '.join(c['architectures'] or ['(architectures kept)'])}"
                       + (" (conditional)" if c["conditional"] else "") + (" (dynamic)" if c["dynamic"] else ""), loc(c["arch_location"] or c["location"]))
              for c in shown]
        link = release.override_link
        how = {"direct": "passed directly as hf_overrides", "composed": "composed by compose_draft_hf_overrides"}.get(str(link.get("how")), "link not proven")
        out.append(BY_ID["MTP404"].finding(
            f"hf_config_override rewrites the draft config for {len(chains)} model types / architectures ({how}); "
            "every rewrite is silent", loc(release.override_location),
            evidence=ev + [Evidence("applied at", link.get("value") or "?", loc(link.get("location")))]))
        for c in chains:
            for a, where in registered(c).items():
                if where is None and not c["dynamic"]:
                    out.append(BY_ID["MTP405"].finding(
                        f"{c['key']} {c['value']} is rewritten to architecture {a}, which the model registry does not list: the draft fails to load",
                        loc(c["arch_location"]), evidence=[Evidence("registry", "vllm/model_executor/models/registry.py")]))
    for w in release.post_init_arch_writes:
        for a, where in registered(w).items():
            if where is None and not w["dynamic"]:
                out.append(BY_ID["MTP405"].finding(
                    f"__post_init__ writes draft architecture {a}, which the model registry does not list", loc(w["location"])))


def _tree_findings(release: VllmRelease, out: list[Finding]) -> None:
    """MTP406 (n_predict rules), MTP407 (speculators checkpoints), MTP408 (paren-string lint), MTP409 (V1 oracle)."""
    from mtp_audit.engines.vllm.rules import BY_ID

    npr = release.n_predict_rules
    if npr.default:
        ev = [Evidence("silent default", "num_speculative_tokens = n_predict (the checkpoint's MTP layer count)", loc(npr.default))]
        if npr.divisible_error:
            ev.append(Evidence("error", "num_speculative_tokens > n_predict must be a multiple of it (ValueError)", loc(npr.divisible_error)))
        if npr.reuse_warning:
            skips = f"; not for {', '.join(npr.reuse_warning_skips)}" if npr.reuse_warning_skips else ""
            ev.append(Evidence("warning", f"num_speculative_tokens > 1 re-runs the same MTP layer{skips}", loc(npr.reuse_warning)))
        out.append(BY_ID["MTP406"].finding(
            "num_speculative_tokens defaults silently to the draft's n_predict (num_nextn_predict_layers); a larger value must divide by it "
            "and reuses the MTP layers" + ("" if npr.reuse_warning else " without any warning"),
            loc(npr.default), evidence=ev))
    sp = release.speculators
    if sp:
        drops = not sp["merges_user_config"]
        out.append(BY_ID["MTP407"].finding(
            "a --model checkpoint in speculators format (config has speculators_config) is replaced by its verifier and becomes the draft"
            + ("; the user's --speculative-config is discarded" if drops else "; the user's --speculative-config keys are laid over it")
            + ("" if sp["logged"] else "; nothing is logged"), loc(sp["location"]),
            evidence=[Evidence("called from", "EngineArgs", loc(sp.get("call_location")))]))
    for p in release.lints.paren_string_in:
        out.append(BY_ID["MTP408"].finding(
            f"`{p['test']}` tests a substring of \"{p['string']}\", not membership in a one-element tuple (missing comma)", loc(p["location"])))
    oracle = release.v1_oracle
    if oracle is not None and not any("mtp" in a for a in oracle.accepted):
        out.append(BY_ID["MTP409"].finding(
            f"the V1 engine only accepts speculative methods {', '.join(oracle.accepted)}: an MTP draft falls back to the V0 engine "
            "(or fails with VLLM_USE_V1=1)", loc(oracle.location),
            evidence=[Evidence("V0 MTP path", "spec_decode_worker recognises deepseek_mtp", loc(release.v0_spec_decode))] if release.v0_spec_decode else []))


def _proposer_findings(release: VllmRelease, out: list[Finding]) -> None:
    """MTP411: the proposer classes the runners dispatch for the MTP method."""
    from mtp_audit.engines.vllm.rules import BY_ID

    for key in ("mtp", "deepseek_mtp"):
        v1, v2 = release.proposers_of("v1", key), release.proposers_of("v2", key)
        shown = v1 or v2
        if not shown:
            continue
        parts = []
        if v1:
            parts.append("V1 runner: " + " / ".join(f"{p['class']}" + ("" if p["when"] == "always" else f" ({p['when'][:80]})") for p in v1))
        if v2:
            parts.append("V2 runner: " + " / ".join(f"{p['class']}" + ("" if p["when"] == "always" else f" ({p['when'][:80]})") for p in v2))
        out.append(BY_ID["MTP411"].finding(
            f"method '{key}' runs {'; '.join(parts)}; runner default: {release.runner.default or 'v1'}",
            loc(shown[-1]["location"]),
            evidence=[Evidence(p["class"], p["when"], loc(p["location"])) for p in (*v1, *v2)][:8]))
        break
