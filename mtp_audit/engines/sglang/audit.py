"""Run the SGLang audit: read the tree, pre-filter, scan (cached, parallel), link, build the Report.

Linking connects per-file facts: a helper's literal returns to the call sites that assign its
result to a CLI argument (issue 3 item 2b/2c), alias sets to the enum lookup that uses them (2d),
``choices=NAME`` to the module constant ``NAME`` (following ``from x import NAME`` inside the tree),
and draft-architecture conditions to from -> to pairs (item 4).
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from mtp_audit.engines.code import cache
from mtp_audit.engines.sglang.scan import SCAN_VERSION, scan_file, wants_server_pass
from mtp_audit.engines.sglang.target import open_target
from mtp_audit.progress import Progress
from mtp_audit.report import Evidence, Gap, Location, Report
from mtp_audit.sources.tree import SourceTree

ANALYZER = "sglang"
SPEC_ARG = "speculative_algorithm"
#: Flags whose choices the preflight reads (issue 3 item 7).
PREFLIGHT_FLAGS = ("--fp4-gemm-backend", "--moe-runner-backend", "--quantization")
_FP4 = re.compile(r"fp4", re.I)
_CLI_PATHS = re.compile(r"(^|/)srt/(server_args\.py|arg_groups/)")


def _workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        n = os.cpu_count() or 1
    return max(1, min(2, n))


def _scan_job(job: tuple[str, bytes, bool]) -> tuple[str, dict[str, Any]]:
    rel, data, server = job
    return rel, scan_file(rel, data, server)


#: Largest file put through the ast + libcst pass (bytes); SGLang 0.5.23's largest such file is 121 KB,
#: 0.5.9's 250 KB. A larger one is not parsed (a blocking gap says so): libcst runs at about 0.4 MB/s
#: on a 2-core machine, so this and MAX_SERVER_PASS_BYTES bound the audit of any tree to about 25 s.
MAX_SERVER_PASS_FILE = 1024 * 1024

#: Most bytes put through the ast + libcst pass in one tree; SGLang 0.5.23 puts 1.1 MB (66 files) through it,
#: 0.5.9 0.46 MB (5 files).
MAX_SERVER_PASS_BYTES = 8 * 1024 * 1024

#: Files to parse before a cold scan shows a progress bar (a warm, cached scan parses none).
PROGRESS_MIN_FILES = 20


def scan_tree(tree: SourceTree, *, workers: int | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Scan every file of ``tree``; returns (rel -> scan result, statistics).

    Files whose bytes hold none of the searched tokens get only the regex env-var pass; server
    files go through ast + libcst, in ``workers`` processes (default: up to 2). A server file is
    handed to the pool as soon as it is read, so the workers parse while this process reads and
    regex-scans the rest of the tree (the serial work before the pool used to leave them idle).
    Results, their order and the tree's notes are those of a plain sorted pass.
    """
    folder = cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}")
    results: dict[str, dict[str, Any]] = {}
    jobs: list[tuple[str, bytes, bool, str]] = []
    stats = {"files": len(tree.files), "parsed": 0, "cached": 0, "bytes": 0}
    from mtp_audit.engines.sglang.scan import ENTRY_HINT, scan_env

    server_bytes = 0
    n = workers if workers is not None else _workers()
    pool: Any = None
    futures: dict[str, Any] = {}
    notes_before = len(tree.notes)
    try:
        for rel in sorted(tree.files):
            data = tree.read(rel)
            if data is None:
                continue
            stats["bytes"] += len(data)
            server = wants_server_pass(rel, data)
            if server and (len(data) > MAX_SERVER_PASS_FILE or server_bytes + len(data) > MAX_SERVER_PASS_BYTES):
                over = (f"{len(data)} bytes, over the {MAX_SERVER_PASS_FILE}-byte limit" if len(data) > MAX_SERVER_PASS_FILE
                        else f"the tree's server-argument files exceed {MAX_SERVER_PASS_BYTES} bytes")
                results[rel] = {"env": scan_env(data), "entry": [], "gap": f"{over} for the ast + libcst pass; not parsed"}
                continue
            if server:
                server_bytes += len(data)
            if not server and not ENTRY_HINT.search(data):
                results[rel] = {"env": scan_env(data), "entry": [], "gap": None}
                continue
            key = cache.key_for(data, server)
            hit = cache.load(folder, key)
            if hit is not None:
                results[rel] = hit
                stats["cached"] += 1
                continue
            jobs.append((rel, data, server, key))
            if server and n > 1:
                if pool is None:
                    import multiprocessing
                    from concurrent.futures import (
                        ProcessPoolExecutor,  # here: a warm audit never needs it
                    )

                    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
                    pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx)
                futures[rel] = pool.submit(_scan_job, (rel, data, server))
        # a cold scan of a large tree takes seconds: a bar on a terminal (never in CI or a pipe); a warm one has no jobs
        with Progress(len(jobs), f"parsing {tree.display}", min_total=PROGRESS_MIN_FILES) as progress:
            for rel, data, server, _ in jobs:
                if rel not in futures:
                    results[rel] = scan_file(rel, data, server)
                    progress.step()
            done: dict[str, dict[str, Any]] = {}
            for rel, fut in futures.items():
                done[rel] = fut.result()[1]
                progress.step()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    stats["parsed"] = sum(1 for j in jobs if j[2])
    # the insertion order of the former two-phase pass: loop results, then the pooled files largest
    # first (when more than 3), then the other jobs in path order
    big = [j for j in jobs if j[2]]
    if n > 1 and len(big) > 3:
        big.sort(key=lambda j: -len(j[1]))
        first = {rel: res for rel, res in results.items() if rel not in {j[0] for j in jobs}}
        ordered = {**first, **{j[0]: done[j[0]] for j in big}, **{j[0]: results[j[0]] for j in jobs if not j[2]}}
    else:
        merged = {**results, **done}
        first = {rel: res for rel, res in merged.items() if rel not in {j[0] for j in jobs}}
        ordered = {**first, **{j[0]: merged[j[0]] for j in jobs}}
    results = ordered
    tree.notes[notes_before:] = sorted(tree.notes[notes_before:], key=lambda note: note[0])
    for rel, _, _, key in jobs:
        cache.store(folder, key, results[rel])
    return results, stats


