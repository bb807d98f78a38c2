"""Value flow across files for the speculative-decoding and FP4 flags: an explicit user value that a server-args
hook turns into ``None`` and that the config class consuming the field then re-fills, silently undoing it.

The shape found in real SGLang (0.5.9 to 0.5.23, wheels from PyPI; tests/test_sglang_flow.py):

1. *sentinel rewrite* -- ``--speculative-draft-model-quantization unquant`` is turned into ``None`` after argument
   parsing: ``elif self.speculative_draft_model_quantization == "unquant": self.speculative_draft_model_quantization
   = None`` (0.5.9 ``srt/server_args.py:884-885``), from 0.5.20 on as ``declare_resolution(...,
   speculative_draft_model_quantization=None)`` in ``srt/arg_groups/serving_hook.py`` (0.5.23: lines 704-709);
2. *consumer* -- ``ModelConfig.from_server_args`` reads the field into the ``quantization=`` argument of
   ``ModelConfig(...)`` for the draft model (0.5.23 ``srt/configs/model_config.py:945-948``), and ``__init__``
   stores it as ``self.quantization``;
3. *re-fill* -- ``_verify_quantization`` assigns the checkpoint's ``quant_method`` when ``self.quantization is
   None`` (0.5.23 ``model_config.py:2106-2107``): the user's "unquant" becomes the checkpoint's quantization.

Everything is read with :mod:`ast` from the tree's bytes (never imported). Only fields whose name is a
speculative-decoding, quantization or FP4/MoE-backend flag are followed (:data:`TRACKED`). The analysis is
deliberately narrow: a rewrite counts only when its test is ``<obj>.<field> == "<literal>"`` and its body sets
the same field to a constant; a re-fill only when its test is exactly ``self.<attr> is None``. Anything else is
not reported (never guessed).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mtp_audit.report import Evidence, Finding, Location
from mtp_audit.sources.tree import SourceTree

#: ServerArgs fields whose value flow is followed (speculative decoding, quantization, FP4 / MoE backends).
TRACKED = re.compile(r"^(speculative_\w+|quantization|\w*fp4\w*|moe_runner_backend|moe_a2a_backend)$")
#: Files where server-args hooks live (SGLang <= 0.5.18: ``srt/server_args.py``; 0.5.20 on: ``srt/arg_groups/``).
_HOOK_PATHS = re.compile(r"(^|/)srt/(server_args\.py|arg_groups/[^/]+\.py)$")
#: Files that may consume a field into a config class (pre-filter on bytes, then parsed).
_CONSUMER_HINT = re.compile(rb"from_server_args|is_draft_model")
#: Most files parsed for consumers (a full SGLang wheel has a handful that match the hint in srt/configs).
_MAX_CONSUMER_FILES = 64


def _loc(rel: str, line: int) -> str:
    return f"{rel}:{line}"


def _parse(tree: SourceTree, rel: str) -> ast.Module | None:
    data = tree.read(rel)
    if data is None:
        return None
    try:
        return ast.parse(data.decode("utf-8", "replace"))
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # deep nesting overflows the parser's stack
        return None


def _const(node: ast.AST) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float, bool))):
        return True, node.value
    return False, None


def _field_eq_literal(test: ast.AST) -> tuple[str, str] | None:
    """``(field, literal)`` for a test ``<obj>.<field> == "<literal>"`` on a tracked field."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.left, ast.Attribute)
        and TRACKED.match(test.left.attr)
        and isinstance(test.comparators[0], ast.Constant)
        and isinstance(test.comparators[0].value, str)
    ):
        return test.left.attr, test.comparators[0].value
    return None


