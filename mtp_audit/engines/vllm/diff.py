"""Compare two vLLM audits (``mtp-audit vllm OLD NEW`` or ``--baseline report.json``): MTP420-MTP423.

Items are compared by identity keys without line numbers (which move every release): rewrites by
(field, kind, value, from), Literal values, env var names, MTP classes by architecture name, draft
chains by (key, value) -> architectures.
"""

from __future__ import annotations

from typing import Any

from mtp_audit.engines.vllm._shared import Evidence, Finding, Gap, Report, Severity
from mtp_audit.engines.vllm.findings import loc
from mtp_audit.engines.vllm.release import VllmRelease


def _facts(report: Report | dict[str, Any]) -> dict[str, Any]:
    """The vLLM facts of a report or of its JSON form (a copy; empty when it has none)."""
    return dict(VllmRelease.from_report(report).facts)


def _rkey(r: dict[str, Any]) -> tuple[str, str, str, tuple[str, ...]]:
    return (r["field"], r["kind"], r["value"], tuple(r["from"]))


def diff_facts(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[Finding], dict[str, Any]]:
    """Findings and a ``changes`` dict (added / removed per category); locations are the new version's
    ``path:line``, or the old version's for something removed."""
    from mtp_audit.engines.vllm.rules import BY_ID

    out: list[Finding] = []
    ch: dict[str, Any] = {}
    old_lit, new_lit = VllmRelease.from_facts(old).spec_config.method_literal, VllmRelease.from_facts(new).spec_config.method_literal
    o = {_rkey(r): r for r in reversed(old.get("rewrites", []))}
    n = {_rkey(r): r for r in reversed(new.get("rewrites", []))}
    ch["rewrites"] = {"added": [n[k] for k in sorted(set(n) - set(o))], "removed": [o[k] for k in sorted(set(o) - set(n))]}
    for k in sorted(set(n) - set(o)):
        r = n[k]
        silent = not r["logged"]
        sev = Severity.WARNING if silent and r["kind"] in ("auto-detect", "forced") else Severity.INFO
        out.append(BY_ID["MTP420"].finding(
            f"new {'silent' if silent else 'logged'} {r['kind']} rewrite: {r['field']} = {r['value']}"
            + (f" (from {', '.join(r['from'])})" if r["from"] else "") + f" when {r['condition'] or 'always'}",
            loc(r["location"]), evidence=[Evidence("condition", r["condition"] or "(always)", loc(r["test_location"]))], severity=sev))
    for k in sorted(set(o) - set(n)):
        r = o[k]
        out.append(BY_ID["MTP420"].finding(
            f"rewrite gone in the new version: {r['field']} = {r['value']} ({r['kind']}; old version's {r['location']})",
            loc(r["location"]), severity=Severity.INFO))
    for k in sorted(set(o) & set(n)):
        if o[k]["logged"] and not n[k]["logged"]:
            out.append(BY_ID["MTP420"].finding(
                f"rewrite {n[k]['field']} = {n[k]['value']} is no longer logged (was at old version's {o[k]['location']})", loc(n[k]["location"])))
    if old_lit is not None and new_lit is not None:
        gone = sorted(set(old_lit.values) - set(new_lit.values))
        ch["method_literal"] = {"added": sorted(set(new_lit.values) - set(old_lit.values)), "removed": gone}
        if gone:
            out.append(BY_ID["MTP421"].finding(f"speculative method {', '.join(gone)} is no longer accepted by the validated Literal",
                                               loc(new_lit.location)))
    oe = {e["name"]: e for e in old.get("env_vars", [])}
    ne = {e["name"]: e for e in new.get("env_vars", [])}
    ch["env_vars"] = {"added": sorted(set(ne) - set(oe)), "removed": sorted(set(oe) - set(ne))}
    if ch["env_vars"]["removed"]:
        unknown = new.get("unknown_env_check")
        for name in ch["env_vars"]["removed"]:
            out.append(BY_ID["MTP422"].finding(
                f"environment variable {name} is no longer defined (old version's {oe[name]['location']})"
                + (f"; a leftover setting only triggers the unknown-variable warning ({unknown})" if unknown else "; a leftover setting is ignored"),
                loc(oe[name]["location"])))
    om = {m["arch"]: m for m in old.get("mtp_classes", [])}
    nm = {m["arch"]: m for m in new.get("mtp_classes", [])}
    ch["mtp_classes"] = {"added": sorted(set(nm) - set(om)), "removed": sorted(set(om) - set(nm))}
    for a in ch["mtp_classes"]["removed"]:
        out.append(BY_ID["MTP423"].finding(f"MTP class {a} is no longer registered (old version's {om[a]['location']})", loc(om[a]["location"])))
    oc = {(c["key"], c["value"]): c for c in old.get("draft_chains", [])}
    nc = {(c["key"], c["value"]): c for c in new.get("draft_chains", [])}
    ch["draft_chains"] = {"added": [list(k) for k in sorted(set(nc) - set(oc))], "removed": [list(k) for k in sorted(set(oc) - set(nc))], "changed": []}
    for ck in sorted(set(oc) - set(nc)):
        out.append(BY_ID["MTP423"].finding(f"draft chain {ck[0]} {ck[1]} -> {', '.join(oc[ck]['architectures'] or [])} is gone "
                                           f"(old version's {oc[ck]['location']})", loc(oc[ck]["location"])))
    for ck in sorted(set(oc) & set(nc)):
        if (oc[ck]["architectures"] or []) != (nc[ck]["architectures"] or []):
            ch["draft_chains"]["changed"].append([*ck, oc[ck]["architectures"], nc[ck]["architectures"]])
            out.append(BY_ID["MTP423"].finding(
                f"draft chain {ck[0]} {ck[1]} now ends in {', '.join(nc[ck]['architectures'] or ['(none)'])} "
                f"(was {', '.join(oc[ck]['architectures'] or ['(none)'])})", loc(nc[ck]["arch_location"] or nc[ck]["location"]), severity=Severity.INFO))
    _diff_fields(old, new, out, ch)
    _diff_speculators(old, new, out, ch)
    return out, ch