# --- linking ---------------------------------------------------------------------------------


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if "sglang" in parts:
        parts = parts[parts.index("sglang"):]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


class _Consts:
    """Resolve ``choices=NAME`` / alias-set names to literal lists across modules of the tree."""

    def __init__(self, tree: SourceTree, results: dict[str, dict[str, Any]]) -> None:
        self.tree = tree
        self.results = results
        self.by_module = {_module_name(rel): rel for rel in tree.files}

    def _file(self, rel: str) -> dict[str, Any] | None:
        r = self.results.get(rel)
        if r is None or "consts" not in r:
            data = self.tree.read(rel) if rel in self.tree.files else None
            if data is None or len(data) > MAX_SERVER_PASS_FILE:
                return None
            r = scan_file(rel, data, True)
            self.results[rel] = r
        return r

    def resolve_name(self, rel: str, name: str, depth: int = 0) -> list[str] | None:
        if depth > 6:
            return None
        r = self._file(rel)
        if r is None:
            return None
        c = r.get("consts", {}).get(name)
        if c is not None:
            vals = c["values"] if "values" in c else self.resolve_expr(rel, c["expr"], depth + 1) if "expr" in c else None
            if vals is None:
                return None
            vals = list(vals)
            for mname, extra, _ in r.get("mutations", []):
                if mname == name:
                    vals += extra
            return vals
        target = r.get("imports", {}).get(name)
        if target:
            mod, _, attr = target.rpartition(".")
            other = self.by_module.get(mod)
            if other:
                return self.resolve_name(other, attr, depth + 1)
        return None

    def locate_name(self, rel: str, name: str, depth: int = 0) -> str | None:
        """``path:line`` where module-level constant ``name`` (as seen from file ``rel``) is defined,
        following ``from x import name`` across the tree; ``None`` when not found."""
        if depth > 6:
            return None
        r = self._file(rel)
        if r is None:
            return None
        c = r.get("consts", {}).get(name)
        if c is not None and c.get("line"):
            return _loc(rel, c["line"])
        target = r.get("imports", {}).get(name)
        if target:
            mod, _, attr = target.rpartition(".")
            other = self.by_module.get(mod)
            if other:
                return self.locate_name(other, attr, depth + 1)
        return None

    def resolve_expr(self, rel: str, expr: str | None, depth: int = 0) -> list[str] | None:
        if expr is None:
            return None
        try:
            node = ast.parse(expr, mode="eval").body
        except SyntaxError:
            return None
        return self._eval(rel, node, depth)

    def _eval(self, rel: str, node: ast.AST, depth: int) -> list[str] | None:
        if isinstance(node, ast.Name):
            return self.resolve_name(rel, node.id, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out: list[str] = []
            for el in node.elts:
                if isinstance(el, ast.Starred):
                    sub = self._eval(rel, el.value, depth)
                    if sub is None:
                        return None
                    out += sub
                elif isinstance(el, ast.Constant):
                    out.append(str(el.value))
                else:
                    sub = self._eval(rel, el, depth)
                    if sub is None or len(sub) != 1:
                        return None
                    out += sub
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self._eval(rel, node.left, depth), self._eval(rel, node.right, depth)
            return None if a is None or b is None else a + b
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "sorted", "tuple", "set", "frozenset") and len(node.args) == 1:
            return self._eval(rel, node.args[0], depth)
        if isinstance(node, ast.Constant):
            return [str(node.value)]
        return None


