"""The preflight off NVIDIA: AMD ROCm GPUs, Ascend NPUs, Intel GPUs (XPU), Intel Gaudi (HPU) and CPU-only machines
(rules MTP236-MTP237, MTP240-MTP249).

The NVIDIA checks (FP4 tensor cores by compute capability, CUDA driver and toolkit floors, torch's CUDA build,
FlashInfer / sgl-kernel cubins) do not apply to these platforms; they are reported as not applicable (MTP241), never
as "not capable", and what does apply runs instead:

- AMD (:func:`check_amd`): per gfx target, native MXFP4 only on gfx950 (CDNA4), none on gfx942 (CDNA3, FP8
  e4m3fnuz) or older, NVFP4 native nowhere; the FP4 path of the engine and version (native / emulated with its cost /
  not runnable: MTP242, MTP243) from ``data/amd.json`` (read from the vLLM and SGLang wheels), and the gfx950-only
  vLLM switches forced on another GPU (MTP244).
- Ascend (:func:`check_ascend`): the FP4 checks do not apply (MTP245, a note), but NVFP4 weights cannot load there
  (MTP233); first-generation Ascend 910 is not a
  vllm-ascend device (MTP246); vllm-ascend's documented speculative-decoding (MTP) status for its version (MTP247);
  SGLang's NPU ``--quantization mxfp4`` needs Ascend 950 (MTP248).
- Intel XPU and Gaudi HPU (:func:`check_intel_gaudi`): the FP4 checks do not apply (MTP236, a note); a quantization
  the engine refuses there (MTP237): vLLM's XPU platform accepts only the methods of its ``supported_quantization``
  (read from the vLLM wheels, ``data/intel.json``), and the Gaudi plugin documents no FP4 backend (``data/gaudi.json``).
- All: the platform and where it came from (MTP240); a launch ``--device`` that names another platform (MTP249).

Per-device verdicts (:func:`verdicts`): ``capable`` / ``not capable`` / ``unknown`` for AMD GPUs (native FP4 of the
format the launch loads), ``not applicable`` for Ascend NPUs, Intel GPUs and Gaudi HPUs.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from mtp_audit.engines.registry import engine_label
from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight.facts import Fact
from mtp_audit.report import Evidence, Severity
from mtp_audit.report import questions as Q

NOT_APPLICABLE = "not applicable"
#: The rules of the NVIDIA checks that do not run off CUDA.
NVIDIA_RULES = "MTP200-MTP227, MTP229-MTP232"
_VLLM_MXFP4 = ("mxfp4", "gpt_oss_mxfp4", "quark_mxfp4")
_NVFP4 = ("modelopt_fp4", "modelopt_mixed", "petit_nvfp4", "nvfp4_online")


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
    loads; ``None`` without a launch or when the format is not said."""
    algo = str(ctx.quant.algo or "").upper() if ctx.quant is not None else ""
    if "MXFP4" in algo:
        return "mxfp4"
    if "NVFP4" in algo or "FP4" in algo:
        return "nvfp4"
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    return "mxfp4" if q in _VLLM_MXFP4 else "nvfp4" if q in _NVFP4 else None


def _engine_version(ctx: Any) -> Version | None:
    return ctx.engine_version


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


def check_amd(ctx: Any) -> None:
    """MTP242 / MTP243 (the FP4 path of the engine on each gfx target) and MTP244 (gfx950-only vLLM switches)."""
    if platform(ctx) != pf.ROCM:
        return
    _check_amd_switches(ctx)
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
            ctx.gap(f"GPU {g.index}: gfx target unknown ({g.arch.missing}); the AMD FP4 path cannot be told", blocking=True, question=Q.FP4)
            continue
        for f in ((fmt,) if fmt else ("mxfp4", "nvfp4")):
            _amd_path_finding(ctx, g, gfx, f, explicit=fmt is not None)


