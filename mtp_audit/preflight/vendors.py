"""The preflight off NVIDIA: AMD ROCm GPUs, Ascend NPUs, Intel GPUs (XPU), Intel Gaudi (HPU) and CPU-only machines
(rules MTP233, MTP236-MTP237, MTP240-MTP249).

The NVIDIA checks (FP4 tensor cores by compute capability, CUDA driver and toolkit floors, torch's CUDA build,
FlashInfer / sgl-kernel cubins) do not apply to these platforms; they are reported as not applicable (MTP241), never
as "not capable", and what does apply runs instead. This module says what the machine is; what an engine does on it
is the engine's knowledge, run from here: the ``platform_checks`` of its
:class:`~mtp_audit.preflight.kernels.KernelChecks` (``mtp_audit/engines/<engine>/platforms.py``).

- AMD (:func:`check_amd`): per gfx target, native MXFP4 only on gfx950 (CDNA4), none on gfx942 (CDNA3, FP8
  e4m3fnuz) or older, NVFP4 native nowhere (``data/amd.json`` ``targets``); then the engine's checks: its FP4 path
  at its version (native / emulated with its cost / not runnable: MTP242, MTP243, the rows of ``data/amd.json``
  ``engines.<engine id>`` read by :func:`check_amd_fp4_path`), vLLM's gfx950-only switches (MTP244).
- Ascend (:func:`check_ascend`): the FP4 checks do not apply (MTP245, a note), but NVFP4 weights cannot load there
  (MTP233); then the engine's checks (vllm-ascend's devices and MTP status: MTP246, MTP247; SGLang's NPU
  ``--quantization mxfp4``: MTP248), with the NPU's row of ``data/ascend.json`` (:func:`ascend_row`).
- Intel XPU and Gaudi HPU (:func:`check_intel_gaudi`): the FP4 checks do not apply (MTP236, a note); then the
  engine's checks (vLLM's XPU quantization list; FP4 weights, for which vLLM's Gaudi plugin documents no backend:
  MTP237).
- All: the platform, its devices and stack and where each came from (MTP240); a launch ``--device`` that names
  another platform (MTP249).

Per-device verdicts (:func:`verdicts`): ``capable`` / ``not capable`` / ``unknown`` for AMD GPUs (native FP4 of the
format the launch loads), ``not applicable`` for Ascend NPUs, Intel GPUs and Gaudi HPUs.
"""
from __future__ import annotations

from typing import Any

from packaging.version import Version

from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight.facts import Fact
from mtp_audit.report import Evidence, Gap, Severity
from mtp_audit.report.model import located_at
from mtp_audit.report.questions import FP4, STARTS

NOT_APPLICABLE = "not applicable"
#: The rules of the NVIDIA checks that do not run off CUDA.
NVIDIA_RULES = "MTP200-MTP227, MTP229-MTP232"


def platform(ctx: Any) -> str | None:
    """The platform value of the machine (``"cuda"``, ``"rocm"``, ``"cann"``, ``"cpu"``) or ``None`` when unknown."""
    return ctx.facts.accelerator.value if ctx.facts.accelerator.present else None


def applies(ctx: Any) -> bool:
    """Whether the run is for a non-NVIDIA platform (then the NVIDIA checks do not run)."""
    return platform(ctx) in OFF_NVIDIA


#: The platforms whose checks are these (the NVIDIA checks do not run there).
OFF_NVIDIA = (pf.ROCM, pf.CANN, pf.XPU, pf.HPU, pf.CPU)
#: The platforms whose devices get the "not applicable" FP4 verdict.
NOT_APPLICABLE_PLATFORMS = (pf.CANN, pf.XPU, pf.HPU)


