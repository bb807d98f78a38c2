"""Checks MTP101-MTP106: findings from one SGLang tree's linked facts (``facts["sglang"]``).

The rules themselves (docs, sources, examples) are declared in :mod:`mtp_audit.engines.sglang.rules`;
the facts come from :mod:`mtp_audit.engines.sglang.audit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mtp_audit.engines.sglang.rules import BY_ID
from mtp_audit.report import Evidence, Finding, Location


def location_of(text: str | None) -> Location:
    """A ``"path:line"`` fact string as a :class:`Location` (``Location()`` for ``None``; no line when the tail is not a number)."""
    if not text:
        return Location()
    path, _, line = text.rpartition(":")
    if line.isdigit():
        return Location(path=path, line=int(line))
    return Location(path=text)


def evaluate(facts: dict[str, Any]) -> list[Finding]:
    """Findings MTP101-MTP105 from one tree's facts (see :func:`mtp_audit.engines.sglang.audit.link`)."""
    out: list[Finding] = []
    cli = facts["cli_arguments"]
    spec = cli.get("--speculative-algorithm")
    nextn = [r for r in facts["remaps"] if r["from"] == "NEXTN"]
    if spec is None:
        server_args = facts.get("server_args")
        if isinstance(server_args, Mapping) and server_args.get("status", "ok") != "ok":
            return out  # a blocking gap says server_args.py was not read: "no speculative decoding" cannot be concluded
        out.append(BY_ID["MTP103"].finding(
            "no --speculative-algorithm flag is declared: this SGLang has no speculative decoding, so MTP/NextN heads are never used"))
        return out
    if not facts["nextn_accepted"]:
        out.append(BY_ID["MTP104"].finding(
            f"--speculative-algorithm does not accept NEXTN (choices: {', '.join(spec['choices'] or []) or 'free-form'})",
            location_of(spec.get("choices_location") or spec["location"])))
    elif not nextn:
        out.append(BY_ID["MTP102"].finding(
            "--speculative-algorithm accepts NEXTN but no rewrite of NEXTN was found: cannot tell which worker runs",
            location_of(facts["nextn_accepted"][0]["location"]),
            evidence=[Evidence("accepted via", a["via"], location_of(a["location"])) for a in facts["nextn_accepted"]]))
    mtp_names = {m["class"] for m in facts.get("mtp_classes", [])}
    draft_mtp = sorted({d["to"] for d in facts.get("draft_arch_overrides", []) if d["to"] in mtp_names})
    # the message names the class when there is one; the whole list goes to the finding's detail
    of = f" reached by an override ({len(mtp_names)} registered)" if len(draft_mtp) != len(mtp_names) else ""
    chain = (draft_mtp[0] if len(draft_mtp) == 1 else f"one of {len(draft_mtp)} MTP classes{of}") if draft_mtp else \
        "no override to a registered MTP class found"
    chain_detail = ("Draft-architecture overrides to registered MTP classes: " + ", ".join(draft_mtp) + ".") if len(draft_mtp) > 1 else ""
    # One finding per target algorithm: the CLI rewrite (assignment / helper return) is the finding,
    # the alias lookup that also accepts NEXTN (0.5.20 on: SpeculativeAlgorithm.from_string with
    # _RESERVED_ALIASES, spec_info.py:61 in 0.5.23) is evidence, so users see one chain.
    by_to: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in nextn:
        by_to.setdefault(tuple(r["to"]), []).append(r)
    for to, rs in sorted(by_to.items()):
        rs = sorted(rs, key=lambda r: (r["shape"] == "enum-alias-lookup", location_of(r["location"]).sort_key()))
        r, others = rs[0], rs[1:]
        ev = [Evidence("condition", r["condition"] or "(always)", location_of(r.get("test_location")))]
        if r.get("via"):
            ev.append(Evidence("via", r["via"]))
        for o in others:
            label = "alias lookup that also accepts it" if o["shape"] == "enum-alias-lookup" else "also rewritten at"
            ev.append(Evidence(label, o.get("via") or o["shape"], location_of(o["location"])))
        for a in facts.get("aliases", []):
            if "NEXTN" in a.get("members", []) and a.get("defined") and list(to) == [a.get("to")]:
                ev.append(Evidence("reserved alias set", f"{a['set']} = {{{', '.join(a['members'])}}}", location_of(a["defined"])))
        ev += [Evidence("draft default", f"{d['kind']}: {d['value']}", location_of(d["location"])) for d in facts["draft_model_path_fills"]][:2]
        logged = any(x["logged"] for x in rs)
        how = "logged rewrite" if logged else "silent rewrite (no log line)"
        if to == ("EAGLE",):  # one line: the rationale is in `mtp-audit explain MTP101`, the class list in detail
            msg = f"--speculative-algorithm NEXTN is an alias of EAGLE, draft = the target checkpoint (architecture -> {chain}); {how}"
        else:
            msg = f"--speculative-algorithm NEXTN is rewritten to {', '.join(to)} when {r['condition'] or 'always'}; {how}"
        out.append(BY_ID["MTP101"].finding(msg, location_of(r["location"]), evidence=ev,
                                           detail=chain_detail if to == ("EAGLE",) else ""))
    for d in facts["draft_model_path_fills"]:
        out.append(BY_ID["MTP105"].finding(
            f"speculative_draft_model_path defaults to the target model ({d['kind']}: {d['value']})",
            location_of(d["location"]), evidence=[Evidence("condition", d["condition"] or "(always)")]))
    return out