def _diff_fields(old: dict[str, Any], new: dict[str, Any], out: list[Finding], ch: dict[str, Any]) -> None:
    """MTP424 for a ``--speculative-config`` key the new version no longer accepts (pydantic ``extra="forbid"``); the
    keys added are listed in ``changes["fields"]``."""
    from mtp_audit.engines.vllm.rules import BY_ID

    osc, nsc = VllmRelease.from_facts(old).spec_config, VllmRelease.from_facts(new).spec_config
    of, nf = osc.fields, nsc.fields
    if of is None or nf is None:
        return
    where = loc(nsc.location)
    gone, added = [f for f in of if f not in nf], [f for f in nf if f not in of]
    ch["fields"] = {"added": added, "removed": gone}
    for f in gone:
        out.append(BY_ID["MTP424"].finding(f"--speculative-config key {f!r} is gone: SpeculativeConfig(**...) now refuses it "
                                           "(pydantic, extra=\"forbid\": 'Unexpected keyword argument'), so a config that still "
                                           "sets it does not start", where))


def _diff_speculators(old: dict[str, Any], new: dict[str, Any], out: list[Finding], ch: dict[str, Any]) -> None:
    """What moved when the new version decides methods through ``SpeculatorConfig`` classes (0.34.0
    ``_CONFIG_BY_METHOD``): the method table, the detection order, and which methods accept each option (MTP420 info;
    MTP424 for an option now refused with other methods)."""
    from mtp_audit.engines.vllm.rules import BY_ID

    ot, nt = old.get("speculator_configs"), new.get("speculator_configs")
    if not nt or ot == nt:
        return
    methods = nt.get("methods") or {}
    ch["speculator_configs"] = {"old": bool(ot), "methods": sorted(methods), "detection_order": nt.get("detection_order")}
    if not ot:
        table = "; ".join(f"{m} -> {c.get('class')} ({str(c.get('speculator') or 'no speculator').rsplit('.', 1)[-1]})"
                          for m, c in methods.items())
        out.append(BY_ID["MTP420"].finding(
            f"each method is now a SpeculatorConfig class looked up by name in _CONFIG_BY_METHOD ({len(methods)} methods: {table}); "
            "the per-method rewrites of SpeculativeConfig.__post_init__ moved into those classes", loc(nt.get("location")),
            severity=Severity.INFO))
    if nt.get("detection_order"):
        out.append(BY_ID["MTP420"].finding(
            f"with a model and no method, the method is detected from the draft checkpoint in the order "
            f"{', '.join(nt['detection_order'])} (each class's matches(), after the class the draft model declares); a "
            "configured method is no longer replaced by the checkpoint", loc(nt.get("detection_location")), severity=Severity.INFO))
    had = set(VllmRelease.from_facts(old).spec_config.fields or ())
    for opt in [o for o in nt.get("options") or [] if o in had]:
        # an option the old version already took: a config that set it with another method no longer starts
        ok = sorted(m for m, c in methods.items() if opt in (c.get("supported_options") or []))
        by = (f"only with method {', '.join(ok)} (of the {len(methods)} in _CONFIG_BY_METHOD)" if ok else
              "by none of the methods in _CONFIG_BY_METHOD (only by a SpeculatorConfig a draft model declares)")
        out.append(BY_ID["MTP424"].finding(
            f"speculative option {opt!r} is now accepted {by}: with another method vLLM raises ValueError('{opt} is not "
            "supported with speculative method ...')", loc(nt.get("options_location"))))


def diff_vllm(old_report: Report | dict[str, Any], new_report: Report | dict[str, Any]) -> Report:
    """A report of what changed from ``old_report`` to ``new_report`` (Reports or their JSON dicts);
    the new version's own findings and gaps are kept."""
    from mtp_audit.engines.vllm.rules import RULES

    old, new = _facts(old_report), _facts(new_report)
    findings, changes = diff_facts(old, new)
    gaps: list[Gap] = list(new_report.gaps) if isinstance(new_report, Report) else []
    base = list(new_report.findings) if isinstance(new_report, Report) else []
    facts = dict(new)
    facts["diff"] = {"old_version": old.get("version"), "new_version": new.get("version"), "changes": changes}
    facts["summary"] = dict(new.get("summary") or {}, old_version=old.get("version"), changes=len(findings))
    name = f"{old.get('version') or 'old'} -> {new.get('version') or 'new'}"
    return Report.build("vllm", name, findings=base + findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES])
