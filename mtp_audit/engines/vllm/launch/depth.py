"""vLLM launch checks that give a vLLM launch the depth of an SGLang one, each read from the release under audit: its
torch pin against the machine's torch (MTP339), the MTP draft's bytes per GPU (MTP338), and the refusal of
``--pipeline-parallel-size`` with a draft whose class does not implement ``SupportsPP`` (MTP337).

Sources: the wheel's ``METADATA`` (``Requires-Dist: torch==2.14.0`` in 0.33.0, ``torch==2.11.0`` in 0.24.0); vLLM
0.24.0 ``vllm/config/speculative.py:985-1003`` (``create_draft_parallel_config`` copies the target's
``pipeline_parallel_size``), ``:1053-1055`` (``draft_model_config.verify_with_parallel_config``) and
``vllm/config/model.py:1175-1182`` (``NotImplementedError("Pipeline parallelism is not supported for this model. ...
SupportsPP")``); 0.33.0 ``vllm/config/speculative.py:1904-1905`` (the draft's ``pipeline_parallel_size=1``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from mtp_audit.checkpoint.typed import as_checkpoint_answer
from mtp_audit.engines.base import DraftMemory, DraftQuestion, PinCheck
from mtp_audit.engines.outcome import fmt_bytes
from mtp_audit.engines.vllm.launch.methods import NO_DRAFT
from mtp_audit.engines.vllm.launch.parallel import plan_vllm
from mtp_audit.preflight.facts import Fact
from mtp_audit.preflight.typed import MachineAnswer
from mtp_audit.report import Evidence, Severity

#: base classes that are known not to give ``supports_pp`` (vLLM's interface mixins other than SupportsPP)
_NOT_PP = ("Module", "nn.Module", "torch.nn.Module")
REGISTRY = "vllm/model_executor/models/registry.py"


def check_depth(ctx: Any) -> None:
    """Run the three checks on a vLLM launch context (:class:`mtp_audit.engines.vllm.launch.evaluate.VCtx`)."""
    if ctx.view is None:
        return
    check_torch_pin(ctx)
    check_draft_memory(ctx)
    check_pp_draft(ctx)


def torch_pin(requires: list[str] | None) -> str | None:
    """The ``torch`` specifier of a release's ``Requires-Dist`` values (``"==2.14.0"``), ignoring extras."""
    for req in requires or []:
        name, _, rest = req.partition(";")
        head = name.strip()
        if head.startswith("torch") and head[5:6] in ("=", "<", ">", "!", "~", " ") and "extra" not in rest:
            return head[5:].strip()
    return None


def _answer(machine: MachineAnswer | Mapping[str, Any] | None) -> MachineAnswer | None:
    """The machine's typed answer, as given or read once from a ``facts["preflight"]`` document."""
    if machine is None or isinstance(machine, MachineAnswer):
        return machine
    return MachineAnswer.from_doc(machine.get("machine"))


def torch_fact(machine: MachineAnswer | None) -> Fact:
    """The machine's torch version (a :class:`~mtp_audit.preflight.facts.Fact`: missing without a machine)."""
    return machine.facts.torch_version if machine is not None else Fact.absent("no machine facts")