def fp4_format(ctx: Any) -> str | None:
    """``"mxfp4"`` or ``"nvfp4"``: what the checkpoint (its quantization metadata) or the launch's ``--quantization``
    loads; ``None`` without a launch or when the format is not said. A ``--quantization`` value says its format by
    name (``quark_mxfp4``, ``modelopt_fp4``, ``petit_nvfp4``), or in the engine's own words for a name that does not
    (its ``KernelChecks.fp4_formats``: ``modelopt_mixed``)."""
    algo = str(ctx.quant.algo or "").upper() if ctx.quant is not None else ""
    if "MXFP4" in algo:
        return "mxfp4"
    if "NVFP4" in algo or "FP4" in algo:
        return "nvfp4"
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    if q in ctx.kernels.fp4_formats:
        return str(ctx.kernels.fp4_formats[q])
    return "mxfp4" if "mxfp4" in q else "nvfp4" if "fp4" in q else None


def engine_path(engine: str, version: Version | None, fmt: str) -> tuple[dict[str, Any] | None, str]:
    """The row of ``data/amd.json`` ``engines.<engine>.<fmt>`` that holds for ``version``, and how it was chosen.

    The row with the greatest ``from`` not above ``version`` applies unless ``version`` reaches its ``until``;
    ``version`` ``None`` takes the newest row (said in the second value). ``(None, why)`` when no row holds."""
    rows = pf.amd_table()["engines"][engine][fmt]
    if version is None:
        return rows[-1], f"{engine} version unknown: the newest audited row (from {rows[-1]['from']}) is used"
    fit = [r for r in rows if Version(r["from"]) <= version]
    if not fit:
        return None, f"{engine} {version} is older than every audited release (from {rows[0]['from']})"
    row = max(fit, key=lambda r: Version(r["from"]))
    if row.get("until") and version >= Version(row["until"]):
        return None, f"{engine} {version} lies between audited releases (the {row['from']} row holds below {row['until']})"
    return row, f"{engine} {version} (row from {row['from']})"


def _gfx(g: Any) -> str | None:
    v = g.arch.value if g.arch.present else None
    return v if isinstance(v, str) and v.startswith("gfx") else None


def check_platform(ctx: Any) -> None:
    """MTP240 (the platform, its devices and stack, where each came from) and MTP241 (the NVIDIA checks do not apply)."""
    f = ctx.facts
    plat = f.accelerator.value
    devs = _device_summary(ctx)
    stack = [f"{label} {fact.value}" for label, fact in (("ROCm", f.rocm_version), ("CANN", f.cann_version), ("torch", f.torch_version),
                                                          ("driver", f.driver_version)) if fact.present]
    stack += [f"{d} {f.packages[d].value}" for d in ("aiter", "torch-npu", "vllm-ascend", "sgl-kernel-npu", "vllm", "sglang")
              if d in f.packages and f.packages[d].present]
    evs = [Evidence("platform", f"{pf.LABELS[plat]} ({f.accelerator.source})")] + [
        Evidence(f"device {g.index}", f"{g.name.value or '?'}: {g.arch.value or g.arch.missing} ({g.arch.source or g.name.source})") for g in ctx.gpus[:8]]
    ctx.add("MTP240", f"platform: {pf.LABELS[plat]}" + (f"; {devs}" if devs else "") + (f"; {', '.join(stack)}" if stack else ""),
            evidence=evs)
    instead = {pf.ROCM: "MTP242-MTP244 (AMD FP4 path, gfx950-only switches)", pf.CANN: "MTP245-MTP248 (Ascend)",
               pf.XPU: "MTP236-MTP237 (Intel XPU: FP4 not applicable, vLLM's XPU quantization list)",
               pf.HPU: "MTP236-MTP237 (Gaudi: FP4 not applicable, the plugin's quantization backends)", pf.CPU: "none (no accelerator)"}[plat]
    ctx.add("MTP241", f"the NVIDIA checks ({NVIDIA_RULES}: FP4 tensor cores by compute capability, CUDA driver and toolkit floors, "
            f"torch's CUDA build, FlashInfer / sgl-kernel cubins) do not apply to {pf.LABELS[plat]}; checked instead: {instead}",
            evidence=[Evidence("platform", f"{plat} ({f.accelerator.source})")])


