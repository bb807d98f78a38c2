"""Compare two SGLang audits (``mtp-audit sglang OLD NEW`` or ``--baseline report.json``).

Items are compared by identity keys that ignore line numbers (which move with every release):
remaps and auto resolutions by (argument, from, to) wherever they live (0.5.15 on moved most of
server_args.py into ``srt/arg_groups/``: a moved rewrite is not a change), dynamic targets compared
without their receiver (``<self.x>`` == ``<cfg.x>``); CLI flags by flag and choices; env vars by
name; draft overrides by (from, to); MTP classes by class name. Severity of rewrite changes follows
:func:`rewrite_severity` (documented in MTP110's rule doc).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtp_audit.engines.sglang.checks import location_of
from mtp_audit.engines.sglang.release import Release
from mtp_audit.engines.sglang.rules import BY_ID
from mtp_audit.report import Evidence, Finding, Gap, Report, Severity


def _facts(report: Report | dict[str, Any]) -> dict[str, Any]:
    if isinstance(report, Report):
        return dict(report.facts.get("sglang") or {})
    facts = report.get("facts", {}) if isinstance(report, dict) else {}
    return dict(facts.get("sglang") or {})


#: Arguments whose rewrites decide whether MTP/NextN heads and FP4 kernels are used (the flags the preflight reads;
#: research/blackwell_fp4.md for the FP4 backends): every ``speculative_*`` argument, anything naming a
#: draft, MTP/NextN or FP4, and the MoE runner / FP4 GEMM / quantization / KV-cache / attention backends.
RELEVANT_ARGS = frozenset({"moe_runner_backend", "fp4_gemm_backend", "quantization", "kv_cache_dtype", "attention_backend",
                           "prefill_attention_backend", "decode_attention_backend"})
_RELEVANT_RE = re.compile(r"^speculative_|draft|mtp|nextn|fp4", re.IGNORECASE)
#: ``from`` values that are not a user's explicit choice: ``None`` (flag not given) and ``auto``.
_DEFAULT_FROMS = frozenset({"None", "auto"})
#: Receivers stripped from dynamic targets before comparing (``<self.revision>`` in 0.5.9 is
#: ``<cfg.revision>`` in 0.5.23 after the move to ``arg_groups/``).
_RECEIVER = re.compile(r"\b(?:self|cfg|server_args|args|sa|view)\.")


def is_relevant(argument: str) -> bool:
    """Whether a rewrite of ``argument`` matters to MTP/NextN or FP4 (see :data:`RELEVANT_ARGS`)."""
    return argument in RELEVANT_ARGS or bool(_RELEVANT_RE.search(argument))


def _norm_to(t: str) -> str:
    if t.startswith("<") and t.endswith(">"):
        return "<" + " ".join(_RECEIVER.sub("", t[1:-1]).replace("( ", "(").replace(" )", ")").split()) + ">"
    return t


def _rkey(r: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """Identity of a rewrite across versions: (argument, from, to); file, line, shape and helper are
    ignored, so a rewrite that moved (0.5.9 server_args.py -> 0.5.23 arg_groups/) is not a change."""
    return (r["argument"], r["from"], tuple(_norm_to(str(t)) for t in r["to"]))


def _group(items: list[dict[str, Any]]) -> dict[tuple[str, str, tuple[str, ...]], list[dict[str, Any]]]:
    out: dict[tuple[str, str, tuple[str, ...]], list[dict[str, Any]]] = {}
    for r in items:
        k = _rkey(r)
        if k[2] == (k[1],):
            continue  # identity (``return "EAGLE"`` for input EAGLE): not a rewrite
        out.setdefault(k, []).append(r)
    for sites in out.values():
        sites.sort(key=lambda r: location_of(r["location"]).sort_key())
    return out


def _sites_evidence(sites: list[dict[str, Any]], label: str) -> list[Evidence]:
    ev = [Evidence(label, f"{'logged' if r['logged'] else 'silent'} ({r['shape']})", location_of(r["location"])) for r in sites[1:4]]
    if len(sites) > 4:
        ev.append(Evidence(label, f"and {len(sites) - 4} more sites"))
    return ev


def rewrite_severity(argument: str, frm: str, silent: bool, honoured_before: bool) -> Severity:
    """Severity of a rewrite that the new version adds (policy documented in MTP110's rule doc).

    ``from`` overrides a user's value when it is a literal a user passes (not ``None`` = flag not
    given, not ``auto``) or ``*`` (whatever was passed, under the branch's condition).

    - relevant argument (:func:`is_relevant`), silent, overrides a user's value: error;
    - relevant argument, silent, only resolves a default (``None`` / ``auto``): warning;
    - other argument, silent, overrides a user's value that the old version honoured (the flag
      existed and no rewrite of the same argument from the same value): warning;
    - anything logged, and every other case: info.
    """
    if not silent:
        return Severity.INFO
    overrides = frm not in _DEFAULT_FROMS
    if is_relevant(argument):
        return Severity.ERROR if overrides else Severity.WARNING
    return Severity.WARNING if overrides and honoured_before else Severity.INFO


def _guarded(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The facts' remaps and auto resolutions, each with what its guard says about a user's value
    (:func:`~mtp_audit.engines.sglang.guards.given_value_test`) under ``"_test"``, and a record whose guard never lets an
    explicit value through split into one record per value it can change (``from``: ``None`` for an unset flag, or a
    literal the guard compares the argument with): ``steps = cfg.speculative_num_steps or the draft's slots`` is an
    ``unset (None)`` rewrite, not a ``*`` one. Model-override stores get the architectures they are registered for."""
    from mtp_audit.engines.sglang.guards import given_value_test

    archs = {r["location"]: r.get("architectures") or [] for r in facts.get("model_overrides") or []}
    out: list[dict[str, Any]] = []
    for r in facts.get("remaps", []) + facts.get("auto_resolutions", []):
        t = given_value_test(r)
        t["architectures"] = archs.get(r["location"], [])
        if not t["froms"]:  # no value it can change was told apart: which one it touches could not be told
            t = dict(t, given=None, froms=[r["from"]])
        for f in t["froms"]:
            out.append(dict(r, **{"from": f, "_test": t}))
    return out