def release_pins(view: Any, machine: MachineAnswer | Mapping[str, Any] | None, version: str) -> tuple[PinCheck, ...]:
    """The torch pin of a vLLM release (``view.requires``: its ``Requires-Dist``) against ``machine`` (its typed answer,
    or the ``facts["preflight"]`` document): one :class:`~mtp_audit.engines.base.PinCheck`, none without a METADATA pin."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    spec = torch_pin(getattr(view, "requires", None))
    if spec is None:
        return ()
    tv = str(torch_fact(_answer(machine)).value or "") or None
    try:
        holds = SpecifierSet(spec).contains(Version(tv), prereleases=True) if tv else None
    except (InvalidSpecifier, InvalidVersion):
        holds = None
    return (PinCheck("torch", spec, tv, holds, f"vllm {version} METADATA Requires-Dist"),)


def check_torch_pin(ctx: Any) -> None:
    """MTP339: the machine's torch is outside the release's ``Requires-Dist: torch`` pin (vLLM's compiled ops are
    built against that torch), from :func:`release_pins` (what ``VllmEngine.release_pins`` answers).
    Without a METADATA (a checkout) or a known torch: a note."""
    pins = release_pins(ctx.view, ctx.machine, ctx.version)
    tv = torch_fact(ctx.machine)
    if not pins:
        ctx.gap(f"vLLM {ctx.version}: no METADATA with a torch requirement was read (a checkout?): its torch pin was not "
                "checked against the machine")
        return
    spec = pins[0].spec
    if pins[0].holds is None:
        ctx.gap(f"vLLM {ctx.version} requires torch{spec}; the machine's torch ({tv.value or 'unknown'}) could not "
                "be compared with it")
        return
    if pins[0].holds:
        return
    pkg = ctx.machine.facts.package("vllm") if ctx.machine is not None else Fact.absent("no machine facts")
    installed = pkg.value
    same = installed is not None and str(installed).split("+")[0] == str(ctx.version)
    if same:  # this very release is installed beside another torch: its compiled ops do not load
        sev, what = Severity.ERROR, (f"vLLM {ctx.version} is installed with torch {tv.value} but requires torch{spec}: "
                                     "its compiled ops (vllm._C) are built against the pinned torch and fail to load")
    else:  # installing the release makes pip replace torch
        now = (f"vLLM {installed} installed" if installed else "vLLM not installed" if pkg.missing == "not installed"
               else "no vLLM recorded")
        sev, what = Severity.WARNING, (f"vLLM {ctx.version} requires torch{spec} but the machine has torch {tv.value} "
                                       f"({now}): installing it replaces torch, and whatever was built for torch "
                                       f"{tv.value} must be rebuilt; kept as it is, vllm._C fails to load")
    ctx.add("MTP339", what, "vllm", severity=sev,
            evidence=[Evidence("Requires-Dist", f"torch{spec} (vllm {ctx.version} METADATA)"),
                      Evidence("torch", f"{tv.value} ({tv.source})"),
                      Evidence("vllm installed", str(installed) if installed else "no")],
            remediation=f"pip install 'torch{spec}' (the CUDA build vLLM {ctx.version} was built for), or the vLLM "
                        f"release built for torch {tv.value}")


def check_draft_memory(ctx: Any) -> None:
    """MTP338: the MTP draft's bytes per GPU at load (the checkpoint's MTP bytes over ``--tensor-parallel-size``: vLLM
    builds the MTP layer with the target's TP), against the smallest GPU; info below 10 %, warning from 10 %, error
    above the GPU. The steady state is not derived (vLLM may share the target's embedding and LM head)."""
    mtp = ctx.method == "mtp" or str(ctx.method or "").endswith("_mtp") or str(ctx.draft.get("model_type") or "").endswith("_mtp")
    plan = plan_vllm(ctx.cmd.get)
    if ctx.cmd.spec is None or ctx.fails or not mtp or plan.invalid:
        return
    ck = ctx.ck_answer if ctx.draft_is_target or ctx.draft_ck is None else ctx.draft_ck_answer
    answer = draft_memory(DraftQuestion(ck, plan.tp))
    if answer is None:
        return
    b, per_gpu = answer.mtp_bytes, answer.peak_per_gpu
    ctx.draft["mtp_bytes_per_gpu"] = per_gpu
    mems = [m for g in (ctx.machine.gpus if ctx.machine is not None else ())
            if isinstance(m := g.memory_bytes.value, int) and m > 0]
    ev = [Evidence("MTP bytes", fmt_bytes(b)), Evidence("--tensor-parallel-size", str(plan.tp))]
    head = (f"the MTP draft's weights take about {fmt_bytes(per_gpu)} per GPU at load (peak) under --tensor-parallel-size "
            f"{plan.tp}; the steady state is not derived (vLLM {ctx.version} may share the target's embedding and LM head)")
    if not mems:
        ctx.add("MTP338", head + " (GPU memory unknown)", "--speculative-config", evidence=ev, severity=Severity.INFO)
        return
    mem = min(mems)
    frac = per_gpu / mem
    sev = Severity.ERROR if per_gpu > mem else Severity.WARNING if frac >= 0.10 else Severity.INFO
    tail = ("more than a whole GPU: the draft cannot be loaded" if sev == Severity.ERROR else
            "it comes out of the memory --gpu-memory-utilization leaves for the KV cache" if sev == Severity.WARNING else
            "small next to the GPU")
    ctx.add("MTP338", f"{head}, {frac:.1%} of the {fmt_bytes(mem)} GPU: {tail}", "--speculative-config",
            evidence=ev + [Evidence("GPU memory (smallest)", fmt_bytes(mem))], severity=sev,
            remediation="" if sev == Severity.INFO else "raise --tensor-parallel-size or lower --gpu-memory-utilization")


def draft_memory(question: DraftQuestion) -> DraftMemory | None:
    """The MTP draft's bytes per GPU in vLLM: the checkpoint's MTP bytes (its answer's MTP section) over the
    tensor-parallel size (the draft's tensor_parallel_size defaults to the target's); the load-time peak only (``None``:
    MTP bytes unknown)."""
    ck = as_checkpoint_answer(question.checkpoint)
    b = ck.mtp.bytes if ck is not None else None
    if b is None or not isinstance(b.value, int) or b.value <= 0:
        return None
    tp = max(1, question.tensor_parallel)
    return DraftMemory(b.value, bool(b.estimated), b.value / tp, None, tp,
                       "all MTP bytes over --tensor-parallel-size; whether vLLM shares the target's embedding and LM head "
                       "is not derived")


def draft_pp_inherited(spec_text: str | None) -> tuple[bool | None, int | None]:
    """Whether this release's ``SpeculativeConfig.create_draft_parallel_config`` gives the draft the target's
    ``pipeline_parallel_size`` (``True``), ``1`` (``False``), or the source does not say (``None``), with its line."""
    try:
        tree = ast.parse(spec_text or "")
    except SyntaxError:
        return None, None
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "create_draft_parallel_config"):
            continue
        for call in ast.walk(fn):
            for kw in getattr(call, "keywords", []) if isinstance(call, ast.Call) else []:
                if kw.arg != "pipeline_parallel_size":
                    continue
                if isinstance(kw.value, ast.Constant) and kw.value.value == 1:
                    return False, kw.value.lineno
                if isinstance(kw.value, ast.Attribute) and kw.value.attr == "pipeline_parallel_size":
                    return True, kw.value.lineno
    return None, None


