"""Run the SGLang audit: the tree's cached facts, or a cold scan (:mod:`mtp_audit.engines.sglang.treescan`) linked
here; then the Report.

Linking connects per-file facts: a helper's literal returns to the call sites that assign its
result to a CLI argument, alias sets to the enum lookup that uses them,
``choices=NAME`` to the module constant ``NAME`` (following ``from x import NAME`` inside the tree),
and draft-architecture conditions to from -> to pairs.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtp_audit.engines.code import cache
from mtp_audit.engines.sglang.draft_api import draft_api
from mtp_audit.engines.sglang.names import CLI_PATHS as _CLI_PATHS
from mtp_audit.engines.sglang.names import SCAN_VERSION
from mtp_audit.engines.sglang.target import open_target
from mtp_audit.report import Evidence, Gap, Location, Report
from mtp_audit.sources.tree import SourceTree

ANALYZER = "sglang"
SPEC_ARG = "speculative_algorithm"
#: Flags whose choices the preflight reads.
PREFLIGHT_FLAGS = ("--fp4-gemm-backend", "--moe-runner-backend", "--quantization")
_FP4 = re.compile(r"fp4", re.IGNORECASE)


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

    def __init__(self, tree: SourceTree, results: dict[str, dict[str, Any]],
                 parsed: dict[str, dict[str, Any]] | None = None) -> None:
        self.tree = tree
        self.results = results
        self.parsed = parsed or {}
        self.by_module = {_module_name(rel): rel for rel in tree.files}

    def _file(self, rel: str) -> dict[str, Any] | None:
        """The server-pass result of ``rel``: the scan's, else parsed here (or taken from ``parsed``, the same
        parse done beside the scan: :class:`~mtp_audit.engines.sglang.treescan.Prefetch`) and added to the
        results; ``None`` when the file cannot be read or is over the parse limit."""
        r = self.results.get(rel)
        if r is None or "consts" not in r:
            r = self.parsed.pop(rel, None)
            if r is None:
                r = self._parse(rel)
                if r is None:
                    return None
            self.results[rel] = r
        return r

    def _parse(self, rel: str) -> dict[str, Any] | None:
        data = self.tree.read(rel) if rel in self.tree.files else None
        from mtp_audit.engines.sglang.scan import scan_file
        from mtp_audit.engines.sglang.treescan import MAX_SERVER_PASS_FILE

        if data is None or len(data) > MAX_SERVER_PASS_FILE:
            return None
        return scan_file(rel, data, True)

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


class _Probe(_Consts):
    """A resolver that parses nothing: it lists the files :class:`_Consts` would parse (``wanted``, in order)."""

    def __init__(self, tree: SourceTree, results: dict[str, dict[str, Any]]) -> None:
        super().__init__(tree, results)
        self.wanted: list[str] = []

    def _file(self, rel: str) -> dict[str, Any] | None:
        r = self.results.get(rel)
        if r is None or "consts" not in r:
            self.wanted.append(rel)
            return None
        return r


def link_parses(tree: SourceTree, results: dict[str, dict[str, Any]]) -> list[str]:
    """The files :func:`link` will parse to resolve the ``choices=`` expressions of the server arguments declared in
    ``results`` (path -> scan result; the server-argument files at least), as far as ``results`` tells: where the
    chain of constants and imports from each name first leaves the parsed files. A guess for
    :class:`~mtp_audit.engines.sglang.treescan.Prefetch` (SGLang 0.5.23: ``srt/utils/common.py``, 177 kB, for the
    choices of ``--lora-target-modules``): :func:`link` parses what it needs whatever this returns."""
    probe = _Probe(tree, results)
    for rel in sorted(results):
        if _CLI_PATHS.search(rel):
            for rec in results[rel].get("cli", []):
                if rec["choices"] is None and rec["choices_expr"]:
                    probe.resolve_expr(rel, rec["choices_expr"])
    return probe.wanted


def link(tree: SourceTree, results: dict[str, dict[str, Any]],
         parsed: dict[str, dict[str, Any]] | None = None) -> tuple[dict[str, Any], list[Gap]]:
    """Turn per-file scan results into the public facts (see docs/sglang.md) and gaps. ``parsed``: server-pass
    results of files the scan did not parse, done beside it (:func:`link_parses`); used where linking would parse
    the file itself."""
    ln = _Linker(tree, results, parsed)
    ln.file_gaps()
    server_args = ln.server_args_gap()
    ln.cli_table()
    funcs: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for rel in sorted(results):
        for fn in results[rel].get("funcs", []):
            funcs[fn["name"]].append((rel, fn))
    for rel in sorted(results):
        for fn in results[rel].get("funcs", []):
            ln.function_records(rel, fn, funcs)
        ln.model_override_tables(rel)
    registry = ln.registries()
    facts = ln.facts(server_args, registry)
    facts["draft_api"] = draft_api(tree, registry["mtp_classes"])
    return facts, ln.gaps


class _Linker:
    """The steps of :func:`link`, sharing the tree, the per-file results, the constant resolver and the growing
    fact lists (``cli``, ``remaps``, ``autos``, ...) and gaps."""

    def __init__(self, tree: SourceTree, results: dict[str, dict[str, Any]],
                 parsed: dict[str, dict[str, Any]] | None = None) -> None:
        self.tree, self.results = tree, results
        self.gaps: list[Gap] = []
        self.consts = _Consts(tree, results, parsed)
        self.cli: dict[str, dict[str, Any]] = {}
        self.dests: set[str] = set()
        self.unresolved: list[dict[str, Any]] = []
        self.remaps: list[dict[str, Any]] = []
        self.autos: list[dict[str, Any]] = []
        self.normalisations: list[dict[str, Any]] = []
        self.draft_overrides: list[dict[str, Any]] = []
        self.draft_fills: list[dict[str, Any]] = []
        self.aliases: list[dict[str, Any]] = []
        self.predicates = _predicates(results)
        self.calls = _hook_calls(results)

    def add(self, entry: dict[str, Any]) -> None:
        (self.remaps if entry["argument"] == SPEC_ARG else self.autos).append(entry)

    def file_gaps(self) -> None:
        """The tree's notes, files that could not be read or parsed, functions that could not be analysed."""
        for rel, note in self.tree.notes:  # a file CPython would decode otherwise than we can: could not tell
            self.gaps.append(Gap(ANALYZER, f"{rel}: {note}", path=rel, blocking="(PEP 263)" in note))
        for rel in sorted(self.results):
            r = self.results[rel]
            if r.get("gap"):
                server_file = "server" in r.get("passes", ("server",))  # a file only other passes read is a note
                blocking = "consts" in r or server_file and ("not parse" in r["gap"] or "UTF-8" in r["gap"])
                self.gaps.append(Gap(ANALYZER, f"{rel}: {r['gap']}", path=rel, blocking=blocking))
            for msg in r.get("unit_errors", []):
                self.gaps.append(Gap(ANALYZER, f"{rel}: {msg}", path=rel, blocking=True))

    def server_args_gap(self) -> dict[str, Any]:
        """:func:`_server_args_status`, with a blocking gap when ``server_args.py`` was not read."""
        server_args = _server_args_status(self.tree, self.results)
        if server_args["status"] != "ok" and not any(g.blocking and g.path == server_args["path"] for g in self.gaps):
            self.gaps.append(Gap(ANALYZER, f"{server_args['path']}: {server_args['reason']}; cannot tell which flags this SGLang "
                                           "declares (no conclusion about speculative decoding is drawn)",
                                 path=server_args["path"], blocking=True))
        return server_args

    def cli_table(self) -> None:
        """Every declared flag (first declaration wins), its choices resolved across modules."""
        from mtp_audit.engines.sglang.diff import is_relevant

        dest_of: dict[str, str] = {}
        for rel in sorted(self.results):
            if not _CLI_PATHS.search(rel):
                continue
            for rec in self.results[rel].get("cli", []):
                flag = rec["flag"]
                if flag in self.cli:
                    continue
                choices = rec["choices"]
                if choices is None and rec["choices_expr"]:
                    choices = self.consts.resolve_expr(rel, rec["choices_expr"])
                    if choices is None:
                        self.unresolved.append({"flag": flag, "location": _loc(rel, rec["line"]), "expr": rec["choices_expr"]})
                        if is_relevant(rec["dest"]):  # only MTP/FP4 flags get a note; the others are counted in facts
                            self.gaps.append(Gap(ANALYZER, f"{rel}:{rec['line']}: choices of {flag} ({rec['choices_expr']}) not "
                                                           "statically resolvable", path=rel, blocking=False))
                self.cli[flag] = _cli_fact(rel, rec, choices)
                dest_of[rec["dest"]] = flag
        self.dests = set(dest_of)

    def function_records(self, rel: str, fn: dict[str, Any], funcs: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
        """One function's normalisations, draft-path fills, draft overrides, alias lookups and rewrite sites."""
        for n in fn["normalisations"]:
            self.normalisations.append({"argument": n["argument"], "kind": n["kind"], "location": _loc(rel, n["line"]), "shape": n["shape"]})
        for d in fn["draft_path_fills"]:
            self.draft_fills.append({"kind": d["kind"], "location": _loc(rel, d["line"]), "condition": d["condition"], "value": d["value"],
                                     "test_location": _loc(rel, d["test_line"]) if d["test_line"] else None})
        for d in fn["draft_overrides"]:
            froms: list[str] = []
            for _subj, op, lits in d["froms"]:
                if op in ("==", "in"):
                    froms += lits
                elif op == "in-name":
                    froms += self.consts.resolve_name(rel, lits[0].split(".")[-1]) or [f"<{lits[0]}>"]
            for f in froms or ["*"]:
                self.draft_overrides.append({"from": f, "to": d["to"], "location": _loc(rel, d["line"]), "condition": d["condition"],
                                             "logged": d["logged"]})
        for a in fn["alias_lookups"]:
            self.alias_lookup(rel, fn, a)
        in_server = bool(_CLI_PATHS.search(rel))
        for site in fn["sites"]:
            self.site(rel, dict(site, function=fn["name"]), in_server, funcs)

    def alias_lookup(self, rel: str, fn: dict[str, Any], a: dict[str, Any]) -> None:
        """An alias set looked up by an enum's ``from_string``: each member becomes a rewrite to ``a["to"]``."""
        members = self.consts.resolve_name(rel, a["set_name"].split(".")[-1])
        owner = fn.get("owner") or ""
        argument = re.sub(r"(?<!^)(?=[A-Z])", "_", owner).lower() if owner else a["subject"]
        if members is None:
            self.gaps.append(Gap(ANALYZER, f"{rel}:{a['line']}: alias set {a['set_name']} not statically resolvable", path=rel,
                                 blocking=argument == SPEC_ARG))
            return
        via = f"{owner}.{fn['name']}" if owner else fn["name"]
        rec = {"set": a["set_name"], "members": members, "to": a["to"], "location": _loc(rel, a["line"]),
               "defined": self.consts.locate_name(rel, a["set_name"].split(".")[-1]), "function": via}
        if a.get("members"):
            rec["enum_members"] = a["members"]
        if a.get("raise"):
            r = a["raise"]
            rec["unknown_raises"] = {"exception": r["exception"], "message": r["message"], "location": _loc(rel, r["line"])}
        self.aliases.append(rec)
        for m in members:
            self.add({"argument": argument, "from": m, "to": [a["to"]], "condition": a["condition"], "logged": False,
                      "location": _loc(rel, a["line"]), "test_location": _loc(rel, a["test_line"]) if a["test_line"] else None,
                      "shape": "enum-alias-lookup", "via": via})

    def site(self, rel: str, s: dict[str, Any], in_server: bool, funcs: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
        """One rewrite site: a remap (``speculative_algorithm``) or an auto-resolution of a declared flag."""
        arg = s["argument"]
        if not in_server and s["shape"] == "assignment":
            return  # self.x = ... outside ServerArgs (workers, ModelConfig copies) is not a CLI rewrite
        if arg != SPEC_ARG and (arg not in self.dests or not in_server) and s["shape"] != "return-dict":
            return
        if arg != SPEC_ARG and s["shape"] == "return-dict" and arg not in self.dests:
            return
        if "call" in s:
            linked = _link_call(rel, s, funcs)
            if linked is None:
                if arg == SPEC_ARG:
                    self.gaps.append(Gap(ANALYZER, f"{rel}:{s['line']}: {arg} is set from {s['call']['func']}(...), whose result is "
                                                   "not a literal; remap not understood", path=rel, blocking=True))
                else:
                    self.autos.append({"argument": arg, "from": _from_value(s, arg), "to": [f"<{s['call']['func']}(...)>"],
                                       "condition": s["condition"], "logged": s["logged"], "location": _loc(rel, s["line"]),
                                       "shape": s["shape"], **self.guard_of(s)})
                return
            for e in linked:
                self.add(e)
            return
        if s.get("dynamic") and arg == SPEC_ARG:
            self.gaps.append(Gap(ANALYZER, f"{rel}:{s['line']}: {arg} is set to {s['to'][0]}; remap shape not understood", path=rel,
                                 blocking=False))
            return
        for f in _froms_for(s["froms"], (arg,)) or ["*"]:
            to = [("None" if t is None else str(t)) for t in s["to"]]
            if f == "*" and arg == SPEC_ARG and to in (["None"],):
                continue
            self.add({"argument": arg, "from": f, "to": to, "condition": s["condition"], "logged": s["logged"],
                      "location": _loc(rel, s["line"]), "test_location": _loc(rel, s["test_line"]) if s["test_line"] else None,
                      "shape": s["shape"], **self.guard_of(s)})

    def guard_of(self, s: dict[str, Any]) -> dict[str, Any]:
        """``{"guard": text}`` of a site: its own guard after the guards of the calls of its function
        (:func:`~mtp_audit.engines.sglang.guards.caller_guard`), the release's predicates inlined
        (:func:`~mtp_audit.engines.sglang.guards.inline_predicates`); and ``keeps_given`` / ``rebinds_given`` where set."""
        from mtp_audit.engines.sglang.guards import (
            caller_guard,
            inline_predicates,
            with_callers,
        )

        out: dict[str, Any] = {}
        guard = with_callers(s.get("guard"), caller_guard(s.get("function") or "", self.calls))
        if guard:
            out["guard"] = inline_predicates(guard, self.predicates)
        for flag in ("keeps_given", "rebinds_given"):
            if s.get(flag):
                out[flag] = True
        return out

    def model_override_tables(self, rel: str) -> None:
        """``MODEL_OVERRIDES`` tables (0.5.20 on): ``{"Arch": {"field": value}}``."""
        for name, c in self.results[rel].get("consts", {}).items():
            if name.endswith("MODEL_OVERRIDES") and "dict" in c:
                for arch, fields in sorted(c["dict"].items()):
                    if isinstance(fields, dict):
                        for field, val in sorted(fields.items()):
                            self.add({"argument": field, "from": "*", "to": [str(val)], "condition": f'architecture == "{arch}"',
                                      "logged": False, "location": _loc(rel, c["line"]), "test_location": None, "shape": "MODEL_OVERRIDES"})

    def registries(self) -> dict[str, Any]:
        """EntryClass registrations (MTP ones apart), argument parsers and environment variables."""
        mtp_classes: list[dict[str, Any]] = []
        entry_classes: list[dict[str, Any]] = []
        parsers: list[dict[str, Any]] = []
        env: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"defined": [], "read": []})
        for rel in sorted(self.results):
            r = self.results[rel]
            for e in r.get("entry", []):
                rec = {"class": e["class"], "file": rel, "line": e["line"], "entry_location": _loc(rel, e["entry_line"])}
                entry_classes.append(rec)
                if e.get("mtp", True):
                    mtp_classes.append(dict(rec))
            if _CLI_PATHS.search(rel):
                for pr in r.get("parsers", []):
                    parsers.append({"allow_abbrev": pr["allow_abbrev"], "prog": pr["prog"], "function": pr["function"],
                                    "location": _loc(rel, pr["line"])})
            for name, line in r["env"]["defined"]:
                env[name]["defined"].append(_loc(rel, line))
            for name, line in r["env"]["read"]:
                env[name]["read"].append(_loc(rel, line))
        return {"mtp_classes": mtp_classes, "entry_classes": entry_classes, "parsers": parsers, "env": env}

    def nextn_accepted(self) -> list[dict[str, str]]:
        """How ``--speculative-algorithm NEXTN`` is accepted: choices, help text, an alias set, a remap."""
        spec = self.cli.get("--speculative-algorithm")
        accepted: list[dict[str, str]] = []
        if spec is not None:
            if spec["choices"] and "NEXTN" in spec["choices"]:
                accepted.append({"via": "choices", "location": spec.get("choices_location") or spec["location"]})
            elif spec["help"] and "NEXTN" in spec["help"]:
                accepted.append({"via": "help text (free-form flag)", "location": spec["location"]})
        for a in self.aliases:
            if "NEXTN" in a["members"]:
                accepted.append({"via": f"alias set {a['set']}", "location": a["location"]})
        for r in self.remaps:
            if r["from"] == "NEXTN" and r["shape"] != "enum-alias-lookup":
                accepted.append({"via": "remap", "location": r["location"]})
                break
        return accepted

    def facts(self, server_args: dict[str, Any], registry: dict[str, Any]) -> dict[str, Any]:
        """The public facts (docs/sglang.md "Facts contract") and their summary."""
        from mtp_audit.engines.sglang.spec_hooks import merge as merge_hooks

        tree, results, cli = self.tree, self.results, self.cli
        accepted = self.nextn_accepted()
        parsers, env = registry["parsers"], registry["env"]
        # records at one location are ordered by their items (key order of a dict differs between one just built
        # and one read back from the canonical cache, so str(d) would order them by where they came from)
        key = lambda d: (d.get("location", ""), str(sorted(d.items())))  # noqa: E731
        by_class = lambda d: (d["file"], d["line"], d["class"])  # noqa: E731
        facts: dict[str, Any] = {
            "model_overrides": sorted(_model_overrides(results), key=key),
            "backend_asserts": sorted((a for rel in sorted(results) for a in results[rel].get("asserts", [])), key=key),
            "speculative_hooks": merge_hooks(results),
            "version": tree.version,
            "target_kind": tree.kind,
            "server_args": server_args,
            "cli_arguments": dict(sorted(cli.items())),
            "remaps": sorted(self.remaps, key=key),
            "auto_resolutions": sorted(self.autos, key=key),
            "normalisations": sorted(self.normalisations, key=key),
            "aliases": sorted(self.aliases, key=key),
            "nextn_accepted": accepted,
            "draft_model_path_fills": sorted(self.draft_fills, key=key),
            "draft_arch_overrides": sorted(self.draft_overrides, key=key),
            "mtp_classes": sorted(registry["mtp_classes"], key=by_class),
            "entry_classes": sorted(registry["entry_classes"], key=by_class),
            "parser": (sorted(parsers, key=lambda d: d["location"])[0] if parsers else None),
            "entry_points": _entry_points(tree),
            "env_vars": [{"name": n, "defined": sorted(set(v["defined"])), "read": sorted(set(v["read"]))} for n, v in sorted(env.items())],
            "unresolved_choices": sorted(self.unresolved, key=lambda d: d["flag"]),
            "preflight_choices": {
                "--fp4-gemm-backend": _choices(cli, "--fp4-gemm-backend"),
                "--moe-runner-backend": _choices(cli, "--moe-runner-backend"),
                "--quantization(fp4)": [c for c in _choices(cli, "--quantization") or [] if _FP4.search(c)],
            },
        }
        facts["summary"] = self.summary(facts, server_args, accepted)
        return facts

    def summary(self, facts: dict[str, Any], server_args: dict[str, Any], accepted: list[dict[str, str]]) -> dict[str, Any]:
        """``facts["summary"]``: the counts and the NEXTN answer."""
        nextn = [r for r in self.remaps if r["from"] == "NEXTN"]
        spec = self.cli.get("--speculative-algorithm")
        return {
            "version": self.tree.version,
            "speculative_decoding": True if spec is not None else (False if server_args["status"] == "ok" else None),
            "nextn_accepted": bool(accepted),
            "nextn_to": sorted({t for r in nextn for t in r["to"]}),
            "nextn_remap_logged": any(r["logged"] for r in nextn if r["to"] == ["EAGLE"]) if nextn else None,
            "remaps": len(self.remaps),
            "auto_resolutions": len(self.autos),
            "draft_arch_overrides": len(self.draft_overrides),
            "mtp_classes": len(facts["mtp_classes"]),
            "env_vars": len(facts["env_vars"]),
            "cli_arguments": len(self.cli),
            "model_overrides": len(facts["model_overrides"]),
            "backend_asserts": len(facts["backend_asserts"]),
        }


