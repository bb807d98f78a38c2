"""Run the vLLM audit: open the tree, scan the few files the rules need (cached by content), link
the per-file facts and build the :class:`Report` (findings from :mod:`.findings`).

The facts contract (``report.facts["vllm"]``) is documented in docs/vllm.md.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtp_audit.engines.vllm import scan
from mtp_audit.engines.vllm._shared import (
    Gap,
    Report,
    cache_folder,
    cache_load,
    cache_store,
)
from mtp_audit.engines.vllm.release import VllmRelease
from mtp_audit.engines.vllm.target import VllmTree, open_target

ANALYZER = "vllm"
#: The note of a tree without the V1 model runner file; a release whose speculator table names each speculator drops
#: it (the file is gone on purpose there), by this gap, not by its words.
NO_V1_RUNNER = Gap(ANALYZER, "vllm/v1/worker/gpu_model_runner.py not found: cannot tell which V1 proposer runs", blocking=False)

#: role -> (scanner, whether a failure blocks the answer)
_SCANNERS: dict[str, tuple[Any, bool]] = {
    "spec": (scan.scan_spec, True),
    "registry": (scan.scan_registry, False),
    "runner_v1": (scan.scan_dispatch, False),
    "runner_v2": (scan.scan_dispatch, False),
    "envs": (scan.scan_envs, False),
    "arg_utils": (scan.scan_arg_utils, False),
    "tu_config": (scan.scan_tu_config, False),
}
_TEXT_PATTERNS: dict[str, dict[str, bytes]] = {
    "vllm_config": {"v2_auto_line": rb"def use_v2_model_runner\b", "v2_unsupported_line": rb"does not yet support"},
    "config_utils": {"pydantic_line": rb"pydantic\.dataclasses|from pydantic\.dataclasses import|pydantic_dataclass"},
    "v0_worker": {"deepseek_mtp_line": rb"deepseek_mtp"},
    "platform": {"unknown_env_line": rb"Unknown vLLM environment variable"},
}


def _scan_file(tree: VllmTree, role: str, rel: str) -> dict[str, Any] | None:
    data = tree.read(rel)
    if data is None:
        return None
    folder = cache_folder(scan.SCAN_VERSION)
    key = hashlib.sha1(data + f"\0{role}\0{scan.SCAN_VERSION}".encode()).hexdigest()
    hit = cache_load(folder, key)
    if hit is not None:
        return hit
    if role in _SCANNERS:
        res = _SCANNERS[role][0](rel, data)
    else:
        res = scan.scan_text(rel, data, _TEXT_PATTERNS[role])
    cache_store(folder, key, res)
    return res


def scan_role(tree: VllmTree, role: str) -> dict[str, Any] | None:
    """The (content-cached) scan result of the file that plays ``role`` in ``tree`` (``"spec"``,
    ``"registry"``, ...), ``None`` when the tree has no such file."""
    rel = tree.roles.get(role)
    return _scan_file(tree, role, rel) if rel else None


def _loc(rel: str | None, line: int | None) -> str | None:
    if rel is None:
        return None
    return f"{rel}:{line}" if line else rel


# --- proposer dispatch ------------------------------------------------------------------------


def _admits(test: str, method: str, preds: dict[str, Any]) -> str:
    """Whether a dispatch test can hold for ``method``: ``"yes"``, ``"maybe"`` (further conditions on
    the draft) or ``"no"``."""
    try:
        node = ast.parse(test, mode="eval").body
    except SyntaxError:
        return "maybe"
    return _admit_node(node, method, preds)


def _admit_node(n: ast.AST, method: str, preds: dict[str, Any]) -> str:
    if isinstance(n, ast.BoolOp):
        parts = [_admit_node(v, method, preds) for v in n.values]
        if isinstance(n.op, ast.And):
            return "no" if "no" in parts else ("yes" if all(p == "yes" for p in parts) else "maybe")
        return "yes" if "yes" in parts else ("no" if all(p == "no" for p in parts) else "maybe")
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        inner = _admit_node(n.operand, method, preds)
        return {"yes": "no", "no": "yes"}.get(inner, "maybe")
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.left, ast.Attribute) and n.left.attr == "method":
        c = n.comparators[0]
        vals = [e.value for e in getattr(c, "elts", [c]) if isinstance(e, ast.Constant)]
        if isinstance(n.ops[0], ast.Eq):
            return "yes" if method in vals else "no"
        if isinstance(n.ops[0], ast.In):
            return "yes" if method in vals else "no"
        if isinstance(n.ops[0], ast.NotEq):
            return "no" if method in vals else "yes"
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in preds:
        p = preds[n.func.attr]
        if p.get("methods") is None:
            return "maybe"
        if method not in p["methods"]:
            return "no"
        return "maybe" if p.get("conditional") else "yes"
    mentions = any((isinstance(x, ast.Attribute) and x.attr == "method") or (
        isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr.startswith(("use_", "uses_"))) for x in ast.walk(n))
    return "maybe" if mentions else "yes"  # a gate unrelated to the method (``get_pp_group().is_last_rank``)


def proposers_for(dispatch: list[dict[str, Any]], methods: list[str], preds: dict[str, Any], rel: str) -> dict[str, list[dict[str, Any]]]:
    """For each method, the classes that can be built, in dispatch order, up to the first unconditional
    one: ``[{"class", "location", "when": "always"|"if ...", "condition"}]``. Negated ``elif`` tests
    are taken into account (an earlier branch that always matches hides the later ones)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for m in methods:
        chain: list[dict[str, Any]] = []
        for d in dispatch:
            verdicts = []
            for g in d["guards"]:
                a = _admits(g["test"], m, preds)
                if g["negated"]:
                    a = {"yes": "no", "no": "yes"}.get(a, "maybe")
                verdicts.append((a, g))
            if any(a == "no" for a, _ in verdicts):
                continue
            maybe = [g for a, g in verdicts if a == "maybe" and not g["negated"]]
            chain.append({"class": d["class"], "location": _loc(rel, d["line"]),
                          "when": "always" if not maybe else "if " + " and ".join(g["test"] for g in maybe)[:200]})
            if not maybe:
                break
        if chain:
            out[m] = chain
    return out