def _loc(rel: str, line: int | None) -> str:
    return f"{rel}:{line}" if line else rel


def _froms_for(froms: list[list[Any]], names: tuple[str, ...]) -> list[str]:
    vals: list[str] = []
    for subj, op, lits in froms:
        if subj.split(".")[-1] in names and op in ("==", "in", "is"):
            vals += lits
    return vals


def link(tree: SourceTree, results: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], list[Gap]]:
    """Turn per-file scan results into the public facts (see docs/sglang.md) and gaps."""
    gaps: list[Gap] = []
    consts = _Consts(tree, results)
    for rel, note in tree.notes:
        gaps.append(Gap(ANALYZER, f"{rel}: {note}", path=rel, blocking=False))
    for rel in sorted(results):
        r = results[rel]
        if r.get("gap"):
            blocking = "consts" in r or "not parse" in r["gap"] or "UTF-8" in r["gap"]
            gaps.append(Gap(ANALYZER, f"{rel}: {r['gap']}", path=rel, blocking=blocking))
        for msg in r.get("unit_errors", []):
            gaps.append(Gap(ANALYZER, f"{rel}: {msg}", path=rel, blocking=True))

    server_args = _server_args_status(tree, results)
    if server_args["status"] != "ok" and not any(g.blocking and g.path == server_args["path"] for g in gaps):
        gaps.append(Gap(ANALYZER, f"{server_args['path']}: {server_args['reason']}; cannot tell which flags this SGLang "
                                  "declares (no conclusion about speculative decoding is drawn)", path=server_args["path"], blocking=True))

    # CLI arguments
    from mtp_audit.engines.sglang.diff import is_relevant

    unresolved: list[dict[str, Any]] = []
    cli: dict[str, dict[str, Any]] = {}
    dest_of: dict[str, str] = {}
    for rel in sorted(results):
        if not _CLI_PATHS.search(rel):
            continue
        for rec in results[rel].get("cli", []):
            flag = rec["flag"]
            if flag in cli:
                continue
            choices = rec["choices"]
            if choices is None and rec["choices_expr"]:
                choices = consts.resolve_expr(rel, rec["choices_expr"])
                if choices is None:
                    unresolved.append({"flag": flag, "location": _loc(rel, rec["line"]), "expr": rec["choices_expr"]})
                    if is_relevant(rec["dest"]):  # only MTP/FP4 flags get a note; the others are counted in facts
                        gaps.append(Gap(ANALYZER, f"{rel}:{rec['line']}: choices of {flag} ({rec['choices_expr']}) not statically resolvable",
                                        path=rel, blocking=False))
            cli[flag] = {
                "choices": choices,
                "default": rec["default"],
                # where the default is written: the dataclass field line for default=ServerArgs.x
                "default_location": _loc(rel, rec["default_line"]) if rec.get("default_line") else None,
                "default_expr": rec.get("default_expr"),
                "location": _loc(rel, rec["line"]),
                "choices_location": _loc(rel, rec.get("choices_line")) if rec.get("choices_line") else None,
                "choices_expr": rec["choices_expr"],
                "dest": rec["dest"],
                "help": rec["help"],
                "aliases": rec.get("aliases", []),
                "action": rec.get("action"),
                "nargs": rec.get("nargs"),
                "type": rec.get("type"),
                "required": rec.get("required", False),
            }
            dest_of[rec["dest"]] = flag
    dests = set(dest_of)

    funcs: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for rel in sorted(results):
        for fn in results[rel].get("funcs", []):
            funcs[fn["name"]].append((rel, fn))

    remaps: list[dict[str, Any]] = []
    autos: list[dict[str, Any]] = []
    normalisations: list[dict[str, Any]] = []
    draft_overrides: list[dict[str, Any]] = []
    draft_fills: list[dict[str, Any]] = []
    aliases: list[dict[str, Any]] = []

    def add(entry: dict[str, Any]) -> None:
        (remaps if entry["argument"] == SPEC_ARG else autos).append(entry)

    for rel in sorted(results):
        in_server = bool(_CLI_PATHS.search(rel))
        for fn in results[rel].get("funcs", []):
            for n in fn["normalisations"]:
                normalisations.append({"argument": n["argument"], "kind": n["kind"], "location": _loc(rel, n["line"]), "shape": n["shape"]})
            for d in fn["draft_path_fills"]:
                draft_fills.append({"kind": d["kind"], "location": _loc(rel, d["line"]), "condition": d["condition"], "value": d["value"],
                                    "test_location": _loc(rel, d["test_line"]) if d["test_line"] else None})
            for d in fn["draft_overrides"]:
                froms: list[str] = []
                for subj, op, lits in d["froms"]:
                    if op in ("==", "in"):
                        froms += lits
                    elif op == "in-name":
                        froms += consts.resolve_name(rel, lits[0].split(".")[-1]) or [f"<{lits[0]}>"]
                for f in froms or ["*"]:
                    draft_overrides.append({"from": f, "to": d["to"], "location": _loc(rel, d["line"]), "condition": d["condition"], "logged": d["logged"]})
            for a in fn["alias_lookups"]:
                members = consts.resolve_name(rel, a["set_name"].split(".")[-1])
                owner = fn.get("owner") or ""
                argument = re.sub(r"(?<!^)(?=[A-Z])", "_", owner).lower() if owner else a["subject"]
                if members is None:
                    gaps.append(Gap(ANALYZER, f"{rel}:{a['line']}: alias set {a['set_name']} not statically resolvable", path=rel, blocking=argument == SPEC_ARG))
                    continue
                aliases.append({"set": a["set_name"], "members": members, "to": a["to"], "location": _loc(rel, a["line"]),
                                "defined": consts.locate_name(rel, a["set_name"].split(".")[-1]),
                                "function": f"{owner}.{fn['name']}" if owner else fn["name"]})
                for m in members:
                    add({"argument": argument, "from": m, "to": [a["to"]], "condition": a["condition"], "logged": False,
                         "location": _loc(rel, a["line"]), "test_location": _loc(rel, a["test_line"]) if a["test_line"] else None,
                         "shape": "enum-alias-lookup", "via": f"{owner}.{fn['name']}" if owner else fn["name"]})
            for s in fn["sites"]:
                arg = s["argument"]
                if not in_server and s["shape"] == "assignment":
                    continue  # self.x = ... outside ServerArgs (workers, ModelConfig copies) is not a CLI rewrite
                if arg != SPEC_ARG and (arg not in dests or not in_server) and s["shape"] != "return-dict":
                    continue
                if arg != SPEC_ARG and s["shape"] == "return-dict" and arg not in dests:
                    continue
                if "call" in s:
                    linked = _link_call(rel, s, funcs)
                    if linked is None:
                        if arg == SPEC_ARG:
                            gaps.append(Gap(ANALYZER, f"{rel}:{s['line']}: {arg} is set from {s['call']['func']}(...), whose result is not a literal; remap not understood",
                                            path=rel, blocking=True))
                        else:
                            autos.append({"argument": arg, "from": _from_value(s, arg), "to": [f"<{s['call']['func']}(...)>"], "condition": s["condition"],
                                          "logged": s["logged"], "location": _loc(rel, s["line"]), "shape": s["shape"]})
                        continue
                    for e in linked:
                        add(e)
                    continue
                if s.get("dynamic") and arg == SPEC_ARG:
                    gaps.append(Gap(ANALYZER, f"{rel}:{s['line']}: {arg} is set to {s['to'][0]}; remap shape not understood", path=rel, blocking=False))
                    continue
                froms = _froms_for(s["froms"], (arg,))
                for f in froms or ["*"]:
                    to = [("None" if t is None else str(t)) for t in s["to"]]
                    if f == "*" and arg == SPEC_ARG and to in (["None"],):
                        continue
                    add({"argument": arg, "from": f, "to": to, "condition": s["condition"], "logged": s["logged"],
                         "location": _loc(rel, s["line"]), "test_location": _loc(rel, s["test_line"]) if s["test_line"] else None,
                         "shape": s["shape"]})
        # MODEL_OVERRIDES tables (0.5.20 on): {"Arch": {"field": value}}
        for name, c in results[rel].get("consts", {}).items():
            if name.endswith("MODEL_OVERRIDES") and "dict" in c:
                for arch, fields in sorted(c["dict"].items()):
                    if isinstance(fields, dict):
                        for field, val in sorted(fields.items()):
                            add({"argument": field, "from": "*", "to": [str(val)], "condition": f'architecture == "{arch}"', "logged": False,
                                 "location": _loc(rel, c["line"]), "test_location": None, "shape": "MODEL_OVERRIDES"})

    mtp_classes: list[dict[str, Any]] = []
    entry_classes: list[dict[str, Any]] = []
    parsers: list[dict[str, Any]] = []
    env: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"defined": [], "read": []})
    for rel in sorted(results):
        r = results[rel]
        for e in r.get("entry", []):
            entry_classes.append({"class": e["class"], "file": rel, "line": e["line"], "entry_location": _loc(rel, e["entry_line"])})
            if e.get("mtp", True):
                mtp_classes.append({"class": e["class"], "file": rel, "line": e["line"], "entry_location": _loc(rel, e["entry_line"])})
        if _CLI_PATHS.search(rel):
            for pr in r.get("parsers", []):
                parsers.append({"allow_abbrev": pr["allow_abbrev"], "prog": pr["prog"], "function": pr["function"],
                                "location": _loc(rel, pr["line"])})
        for name, line in r["env"]["defined"]:
            env[name]["defined"].append(_loc(rel, line))
        for name, line in r["env"]["read"]:
            env[name]["read"].append(_loc(rel, line))

    spec = cli.get("--speculative-algorithm")
    accepted: list[dict[str, str]] = []
    if spec is not None:
        if spec["choices"] and "NEXTN" in spec["choices"]:
            accepted.append({"via": "choices", "location": spec.get("choices_location") or spec["location"]})
        elif spec["help"] and "NEXTN" in spec["help"]:
            accepted.append({"via": "help text (free-form flag)", "location": spec["location"]})
    for a in aliases:
        if "NEXTN" in a["members"]:
            accepted.append({"via": f"alias set {a['set']}", "location": a["location"]})
    for r in remaps:
        if r["from"] == "NEXTN" and r["shape"] != "enum-alias-lookup":
            accepted.append({"via": "remap", "location": r["location"]})
            break

    key = lambda d: (d.get("location", ""), str(d))  # noqa: E731
    facts: dict[str, Any] = {
        "version": tree.version,
        "target_kind": tree.kind,
        "server_args": server_args,
        "cli_arguments": dict(sorted(cli.items())),
        "remaps": sorted(remaps, key=key),
        "auto_resolutions": sorted(autos, key=key),
        "normalisations": sorted(normalisations, key=key),
        "aliases": sorted(aliases, key=key),
        "nextn_accepted": accepted,
        "draft_model_path_fills": sorted(draft_fills, key=key),
        "draft_arch_overrides": sorted(draft_overrides, key=key),
        "mtp_classes": sorted(mtp_classes, key=lambda d: (d["file"], d["line"], d["class"])),
        "entry_classes": sorted(entry_classes, key=lambda d: (d["file"], d["line"], d["class"])),
        "parser": (sorted(parsers, key=lambda d: d["location"])[0] if parsers else None),
        "entry_points": _entry_points(tree),
        "env_vars": [{"name": n, "defined": sorted(set(v["defined"])), "read": sorted(set(v["read"]))} for n, v in sorted(env.items())],
        "unresolved_choices": sorted(unresolved, key=lambda d: d["flag"]),
        "preflight_choices": {
            "--fp4-gemm-backend": (cli.get("--fp4-gemm-backend") or {}).get("choices"),
            "--moe-runner-backend": (cli.get("--moe-runner-backend") or {}).get("choices"),
            "--quantization(fp4)": [c for c in ((cli.get("--quantization") or {}).get("choices") or []) if _FP4.search(c)],
        },
    }
    nextn = [r for r in remaps if r["from"] == "NEXTN"]
    facts["summary"] = {
        "version": tree.version,
        "speculative_decoding": True if spec is not None else (False if server_args["status"] == "ok" else None),
        "nextn_accepted": bool(accepted),
        "nextn_to": sorted({t for r in nextn for t in r["to"]}),
        "nextn_remap_logged": any(r["logged"] for r in nextn if r["to"] == ["EAGLE"]) if nextn else None,
        "remaps": len(remaps),
        "auto_resolutions": len(autos),
        "draft_arch_overrides": len(draft_overrides),
        "mtp_classes": len(mtp_classes),
        "env_vars": len(facts["env_vars"]),
        "cli_arguments": len(cli),
    }
    return facts, gaps