def _device_summary(ctx: Any) -> str:
    groups: dict[tuple[str, str], int] = {}
    for g in ctx.gpus:
        key = (str(g.name.value or "?"), str(g.arch.value or "?"))
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{n} x {name} ({arch})" for (name, arch), n in groups.items())


def check_device_flag(ctx: Any) -> None:
    """MTP249: the launch's ``--device`` names another platform than the machine's."""
    dev = (ctx.launch.get("--device") or "").lower() if ctx.launch else ""
    want = pf.DEVICE_FLAG.get(dev)
    plat = ctx.facts.accelerator.value if ctx.facts.accelerator.present else None
    if want and plat and want != plat and not ctx.facts.accelerator.source.startswith("launch"):
        ctx.add("MTP249", f"the launch asks for --device {dev} ({pf.LABELS[want]}) but the machine is {pf.LABELS[plat]} "
                f"({ctx.facts.accelerator.source})", evidence=[Evidence("--device", dev), Evidence("platform", plat)],
                remediation=f"drop --device or set it to the machine's platform ({plat})")


def gap(ctx: Any, message: str, question: str, *, blocking: bool = False, why_open: str | None = None) -> None:
    """Record on ``ctx`` something the checks off NVIDIA could not decide, naming the one question it leaves open
    (:mod:`mtp_audit.report.questions`) and why (``why_open``: the :attr:`~mtp_audit.preflight.facts.Fact.why_open`
    of the fact it rests on)."""
    ctx.gaps.append(Gap("preflight", message, None, blocking, question=question, why_open=why_open))


def _engine_checks(ctx: Any, plat: str) -> bool:
    """Run the checks the engine that runs the launch has for ``plat`` (its ``KernelChecks.platform_checks``);
    whether one of them answered the launch's FP4 question (a check returns ``True`` when it did: a finding or a
    gap on what the engine does with the FP4 weights, or the engine's own list accepting them)."""
    answered = False
    for check in ctx.kernels.platform_checks.get(plat, ()):
        answered = bool(check(ctx)) or answered
    return answered


def check_amd(ctx: Any) -> None:
    """On an AMD ROCm machine, the engine's own checks (its ``platform_checks["rocm"]``): vLLM's gfx950-only switches
    (MTP244), the engine's FP4 path on each gfx target (MTP242 / MTP243, through :func:`check_amd_fp4_path`)."""
    if platform(ctx) != pf.ROCM:
        return
    _engine_checks(ctx, pf.ROCM)


def check_amd_fp4_path(ctx: Any, engine: str, version: Version | None, label: str) -> None:
    """MTP242 / MTP243: the FP4 path of ``engine`` (its id, the key of ``data/amd.json`` ``engines``; ``label``: its
    name for people) at ``version`` on each gfx target of the machine, when FP4 is intended; a gap for a GPU whose gfx
    target is unknown. Called by the engines' ROCm platform checks. A row says the path (``native_on`` / ``native``,
    ``elsewhere`` / ``verdict``, ``emulated`` / ``not_runnable`` / ``text``, ``cost``, ``source``) and may carry the
    engine's own ``remediation`` for a format it cannot run."""
    fmt = fp4_format(ctx)
    if not ctx.fp4_intent:
        return
    seen: set[str | None] = set()
    for g in ctx.gpus:
        gfx = _gfx(g)
        if gfx in seen:
            continue
        seen.add(gfx)
        if gfx is None:
            gap(ctx, f"GPU {g.index}: gfx target unknown ({g.arch.missing}); the AMD FP4 path cannot be told", FP4, blocking=True,
                why_open=g.arch.why_open)
            continue
        for f in ((fmt,) if fmt else ("mxfp4", "nvfp4")):
            _amd_path_finding(ctx, g, gfx, f, (engine, version, label), explicit=fmt is not None)