def _dispatch_of(res: dict[str, Any] | None, want: str) -> list[dict[str, Any]]:
    if not res or res.get("gap"):
        return []
    # ``NgramProposerGPU`` (0.24.0 gpu_model_runner.py:575) is a proposer whose name does not end in "Proposer"
    entries = [d for d in res["dispatch"] if d["class"].endswith(want) or want == "Proposer" and want in d["class"]
               or d["class"] == "create_custom_proposer"]
    if not entries:
        return []
    first_fn = entries[0]["function"]
    return [d for d in entries if d["function"] == first_fn]


# --- linking ----------------------------------------------------------------------------------


def registered_location(arch: str, archs: dict[str, Any], reg_rel: str | None) -> Any:
    """Registry location of ``arch``; for an f-string target (``Transformers{moe}ForMTP``) the list
    of registry entries its placeholders can produce; ``None`` when not registered."""
    if "{" in arch:
        import re

        pat = re.compile("^" + re.sub(r"\\\{[^}]*\\\}", ".*", re.escape(arch)) + "$")
        return [_loc(reg_rel, archs[k]["line"]) for k in sorted(archs) if pat.match(k)] or None
    return _loc(reg_rel, archs[arch]["line"]) if arch in archs else None


@dataclass
class _Link:
    """What the steps of :func:`link` share."""

    tree: VllmTree
    results: dict[str, dict[str, Any] | None]
    facts: dict[str, Any]
    gaps: list[Gap]
    spec: dict[str, Any]
    spec_rel: str | None
    ok: bool
    consts: dict[str, Any]
    archs: dict[str, Any] = field(default_factory=dict)
    envs: dict[str, Any] = field(default_factory=dict)
    #: ``vllm/envs.py`` variable -> its default as source text (scan_envs' ``defaults``; empty without the file)
    env_defaults: dict[str, Any] = field(default_factory=dict)