def answer(facts: dict[str, Any]) -> list[str]:
    """The one-line answer the text report opens with (``facts["sglang"]["answer"]``): what
    ``--speculative-algorithm NEXTN`` becomes in this tree, where, and how many MTP classes it has."""
    s = facts.get("summary") or {}
    who = f"SGLang {s.get('version')}" if s.get("version") else "this SGLang"
    status = (facts.get("server_args") or {}).get("status", "ok")
    if status != "ok":
        return [f"could not tell what {who} does with --speculative-algorithm NEXTN: "
                f"{(facts.get('server_args') or {}).get('reason') or 'server_args.py not read'}"]
    if not s.get("speculative_decoding"):
        return [f"{who} has no --speculative-algorithm flag: MTP/NextN heads are never used"]
    if not s.get("nextn_accepted"):
        return [f"{who} does not accept --speculative-algorithm NEXTN"]
    nextn = [r for r in facts.get("remaps") or [] if r["from"] == "NEXTN" and r.get("shape") != "enum-alias-lookup"]
    classes = f"; {s.get('mtp_classes', 0)} MTP model classes"
    if not nextn:
        return [f"{who} accepts --speculative-algorithm NEXTN but no rewrite of it was found: which worker runs could not be told{classes}"]
    # Lead with what most models get: the EAGLE alias when the tree has one; a rewrite to another algorithm
    # under a model-specific condition (0.5.23: FROZEN_KV_MTP only when is_gemma4_draft) is named after it.
    ordered = sorted(nextn, key=lambda x: (x["to"] != ["EAGLE"], bool(x.get("condition")) and x["to"] != ["EAGLE"], x["location"]))
    r = ordered[0]
    how = "logged" if r.get("logged") else "silent"
    others = []
    for o in ordered[1:]:
        if o["to"] != r["to"] and all(o["to"] != x["to"] for x in ordered[:ordered.index(o)] if x is not o and x["to"] != r["to"]):
            cond = " ".join(str(o.get("condition") or "always").split())
            others.append(f"{', '.join(o['to'])} when {cond[:80] + ('...' if len(cond) > 80 else '')}")
    also = f"; {'; '.join(others[:2])}" if others else ""
    if r["to"] == ["EAGLE"]:
        return [f"{who} runs --speculative-algorithm NEXTN as EAGLE with the target checkpoint as its own draft "
                f"({how} rewrite at {r['location']}){also}{classes}"]
    return [f"{who} rewrites --speculative-algorithm NEXTN to {', '.join(r['to'])} ({how}, {r['location']}){also}{classes}"]


