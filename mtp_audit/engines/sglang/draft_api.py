"""What SGLang's speculative workers require of the draft model at start-up, and which of it each MTP class provides.

The EAGLE workers reach into the draft model while they start (``__init__`` and ``init_*`` methods): for EAGLE3,
0.5.9 ``speculative/eagle_worker.py:159-174`` calls ``self.draft_model_runner.model.set_embed(embed)`` and reads
``.hot_token_id`` (the same in ``eagle_worker_v2.py:204-208`` and, 0.5.23, ``eagle_worker_v2.py:363-367``). A draft
class that lacks the attribute raises ``AttributeError`` before the server serves. The requirements are read from the
worker files with ``ast`` (each access under an ``if self.speculative_algorithm.is_<name>():`` branch, an attribute
named in a ``hasattr`` test of that ``if`` is optional); a class's members from its ``def``s, class-level names,
``self.X =`` assignments and ``register_buffer`` / ``register_parameter`` names, through its bases in the tree.
``torch.nn.Module`` ends a chain: its ``__getattr__`` finds only parameters, buffers and submodules the class
registers (``torch/nn/modules/module.py``, ``Module.__getattr__``), which the assignments above already name. A base
from any other package, ``__getattr__`` / ``__getattribute__`` or a ``setattr`` with a computed name leaves the
class unresolved: could not tell.

Cost: run once per tree when its facts are not cached (``audit.link``), it reads and parses the worker files and the
MTP classes' files again (SGLang 0.5.23: 10 worker files and 39 model files, 0.44 s on this machine); a cached tree
reads nothing.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mtp_audit.sources.tree import SourceTree

#: Worker files: ``srt/speculative/*worker*.py`` (0.5.9 eagle_worker.py, eagle_worker_v2.py, multi_layer_eagle_worker.py).
_WORKER = re.compile(r"(^|/)srt/speculative/[^/]*worker[^/]*\.py$")
#: The draft model as the workers name it: ``self.draft_model_runner.model`` (v1) / ``self.draft_runner.model`` (v2).
_RUNNERS = ("draft_model_runner", "draft_runner")
#: Bases that end a chain without adding members (see the module docstring).
_TERMINAL = ("torch.nn.Module", "torch.nn.modules.module.Module", "object")
#: At most this many classes are followed up one chain (a bound; SGLang's MTP classes have 2-4).
MAX_CHAIN = 12


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if "sglang" in parts:
        parts = parts[parts.index("sglang"):]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parse(tree: SourceTree, rel: str) -> ast.Module | None:
    data = tree.read(rel) if rel in tree.files else None
    if data is None:
        return None
    try:
        return ast.parse(data.decode("utf-8"), filename=rel)
    except (SyntaxError, ValueError, UnicodeDecodeError, MemoryError, RecursionError):
        return None


def _draft_attr(node: ast.AST) -> str | None:
    """``X`` of ``<...>.draft_model_runner.model.X`` / ``<...>.draft_runner.model.X``, else ``None``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "model":
        runner = node.value.value
        if isinstance(runner, ast.Attribute) and runner.attr in _RUNNERS:
            return node.attr
    return None


def _algorithm_of(test: ast.AST) -> str | None:
    """``EAGLE3`` for a test ``<...>.is_eagle3()``, else ``None``."""
    if isinstance(test, ast.Call) and not test.args and isinstance(test.func, ast.Attribute) and test.func.attr.startswith("is_"):
        return test.func.attr[3:].upper()
    return None


def _hasattr_names(test: ast.AST) -> set[str]:
    return {n.args[1].value for n in ast.walk(test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id == "hasattr" and len(n.args) == 2 and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)}


def _walk(stmts: list[ast.stmt], algo: str | None, lacks: frozenset[str], rel: str, out: list[dict[str, Any]]) -> None:
    """Record the draft-model accesses of ``stmts`` that run whenever the algorithm branch ``algo`` runs (``None``:
    outside one; nothing recorded). The body of any other ``if`` is conditional and skipped, except the ``else`` of a
    ``hasattr(model, "X")`` test: it runs when the class lacks every such ``X`` (``lacks``)."""
    for st in stmts:
        if isinstance(st, ast.If):
            a = _algorithm_of(st.test)
            optional = _hasattr_names(st.test)
            _collect(st.test, algo, lacks, optional, rel, out)
            if a is not None:
                _walk(st.body, a, lacks, rel, out)
            elif optional:
                _walk(st.orelse, algo, lacks | optional, rel, out)
            continue
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.While, ast.For, ast.AsyncFor)):
            continue  # a nested definition or a loop body: not certain to run
        blocks: list[list[ast.stmt]] = [blk for blk in (getattr(st, f, None) for f in ("body", "finalbody"))
                                         if isinstance(blk, list) and blk and isinstance(blk[0], ast.stmt)]
        if not blocks:
            _collect(st, algo, lacks, set(), rel, out)
        for blk in blocks:
            _walk(blk, algo, lacks, rel, out)


def _collect(node: ast.AST, algo: str | None, lacks: frozenset[str], optional: set[str], rel: str,
             out: list[dict[str, Any]]) -> None:
    if algo is None:
        return
    for n in ast.walk(node):
        name = _draft_attr(n)
        if name is not None and name not in optional:
            out.append({"algorithm": algo, "attribute": name, "location": f"{rel}:{getattr(n, 'lineno', '?')}",
                        "unless_has": sorted(lacks)})