def link(tree: VllmTree, results: dict[str, dict[str, Any] | None]) -> tuple[dict[str, Any], list[Gap]]:
    """Turn per-file scan results into the public facts (docs/vllm.md) and gaps."""
    gaps: list[Gap] = []
    roles = tree.roles
    for rel, note in tree.notes:
        gaps.append(Gap(ANALYZER, f"{rel}: {note}", path=rel, blocking=rel == roles.get("spec") or "(PEP 263)" in note))
    for role, res in results.items():
        rel = roles[role]
        if res is None:
            continue
        if res.get("gap"):
            blocking = _SCANNERS.get(role, (None, False))[1]
            gaps.append(Gap(ANALYZER, f"{rel}: {res['gap']}", path=rel, blocking=blocking))
    spec_rel = roles.get("spec")
    spec = results.get("spec") or {}
    if spec_rel is None:
        gaps.append(Gap(ANALYZER, "no SpeculativeConfig source found (vllm/config/speculative.py, vllm/config/__init__.py, "
                                  "vllm/config.py): cannot tell how --speculative-config is rewritten", blocking=True))
    ok = bool(spec) and not spec.get("gap")
    facts: dict[str, Any] = {"version": tree.version, "target_kind": tree.kind, "files": dict(sorted(roles.items()))}
    consts = spec.get("consts", {}) if ok else {}

    x = _Link(tree, results, facts, gaps, spec, spec_rel, ok, consts)
    for step in (_link_spec_config, _link_rewrites, _link_drafts, _link_runners, _link_engine_args, _link_env, _link_summary):
        step(x)
    return facts, gaps


class _TreeReader:
    """``.get(rel)`` over a :class:`VllmTree` for :func:`mtp_audit.engines.vllm.speculators.speculator_table` (each module
    read once, bounded like every read of the tree; ``None``: not in the tree)."""

    def __init__(self, tree: VllmTree) -> None:
        self.tree = tree
        self.seen: dict[str, bytes | None] = {}

    def get(self, rel: str, default: Any = None) -> Any:
        if rel not in self.seen:
            self.seen[rel] = self.tree.read(rel) if self.tree.add_file(rel) else None
        return self.seen[rel] if self.seen[rel] is not None else default


def link_speculators(tree: VllmTree, facts: dict[str, Any], gaps: list[Gap]) -> None:
    """``facts['speculator_configs']`` for a release that keeps per-method logic in ``SpeculatorConfig`` classes (0.34.0:
    ``_CONFIG_BY_METHOD``, ``_CHECKPOINT_DETECTION_ORDER``, each class's ``supported_options`` and ``speculator_class``);
    absent for older releases. Not cached with the rest: it reads modules beyond the tree's fingerprinted files."""
    from mtp_audit.engines.code.pyast import parse_source
    from mtp_audit.engines.vllm.speculators import speculator_table

    spec_rel = tree.roles.get("spec")
    data = tree.read(spec_rel) if spec_rel else None
    module = parse_source(spec_rel, data)[0] if spec_rel and data is not None else None
    if module is None or not spec_rel:
        return
    table = speculator_table(module, spec_rel, _TreeReader(tree), str(tree.version))
    if table is None:
        return
    facts["speculator_configs"] = table
    # the V1 runner file is gone on purpose: each SpeculatorConfig class names its speculator (speculator_class)
    gaps[:] = [g for g in gaps if g != NO_V1_RUNNER]
    if table.get("gap"):
        gaps.append(Gap(ANALYZER, f"could not tell: vLLM {tree.version} moved the speculator table ({table['gap']})",
                        path=table.get("location"), blocking=False))