def _amd_path_finding(ctx: Any, g: Any, gfx: str, fmt: str, who: tuple[str, Version | None, str], *, explicit: bool) -> None:
    tgt = pf.gfx_target(gfx)
    engine, ver, name = who
    row, how = engine_path(engine, ver, fmt)
    label = "MXFP4" if fmt == "mxfp4" else "NVFP4"
    evs = [Evidence("GPU", f"{g.name.value or '?'} ({gfx}, {tgt['family'] if tgt else 'gfx target not in the table'})"),
           Evidence("hardware", f"{tgt['mx']}; FP8 {tgt['fp8']} ({tgt['source']})" if tgt else "not in data/amd.json"),
           Evidence("engine path", how)]
    if row is None:
        _unaudited_path(ctx, g, gfx, label, f"{name} {ver}", how, evs)
        return
    evs.append(Evidence("source", row["source"]))
    native = bool(tgt and tgt.get(f"native_{fmt}"))
    if fmt == "mxfp4" and gfx in row.get("native_on", ()) and native:
        missing_aiter = "needs_aiter_on_native" in row and ctx.facts.package("aiter").missing == "not installed"
        ctx.add("MTP242", f"GPU {g.index} ({g.name.value or '?'}, {gfx}): {label} runs natively on {name}: {row['native']}",
                gpu=g, evidence=evs, severity=Severity.INFO,
                detail="Quark MXFP4 needs the aiter package for the native path (" + row.get("needs_aiter_on_native", "") + ")" if missing_aiter else "")
        return
    kind = row.get("elsewhere") if fmt == "mxfp4" else row.get("verdict")
    if kind == "not runnable":
        text = row.get("not_runnable") or row.get("text")
        ctx.add("MTP243", f"GPU {g.index} ({g.name.value or '?'}, {gfx}): an {label} checkpoint does not run on {name}"
                f"{' ' + str(ver) if ver else ''}: {text}", gpu=g, evidence=evs,
                severity=Severity.ERROR if explicit else Severity.WARNING,
                remediation=row.get("remediation") or ("run MXFP4 on gfx950 (MI350X / MI355X), or use an FP8 / BF16 checkpoint on "
                                                       "this GPU" if fmt == "mxfp4" else "use an MXFP4 (gfx950) or FP8 checkpoint on AMD"))
        return
    text = row.get("emulated") or row.get("text")
    ctx.add("MTP242", f"GPU {g.index} ({g.name.value or '?'}, {gfx}) has no native {label}: {name}"
            f"{' ' + str(ver) if ver else ''} emulates it ({kind}): {text}", gpu=g, evidence=evs,
            severity=Severity.WARNING, detail=f"Cost: {row.get('cost', 'not measured')}.",
            remediation=("MXFP4 runs natively on gfx950 (MI350X / MI355X); on this GPU an FP8 checkpoint uses its FP8 "
                         f"({tgt['fp8'] if tgt else '?'}) matrix cores" if fmt == "mxfp4" else
                         "no AMD GPU computes NVFP4 natively: prefer an MXFP4 checkpoint on gfx950 or FP8"))


def _unaudited_path(ctx: Any, g: Any, gfx: str, label: str, engine: str, how: str, evs: list[Evidence]) -> None:
    """The engine's release has no audited FP4 path row (older than, or between, the audited releases: ``how``).
    A GPU whose hardware computes ``label`` natively gets a blocking FP4 gap and an unknown verdict (whether this
    release uses the native path is the open question); one that does not is "not capable" from the hardware alone,
    a warning as on NVIDIA (MTP200), with what the release does instead (emulate or refuse) left as a note."""
    tgt = pf.gfx_target(gfx)
    if tgt and tgt.get(f"native_{label.lower()}"):
        ctx.amd_paths_open[gfx] = f"{engine}'s {label} path could not be told ({how})"
        gap(ctx, f"{label} on {gfx} with {engine}: {how}; the FP4 path (native or not) could not be told", FP4, blocking=True)
        return
    ctx.add("MTP242", f"GPU {g.index} ({g.name.value or '?'}, {gfx}) has no native {label} "
            f"({tgt['mx'] if tgt else 'gfx target not in the table'}); what {engine} does instead (emulate it or refuse it) "
            f"was not audited: {how}", gpu=g, evidence=evs, severity=Severity.WARNING,
            remediation="MXFP4 runs natively on gfx950 (MI350X / MI355X); on this GPU prefer an FP8 checkpoint, or an audited "
                        "engine release")
    gap(ctx, f"{label} on {gfx} with {engine}: {how}; the FP4 path (emulated or refused) could not be told", FP4)