def _server_args_status(tree: SourceTree, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Whether SGLang's server-arguments source (``<prefix>/srt/server_args.py``) was read and parsed.

    Returns ``{"path", "status", "reason"}``; ``status`` is ``"ok"``, ``"missing"``, ``"unreadable"``
    (over the size limit, I/O error), ``"unparseable"`` (not UTF-8, not Python 3) or ``"empty"`` (no
    statements). Anything but ``"ok"`` means "could not tell": MTP103 ("no speculative decoding")
    is concluded only from a server_args.py that was parsed and declares no such flag.
    """
    rel = tree.marker_path
    out: dict[str, Any] = {"path": rel, "status": "ok", "reason": None}
    r = results.get(rel)
    if rel not in tree.files:
        return dict(out, status="missing", reason="SGLang's server-arguments source is missing")
    if r is None:
        return dict(out, status="unreadable", reason="SGLang's server-arguments source could not be read")
    if "consts" in r and not r.get("gap"):
        return out  # the ast + libcst pass parsed it
    if r.get("gap") and ("not parse" in r["gap"] or "UTF-8" in r["gap"]):
        return dict(out, status="unparseable", reason="SGLang's server-arguments source could not be parsed")
    data = tree.read(rel)
    if data is None:
        return dict(out, status="unreadable", reason="SGLang's server-arguments source could not be read")
    try:
        body = ast.parse(data.decode("utf-8"), filename=rel).body
    except UnicodeDecodeError as exc:
        return dict(out, status="unparseable", reason=f"SGLang's server-arguments source is not UTF-8 (byte {exc.start})")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return dict(out, status="unparseable", reason=f"SGLang's server-arguments source does not parse as Python 3{where}")
    if not body:
        return dict(out, status="empty", reason="SGLang's server-arguments source is empty")
    return out


_SERVE_SUBCOMMAND = re.compile(rb"""add_parser\(\s*["']serve["']""")


def _entry_points(tree: SourceTree) -> dict[str, str | None]:
    """How this SGLang can be started: ``python -m sglang.launch_server`` (the module file exists) and
    ``sglang serve`` (``sglang/cli/main.py`` registers a ``serve`` sub-command; the ``sglang`` console
    script points at ``sglang.cli.main:main`` from 0.5.x on, e.g. 0.5.9). Values are ``path[:line]``
    or ``None`` when this version has no such entry point."""
    out: dict[str, str | None] = {"python -m sglang.launch_server": None, "sglang serve": None}
    for rel in sorted(tree.files):
        if rel in ("sglang/launch_server.py", "python/sglang/launch_server.py"):
            out["python -m sglang.launch_server"] = rel
        elif rel in ("sglang/cli/main.py", "python/sglang/cli/main.py"):
            data = tree.read(rel) or b""
            m = _SERVE_SUBCOMMAND.search(data)
            if m:
                out["sglang serve"] = _loc(rel, data.count(b"\n", 0, m.start()) + 1)
    return out


def _from_value(site: dict[str, Any], arg: str) -> str:
    vals = _froms_for(site["froms"], (arg,))
    return vals[0] if vals else "*"


def _link_call(rel: str, site: dict[str, Any], funcs: dict[str, list[tuple[str, dict[str, Any]]]]) -> list[dict[str, Any]] | None:
    """Connect ``x = helper(x, ...)`` to the helper's literal returns; ``None`` when not linkable."""
    call = site["call"]
    cands = funcs.get(call["func"], [])
    cands = sorted(cands, key=lambda c: (c[0] != rel, c[0]))
    arg = site["argument"]
    for frel, fn in cands:
        if not fn["returns"]:
            continue
        param = None
        for i, a in enumerate(call["args"]):
            if a["refers"] == arg:
                param = a["keyword"] or (fn["params"][i] if i < len(fn["params"]) else None)
                break
        if param is None:
            continue
        out = []
        for ret in fn["returns"]:
            froms = _froms_for(ret["froms"], (param,))
            for f in froms or ["*"]:
                out.append({"argument": arg, "from": f, "to": [ret["to"]], "condition": ret["condition"], "logged": ret["logged"],
                            "location": _loc(frel, ret["line"]), "test_location": _loc(frel, ret["test_line"]) if ret["test_line"] else None,
                            "shape": f"helper-return via {site['shape']}", "via": f"{fn['name']}() applied at {_loc(rel, site['line'])}"})
        return out
    return None


def audit_tree(tree: SourceTree) -> Report:
    """Audit an opened tree and build the :class:`~mtp_audit.report.Report` (findings from rules)."""
    from mtp_audit.engines.sglang.checks import evaluate
    from mtp_audit.engines.sglang.flow import analyze_flows, flow_findings

    folder = cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}")
    tkey = "tree-" + tree.fingerprint()
    hit = cache.load(folder, tkey)
    if hit is not None and "facts" in hit:
        facts = hit["facts"]
        gaps = [Gap(**g) for g in hit["gaps"]]
        facts["scan"] = dict(facts["scan"], tree_cache="hit")
        if "value_flows" not in facts:  # cached by a release without the flow analysis
            facts["value_flows"] = analyze_flows(tree)
    else:
        results, stats = scan_tree(tree)
        facts, gaps = link(tree, results)
        facts["scan"] = dict(stats, tree_cache="miss", unresolved_choices=len(facts["unresolved_choices"]),
                             unresolved_choices_noted=sum(1 for u in facts["unresolved_choices"] if any(
                                 g.message.startswith(f"{u['location']}: choices of {u['flag']} ") for g in gaps)))
        facts["value_flows"] = analyze_flows(tree)
        cache.store(folder, tkey, {"facts": facts, "gaps": [g.__dict__ for g in gaps]})
    facts["answer"] = answer(facts)  # after the cache: the words may change without the facts changing
    findings = evaluate(facts) + flow_findings(facts)
    from mtp_audit.engines.sglang.rules import RULES

    name = tree.display if tree.version is None else f"{tree.display} (sglang {tree.version})"
    return Report.build(ANALYZER, name, findings=findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES if r.id < "MTP110"])


def audit_sglang(target: str | Path | None) -> Report:
    """Audit an SGLang checkout, package folder, unpacked wheel, ``.whl`` file or (``None``) the
    installed sglang. See docs/sglang.md for the facts contract (``report.facts["sglang"]``).

    Raises:
        InputError: the target cannot be opened or is not SGLang.
    """
    tree = open_target(target)
    try:
        return audit_tree(tree)
    finally:
        tree.close()


__all__ = ["audit_sglang", "audit_tree", "scan_tree", "link", "Evidence", "Location"]
