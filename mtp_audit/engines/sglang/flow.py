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
import bisect
import re
import unicodedata
from typing import Any

from mtp_audit.engines.code.index import ModuleIndex
from mtp_audit.engines.sglang.names import HOOK_PATHS as _HOOK_PATHS
from mtp_audit.engines.sglang.names import TRACKED_SOURCE
from mtp_audit.engines.sglang.prefilter import attribute_named, class_named, find_all

#: ServerArgs fields whose value flow is followed (speculative decoding, quantization, FP4 / MoE backends).
TRACKED = re.compile(r"^(" + TRACKED_SOURCE + r")$")
#: Most files whose consumers are linked (a full SGLang wheel has a handful in srt/configs).
_MAX_CONSUMER_FILES = 64


def _loc(rel: str, line: int) -> str:
    return f"{rel}:{line}"


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


def sentinel_rewrites(ix: ModuleIndex) -> list[dict[str, Any]]:
    """Rewrites of an explicit CLI value to a constant in one hook file: ``if x.F == "lit": x.F = C`` or
    ``declare_resolution(..., F=C)`` in that branch.

    Returns:
        ``[{"field", "from", "to", "location", "test_location"}]`` with ``path:line`` locations.
    """
    out: list[dict[str, Any]] = []
    for site in ix.ifs:
        node = site.node
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
                out.append({"field": field, "from": lit, "to": to, "location": _loc(ix.rel, stmt.lineno),
                            "test_location": _loc(ix.rel, node.lineno)})
    return out


def consumers(ix: ModuleIndex) -> list[dict[str, Any]]:
    """Where a tracked field is read into a keyword argument of a class constructor (``ModelConfig(quantization=
    ...)``), directly or through one local name assigned in the same function.

    Returns:
        ``[{"field", "read_location", "callee", "keyword", "call_location", "function"}]``.
    """
    local: dict[tuple[int, str], list[tuple[str, int]]] = {}
    lines = _tracked_lines(ix)
    for site in ix.assigns:
        node = site.node
        if site.ctx.unit is None or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        if lines is not None:
            first = bisect.bisect_left(lines, node.value.lineno)
            if first == len(lines) or lines[first] > (node.value.end_lineno or node.value.lineno):
                continue  # no tracked name (nor any non-ASCII identifier) on the value's lines: no tracked read in it
        reads = [(a.attr, a.lineno) for a in ast.walk(node.value) if isinstance(a, ast.Attribute) and TRACKED.match(a.attr)]
        if reads:
            local[(id(site.ctx.unit), node.targets[0].id)] = reads
    out: list[dict[str, Any]] = []
    for name, sites in ix.calls.items():
        if not name[:1].isupper():
            continue
        for call in sites:
            if call.ctx.unit is None:
                continue
            for kw in call.node.keywords:
                kw_reads: list[tuple[str, int]] = []
                if kw.arg is None:
                    continue
                if isinstance(kw.value, ast.Name):
                    kw_reads = local.get((id(call.ctx.unit), kw.value.id), [])
                elif isinstance(kw.value, ast.Attribute) and TRACKED.match(kw.value.attr):
                    kw_reads = [(kw.value.attr, kw.value.lineno)]
                for field, line in kw_reads:
                    out.append({"field": field, "read_location": _loc(ix.rel, line), "callee": name, "keyword": kw.arg,
                                "call_location": _loc(ix.rel, call.node.lineno), "function": call.ctx.unit.name})
    return out


#: Substrings every name that :data:`TRACKED` matches holds one of.
_TRACKED_PARTS = ("speculative_", "quantization", "fp4", "moe_runner_backend", "moe_a2a_backend")