def _link_spec_config(x: _Link) -> None:
    """The validated ``method`` Literal: ``facts['spec_config']``."""
    tree, results, facts, gaps, spec, spec_rel, ok, consts = x.tree, x.results, x.facts, x.gaps, x.spec, x.spec_rel, x.ok, x.consts
    roles = tree.roles
    mf = spec.get("method_field") if ok else None  # {"line", "annotation", "literal", "skip_validation"} or None
    literal_name = mf["literal"] if mf else None
    literal = consts.get(literal_name) if literal_name else None
    cu = results.get("config_utils") or {}
    deco_from = spec.get("dataclass_from") or ""
    validated_by = None
    if "pydantic" in deco_from:
        validated_by = f"@dataclass from {deco_from}"
    elif spec.get("config_decorator_from") and cu.get("pydantic_line"):
        validated_by = f"@config ({roles.get('config_utils')}:{cu['pydantic_line']} builds a pydantic dataclass)"
    if mf and mf.get("skip_validation"):
        validated_by = None
    facts["spec_config"] = {
        "location": _loc(spec_rel, spec.get("class_line")) if ok else None,
        "validated": validated_by is not None, "validated_by": validated_by,
        "method_field": _loc(spec_rel, mf["line"]) if mf else None,
        "method_literal": {"name": literal_name, "values": literal["values"], "location": _loc(spec_rel, literal["line"])} if literal else None,
        "fields": spec.get("fields") if ok else None,
    }
    if ok and mf and literal is None:
        gaps.append(Gap(ANALYZER, f"{spec_rel}:{mf['line']}: the method annotation {mf['annotation']} is not a statically resolvable Literal; "
                                  "cannot tell which methods the validator accepts", path=spec_rel, blocking=False))


def _link_rewrites(x: _Link) -> None:
    """The rewrites in source order and the MTP alias: ``facts['rewrites']``, ``facts['mtp_alias']``."""
    facts, spec, spec_rel, ok, consts = x.facts, x.spec, x.spec_rel, x.ok, x.consts
    rewrites = []
    for w in spec.get("rewrites", []) if ok else []:
        guards = w["guards"]
        cond = " and ".join((f"not ({g['test']})" if g["negated"] else g["test"]) for g in guards[-2:])
        rewrites.append({
            "field": w["field"], "kind": w["kind"], "value": w["value"], "from": w["from"], "via": w["via"],
            "kept": w["kept"], "detector": w["detector"], "function": w["function"],
            "condition": cond, "depth": len(guards), "location": _loc(spec_rel, w["line"]),
            "test_location": _loc(spec_rel, guards[-1]["line"]) if guards else None,
            "logged": w["logged"], "log_location": _loc(spec_rel, w["log_line"]) if w["log_line"] else None,
        })
    facts["rewrites"] = rewrites
    alias = [r for r in rewrites if r["kind"] == "alias" and r["field"] == "method" and r["value"] == "'mtp'"]
    facts["mtp_alias"] = None
    if alias:
        a = alias[0]
        via = a["via"] or ""
        set_name = via[len("get_args("):-1] if via.startswith("get_args(") else via
        c = consts.get(set_name)
        facts["mtp_alias"] = {"members": a["from"], "set": set_name or None, "set_location": _loc(spec_rel, c["line"]) if c else None,
                              "set_kind": c["kind"] if c else None, "location": a["location"], "logged": a["logged"]}