def sentinel_rewrites(rel: str, mod: ast.Module) -> list[dict[str, Any]]:
    """Rewrites of an explicit CLI value to a constant in one hook file: ``if x.F == "lit": x.F = C`` or
    ``declare_resolution(..., F=C)`` in that branch.

    Returns:
        ``[{"field", "from", "to", "location", "test_location"}]`` with ``path:line`` locations.
    """
    out: list[dict[str, Any]] = []
    for node in ast.walk(mod):
        if not isinstance(node, ast.If):
            continue
        hit = _field_eq_literal(node.test)
        if hit is None:
            continue
        field, lit = hit
        for stmt in node.body:
            value: ast.AST | None = None
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == field for t in stmt.targets):
                value = stmt.value
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                value = next((k.value for k in stmt.value.keywords if k.arg == field), None)
            if value is None:
                continue
            ok, to = _const(value)
            if ok and to != lit:
                out.append({"field": field, "from": lit, "to": to, "location": _loc(rel, stmt.lineno),
                            "test_location": _loc(rel, node.lineno)})
    return out


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def consumers(rel: str, mod: ast.Module, fields: set[str]) -> list[dict[str, Any]]:
    """Where a field is read into a keyword argument of a class constructor (``ModelConfig(quantization=...)``),
    directly or through one local name in the same function.

    Returns:
        ``[{"field", "read_location", "callee", "keyword", "call_location", "function"}]``.
    """
    out: list[dict[str, Any]] = []
    for fn in ast.walk(mod):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        local: dict[str, list[tuple[str, int]]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                reads = [(a.attr, a.lineno) for a in ast.walk(node.value) if isinstance(a, ast.Attribute) and a.attr in fields]
                if reads:
                    local[node.targets[0].id] = reads
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name = _callee(node)
            if not name[:1].isupper():
                continue
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                reads: list[tuple[str, int]] = []
                if isinstance(kw.value, ast.Name) and kw.value.id in local:
                    reads = local[kw.value.id]
                elif isinstance(kw.value, ast.Attribute) and kw.value.attr in fields:
                    reads = [(kw.value.attr, kw.value.lineno)]
                for field, line in reads:
                    out.append({"field": field, "read_location": _loc(rel, line), "callee": name, "keyword": kw.arg,
                                "call_location": _loc(rel, node.lineno), "function": fn.name})
    return out


def _is_self_attr_none(test: ast.AST, attr: str) -> bool:
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.left, ast.Attribute)
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "self"
        and test.left.attr == attr
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def refills(rel: str, mod: ast.Module, cls_name: str, keyword: str) -> list[dict[str, Any]]:
    """In class ``cls_name``: the attribute ``__init__`` stores parameter ``keyword`` in, and every
    ``if self.<attr> is None: self.<attr> = <expr>`` in its methods (``expr`` not ``None``).

    Returns:
        ``[{"class", "attribute", "stored_location", "location", "test_location", "method", "value"}]``.
    """
    out: list[dict[str, Any]] = []
    for cls in ast.walk(mod):
        if not (isinstance(cls, ast.ClassDef) and cls.name == cls_name):
            continue
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None or keyword not in {a.arg for a in init.args.args + init.args.kwonlyargs}:
            continue
        stored = [
            (t.attr, n.lineno)
            for n in ast.walk(init)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id == keyword
            for t in n.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        ]
        for attr, sline in stored:
            for meth in cls.body:
                if not isinstance(meth, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(meth):
                    if not (isinstance(node, ast.If) and _is_self_attr_none(node.test, attr)):
                        continue
                    for stmt in node.body:
                        if (
                            isinstance(stmt, ast.Assign)
                            and any(isinstance(t, ast.Attribute) and t.attr == attr for t in stmt.targets)
                            and not _const(stmt.value) == (True, None)
                        ):
                            out.append({"class": cls_name, "attribute": attr, "stored_location": _loc(rel, sline),
                                        "location": _loc(rel, stmt.lineno), "test_location": _loc(rel, node.lineno),
                                        "method": meth.name, "value": ast.unparse(stmt.value)})
    return out


def analyze_flows(tree: SourceTree) -> list[dict[str, Any]]:
    """Every explicit value that a hook turns into ``None`` and that a consuming config class re-fills.

    Returns:
        ``[{"field", "from", "rewrite": {...}, "consumer": {...}, "refill": {...}}]`` (the dicts of
        :func:`sentinel_rewrites`, :func:`consumers`, :func:`refills`), sorted by field and location.
    """
    rewrites: list[dict[str, Any]] = []
    for rel in sorted(tree.files):
        if _HOOK_PATHS.search(rel):
            mod = _parse(tree, rel)
            if mod is not None:
                rewrites += [r for r in sentinel_rewrites(rel, mod) if r["to"] is None]
    if not rewrites:
        return []
    fields = {r["field"] for r in rewrites}
    parsed: dict[str, ast.Module] = {}
    cons: list[dict[str, Any]] = []
    for rel in sorted(tree.files):
        if not rel.endswith(".py") or _HOOK_PATHS.search(rel) or len(parsed) >= _MAX_CONSUMER_FILES:
            continue
        data = tree.read(rel)
        if data is None or not _CONSUMER_HINT.search(data) or not any(f.encode() in data for f in fields):
            continue
        mod = _parse(tree, rel)
        if mod is None:
            continue
        parsed[rel] = mod
        cons += consumers(rel, mod, fields)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for c in cons:
        for rel, mod in parsed.items():
            for rf in refills(rel, mod, c["callee"], c["keyword"]):
                for r in rewrites:
                    key = (r["location"], c["read_location"], rf["location"])
                    if r["field"] != c["field"] or key in seen:
                        continue
                    seen.add(key)
                    out.append({"field": r["field"], "from": r["from"], "rewrite": r, "consumer": c, "refill": rf})
    return sorted(out, key=lambda x: (x["field"], x["rewrite"]["location"], x["consumer"]["read_location"]))


def _location(text: str) -> Location:
    path, _, line = text.rpartition(":")
    return Location(path=path, line=int(line)) if line.isdigit() else Location(path=text)


def flow_findings(facts: dict[str, Any]) -> list[Finding]:
    """MTP106 findings from ``facts["value_flows"]``: one per (flag, literal, re-fill), with the rewrite as the
    location and the consumer and re-fill as evidence. A literal the flag's declared choices do not accept is
    not user-reachable and is skipped."""
    from mtp_audit.engines.sglang.rules import BY_ID

    out: list[Finding] = []
    cli = facts.get("cli_arguments", {})
    done: set[tuple[str, str, str]] = set()
    for fl in facts.get("value_flows", []):
        flag = "--" + fl["field"].replace("_", "-")
        choices = (cli.get(flag) or {}).get("choices")
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
            ev.append(Evidence("accepted choices include", fl["from"], _location((cli.get(flag) or {}).get("location") or "")))
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