def _location(text: str) -> Location:
    path, _, line = text.rpartition(":")
    return Location(path=path, line=int(line)) if line.isdigit() else Location(path=text)


def flow_findings(facts: dict[str, Any]) -> list[Finding]:
    """MTP106 findings from ``facts["value_flows"]``: one per (flag, literal, re-fill), with the rewrite as the
    location and the consumer and re-fill as evidence. A literal the flag's declared choices do not accept is
    not user-reachable and is skipped."""
    out: list[Finding] = []
    cli = facts.get("cli_arguments", {})
    done: set[tuple[str, str, str]] = set()
    for fl in facts.get("value_flows", []):
        flag = "--" + fl["field"].replace("_", "-")
        rec = cli.get(flag) or None
        choices = rec.get("choices") if rec is not None else None
        if choices and fl["from"] not in choices:
            continue
        r, c, rf = fl["rewrite"], fl["consumer"], fl["refill"]
        key = (flag, fl["from"], rf["location"])
        if key in done:
            continue
        done.add(key)
        ev = [
            Evidence("user value rewritten", f"{flag} {fl['from']} -> None", _location(r["location"])),
            Evidence("condition", f"{fl['field']} == \"{fl['from']}\"", _location(r["test_location"])),
            Evidence("consumed as", f"{c['callee']}({c['keyword']}=...) in {c['function']}()", _location(c["read_location"])),
            Evidence("stored as", f"self.{rf['attribute']}", _location(rf["stored_location"])),
            Evidence("re-filled when None", f"self.{rf['attribute']} = {rf['value']} in {rf['class']}.{rf['method']}()",
                     _location(rf["location"])),
        ]
        if choices:
            ev.append(Evidence("accepted choices include", fl["from"], _location((rec.get("location") if rec is not None else None) or "")))
        fix = None
        if fl["field"] == "quantization":
            fix = (f"Do not rely on {flag} {fl['from']} to run a quantized checkpoint unquantized: {rf['class']} re-detects "
                   "the checkpoint's quantization; serve an unquantized checkpoint instead.")
        short = rf["location"].rsplit("/", 1)[-1]
        out.append(BY_ID["MTP106"].finding(
            # the essentials first: text reports cut a line at 200 columns (JSON, SARIF and --verbose keep it all)
            # (the consumer and the re-filling method are in the evidence, with full paths)
            f"{flag} {fl['from']} is undone: None here, re-filled with {rf['value']} at {short}",
            _location(r["location"]),
            evidence=ev,
            remediation=fix,
        ))
    return out