def registry_entry(registry: str | None, arch: str) -> tuple[str, str] | None:
    """``(module, class)`` the model registry source maps ``arch`` to (``"deepseek_mtp", "DeepSeekMTP"``)."""
    try:
        tree = ast.parse(registry or "")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == arch and isinstance(v, ast.Tuple) and len(v.elts) == 2 \
                        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts):
                    return str(v.elts[0].value), str(v.elts[1].value)  # type: ignore[attr-defined]
    return None


def class_supports_pp(source: str | None, name: str, seen: frozenset[str] = frozenset()) -> bool | None:
    """Whether class ``name`` of a module's source implements ``SupportsPP`` (a base named so, or
    ``supports_pp = True`` in its body), following bases defined in the same module; ``None`` when a base comes from
    elsewhere and is not one known to give nothing (``nn.Module``, another ``Supports*`` mixin, a ``*MixtureOfExperts``)."""
    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return None
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    cls = classes.get(name)
    if cls is None or name in seen:
        return None
    if any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "supports_pp" for t in s.targets)
           and isinstance(s.value, ast.Constant) and s.value.value is True for s in cls.body):
        return True
    answer: bool | None = False
    for base in cls.bases:
        text = ast.unparse(base)
        leaf = text.rsplit(".", 1)[-1]
        if leaf == "SupportsPP":
            return True
        if leaf in classes:
            sub = class_supports_pp(source, leaf, seen | {name})
            if sub:
                return True
            answer = None if sub is None else answer
        elif not (text in _NOT_PP or leaf.startswith(("Supports", "Has", "Is")) or leaf.endswith("MixtureOfExperts")):
            answer = None
    return answer


def _bytes_text(sources: Any, rel: str) -> str | None:
    data = sources.get(rel) if sources is not None else None
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else None


def check_pp_draft(ctx: Any) -> None:
    """MTP337: ``--pipeline-parallel-size`` above 1 with a draft model, on a release whose draft inherits the target's
    pipeline size, and a draft class that does not implement ``SupportsPP``: the config is refused before the model
    loads. A blocking gap when the release's source or the draft class cannot tell."""
    plan = plan_vllm(ctx.cmd.get)
    if plan.invalid or plan.pp <= 1 or ctx.cmd.spec is None or ctx.fails or str(ctx.method) in NO_DRAFT:
        return
    inherited, line = draft_pp_inherited(getattr(ctx.view, "spec_text", None))
    spec_rel = getattr(ctx.view, "spec_rel", None) or "vllm/config/speculative.py"
    if inherited is False:
        return
    arch = next(iter(ctx.draft.get("architectures") or []), None)
    if inherited is None or arch is None:
        ctx.gap(f"--pipeline-parallel-size {plan.pp} with a draft: whether vLLM {ctx.version} refuses it could not be told "
                "(its draft parallel config or the draft architecture was not read)", blocking=True)
        return
    entry = registry_entry(_bytes_text(ctx.view.sources, REGISTRY), arch)
    module = f"vllm/model_executor/models/{entry[0]}.py" if entry and "." not in entry[0] else None
    supports = class_supports_pp(_bytes_text(ctx.view.sources, module), entry[1]) if entry and module else None
    if supports is None:
        ctx.gap(f"--pipeline-parallel-size {plan.pp}: vLLM {ctx.version} gives the draft the target's pipeline size "
                f"({spec_rel}:{line}); whether the draft class of {arch} implements SupportsPP could not be told",
                blocking=True)
    elif supports is False:
        ctx.add("MTP337", f"vLLM {ctx.version} refuses --pipeline-parallel-size {plan.pp} with this draft: the draft gets the "
                f"target's pipeline size ({spec_rel}:{line}) and its class {entry[1]} ({module}) does not implement "  # type: ignore[index]
                "SupportsPP, so verify_with_parallel_config raises NotImplementedError('Pipeline parallelism is not "
                "supported for this model') before the model loads", "--pipeline-parallel-size",
                evidence=[Evidence("draft parallel config", f"{spec_rel}:{line}"), Evidence("draft class", f"{entry[1]} ({module})"),  # type: ignore[index]
                          Evidence("--pipeline-parallel-size", str(plan.pp))],
                remediation="drop --pipeline-parallel-size (use tensor parallelism), or a vLLM release that gives the "
                            "draft pipeline_parallel_size=1 (0.33.0 does)")