def _amd_path_finding(ctx: Any, g: Any, gfx: str, fmt: str, *, explicit: bool) -> None:
    tgt = pf.gfx_target(gfx)
    engine = "vllm" if ctx.engine == "vllm" else "sglang"
    name = engine_label(engine)  # the engine whose table rows are read
    ver = _engine_version(ctx)
    row, how = engine_path(engine, ver, fmt)
    label = "MXFP4" if fmt == "mxfp4" else "NVFP4"
    evs = [Evidence("GPU", f"{g.name.value or '?'} ({gfx}, {tgt['family'] if tgt else 'gfx target not in the table'})"),
           Evidence("hardware", f"{tgt['mx']}; FP8 {tgt['fp8']} ({tgt['source']})" if tgt else "not in data/amd.json"),
           Evidence("engine path", how)]
    if row is None:
        ctx.gap(f"{label} on {gfx} with {name} {ver}: {how}; the FP4 path could not be told", question=Q.FP4)
        return
    evs.append(Evidence("source", row["source"]))
    native = bool(tgt and tgt.get(f"native_{fmt}"))
    if fmt == "mxfp4" and gfx in row.get("native_on", ()) and native:
        missing_aiter = ctx.engine == "vllm" and ctx.facts.package("aiter").missing == "not installed"
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
                remediation=("run MXFP4 on gfx950 (MI350X / MI355X), or use an FP8 / BF16 checkpoint on this GPU" if fmt == "mxfp4"
                             else "use an MXFP4 (gfx950) or FP8 checkpoint on AMD, or serve it with vLLM (emulated NVFP4)"))
        return
    text = row.get("emulated") or row.get("text")
    ctx.add("MTP242", f"GPU {g.index} ({g.name.value or '?'}, {gfx}) has no native {label}: {name}"
            f"{' ' + str(ver) if ver else ''} emulates it ({kind}): {text}", gpu=g, evidence=evs,
            severity=Severity.WARNING, detail=f"Cost: {row.get('cost', 'not measured')}.",
            remediation=("MXFP4 runs natively on gfx950 (MI350X / MI355X); on this GPU an FP8 checkpoint uses its FP8 "
                         f"({tgt['fp8'] if tgt else '?'}) matrix cores" if fmt == "mxfp4" else
                         "no AMD GPU computes NVFP4 natively: prefer an MXFP4 checkpoint on gfx950 or FP8"))


def _check_amd_switches(ctx: Any) -> None:
    """MTP244: a gfx950-only vLLM switch on a GPU that is not gfx950."""
    if ctx.engine != "vllm":
        return
    others = sorted({gfx for g in ctx.gpus if (gfx := _gfx(g)) and gfx != "gfx950"})
    if not others:
        return
    ver = ctx.engine_version
    aiter = ctx.launch_env("VLLM_ROCM_USE_AITER")
    for sw in pf.amd_table()["engines"]["vllm"]["gfx950_only_switches"]:
        val = ctx.launch_env(sw["env"])
        on = val is not None and val.lower() in ("1", "true")
        default_on = (val is None and sw["default_on_from"] and ver is not None and ver >= Version(sw["default_on_from"])
                      and aiter is not None and aiter.lower() in ("1", "true"))
        if not (on or default_on):
            continue
        gated = ver is not None and ver >= Version(sw["gated_from"])
        how = f"{sw['env']}={val}" if on else f"{sw['env']} left at its default (on from vLLM {sw['default_on_from']}) with VLLM_ROCM_USE_AITER={aiter}"
        evs = [Evidence("switch", how), Evidence("GPU", ", ".join(others)), Evidence("source", sw["source"])]
        if gated:
            ctx.add("MTP244", f"{how} on {', '.join(others)}: vLLM {ver} ignores it off gfx950 (gated on on_gfx950())", evidence=evs,
                    severity=Severity.INFO, remediation=f"unset {sw['env']}")
        else:
            sure = ver is not None and ver < Version(sw["crash_confirmed_below"])
            ctx.add("MTP244", f"{how} on {', '.join(others)}: vLLM {ver or '(version unknown)'} "
                    + ("does not check the GPU and crashes" if sure else "may not check the GPU and then crashes")
                    + f" ({sw['crash']})", evidence=evs + [Evidence("versions", sw["crash_confirmed_note"])],
                    severity=Severity.ERROR if sure else Severity.WARNING,
                    remediation=f"set {sw['env']}=0, or upgrade vLLM to {sw['gated_from']} or later")