def _cli_fact(rel: str, rec: dict[str, Any], choices: list[str] | None) -> dict[str, Any]:
    """``facts["cli_arguments"][flag]`` from one scanned declaration."""
    return {
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


#: Shapes of a value handed over by a per-model override function (0.5.20 on).
_OVERRIDE_SHAPES = ("overrides-dict", "return-dict")


def _predicates(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The release's one-``return`` predicates of every scanned file (:func:`~mtp_audit.engines.sglang.guards.module_predicates`);
    a name defined in two files with different bodies is left out (which one a guard calls is not told)."""
    out: dict[str, dict[str, Any]] = {}
    twice: set[str] = set()
    for rel in sorted(results):
        for name, p in (results[rel].get("predicates") or {}).items():
            if name in out and out[name] != p:
                twice.add(name)
            out.setdefault(name, p)
    return {k: v for k, v in out.items() if k not in twice}


def _hook_calls(results: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{callee: [call]}`` of every scanned file's hook calls (:func:`~mtp_audit.engines.sglang.guards.hook_calls`);
    a name that two scanned files define at module level is left out (which function a call reaches is not told)."""
    out: dict[str, list[dict[str, Any]]] = {}
    defined: dict[str, int] = {}
    for rel in sorted(results):
        for name in results[rel].get("defines") or []:
            defined[name] = defined.get(name, 0) + 1
        for c in results[rel].get("hook_calls") or []:
            out.setdefault(c["callee"], []).append(c)
    return {k: v for k, v in out.items() if defined.get(k, 0) <= 1}


def _model_overrides(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Rewrites made by functions registered for architectures (``@_register_for("MiniMaxM2ForCausalLM")`` in
    0.5.23 ``srt/arg_groups/model_overrides/minimax_m2.py``): ``[{"argument", "from", "to", "condition",
    "architectures", "function", "logged", "location", "test_location"}]``; ``condition`` is the Python text of
    the early exits passed (``not (...)``, :func:`~mtp_audit.engines.sglang.rewrites.early_exit_text`) and the ``if``
    branches around the store (evaluated per launch by :func:`mtp_audit.engines.sglang.startup_facts.guard_value`)."""
    from mtp_audit.engines.sglang.guards import inline_predicates

    out: list[dict[str, Any]] = []
    preds = _predicates(results)
    for rel in sorted(results):
        regs = {(g["function"], g["line"]): g["architectures"] for g in results[rel].get("registrations", [])}
        if not regs:
            continue
        for fn in results[rel].get("funcs", []):
            archs = regs.get((fn["name"], fn["line"]))
            if archs is None:
                continue
            for site in fn["sites"]:
                if site["shape"] not in _OVERRIDE_SHAPES or "to" not in site:
                    continue
                out.append({"argument": site["argument"], "from": _from_value(site, site["argument"]),
                            "to": [("None" if t is None else str(t)) for t in site["to"]],
                            "condition": " and ".join(c for c in (site.get("exits"), site["condition"]) if c),
                            "architectures": archs, "function": fn["name"], "logged": site["logged"],
                            "location": _loc(rel, site["line"]),
                            "test_location": _loc(rel, site["test_line"]) if site["test_line"] else None,
                            **({"guard": inline_predicates(site["guard"], preds)} if site.get("guard") else {}),
                            **{flag: True for flag in ("keeps_given", "rebinds_given") if site.get(flag)}})
    return out


def section(facts: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``facts[key]`` of the sglang facts when it is an object (``summary``, ``server_args``), else an empty one."""
    v = facts.get(key)
    return v if isinstance(v, Mapping) else {}


def _choices(cli: Mapping[str, Any], flag: str) -> Any:
    """The ``choices`` of ``flag``'s argparse record in ``cli`` (``None``: not declared, or declared without)."""
    rec = cli.get(flag)
    return rec.get("choices") if rec else None


def mtp_class_count(facts: dict[str, Any]) -> str:
    """``"25 MTP model classes (23 reached by a draft-architecture override)"``: the registered MTP classes
    (``facts["mtp_classes"]``) and, when fewer, how many a draft-architecture override names (the count MTP101 gives:
    the classes NEXTN can build from a target architecture); the rest are served as their own architecture."""
    names = {m["class"] for m in facts.get("mtp_classes") or []}
    n = section(facts, "summary").get("mtp_classes", len(names))
    reached = {d["to"] for d in facts.get("draft_arch_overrides") or [] if d.get("to") in names}
    extra = f" ({len(reached)} reached by a draft-architecture override)" if names and len(reached) != n else ""
    return f"{n} MTP model classes{extra}"


def answer(facts: dict[str, Any]) -> list[str]:
    """The one-line answer the text report opens with (``facts["sglang"]["answer"]``): what
    ``--speculative-algorithm NEXTN`` becomes in this tree, where, and how many MTP classes it has."""
    s = facts.get("summary") or {}
    who = f"SGLang {s.get('version')}" if s.get("version") else "this SGLang"
    server_args = section(facts, "server_args")
    if server_args.get("status", "ok") != "ok":
        return [f"could not tell what {who} does with --speculative-algorithm NEXTN: "
                f"{server_args.get('reason') or 'server_args.py not read'}"]
    if not s.get("speculative_decoding"):
        return [f"{who} has no --speculative-algorithm flag: MTP/NextN heads are never used"]
    if not s.get("nextn_accepted"):
        return [f"{who} does not accept --speculative-algorithm NEXTN"]
    nextn = [r for r in facts.get("remaps") or [] if r["from"] == "NEXTN" and r.get("shape") != "enum-alias-lookup"]
    classes = f"; {mtp_class_count(facts)}"
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
        return out  # the ast pass parsed it
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


def audit_tree(tree: SourceTree, *, file_key: str | None = None, reuse: bool = True) -> Report:
    """Audit an opened tree and build the :class:`~mtp_audit.report.Report` (findings from rules). ``file_key``:
    the one-stat cache key of a ``.whl`` file (:func:`_wheel_key`), stored beside the tree's own entry. ``reuse``:
    read cached results (``False``: scan every file, and write the cache entries anew)."""
    folder = cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}")
    deferred = not reuse or _no_tree_entry(folder, tree)
    if deferred:  # nothing to look up: the key is taken from the scan's own reads (each file read once)
        tree.start_stamps()
        hit = None
    else:
        tkey = "tree-" + tree.fingerprint()
        hit = cache.load(folder, tkey)
    was_cached = hit is not None and "facts" in hit
    if hit is None or "facts" not in hit:  # not was_cached, spelled so that hit is known below
        from mtp_audit.engines.code.index import fewer_collections
        from mtp_audit.engines.sglang.diff import is_relevant
        from mtp_audit.engines.sglang.flow import analyze_flows
        from mtp_audit.engines.sglang.treescan import Prefetch, scan_tree

        with fewer_collections():  # ast.parse makes millions of acyclic nodes: see fewer_collections
            prefetch = Prefetch(lambda so_far: link_parses(tree, so_far))
            results, stats = scan_tree(tree, reuse=reuse, prefetch=prefetch)
            facts, gaps = link(tree, results, prefetch.parsed)
        facts["scan"] = dict(stats, tree_cache="miss", unresolved_choices=len(facts["unresolved_choices"]),
                             unresolved_choices_noted=sum(1 for u in facts["unresolved_choices"]  # those with a note (a gap)
                                                          if is_relevant(facts["cli_arguments"][u["flag"]]["dest"])))
        facts["value_flows"] = analyze_flows(results)
        hit = {"facts": facts, "gaps": [g.fields() for g in gaps]}
        if deferred and folder is not None:
            tkey = "tree-" + tree.fingerprint_after()
        if folder is not None:
            cache.store(folder, tkey, hit)
    entry = {**hit, "display": tree.display, "version": tree.version}
    if file_key is not None:
        cache.store(folder, file_key, entry)
    return _report(entry, cached=was_cached)


def _no_tree_entry(folder: Path | None, tree: SourceTree) -> bool:
    """Whether the whole-tree lookup of a folder can be skipped because it cannot hit: the cache is off, or it holds
    no whole-tree entry at all (entries live in ``<folder>/<first two characters of the key>/``, so every
    ``tree-`` key under ``tr/``). Its key, a hash of every file's content (:meth:`SourceTree.fingerprint`), is then
    taken from the scan's reads. A wheel's key needs no file read and is looked up as before."""
    if tree.kind == "wheel":
        return False
    return folder is None or not (folder / "tr").is_dir()


def _report(entry: dict[str, Any], *, cached: bool) -> Report:
    """The Report of a cache entry ``{"facts", "gaps", "display", "version"}``."""
    from mtp_audit.engines.sglang.checks import evaluate, flow_findings
    from mtp_audit.engines.sglang.rules import RULES

    facts = json_copy(entry["facts"])
    if cached:
        facts["scan"]["tree_cache"] = "hit"
    gaps = [Gap(**g) for g in entry["gaps"]]
    facts["answer"] = answer(facts)  # after the cache: the words may change without the facts changing
    findings = evaluate(facts) + flow_findings(facts)
    display, version = entry["display"], entry["version"]
    name = display if version is None else f"{display} (sglang {version})"
    return Report.build(ANALYZER, name, findings=findings, gaps=gaps, facts=facts, rule_ids=[r.id for r in RULES if r.id < "MTP110"])


def json_copy(facts: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``facts`` whose ``scan`` statistics can be marked without changing the cached entry."""
    return dict(facts, scan=dict(facts.get("scan") or {}))


def _wheel_key(target: str | Path | None) -> str | None:
    """For a ``.whl`` file: a cache key from one ``stat`` of the file (absolute path, device, inode, size,
    ``mtime_ns`` and ``ctime_ns``) and the tool's version, so a warm audit of a wheel opens neither the zip nor
    its 4,000-entry directory. Size and mtime alone can be kept across an edit (``os.utime``); the inode
    change time cannot be set back by anyone but root, and every write, rename or replacement changes it or
    the inode. ``None`` for anything else (folders are keyed by the contents of their files,
    :meth:`SourceTree.fingerprint`; the cold path of a wheel by the SHA-256 of the whole file)."""
    if target is None or not str(target).endswith(".whl"):
        return None
    from mtp_audit import __version__

    try:
        p = Path(target).resolve()
        st = p.stat()
    except OSError:
        return None
    if not p.is_file():
        return None
    import hashlib

    stamp = f"{p}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{__version__}"
    return "whl-" + hashlib.sha1(stamp.encode("utf-8", "surrogatepass")).hexdigest()


def audit_sglang(target: str | Path | None) -> Report:
    """Audit an SGLang checkout, package folder, unpacked wheel, ``.whl`` file or (``None``) the
    installed sglang. See docs/sglang.md for the facts contract (``report.facts["sglang"]``).

    Raises:
        InputError: the target cannot be opened or is not SGLang.
    """
    wkey = _wheel_key(target)
    if wkey is not None:
        entry = cache.load(cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}"), wkey)
        if entry is not None and {"facts", "gaps", "display", "version"} <= set(entry):
            try:
                return _report(entry, cached=True)
            except _UNREADABLE_ENTRY:
                pass  # an entry of a shape this code cannot read (its hash is right: written by hand): scan again
    tree = open_target(target)
    try:
        return audit_tree(tree, file_key=wkey)
    except _UNREADABLE_ENTRY:
        if cache.cache_dir(f"sglang-scan-v{SCAN_VERSION}") is None:
            raise  # no cache was read: a bug of this analyzer (exit 4)
    finally:
        tree.close()
    tree = open_target(target)  # a cached result this code cannot read: once more, reading none of the cache
    try:
        return audit_tree(tree, file_key=wkey, reuse=False)
    finally:
        tree.close()


#: What reading cached results of a shape this code does not expect raises (an entry edited by hand, its hash
#: recomputed): the audit then runs once more without reading the cache, so a cache entry is never an error.
_UNREADABLE_ENTRY = (KeyError, TypeError, AttributeError, ValueError, IndexError)


__all__ = ["Evidence", "Location", "audit_sglang", "audit_tree", "link"]
