"""What one checkpoint's draft becomes in one vLLM: ``hf_config_override`` run on that checkpoint's
``model_type`` and first architecture together (not one start key at a time, as the per-tree
``draft_chains`` facts are), joined with the model registry; plus the facts the launch form needs
that the per-tree report leaves out (module-level string constants, predicate conditions).

Used by ``mtp-audit launch -- vllm serve ...`` (:mod:`mtp_audit.engines.vllm.launch.evaluate`) through
:func:`open_for_launch`; the audited code is parsed with ``ast``, never imported.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path
from typing import Any

from mtp_audit.engines.vllm.audit import audit_tree, scan_role
from mtp_audit.engines.vllm.chain import simulate
from mtp_audit.engines.vllm.target import READ_BUDGET_S, open_target


class LaunchView:
    """One opened vLLM tree for a launch: its report, and :meth:`draft` per checkpoint config.

    Attributes:
        report: the :func:`~mtp_audit.engines.vllm.audit_vllm` report of the tree.
        strings: module-level ``NAME = "text"`` constants of the SpeculativeConfig file (0.33.0
            ``_QWEN3_OMNI_DSPARK_ARCHITECTURE``), which auto-detection tests compare with.
        predicate_conditions: ``use_*``/``uses_*`` name -> the expression it returns (``None`` when it
            is not one ``return`` expression, e.g. 0.33.0 ``use_multi_module_mtp``).
    """

    def __init__(self, report: Any, spec_rel: str | None, spec_text: str | None, registry: dict[str, Any],
                 sources: dict[str, bytes | None] | None = None) -> None:
        self.report = report
        self.spec_rel = spec_rel
        self.spec_text = spec_text
        self.spec_bytes: bytes | None = spec_text.encode() if spec_text is not None else None
        #: other files the statement-order replay reads (tree path -> bytes; ``None``: absent from this tree)
        self.sources: dict[str, bytes | None] = sources if sources is not None else {}
        #: the release's ``Requires-Dist`` values (``None``: no METADATA read: a checkout)
        self.requires: list[str] | None = None
        self._fn: ast.FunctionDef | None = None
        self._consts: dict[str, dict[str, Any]] = {}
        self.strings: dict[str, str] = {}
        self.predicate_conditions: dict[str, str | None] = {}
        self._archs = registry.get("archs", {}) if registry and not registry.get("gap") else {}
        self._reg_rel = (report.facts.get("vllm") or {}).get("files", {}).get("registry")
        if spec_text is None:
            return
        from mtp_audit.engines.code.pyast import module_string_sets as module_consts

        try:
            tree = ast.parse(spec_text)
        except SyntaxError:
            return
        self._consts = module_consts(tree)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                self.strings[node.targets[0].id] = node.value.value
            if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
                for st in node.body:
                    if isinstance(st, ast.FunctionDef) and st.name == "hf_config_override":
                        self._fn = st
                    if isinstance(st, ast.FunctionDef) and st.name.startswith(("use_", "uses_")):
                        self.predicate_conditions[st.name] = predicate_expression(st)

    def draft(self, model_type: str | None, arch: str | None) -> dict[str, Any] | None:
        """``hf_config_override`` on a config with this ``model_type`` and ``architectures[0]``.

        Returns ``None`` when the tree has no ``hf_config_override``; else ``{"model_type"`` (after the
        override, the input when not rewritten), ``"architectures"`` (``None``: not rewritten),
        ``"registered"`` ({arch: registry location, a list for f-string targets, ``None``: not registered}),
        ``"conditional"``, ``"dynamic"``, ``"n_predict_from"`` (the expression the layer count is read
        from, e.g. ``getattr(hf_config, 'num_nextn_predict_layers', None)``), ``"location"`` (the first
        write), ``"rewritten"``}.
        """
        if self._fn is None:
            return None
        r = simulate(self._fn, self._consts, model_type, arch)
        from mtp_audit.engines.vllm.audit import registered_location

        archs = r["architectures"]
        steps = r["steps"]
        loc = f"{self.spec_rel}:{steps[0]['line']}" if steps and self.spec_rel else None
        return {
            "model_type": r["model_type"] if r["model_type"] is not None else model_type,
            "architectures": archs,
            "registered": {a: registered_location(a, self._archs, self._reg_rel) for a in archs or []} if self._archs else None,
            "conditional": r["conditional"], "dynamic": r["dynamic"],
            "n_predict_from": r["n_predict_from"][-1] if r["n_predict_from"] else None,
            "location": loc, "rewritten": bool(steps), "stopped": r["stopped"],
        }

    def registered(self, arch: str) -> Any:
        """Registry location of ``arch`` in this tree (``None``: not registered)."""
        from mtp_audit.engines.vllm.audit import registered_location

        return registered_location(arch, self._archs, self._reg_rel) if self._archs else None


def predicate_expression(fn: ast.FunctionDef) -> str | None:
    """The boolean expression a ``use_*()`` predicate returns, as source text: one ``return EXPR``, or guard
    ``if T: return False`` statements, local ``NAME = EXPR`` assignments and a final ``return EXPR``, folded into
    ``not (T) and EXPR'`` with the locals substituted (0.33.0 ``use_multi_module_mtp``: ``not (self.method != 'mtp'
    or self.draft_model_config is None) and min(getattr(..., 'num_nextn_predict_layers', 1), self.num_speculative_tokens)
    > 1``). ``None`` for any other shape."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    guards: list[str] = []
    local: dict[str, ast.AST] = {}

    class _Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return local.get(node.id, node)

    for st in body:
        if isinstance(st, ast.If) and not st.orelse and len(st.body) == 1 and isinstance(st.body[0], ast.Return) \
                and isinstance(st.body[0].value, ast.Constant) and st.body[0].value.value is False:
            guards.append(f"not ({ast.unparse(_Sub().visit(st.test))})")
        elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            local[st.targets[0].id] = _Sub().visit(st.value)
        elif isinstance(st, ast.Return) and st.value is not None and st is body[-1]:
            expr = ast.unparse(_Sub().visit(st.value))
            return " and ".join(guards + [f"({expr})"]) if guards else expr
        else:
            return None
    return None