def worker_requirements(tree: SourceTree) -> list[dict[str, Any]]:
    """Per worker file, the draft-model attributes its start-up methods (``__init__``, ``init_*``) read under an
    algorithm branch: ``[{"algorithm": "EAGLE3", "attribute": "set_embed", "location": "REL:LINE", "unless_has":
    ["load_lm_head_from_target"], "file": REL}]`` (``unless_has``: the access runs when the class has none of these)
    (the first access of each attribute per file and algorithm)."""
    rows: list[dict[str, Any]] = []
    for rel in sorted(r for r in tree.files if _WORKER.search(r)):
        mod = _parse(tree, rel)
        if mod is None:
            continue
        found: list[dict[str, Any]] = []
        for fn in (n for n in ast.walk(mod) if isinstance(n, ast.FunctionDef)):
            if fn.name == "__init__" or fn.name.startswith("init"):
                _walk(fn.body, None, frozenset(), rel, found)
        seen: set[tuple[str, str]] = set()
        for r in found:
            if (r["algorithm"], r["attribute"]) not in seen:
                seen.add((r["algorithm"], r["attribute"]))
                rows.append(dict(r, file=rel))
    return rows


def _members(cls: ast.ClassDef) -> tuple[set[str], str | None]:
    """Names a class defines, and why it cannot be told (``__getattr__``, ``setattr`` with a computed name)."""
    names: set[str] = set()
    for st in cls.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(st.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            for t in st.targets if isinstance(st, ast.Assign) else [st.target]:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    if names & {"__getattr__", "__getattribute__"}:
        return names, f"{cls.name} defines __getattr__"
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self":
            names.add(n.attr)
        elif isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)):
            fname = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
            if fname in ("setattr", "register_buffer", "register_parameter", "add_module"):
                arg = n.args[1] if fname == "setattr" and len(n.args) > 1 else n.args[0] if n.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names.add(arg.value)
                elif fname == "setattr":
                    return names, f"{cls.name} sets attributes by computed name (setattr, line {n.lineno})"
    return names, None


def _imports(mod: ast.Module) -> dict[str, str]:
    """Local name -> dotted origin of the module's imports."""
    out: dict[str, str] = {}
    for st in mod.body:
        if isinstance(st, ast.ImportFrom) and st.module and not st.level:
            out.update({a.asname or a.name: f"{st.module}.{a.name}" for a in st.names})
        elif isinstance(st, ast.Import):
            out.update({a.asname or a.name.split(".")[0]: (a.name if a.asname else a.name.split(".")[0]) for a in st.names})
    return out


def _base_origin(base: ast.expr, imports: dict[str, str], local: set[str], rel: str) -> str:
    """The dotted origin of a base expression (``nn.Module`` with ``from torch import nn``: ``torch.nn.Module``)."""
    text = ast.unparse(base)
    head, _, rest = text.partition(".")
    if head in local and not rest:
        return f"{_module_name(rel)}.{head}"
    origin = imports.get(head)
    return (origin + ("." + rest if rest else "")) if origin else text


class _Resolver:
    """Follows a class up its bases through the tree's files (each parsed once)."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.by_module = {_module_name(r): r for r in tree.files if r.endswith(".py")}
        self.mods: dict[str, ast.Module | None] = {}

    def module(self, rel: str) -> ast.Module | None:
        if rel not in self.mods:
            self.mods[rel] = _parse(self.tree, rel)
        return self.mods[rel]

    def members(self, rel: str, name: str) -> tuple[dict[str, str], list[str], str | None]:
        """``({member: "REL:LINE" of the class defining it}, [class locations], why unresolved or None)``."""
        found: dict[str, str] = {}
        chain: list[str] = []
        todo = [(rel, name)]
        while todo:
            if len(chain) >= MAX_CHAIN:
                return found, chain, f"more than {MAX_CHAIN} classes up the chain of {name}"
            r, n = todo.pop(0)
            mod = self.module(r)
            cls = next((c for c in (mod.body if mod else []) if isinstance(c, ast.ClassDef) and c.name == n), None)
            if cls is None or mod is None:
                return found, chain, f"class {n} not found in {r}"
            chain.append(f"{r}:{cls.lineno}")
            names, why = _members(cls)
            for m in names:
                found.setdefault(m, f"{r}:{cls.lineno}")
            if why:
                return found, chain, why
            local = {c.name for c in mod.body if isinstance(c, ast.ClassDef)}
            for b in cls.bases:
                origin = _base_origin(b, _imports(mod), local, r)
                if origin in _TERMINAL:
                    continue
                mname, _, cname = origin.rpartition(".")
                if mname not in self.by_module:
                    return found, chain, f"base {ast.unparse(b)} of {n} ({r}:{cls.lineno}) comes from outside the tree ({origin})"
                todo.append((self.by_module[mname], cname))
        return found, chain, None


def draft_api(tree: SourceTree, mtp_classes: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"requires": worker_requirements(tree), "classes": {cls: {"missing": [attributes a worker reads that
    the class chain does not define], "chain": [...],
    "unresolved": reason or None}}}`` for each MTP class (``mtp_classes`` rows: ``class``, ``file``)."""
    requires = worker_requirements(tree)
    wanted = sorted({r["attribute"] for r in requires} | {u for r in requires for u in r["unless_has"]})
    res = _Resolver(tree)
    classes: dict[str, Any] = {}
    for row in mtp_classes:
        found, chain, why = res.members(row["file"], row["class"])
        classes[row["class"]] = {"missing": [a for a in wanted if a not in found], "chain": chain, "unresolved": why}
    return {"requires": requires, "classes": classes}