def _when(r: dict[str, Any], lookup: Any = None, value: Any = None, bound: bool = False) -> bool | None:
    """Whether a record's guard holds for its ``from`` value (or, ``bound``, for ``value``) with other names from
    ``lookup`` (unknown without one)."""
    from mtp_audit.engines.sglang.guards import evaluate_for, parsed_guard

    if not bound:
        frm = r["from"]
        value = None if frm == "None" else frm
        if frm == "*":
            return r["_test"]["given"]
    return evaluate_for(parsed_guard(r), r["argument"], value, lookup)


def _short(text: str | None, limit: int = 200) -> str:
    """A guard for a message: whole when short, else its last conjuncts (the innermost tests, the most specific)
    after ``... and``."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    parts = text.split(" and ")
    kept: list[str] = []
    while parts and len(" and ".join([parts[-1], *kept])) <= limit:
        kept.insert(0, parts.pop())
    return "... and " + " and ".join(kept) if kept else text[:limit].rsplit(" ", 1)[0] + " ..."


def _only_when(r: dict[str, Any], when: bool | None) -> str:
    """`` only for ARCH, when GUARD`` for a conditioned rewrite; ``""`` for an unconditional one."""
    t = r["_test"]
    words = []
    if t["architectures"]:
        words.append(f"only for {_listed(t['architectures'], 3)}")
    if when is not True and t["guard"]:
        words.append(f"{'only ' if not words else ''}when {_short(t['guard'])}")
    return ", ".join(words)


@dataclass(frozen=True)
class Concerns:
    """What one finding of :func:`diff_facts` concerns, as the summary lines sort it (never written).

    Attributes:
        mtp: an MTP/FP4 argument (:func:`is_relevant`) or environment variable (:data:`_MTP_ENV`).
        guarded: a new rewrite that applies only under a guard (a model family, a condition) or only to a value passed.
    """

    mtp: bool
    guarded: bool = False


def _new_rewrite_finding(rule: Any, k: tuple[str, str, tuple[str, ...]], sites: list[dict[str, Any]], old: dict[str, Any],
                         old_dests: set[Any], old_args_from: set[tuple[str, str]],
                         known: dict[str, Any] | None) -> tuple[Finding, bool | None, Concerns] | None:
    """The MTP110 finding of one added rewrite (see :func:`rewrite_severity`), whether it applies (``True``, ``None``:
    not certain; for a launch, whether it applies to that launch) and what it concerns (:class:`Concerns`): a rewrite under a guard that is not certainly true
    (a platform, an environment variable, a model family, another flag) is at most a warning; with a launch
    (``known``), one whose guard is false for it is left out and one that holds keeps the policy's severity; a
    rewrite of a literal the old version refused (its ``choices``) cannot change a command that ran before: info."""
    arg, frm, _to = k
    silent = not any(r["logged"] for r in sites)
    sev = rewrite_severity(arg, frm, silent, arg in old_dests and (arg, frm) not in old_args_from)
    r = next((x for x in sites if _applies(x, known) is not False), None) if known is not None else sites[0]
    if r is None:
        return None
    when = _applies(r, known) if known is not None else _when(r)
    cond = _only_when(r, when)
    if (when is not True or r["_test"]["architectures"] and known is None) and sev > Severity.WARNING:
        sev = Severity.WARNING
    refused = _refused_before(old, arg, frm)
    if refused:
        sev = Severity.INFO
    given = r["_test"]["given"]
    what = ("whatever value is passed" if frm == "*" and given is True else "a value passed" if frm == "*"
            else "unset (None)" if frm == "None" else f"{frm!r}")
    scope = ("; for this launch: it applies" if known is not None and when is True else
             "; for this launch: could not tell whether it applies" if known is not None else "")
    return (rule.finding(
        f"new {'silent' if silent else 'logged'} rewrite: {arg} {frm} -> {', '.join(r['to'])}"
        f" ({what} becomes {', '.join(r['to'])}{', ' + cond if cond else ''}"
        f"{'; a value the old version refused' if refused else ''}{'' if is_relevant(arg) else '; not an MTP/FP4 argument'}{scope})",
        location_of(r["location"]),
        evidence=[Evidence("condition", r["condition"] or "(always)", location_of(r.get("test_location"))),
                  *([Evidence("guard", r["_test"]["guard"])] if r["_test"]["guard"] and r["_test"]["guard"] != r["condition"] else []),
                  *([Evidence("architectures", ", ".join(r["_test"]["architectures"]))] if r["_test"]["architectures"] else []),
                  *_sites_evidence(sites, "also at")],
        severity=sev), when, Concerns(is_relevant(arg), cond.startswith(("only for ", "only when ")) or what == "a value passed"))


def _refused_before(old: dict[str, Any], arg: str, frm: str) -> bool:
    """Whether the old version's flag for ``arg`` declares choices that do not include ``frm`` (a literal)."""
    if frm in ("*", "None"):
        return False
    for rec in (old.get("cli_arguments") or {}).values():
        if rec.get("dest") == arg:
            return rec.get("choices") is not None and frm not in rec["choices"]
    return False