def check_ascend(ctx: Any) -> None:
    """MTP245-MTP248 (and MTP233 for NVFP4 weights) on an Ascend machine."""
    if platform(ctx) != pf.CANN:
        return
    facts = pf.ascend_table()["facts"]
    fp4 = fp4_format(ctx)
    ctx.add("MTP245", "the FP4 checks do not apply to Ascend NPUs" + (f" (the launch loads {fp4.upper()})" if fp4 else "") + f": {facts['fp4']['text']}",
            evidence=[Evidence("platform", f"cann ({ctx.facts.accelerator.source})"), Evidence("source", facts["fp4"]["source"])])
    gens = {g.index: _ascend_row(g) for g in ctx.gpus}
    old = [i for i, r in gens.items() if r and r["generation"] in facts["vllm_ascend_devices"]["unsupported_generations"]]
    if old and ctx.engine == "vllm":
        g = ctx.gpus[old[0]]
        ctx.add("MTP246", f"NPU {old[0]} ({g.name.value}) is a first-generation Ascend 910, which vllm-ascend does not support: "
                f"{facts['vllm_ascend_devices']['text']}", gpu=g, evidence=[Evidence("NPU", f"{g.name.value} ({g.arch.source})"),
                                                                         Evidence("source", facts["vllm_ascend_devices"]["source"])],
                remediation="run vllm-ascend on Atlas A2 (910B) / A3 (910C) / 300I (310P)")
    if fp4 == "nvfp4":
        ctx.add("MTP233", "the launch loads NVFP4 weights on an Ascend NPU: they need NVIDIA FP4 kernels, and no Ascend backend runs "
                f"them ({facts['fp4']['text']})", evidence=[Evidence("platform", f"cann ({ctx.facts.accelerator.source})"),
                                                            Evidence("source", facts["fp4"]["source"])],
                remediation="use an msmodelslim W8A8 / W4A8 (or BF16) checkpoint on the NPU, or run this checkpoint on Blackwell")
    _check_vllm_ascend_mtp(ctx, facts)
    _check_sglang_npu_mxfp4(ctx, facts, gens, fp4)


def _ascend_row(g: Any) -> dict[str, Any] | None:
    hit = pf.ascend_lookup(str(g.name.value or "")) if g.name.present else None
    return hit.row if hit else None


def _check_vllm_ascend_mtp(ctx: Any, facts: dict[str, Any]) -> None:
    va = ctx.facts.package("vllm-ascend")
    v = mx.parse_version(va.value) if va.present else None
    if ctx.engine != "vllm" or v is None:
        return
    row = next((r for r in reversed(facts["vllm_ascend_spec_decode"]) if Version(r["from"]) <= v
                and (not r.get("until") or v < Version(r["until"]))), None)
    if row is None:
        ctx.gap(f"vllm-ascend {v}: older than every documented speculative-decoding status (from 0.7.3)")
        return
    ctx.add("MTP247", f"vllm-ascend {v}: speculative decoding (MTP) is {row['status']}",
            evidence=[Evidence("vllm-ascend", f"{va.value} ({va.source})"), Evidence("source", row["source"])])


def _check_sglang_npu_mxfp4(ctx: Any, facts: dict[str, Any], gens: dict[int, Any], fp4: str | None) -> None:
    f = facts["sglang_npu_mxfp4"]
    sg = ctx.engine_version
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    if ctx.engine == "vllm" or q != "mxfp4" or (sg is not None and sg < Version(f["from"])):
        return
    bad = [i for i, r in gens.items() if r is None or r["generation"] != f["needs_generation"]]
    if not bad:
        return
    g = ctx.gpus[bad[0]]
    ctx.add("MTP248", f"--quantization mxfp4 on SGLang's NPU backend: {f['text']}; NPU {bad[0]} is {g.name.value or 'unknown'}",
            gpu=g, evidence=[Evidence("NPU", f"{g.name.value} ({g.arch.value or g.arch.missing})"), Evidence("source", f["source"])],
            remediation="use an msmodelslim W8A8 / W4A8 checkpoint on this NPU, or run MXFP4 on Ascend 950")