def _link_drafts(x: _Link) -> None:
    """The MTP classes of the registry, ``hf_config_override``'s draft chains and ``__post_init__``'s architecture writes."""
    tree, results, facts, gaps, spec, spec_rel, ok = x.tree, x.results, x.facts, x.gaps, x.spec, x.spec_rel, x.ok
    roles = tree.roles
    reg = results.get("registry") or {}
    reg_rel = roles.get("registry")
    archs = reg.get("archs", {}) if not reg.get("gap") else {}
    facts["mtp_classes"] = sorted(
        ({"arch": k, "module": v["module"], "class": v["class"], "dict": v["dict"], "location": _loc(reg_rel, v["line"])}
         for k, v in archs.items() if "MTP" in k.upper() or v["dict"] == "_SPECULATIVE_DECODING_MODELS" and "mtp" in v["module"]),
        key=lambda d: d["arch"])
    ov = spec.get("override") if ok else None
    chains = []
    for c in ov["chains"] if ov else []:  # scan_spec's "override": {"line", "end_line", "chains", "source"} or None
        registered = {a: registered_location(a, archs, reg_rel) for a in c["architectures"] or []}
        steps = c["steps"]
        chains.append({"key": c["key"], "value": c["value"], "model_type": c["model_type"], "architectures": c["architectures"],
                       "registered": registered if archs else None, "conditional": c["conditional"], "dynamic": c["dynamic"],
                       "n_predict_from": c["n_predict_from"][-1] if c["n_predict_from"] else None,
                       "location": _loc(spec_rel, steps[0]["line"]) if steps else None,
                       "arch_location": _loc(spec_rel, next((s["line"] for s in reversed(steps) if s["field"] == "architectures"), None)),
                       "text_config_location": _loc(spec_rel, c["text_config_line"]) if c["text_config_line"] else None})
    facts["draft_chains"] = chains
    link_found = (spec.get("override_link") or {}) if ok else {}
    facts["override"] = {"location": _loc(spec_rel, ov["line"]) if ov else None,
                         "link": dict(link_found, location=_loc(spec_rel, link_found.get("line"))) if ok else None}
    facts["post_init_arch_writes"] = [
        dict(w, location=_loc(spec_rel, w["line"]), registered={a: registered_location(a, archs, reg_rel) for a in w["to"]} if archs else None)
        for w in (spec.get("post_init_arch_writes", []) if ok else [])]
    if ok and ov and link_found.get("how") == "unknown":
        gaps.append(Gap(ANALYZER, f"{spec_rel}: the draft ModelConfig's hf_overrides is neither SpeculativeConfig.hf_config_override nor a "
                                  "compose_draft_hf_overrides(...) result: cannot tell whether the draft-architecture rewrites apply",
                        path=spec_rel, blocking=False))
    if ok and ov is None:
        gaps.append(Gap(ANALYZER, f"{spec_rel}: SpeculativeConfig has no hf_config_override: no draft-architecture rewrite found",
                        path=spec_rel, blocking=False))

    x.archs = archs


def _link_runners(x: _Link) -> None:
    """The proposer each runner dispatches per method, and how the runner is chosen."""
    tree, results, facts, gaps, spec, spec_rel, ok = x.tree, x.results, x.facts, x.gaps, x.spec, x.spec_rel, x.ok
    roles = tree.roles
    literal = VllmRelease.from_facts(facts).spec_config.method_literal  # written by _link_spec_config
    preds = spec.get("predicates", {}) if ok else {}
    methods = sorted(set(literal.values) | {"mtp"} if literal else {"mtp", "eagle", "eagle3", "draft_model", "ngram"})
    if facts["mtp_alias"]:
        methods = [m for m in methods if m == "mtp" or m not in facts["mtp_alias"]["members"]]
    v1 = _dispatch_of(results.get("runner_v1"), "Proposer")
    v2 = _dispatch_of(results.get("runner_v2"), "Speculator")
    envs = results.get("envs") or {}
    x.env_defaults = envs.get("defaults") or {}
    v2_default = x.env_defaults.get("VLLM_USE_V2_MODEL_RUNNER")
    vc = results.get("vllm_config") or {}
    runner_sel: dict[str, Any] = {"v2_runner_exists": bool(v2), "env": "VLLM_USE_V2_MODEL_RUNNER" if "VLLM_USE_V2_MODEL_RUNNER" in (envs.get("defined") or {}) else None,
                                  "env_default": v2_default, "auto_location": _loc(roles.get("vllm_config"), vc.get("v2_auto_line")) if vc.get("v2_auto_line") else None}
    if not v2:
        runner_sel["default"] = "v1"
    elif v2_default in ("None",) and vc.get("v2_auto_line"):
        runner_sel["default"] = "auto (V2 unless a feature is unsupported, which logs)"
    elif v2_default in ('"0"', "'0'", "0"):
        runner_sel["default"] = "v1 (VLLM_USE_V2_MODEL_RUNNER=1 selects V2)"
    else:
        runner_sel["default"] = f"unknown (VLLM_USE_V2_MODEL_RUNNER default {v2_default})"
    facts["runner"] = runner_sel
    facts["proposers"] = {"v1": proposers_for(v1, methods, preds, roles.get("runner_v1", "")) if v1 else {},
                          "v2": proposers_for(v2, methods, preds, roles.get("runner_v2", "")) if v2 else {}}
    facts["predicates"] = {k: {"methods": p["methods"], "conditional": p["conditional"], "location": _loc(spec_rel, p["line"])} for k, p in sorted(preds.items())}
    if ok and "runner_v1" not in roles:
        gaps.append(NO_V1_RUNNER)

    x.envs = envs