def _applies(r: dict[str, Any], known: dict[str, Any] | None) -> bool | None:
    """Whether a rewrite applies to a launch (``known``: :func:`mtp_audit.engines.sglang.startup_facts.launch_lookup`'s input,
    plus ``"defaults"``: field -> declared default): its architecture is registered (when it is a model override) and
    its guard holds with the launch's value of the argument (the command's, else the declared default)."""
    from mtp_audit.engines.sglang.startup_facts import launch_lookup

    if known is None:
        return _when(r)
    archs = r["_test"]["architectures"]
    arch = known.get("architecture")
    if archs and arch is not None and arch not in archs:
        return False
    fields = known.get("fields") or {}
    arg = r["argument"]
    defaults = known.get("defaults")
    value = fields[arg] if arg in fields else (defaults.get(arg) if defaults else None)
    if r["from"] not in ("*",) and str(value) != r["from"]:
        return False
    v = _when(r, launch_lookup(known), value, bound=True)
    return v if not (archs and arch is None and v is True) else None


def _diff_rewrites(old: dict[str, Any], new: dict[str, Any], findings: list[Finding], changes: dict[str, Any],
                   known: dict[str, Any] | None = None, concerns: dict[Finding, Concerns] | None = None) -> None:
    rule = BY_ID["MTP110"]
    o = _group(_guarded(old))
    n = _group(_guarded(new))
    old_args_from = {(k[0], k[1]) for k in o}
    old_dests = {a.get("dest") for a in (old.get("cli_arguments") or {}).values()}
    for cat in ("remaps", "auto_resolutions"):
        in_cat = (lambda k: k[0] == "speculative_algorithm") if cat == "remaps" else (lambda k: k[0] != "speculative_algorithm")
        changes[cat] = {"added": [_public(n[k][0]) for k in sorted(set(n) - set(o)) if in_cat(k)],
                        "removed": [_public(o[k][0]) for k in sorted(set(o) - set(n)) if in_cat(k)],
                        "now_silent": [_public(n[k][0]) for k in sorted(set(n) & set(o)) if in_cat(k)
                                       and any(r["logged"] for r in o[k]) and not any(r["logged"] for r in n[k])]}
    applies: list[tuple[Finding, bool | None]] = []
    for k in sorted(set(n) - set(o)):
        fw = _new_rewrite_finding(rule, k, n[k], old, old_dests, old_args_from, known)
        if fw is not None:
            findings.append(fw[0])
            applies.append(fw[:2])
            if concerns is not None:
                concerns[fw[0]] = fw[2]
    if known is not None:
        changes["applies"] = applies  # for the launch (never written): each added rewrite and whether it applies to it
        return  # a launch compares what its own command meets: removed rewrites and log changes are the upgrade's report
    for k in sorted(set(o) - set(n)):
        arg, frm, to = k
        sites = o[k]
        r = sites[0]
        # a removed rewrite means the value is now honoured (or resolved elsewhere, which shows up as an
        # added rewrite); only the speculative_algorithm chain (NEXTN -> EAGLE) is worth a warning
        sev = Severity.WARNING if arg == "speculative_algorithm" else Severity.INFO
        findings.append(rule.finding(
            f"rewrite gone in the new version: {arg} {frm} -> {', '.join(r['to'])} (old version's {r['location']})",
            location_of(r["location"]),
            evidence=[Evidence("condition (old version)", r["condition"] or "(always)", location_of(r.get("test_location"))),
                      *_sites_evidence(sites, "also at (old version)")],
            severity=sev))
    for k in sorted(set(n) & set(o)):
        if any(r["logged"] for r in o[k]) and not any(r["logged"] for r in n[k]):
            arg, frm, _ = k
            r = n[k][0]
            sev = Severity.WARNING if is_relevant(arg) and frm not in _DEFAULT_FROMS else Severity.INFO
            findings.append(rule.finding(
                f"rewrite no longer logged: {arg} {frm} -> {', '.join(r['to'])} is now silent (was logged at old version's {o[k][0]['location']})",
                location_of(r["location"]), evidence=[Evidence("condition", r["condition"] or "(always)", location_of(r.get("test_location")))],
                severity=sev))