def _tracked_lines(ix: ModuleIndex) -> list[int] | None:
    """The 1-based lines of ``ix``'s text that hold one of :data:`_TRACKED_PARTS` or a character outside ASCII,
    ascending: an attribute whose name :data:`TRACKED` matches has that name on one of them (a cheap test before
    walking an expression; an identifier written with characters outside ASCII may NFKC-normalise to a tracked
    name, so such lines are kept whatever they hold). ``None`` (test every expression) when the text holds a
    carriage return (which the parser also counts as a line end)."""
    text = ix.text
    if "\r" in text:
        return None
    offsets = sorted(i for part in _TRACKED_PARTS for i in find_all(text, part))
    if not text.isascii():
        offsets = sorted(offsets + [m.start() for m in _NOT_ASCII.finditer(text)])
    out: list[int] = []
    line, pos = 1, 0
    for at in offsets:
        line += text.count("\n", pos, at)
        pos = at
        if not out or out[-1] != line:
            out.append(line)
    return out


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def _is_self_attr_none(test: ast.AST) -> str | None:
    """``attr`` of a test ``self.<attr> is None``."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.left, ast.Attribute)
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "self"
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.attr
    return None


def refills(ix: ModuleIndex) -> list[dict[str, Any]]:
    """In every module-level class: the attribute ``__init__`` stores each parameter in, and every
    ``if self.<attr> is None: self.<attr> = <expr>`` in its methods (``expr`` not ``None``).

    Returns:
        ``[{"class", "keyword", "attribute", "stored_location", "location", "test_location", "method", "value"}]``.
    """
    stored: dict[tuple[str, str], list[tuple[str, int]]] = {}  # (class, attr) -> [(parameter, line)]
    for site in ix.assigns:
        unit, node = site.ctx.unit, site.node
        if unit is None or unit.name != "__init__" or site.ctx.owner is None or not isinstance(node.value, ast.Name):
            continue
        params = {a.arg for a in unit.args.args + unit.args.kwonlyargs}
        if node.value.id not in params:
            continue
        for t in node.targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                stored.setdefault((site.ctx.owner, t.attr), []).append((node.value.id, node.lineno))
    out: list[dict[str, Any]] = []
    for if_site in ix.ifs:
        attr = _is_self_attr_none(if_site.node.test)
        if attr is None or if_site.ctx.owner is None or (if_site.ctx.owner, attr) not in stored:
            continue
        for stmt in if_site.node.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attr for t in stmt.targets) \
                    and _const(stmt.value) != (True, None):
                for param, sline in stored[(if_site.ctx.owner, attr)]:
                    out.append({"class": if_site.ctx.owner, "keyword": param, "attribute": attr,
                                "stored_location": _loc(ix.rel, sline), "location": _loc(ix.rel, stmt.lineno),
                                "test_location": _loc(ix.rel, if_site.node.lineno), "method": if_site.ctx.unit.name,
                                "value": ast.unparse(stmt.value)})
    return out


def file_pieces(ix: ModuleIndex, *, hook: bool, consumer: bool) -> dict[str, list[dict[str, Any]]]:
    """The value-flow pieces of one indexed file (cached with the file's scan result): ``rewrites`` (hook files),
    ``consumers`` and ``refills`` (files that build a config from the server arguments)."""
    return {"rewrites": sentinel_rewrites(ix) if hook else [],
            "consumers": consumers(ix) if consumer else [], "refills": refills(ix) if consumer else []}


def rewritten_fields(results: dict[str, dict[str, Any]]) -> set[str]:
    """The fields a hook file rewrites to ``None`` in ``results`` (rel -> scan result): the only fields whose
    consumers :func:`analyze_flows` links."""
    return {x["field"] for rel, r in results.items() if r.get("flow") and _HOOK_PATHS.search(rel)
            for x in r["flow"]["rewrites"] if x["to"] is None}


def consumer_callees(results: dict[str, dict[str, Any]], fields: set[str]) -> set[str]:
    """The classes that consumers of ``fields`` construct (outside hook files): the only classes whose re-fills
    :func:`analyze_flows` links."""
    return {c["callee"] for rel, r in results.items() if r.get("flow") and not _HOOK_PATHS.search(rel)
            for c in r["flow"]["consumers"] if c["field"] in fields}


def may_consume(data: bytes, fields: set[str]) -> bool:
    """Whether the source ``data`` can hold a :func:`consumers` record of one of ``fields``: such a record is an
    attribute read of the field (:func:`~mtp_audit.engines.sglang.prefilter.attribute_named`)."""
    return _in_source(data, fields, attribute_named)


def may_refill(data: bytes, classes: set[str]) -> bool:
    """Whether the source ``data`` can hold a :func:`refills` record of one of ``classes``: such a record sits in a
    module-level class of that name (:func:`~mtp_audit.engines.sglang.prefilter.class_named`)."""
    return _in_source(data, classes, class_named)


def _in_source(data: bytes, names: set[str], test: Any) -> bool:
    """``test(bytes, names)`` on ``data``, and, when it is not ASCII, on its NFKC form too (the parser
    NFKC-normalises identifiers). ``False`` for no names, or bytes that are not UTF-8 (they cannot be parsed)."""
    if not names:
        return False
    if test(data, names):
        return True
    if data.isascii():
        return False
    try:
        text = unicodedata.normalize("NFKC", data.decode("utf-8")).encode()
    except UnicodeDecodeError:
        return False
    return bool(test(text, names))


def analyze_flows(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every explicit value that a hook turns into ``None`` and that a consuming config class re-fills, linked
    from the per-file pieces of :func:`file_pieces` (``results``: rel -> scan result, as
    :func:`mtp_audit.engines.sglang.treescan.scan_tree` returns).

    Returns:
        ``[{"field", "from", "rewrite": {...}, "consumer": {...}, "refill": {...}}]`` (the dicts of
        :func:`sentinel_rewrites`, :func:`consumers`, :func:`refills`), sorted by field and location.
    """
    pieces = {rel: r["flow"] for rel, r in sorted(results.items()) if r.get("flow")}
    rewrites = [x for rel, p in pieces.items() if _HOOK_PATHS.search(rel) for x in p["rewrites"] if x["to"] is None]
    if not rewrites:
        return []
    fields = {r["field"] for r in rewrites}
    parsed = [rel for rel, p in pieces.items() if not _HOOK_PATHS.search(rel) and (p["consumers"] or p["refills"])]
    parsed = parsed[:_MAX_CONSUMER_FILES]
    cons = [c for rel in parsed for c in pieces[rel]["consumers"] if c["field"] in fields]
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for c in cons:
        for rel in parsed:
            for rf in pieces[rel]["refills"]:
                if rf["class"] != c["callee"] or rf["keyword"] != c["keyword"]:
                    continue
                for r in rewrites:
                    key = (r["location"], c["read_location"], rf["location"])
                    if r["field"] != c["field"] or key in seen:
                        continue
                    seen.add(key)
                    rf_out = {k: v for k, v in rf.items() if k != "keyword"}
                    out.append({"field": r["field"], "from": r["from"], "rewrite": r, "consumer": c, "refill": rf_out})
    return sorted(out, key=lambda x: (x["field"], x["rewrite"]["location"], x["consumer"]["read_location"]))