def check_intel_gaudi(ctx: Any) -> None:
    """MTP236 (the FP4 checks do not apply to Intel GPUs and Gaudi HPUs) and MTP237 (a quantization the engine refuses
    there)."""
    plat = platform(ctx)
    if plat not in (pf.XPU, pf.HPU):
        return
    table = pf.intel_table() if plat == pf.XPU else pf.gaudi_table()
    fp4 = fp4_format(ctx)
    where = Evidence("platform", f"{plat} ({ctx.facts.accelerator.source})")
    ctx.add("MTP236", f"the FP4 checks do not apply to {pf.LABELS[plat]}" + (f" (the launch loads {fp4.upper()})" if fp4 else "")
            + f": {table['facts']['fp4']['text']}", evidence=[where, Evidence("source", table["facts"]["fp4"]["source"])])
    if plat == pf.XPU:
        _check_vllm_xpu_quantization(ctx, where)
    elif fp4 is not None:
        f = table["facts"]["fp4_weights"]
        ctx.add("MTP237", f"the launch loads {fp4.upper()} weights on Intel Gaudi: {f['text']}", severity=Severity.WARNING,
                evidence=[where, Evidence("source", f["source"])],
                remediation="use a BF16 checkpoint quantized to FP8 with Intel Neural Compressor, or an AWQ / GPTQ one, on Gaudi")


def _quantization_method(ctx: Any) -> tuple[str, str] | None:
    """``(vLLM quantization method, where it came from)``: the launch's ``--quantization``, else ``modelopt_fp4`` for
    an NVFP4 ModelOpt checkpoint (vLLM's name for it); ``None`` when neither says."""
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    if q:
        return q, f"--quantization {q}"
    if fp4_format(ctx) == "nvfp4" and ctx.quant is not None:
        return "modelopt_fp4", f"the checkpoint's NVFP4 quantization ({ctx.quant.algo})"
    return None


def _check_vllm_xpu_quantization(ctx: Any, where: Any) -> None:
    """MTP237 on XPU: vLLM's ``Platform.verify_quantization`` refuses a method outside the XPU list of its release."""
    found = _quantization_method(ctx)
    if ctx.engine != "vllm" or found is None:
        return
    method, how = found
    ver = ctx.engine_version
    rows = pf.intel_table()["facts"]["vllm_xpu_quantization"]
    row = next((r for r in reversed(rows) if ver is not None and Version(r["from"]) <= ver), None)
    if row is None:
        ctx.gap(f"{how} on an Intel GPU with vLLM {ver or '(version unknown)'}: vLLM's XPU quantization list is read from "
                f"releases {rows[0]['from']} on; whether this release accepts {method} could not be told", blocking=False)
        return
    if method in row["methods"]:
        return
    ctx.add("MTP237", f"{how} on an Intel GPU: vLLM {ver} refuses it at start-up, {row['refusal'].replace('<method>', method)}; "
            f"its XPU platform accepts {', '.join(row['methods'])}", severity=Severity.ERROR,
            evidence=[where, Evidence("vLLM", str(ver)), Evidence("quantization", method), Evidence("source", row["source"])],
            remediation="use an MXFP4, FP8, AWQ or GPTQ checkpoint on the Intel GPU, or run the NVFP4 checkpoint on Blackwell")


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
            out.append({**base, "native_fp4": NOT_APPLICABLE,
                        "reasons": [f"{arch or g.name.value or 'device'}: {kind}, the FP4 checks do not apply ({rule})"]})
            continue
        gfx = _gfx(g)
        tgt = pf.gfx_target(gfx)
        errs = [f"{f.rule_id}: {f.message}" for f in ctx.findings if f.severity >= Severity.ERROR and f.location.symbol in (ctx.device(g.index), "machine")]
        if tgt is None:
            v, why = unknown, [f"gfx target unknown: {g.arch.missing if not gfx else gfx + ' is not in data/amd.json'}"]
        elif tgt.get(f"native_{fmt}"):
            v, why = (not_capable, errs) if errs else (capable, [f"{gfx} ({tgt['family']}) computes {fmt.upper()} natively ({tgt['mx']})"])
        else:
            v, why = not_capable, [f"{gfx} ({tgt['family']}) has no native {fmt.upper()} ({tgt['mx']})"] + errs
        out.append({**base, "native_fp4": v, "reasons": why})
    return out


def answer(ctx: Any, vs: list[dict[str, Any]], engine: str) -> list[str] | None:
    """The one-line answer off NVIDIA, or ``None`` on CUDA (the NVIDIA answer applies)."""
    plat = platform(ctx)
    if plat not in OFF_NVIDIA:
        return None
    on = f" on {engine}" if engine else ""
    if plat == pf.CPU:
        return [f"CPU only (no GPU or NPU): the FP4 checks do not apply ({ctx.facts.accelerator.source})"]
    devs = _device_summary(ctx) or "no device listed"
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