def gfx_targets_other_than(ctx: Any, gfx: str) -> list[str]:
    """The machine's gfx targets other than ``gfx``, sorted (GPUs whose target is unknown are left out)."""
    return sorted({t for g in ctx.gpus if (t := _gfx(g)) and t != gfx})


def check_ascend(ctx: Any) -> None:
    """MTP245 (and MTP233 for NVFP4 weights) on an Ascend machine, then the engine's own checks there (its
    ``platform_checks["cann"]``: vllm-ascend's devices and MTP status, MTP246 / MTP247; SGLang's NPU MXFP4, MTP248)."""
    if platform(ctx) != pf.CANN:
        return
    facts = pf.ascend_table()["facts"]
    fp4 = fp4_format(ctx)
    ctx.add("MTP245", "the FP4 checks do not apply to Ascend NPUs" + (f" (the launch loads {fp4.upper()})" if fp4 else "") + f": {facts['fp4']['text']}",
            evidence=[Evidence("platform", f"cann ({ctx.facts.accelerator.source})"), Evidence("source", facts["fp4"]["source"])])
    if fp4 == "nvfp4":
        ctx.add("MTP233", "the launch loads NVFP4 weights on an Ascend NPU: they need NVIDIA FP4 kernels, and no Ascend backend runs "
                f"them ({facts['fp4']['text']})", evidence=[Evidence("platform", f"cann ({ctx.facts.accelerator.source})"),
                                                            Evidence("source", facts["fp4"]["source"])],
                remediation="use an msmodelslim W8A8 / W4A8 (or BF16) checkpoint on the NPU, or run this checkpoint on Blackwell")
    if not _engine_checks(ctx, pf.CANN) and fp4 == "mxfp4":
        _open_fp4_gap(ctx, pf.CANN, fp4)


def ascend_row(g: Any) -> dict[str, Any] | None:
    """The ``data/ascend.json`` product row of NPU ``g`` (its ``generation``, model, series), or ``None`` when its
    name is unknown or not in the table."""
    hit = pf.ascend_lookup(str(g.name.value or "")) if g.name.present else None
    return hit.row if hit else None


def check_intel_gaudi(ctx: Any) -> None:
    """MTP236 (the FP4 checks do not apply to Intel GPUs and Gaudi HPUs), then the engine's own checks there (its
    ``platform_checks["xpu"]`` / ``["hpu"]``: vLLM's XPU quantization list, FP4 weights for which vLLM's Gaudi plugin
    documents no backend: MTP237). A launch that loads FP4 weights which none of the engine's checks answers
    (SGLang there; vLLM with an MXFP4 checkpoint and no ``--quantization`` on XPU) leaves the FP4 question open: a
    blocking gap, never a pass on "the checks do not apply"."""
    plat = platform(ctx)
    if plat not in (pf.XPU, pf.HPU):
        return
    table = pf.intel_table() if plat == pf.XPU else pf.gaudi_table()
    fp4 = fp4_format(ctx)
    where = Evidence("platform", f"{plat} ({ctx.facts.accelerator.source})")
    ctx.add("MTP236", f"the FP4 checks do not apply to {pf.LABELS[plat]}" + (f" (the launch loads {fp4.upper()})" if fp4 else "")
            + f": {table['facts']['fp4']['text']}", evidence=[where, Evidence("source", table["facts"]["fp4"]["source"])])
    if not _engine_checks(ctx, plat) and fp4:
        _open_fp4_gap(ctx, plat, fp4)