def open_for_launch(target: str | Path | None) -> LaunchView:
    """Open a vLLM target (checkout, package folder, unpacked wheel, ``.whl``, ``None``: installed vllm)
    once, audit it and keep what :meth:`LaunchView.draft` needs.

    Raises:
        InputError: the target cannot be opened or is not vLLM.
    """
    tree = open_target(target)
    try:
        report = audit_tree(tree)
        spec_rel = tree.roles.get("spec")
        data = tree.read(spec_rel) if spec_rel else None
        registry = scan_role(tree, "registry") or {}
        sources = TreeSources(target, {rel: tree.read(rel) for rel in REPLAY_SOURCES})
    finally:
        tree.close()
    text = data.decode("utf-8", "replace") if data is not None else None
    view = LaunchView(report, spec_rel, text, registry, sources)
    view.spec_bytes = data
    view.requires = list(tree.requires) if tree.requires is not None else None
    return view


#: files besides the SpeculativeConfig module that :mod:`mtp_audit.engines.vllm.launch.spec_config_replay` follows into
#: (``EAGLEConfig.__init__``, which wraps the draft architecture for ``eagle``/``eagle3``; the model registry's
#: refusal of an architecture it does not register)
REPLAY_SOURCES = ("vllm/transformers_utils/configs/eagle.py", "vllm/model_executor/models/registry.py", "vllm/config/model.py",
                  "vllm/transformers_utils/model_arch_config_convertor.py", "vllm/model_executor/layers/quantization/__init__.py")


class TreeSources(dict):
    """Source bytes by tree path for the launch replay: the files read when the tree was opened, and any other
    ``vllm/...py`` module the replay follows an import into, read on first use from the same target (bounded like every
    read of :class:`~mtp_audit.engines.vllm.target.VllmTree`; ``None``: not in this tree). At most
    :data:`MAX_EXTRA` extra files (the attention-backend replay alone follows about 60 modules of 0.33.0)."""

    MAX_EXTRA = 256

    def __init__(self, target: Any, initial: dict[str, bytes | None]) -> None:
        super().__init__(initial)
        self._target = target
        self._tree: Any = None
        self._opened = 0.0
        self._extra = 0

    def has_compiled(self, stem: str) -> bool:
        """Whether the target ships compiled extension ``stem`` (:meth:`mtp_audit.engines.vllm.target.VllmTree.has_compiled`)."""
        try:
            return bool((self._tree if self._tree is not None else self._open()).has_compiled(stem))
        except Exception:  # noqa: BLE001 - an unreadable target ships nothing the replay can count on
            return False

    def _open(self) -> Any:
        """The target's tree, opened on first use; its file handle is closed when these sources are collected (the
        replay keeps them for the launch audit's lifetime), so no descriptor outlives them."""
        import weakref

        self._tree = open_target(self._target)
        self._opened = time.monotonic()
        weakref.finalize(self, self._tree.close)
        return self._tree

    def get(self, rel: str, default: Any = None) -> Any:  # type: ignore[override]
        if rel in self:
            return self[rel]
        data = None
        if self._extra < self.MAX_EXTRA:
            self._extra += 1
            try:
                if self._tree is not None and time.monotonic() - self._opened > READ_BUDGET_S / 2:
                    # the tree's wall-clock read budget runs from its opening: a long-lived view (many launches in one
                    # process) opens it afresh rather than reading nothing once the budget is spent
                    self._tree.close()
                    self._tree = None
                tree = self._tree if self._tree is not None else self._open()
                if tree.add_file(rel):
                    data = tree.read(rel)
            except Exception:  # noqa: BLE001 - an unreadable module is "not in this tree" for the replay
                data = None
        self[rel] = data
        return data if data is not None else default