def _link_engine_args(x: _Link) -> None:
    """The V1 oracle, the V0 MTP worker, the ``--spec-*`` flags, speculators checkpoints, the ``n_predict`` rules."""
    tree, results, facts, spec, spec_rel, ok = x.tree, x.results, x.facts, x.spec, x.spec_rel, x.ok
    roles = tree.roles
    au = results.get("arg_utils") or {}
    oracle = au.get("v1_oracle")
    facts["v1_oracle"] = {"accepted": oracle["accepted"], "location": _loc(roles.get("arg_utils"), oracle["lines"][0])} if oracle else None
    v0 = results.get("v0_worker") or {}
    facts["v0_spec_decode"] = _loc(roles.get("v0_worker"), v0.get("deepseek_mtp_line")) if "v0_worker" in roles else None
    facts["spec_flags"] = [dict(f, location=_loc(roles.get("arg_utils"), f["line"])) for f in au.get("spec_flags", [])]
    tu = (results.get("tu_config") or {}).get("speculators")
    facts["speculators"] = dict(tu, location=_loc(roles.get("tu_config"), tu["line"]),
                                call_location=_loc(roles.get("arg_utils"), au.get("speculators_call_line"))) if tu else None

    npr = spec.get("n_predict_rules", {}) if ok else {}
    facts["n_predict_rules"] = {"default": _loc(spec_rel, npr.get("default_line")) if npr.get("default_line") else None,
                                "divisible_error": _loc(spec_rel, npr.get("divisible_line")) if npr.get("divisible_line") else None,
                                "reuse_warning": _loc(spec_rel, npr.get("reuse_warning_line")) if npr.get("reuse_warning_line") else None,
                                "reuse_warning_condition": npr.get("reuse_warning_condition"),
                                "reuse_warning_skips": npr.get("reuse_warning_skips", [])}



def _link_env(x: _Link) -> None:
    """The spec-decode / FP4 / MoE environment variables of ``vllm/envs.py``."""
    tree, results, facts, gaps = x.tree, x.results, x.facts, x.gaps
    roles = tree.roles
    envs = x.envs
    env_rel = roles.get("envs")
    defined = envs.get("defined") or {}
    facts["env_vars"] = [{"name": n, "location": _loc(env_rel, line), "default": x.env_defaults.get(n)}
                         for n, line in sorted(defined.items()) if scan.ENV_RELEVANT.search(n)]
    facts["env_vars_total"] = len(defined)
    plat = results.get("platform") or {}
    facts["unknown_env_check"] = (_loc(env_rel, envs.get("unknown_warning_line")) if envs.get("unknown_warning_line") else
                                  _loc(roles.get("platform"), plat.get("unknown_env_line")) if plat.get("unknown_env_line") else None)
    if "envs" not in roles:
        gaps.append(Gap(ANALYZER, "vllm/envs.py not found: environment variables not examined", blocking=False))