def _public(r: dict[str, Any]) -> dict[str, Any]:
    """A grouped record as the facts show it: without the guard test, with ``guard_says`` when the guard decided the
    ``from`` (``given``: whether an explicit value is rewritten; ``architectures``)."""
    out = {k: v for k, v in r.items() if k != "_test"}
    t = r["_test"]
    out["applies_to_given"] = t["given"]
    if t["architectures"]:
        out["architectures"] = t["architectures"]
    return out


def diff_facts(old: dict[str, Any], new: dict[str, Any], known: dict[str, Any] | None = None,
               concerns: dict[Finding, Concerns] | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """Findings MTP110-MTP113 and a ``changes`` dict (added/removed per category).

    Every finding carries a location: the new version's ``path:line``, or for something removed the
    old version's (paths of both versions are relative to their own audited root). ``known``: what one launch knows
    (:func:`mtp_audit.engines.sglang.startup_facts.launch_lookup`'s input plus ``"defaults"``, field -> declared default):
    each added rewrite's guard is evaluated against it (one that does not apply is left out, one that applies keeps
    its severity, one that cannot be told is at most a warning). ``concerns``, when given, receives what each new
    rewrite (MTP110) and environment variable (MTP112) finding concerns (:class:`Concerns`).
    """
    findings: list[Finding] = []
    changes: dict[str, Any] = {}
    _diff_rewrites(old, new, findings, changes, known, concerns)
    concerns = {} if concerns is None else concerns

    oc, nc = old.get("cli_arguments", {}), new.get("cli_arguments", {})
    changes["cli_arguments"] = {"added": sorted(set(nc) - set(oc)), "removed": sorted(set(oc) - set(nc)), "choices": {}}
    for flag in sorted(set(oc) - set(nc)):
        findings.append(BY_ID["MTP111"].finding(f"flag {flag} is no longer declared (old version's {oc[flag]['location']})", location_of(oc[flag]["location"])))
    for flag in sorted(set(oc) & set(nc)):
        a, b = oc[flag].get("choices"), nc[flag].get("choices")
        if a is None or b is None:
            continue
        gone, new_ = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        if gone or new_:
            changes["cli_arguments"]["choices"][flag] = {"added": new_, "removed": gone}
        if gone:
            findings.append(BY_ID["MTP111"].finding(f"{flag} no longer accepts {', '.join(gone)}", location_of(nc[flag]["location"])))

    oe = {e["name"]: e for e in old.get("env_vars", [])}
    ne = {e["name"]: e for e in new.get("env_vars", [])}
    changes["env_vars"] = {"added": sorted(set(ne) - set(oe)), "removed": sorted(set(oe) - set(ne))}
    for name in changes["env_vars"]["added"]:
        e = ne[name]
        findings.append(BY_ID["MTP112"].finding(f"new environment variable {name}", location_of((e["defined"] or e["read"] or [None])[0])))
        concerns[findings[-1]] = Concerns(bool(_MTP_ENV.search(name)))
    for name in changes["env_vars"]["removed"]:
        e = oe[name]
        where = (e["defined"] or e["read"] or [None])[0]
        findings.append(BY_ID["MTP112"].finding(f"environment variable {name} is no longer defined or read (old version's {where})", location_of(where)))
        concerns[findings[-1]] = Concerns(bool(_MTP_ENV.search(name) or _MTP_ENV.search(str(where))))  # as named, or where it was

    od_loc = {(d["from"], d["to"]): d["location"] for d in sorted(old.get("draft_arch_overrides", []), key=lambda d: d["location"], reverse=True)}
    od = set(od_loc)
    nd = {(d["from"], d["to"]) for d in new.get("draft_arch_overrides", [])}
    changes["draft_arch_overrides"] = {"added": [list(x) for x in sorted(nd - od)], "removed": [list(x) for x in sorted(od - nd)]}
    for f, t in sorted(od - nd):
        findings.append(BY_ID["MTP113"].finding(f"draft-architecture override {f} -> {t} is gone (old version's {od_loc[(f, t)]})", location_of(od_loc[(f, t)])))
    om_loc = {m["class"]: f"{m['file']}:{m['line']}" for m in sorted(old.get("mtp_classes", []), key=lambda m: (m["file"], m["line"]), reverse=True)}
    om = set(om_loc)
    nm = {m["class"] for m in new.get("mtp_classes", [])}
    changes["mtp_classes"] = {"added": sorted(nm - om), "removed": sorted(om - nm)}
    for c in sorted(om - nm):
        findings.append(BY_ID["MTP113"].finding(f"MTP/NextN class {c} is no longer registered in EntryClass (old version's {om_loc[c]})", location_of(om_loc[c])))
    return findings, changes


_MTP_ENV = re.compile(r"NEXTN|MTP|SPEC|FP4|EAGLE", re.I)


def _nextn_sites(facts: dict[str, Any]) -> dict[str, list[str]]:
    """``{target algorithm: ["path:line (logged|silent)", ...]}`` of the rewrites of ``--speculative-algorithm NEXTN``."""
    out: dict[str, list[str]] = {}
    for r in facts.get("remaps", []):
        if r.get("argument") == "speculative_algorithm" and r.get("from") == "NEXTN":
            for t in r.get("to") or ():
                out.setdefault(t, []).append(f"{r['location']} ({'logged' if r.get('logged') else 'silent'})")
    return out


def _listed(names: list[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _changed(changes: Mapping[str, Any], category: str, kind: str) -> list[dict[str, Any]]:
    """The ``kind`` rows (``"added"``, ``"removed"``, ``"now_silent"``) of one ``changes`` category, none when absent."""
    rows = changes.get(category)
    return list(rows.get(kind, [])) if isinstance(rows, Mapping) else []


def _choices_gone(arg: Mapping[str, Any], n_old: int) -> str:
    """The MTP-summary line for ``--speculative-algorithm`` with choices in the old version and none read in the new
    one (``arg``: the new version's ``cli_arguments`` entry): declared without ``choices=`` (0.5.23
    ``arg_groups/fields/spec.py:31``: any name, registered algorithms included, is checked later), or a ``choices``
    expression the scan could not resolve, named with its location here (no not-examined entry is made for it)."""
    if arg.get("choices_expr"):
        where = f" at {arg['choices_location']}" if arg.get("choices_location") else ""
        return (f"--speculative-algorithm choices: not resolved in the new version (choices={arg['choices_expr']}{where}); "
                f"the old version had {n_old}")
    where = f" ({arg['location']})" if arg.get("location") else ""
    return (f"--speculative-algorithm choices: none declared in the new version{where}: the parser takes any name "
            f"(the old version had {n_old} choices)")


def mtp_changes(old: dict[str, Any], new: dict[str, Any], changes: dict[str, Any]) -> list[str]:
    """What an upgrade changed for MTP, in a few lines: where the NEXTN rewrite went, the algorithms accepted,
    MTP classes and draft-architecture overrides added and removed, MTP/FP4 rewrites and env vars."""
    lines = []
    o, n = _nextn_sites(old), _nextn_sites(new)
    for target in sorted(set(o) | set(n)):
        if target not in n:
            lines.append(f"NEXTN -> {target}: gone (was at {', '.join(o[target])})")
        elif target not in o:
            lines.append(f"NEXTN -> {target}: new, at {', '.join(n[target])}")
        elif o[target] != n[target]:
            lines.append(f"NEXTN -> {target}: moved from {', '.join(o[target])} to {', '.join(n[target])}")
    before, after = Release.of(old), Release.of(new)
    oc, nc = before.choices("--speculative-algorithm"), after.choices("--speculative-algorithm")
    if oc is not None and nc is not None and set(oc) != set(nc):
        lines.append(f"--speculative-algorithm choices: added {_listed(sorted(set(nc) - set(oc))) or 'none'}; "
                     f"removed {_listed(sorted(set(oc) - set(nc))) or 'none'}")
    elif oc is not None and nc is None:
        lines.append(_choices_gone(after.option("--speculative-algorithm"), len(oc)))
    mc = changes.get("mtp_classes") or {}
    if mc.get("added") or mc.get("removed"):
        lines.append(f"MTP classes: +{len(mc.get('added', []))} ({_listed(mc.get('added', [])) or '-'}), "
                     f"-{len(mc.get('removed', []))} ({_listed(mc.get('removed', [])) or '-'})")
    dc = changes.get("draft_arch_overrides") or {}
    if dc.get("added") or dc.get("removed"):
        lines.append(f"draft-architecture overrides: +{len(dc.get('added', []))}, -{len(dc.get('removed', []))}")
    relevant = sorted({r["argument"] for cat in ("remaps", "auto_resolutions") for kind in ("added", "removed", "now_silent")
                       for r in _changed(changes, cat, kind) if is_relevant(r["argument"])} - {"speculative_algorithm"})
    if relevant:
        lines.append(f"MTP/FP4 arguments whose rewrites changed: {_listed(relevant)}")
    env = changes.get("env_vars") or {}
    added = [e for e in env.get("added", []) if _MTP_ENV.search(e)]
    removed = [e for e in env.get("removed", []) if _MTP_ENV.search(e)]
    if added or removed:
        lines.append(f"MTP/FP4 environment variables: added {_listed(added) or 'none'}; removed {_listed(removed) or 'none'}")
    return lines or ["nothing that concerns MTP changed"]


def _guarded_line(findings: list[Finding], concerns: Mapping[Finding, Concerns], old_version: Any, new_version: Any) -> list[str]:
    """One line of the MTP summary for the new MTP/FP4 rewrites that apply only under a guard (warnings without a
    launch), pointing at the launch form that evaluates them; ``[]`` when there is none. ``concerns``: see
    :func:`diff_facts`."""
    n = sum(1 for f in findings if f.rule_id == "MTP110" and f.severity is Severity.WARNING
            and (c := concerns.get(f)) is not None and c.mtp and c.guarded)
    if not n:
        return []
    return [f"{n} new MTP/FP4 rewrite(s) apply only under a guard (a platform, a model family, an environment variable, "
            f"another flag): warnings here; mtp-audit launch --sglang {old_version or 'OLD'} --compare-sglang "
            f"{new_version or 'NEW'} -- <command> tells which apply to a launch"]


def _secondary(findings: list[Finding], concerns: Mapping[Finding, Concerns]) -> list[list[str]]:
    """``[rule id, message]`` of the info findings about new rewrites of arguments (MTP110) and about env vars (MTP112)
    that do not concern MTP/FP4 (``concerns``: see :func:`diff_facts`): the text report counts them per rule instead
    of listing them (``-v`` lists them)."""
    return [[f.rule_id, f.message] for f in findings if f.severity is Severity.INFO and f.rule_id in ("MTP110", "MTP112")
            and (c := concerns.get(f)) is not None and not c.mtp]


def diff_sglang(old_report: Report | dict[str, Any], new_report: Report | dict[str, Any]) -> Report:
    """A report of what changed from ``old_report`` to ``new_report`` (Reports or their JSON dicts).

    The new version's own findings (MTP101-105) and gaps are kept, so ``inconclusive`` still shows.
    """
    old, new = _facts(old_report), _facts(new_report)
    concerns: dict[Finding, Concerns] = {}
    findings, changes = diff_facts(old, new, concerns=concerns)
    gaps: list[Gap] = []
    base_findings: list[Finding] = []
    if isinstance(new_report, Report):
        gaps = list(new_report.gaps)
        base_findings = list(new_report.findings)
    facts = dict(new)
    facts["diff"] = {"old_version": old.get("version"), "new_version": new.get("version"), "changes": changes}
    summary = dict(new.get("summary") or {})
    summary["old_version"] = old.get("version")
    summary["changes"] = len(findings)
    facts["summary"] = summary
    name = f"{old.get('version') or 'old'} -> {new.get('version') or 'new'}"
    kinds = sorted({f.rule_id for f in findings})
    mtp = mtp_changes(old, new, changes) + _guarded_line(findings, concerns, old.get("version"), new.get("version"))
    facts["diff"]["mtp"] = mtp
    facts["secondary"] = {"findings": _secondary(findings, concerns),
                          "why": "rewrites and environment variables that do not concern MTP/FP4"}
    facts["answer"] = [f"{len(findings)} change(s) from SGLang {old.get('version') or 'old'} to {new.get('version') or 'new'}"
                       + (f" ({', '.join(kinds)})" if kinds else ""), *(new.get("answer") or [])[:1],
                       "for MTP:", *(f"  {line}" for line in mtp)]
    from mtp_audit.engines.sglang.rules import RULES

    return Report.build("sglang", name, findings=base_findings + findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES])