def check_cpu(ctx: Any) -> None:
    """On a CPU-only machine, a launch loading FP4 weights: no engine's checks cover a CPU backend's FP4 support, so
    the FP4 question is open (a blocking gap), never a pass on "the FP4 checks do not apply"."""
    fp4 = fp4_format(ctx)
    if platform(ctx) == pf.CPU and fp4 and not _engine_checks(ctx, pf.CPU):
        _open_fp4_gap(ctx, pf.CPU, fp4)


def _open_fp4_gap(ctx: Any, plat: str, fp4: str) -> None:
    """The blocking FP4 gap of a launch loading ``fp4`` weights on ``plat`` that no check of the engine answers."""
    ver = ctx.engine_version
    gap(ctx, f"the launch loads {fp4.upper()} weights on {pf.LABELS[plat]}: {ctx.kernels.label} "
        f"{ver or '(version unknown)'} has no audited check of what it does with them there (the NVIDIA FP4 checks do "
        "not apply); whether they load and run could not be told", FP4, blocking=True)


def verdicts(ctx: Any, capable: str, not_capable: str, unknown: str) -> list[dict[str, Any]]:
    """Per-device verdicts off NVIDIA (the constants of :mod:`mtp_audit.preflight.analyze` are passed in):
    ``not applicable`` on Ascend, native FP4 of the launch's format (MXFP4 when the launch does not say) per gfx
    target on AMD."""
    plat = platform(ctx)
    fmt = fp4_format(ctx) or "mxfp4"
    out = []
    for g in ctx.gpus:
        arch = g.arch.value if g.arch.present else None
        base = {"gpu": g.index, "name": g.name.value, "compute_capability": None, "arch": arch, "platform": plat}
        if plat in NOT_APPLICABLE_PLATFORMS:
            kind, rule = {pf.CANN: ("Ascend NPU", "MTP245"), pf.XPU: ("Intel GPU", "MTP236"), pf.HPU: ("Intel Gaudi HPU", "MTP236")}[plat]
            why = f"{arch or g.name.value or 'device'}: {kind}, the FP4 checks do not apply ({rule})"
            out.append({**base, "native_fp4": unknown, "reasons": [f"{why}, but whether the engine runs the launch's FP4 weights "
                                                                   "there could not be told (see the gaps)"]} if open_fp4_launch(ctx) else
                       {**base, "native_fp4": NOT_APPLICABLE, "reasons": [why]})
            continue
        gfx = _gfx(g)
        tgt = pf.gfx_target(gfx)
        errs = [f"{f.rule_id}: {f.message}" for f in ctx.findings if f.severity >= Severity.ERROR and located_at(f.location.symbol, ctx.device(g.index), g.index)]
        if tgt is None:
            v, reasons = unknown, [f"gfx target unknown: {g.arch.missing if not gfx else gfx + ' is not in data/amd.json'}"]
            ctx.unknown_verdicts[g.index] = None if gfx else g.arch.why_open  # Context.unknown_verdicts
        elif tgt.get(f"native_{fmt}") and gfx in ctx.amd_paths_open and not errs:
            v, reasons = unknown, [f"{gfx} ({tgt['family']}) computes {fmt.upper()} natively, but {ctx.amd_paths_open[gfx]}"]
        elif tgt.get(f"native_{fmt}"):
            v, reasons = (not_capable, errs) if errs else (capable, [f"{gfx} ({tgt['family']}) computes {fmt.upper()} natively ({tgt['mx']})"])
        else:
            v, reasons = not_capable, [f"{gfx} ({tgt['family']}) has no native {fmt.upper()} ({tgt['mx']})"] + errs
        out.append({**base, "native_fp4": v, "reasons": reasons})
    return out