def _link_summary(x: _Link) -> None:
    """The lints and ``facts['summary']``."""
    tree, facts, spec, spec_rel, ok = x.tree, x.facts, x.spec, x.spec_rel, x.ok
    literal = VllmRelease.from_facts(facts).spec_config.method_literal  # written by _link_spec_config
    rewrites = facts["rewrites"]
    chains = facts["draft_chains"]
    lits = set(literal.values) if literal else set()
    facts["lints"] = {
        "paren_string_in": [{"location": _loc(spec_rel, p["line"]), "test": p["test"], "string": p["string"]} for p in spec.get("paren_in", [])] if ok else [],
        "aliases_not_in_literal": sorted(set(facts["mtp_alias"]["members"]) - lits) if facts["mtp_alias"] and literal else [],
    }
    facts["summary"] = {
        "version": tree.version,
        "mtp_method": "mtp" if facts["mtp_alias"] or "mtp" in lits else ("deepseek_mtp" if "deepseek_mtp" in lits else None),
        "mtp_alias_logged": facts["mtp_alias"]["logged"] if facts["mtp_alias"] else None,
        "rewrites": len(rewrites),
        "silent_method_overrides": sum(1 for r in rewrites if r["kind"] == "auto-detect" and not r["logged"]),
        "draft_chains": len(chains),
        "mtp_classes": len(facts["mtp_classes"]),
        "validated": facts["spec_config"]["validated"],
        "v1_mtp_proposer": [p["class"] for p in facts["proposers"]["v1"].get("mtp", facts["proposers"]["v1"].get("deepseek_mtp", []))],
        "v2_mtp_speculator": [p["class"] for p in facts["proposers"]["v2"].get("mtp", [])],
        "env_vars": len(facts["env_vars"]),
    }

def audit_tree(tree: VllmTree) -> Report:
    """Audit an opened tree (whole-audit cache keyed by :meth:`VllmTree.fingerprint`)."""
    from mtp_audit.engines.vllm.findings import evaluate
    from mtp_audit.engines.vllm.rules import RULES

    folder = cache_folder(scan.SCAN_VERSION)
    tkey = "tree-" + hashlib.sha1((tree.fingerprint() + str(scan.SCAN_VERSION)).encode()).hexdigest()
    hit = cache_load(folder, tkey)
    if hit is not None and "facts" in hit:
        facts, gaps = hit["facts"], [Gap(**g) for g in hit["gaps"]]
        facts["scan"] = dict(facts.get("scan", {}), tree_cache="hit")
    else:
        results: dict[str, dict[str, Any] | None] = {}
        for role, rel in sorted(tree.roles.items()):
            results[role] = _scan_file(tree, role, rel)
        facts, gaps = link(tree, results)
        facts["scan"] = {"files_read": sorted(tree.roles.values()), "bytes": tree.bytes_read, "tree_cache": "miss"}
        cache_store(folder, tkey, {"facts": facts, "gaps": [g.fields() for g in gaps]})
    link_speculators(tree, facts, gaps)
    findings = evaluate(facts)
    name = tree.display if tree.version is None else f"{tree.display} (vllm {tree.version})"
    return Report.build(ANALYZER, name, findings=findings, gaps=gaps, facts=facts,
                        rule_ids=[r.id for r in RULES if int(r.id[3:]) < 420])


def audit_vllm(target: str | Path | None) -> Report:
    """Audit a vLLM checkout, package folder, unpacked wheel, ``.whl`` or (``None``) the installed vllm.

    Returns a :class:`Report` whose ``facts["vllm"]`` is documented in docs/vllm.md.

    Raises:
        InputError: the target cannot be opened or is not vLLM.
    """
    tree = open_target(target)
    try:
        return audit_tree(tree)
    finally:
        tree.close()