def open_fp4_launch(ctx: Any) -> list[str]:
    """The blocking gaps the engine's checks on an Intel GPU / Gaudi left about the launch's FP4 weights (whether the
    engine reads them there): they make the device's verdict unknown, never "not applicable" (which would pass)."""
    if platform(ctx) not in (*NOT_APPLICABLE_PLATFORMS, pf.CPU):
        return []
    return [g.message for g in ctx.gaps if g.blocking and g.analyzer == "preflight" and g.question in (FP4, STARTS)]


def unknowns_have_gaps(ctx: Any, vs: list[dict[str, Any]]) -> bool:
    """Whether every device whose verdict is unknown off NVIDIA is so because of a blocking gap these checks left
    already (an Intel / Gaudi launch whose FP4 weights no engine check answers, an AMD gfx target whose FP4 path at
    the engine's release is not audited): no second gap need say the same."""
    unknown = [v for v in vs if v["native_fp4"] == "unknown"]
    if not vs and platform(ctx) == pf.CPU:
        return bool(open_fp4_launch(ctx))
    return bool(unknown) and all(open_fp4_launch(ctx) if v.get("platform") in NOT_APPLICABLE_PLATFORMS else v.get("arch") in ctx.amd_paths_open
                                 for v in unknown)


def answer(ctx: Any, vs: list[dict[str, Any]], engine: str) -> list[str] | None:
    """The one-line answer off NVIDIA, or ``None`` on CUDA (the NVIDIA answer applies)."""
    plat = platform(ctx)
    if plat not in OFF_NVIDIA:
        return None
    on = f" on {engine}" if engine else ""
    if plat == pf.CPU and open_fp4_launch(ctx):
        return [f"CPU only (no GPU or NPU): could not tell whether the launch's {(fp4_format(ctx) or 'FP4').upper()} weights "
                f"run{on} (see the gaps; {ctx.facts.accelerator.source})"]
    if plat == pf.CPU:
        return [f"CPU only (no GPU or NPU): the FP4 checks do not apply ({ctx.facts.accelerator.source})"]
    devs = _device_summary(ctx) or "no device listed"
    if plat in NOT_APPLICABLE_PLATFORMS and any(v["native_fp4"] != NOT_APPLICABLE for v in vs):
        kind = {pf.CANN: "Ascend NPU", pf.XPU: "Intel GPU", pf.HPU: "Intel Gaudi"}[plat]
        return [f"{kind} machine ({devs}): could not tell whether the launch's {(fp4_format(ctx) or 'FP4').upper()} weights "
                f"run{on} (the NVIDIA FP4 checks do not apply; see the gaps)"]
    if plat == pf.CANN:
        return [f"Ascend NPU machine ({devs}): the FP4 checks do not apply{on}; see MTP245-MTP248"]
    if plat in (pf.XPU, pf.HPU):
        errors = sorted({f.rule_id for f in ctx.findings if f.severity.label == "error"})
        tail = f" ({', '.join(errors)})" if errors else ""
        return [f"{'Intel GPU' if plat == pf.XPU else 'Intel Gaudi'} machine ({devs}): the FP4 checks do not apply{on}; "
                f"see MTP236-MTP237{tail}"]
    fmt = (fp4_format(ctx) or "mxfp4").upper()
    kinds = sorted({v["native_fp4"] for v in vs}) or ["unknown"]
    errors = sorted({f.rule_id for f in ctx.findings if f.severity.label == "error"})
    tail = f" ({', '.join(errors)})" if errors else ""
    return [f"AMD ROCm machine ({devs}): native {fmt} {' / '.join(kinds)}{on}{tail}"]


def fact_missing(f: Fact) -> str:
    """``f``'s missing reason, or ``""`` when present."""
    return "" if f.present else str(f.missing)
