"""What vLLM does off NVIDIA, as the preflight checks it (:data:`PLATFORM_CHECKS`, handed out through
:attr:`mtp_audit.engines.vllm.kernels.VllmKernels.platform_checks`; rules MTP237, MTP242-MTP244, MTP246, MTP247 of
:mod:`mtp_audit.preflight.rules`).

The preflight says what the machine is (platform, gfx targets, NPU models, packages: :mod:`mtp_audit.preflight.vendors`);
this module says what vLLM does with it:

- AMD ROCm: vLLM's FP4 path per gfx target (native MXFP4 on gfx950, emulated MXFP4 elsewhere, emulated NVFP4
  everywhere; the rows of ``data/amd.json`` ``engines.vllm``, read from the vLLM wheels) and the gfx950-only AITER
  FP4 switches forced on another GPU (MTP244, ``engines.vllm.gfx950_only_switches``).
- Ascend: the vllm-ascend plugin's devices (no first-generation Ascend 910: MTP246) and its documented
  speculative-decoding (MTP) status per version (MTP247), from ``data/ascend.json``.
- Intel XPU: ``Platform.verify_quantization`` refuses a ``--quantization`` outside the XPU platform's
  ``supported_quantization`` of the release (MTP237; ``data/intel.json`` ``vllm_xpu_quantization``).
- Intel Gaudi: the vLLM Hardware Plugin for Intel Gaudi documents no backend for NVFP4 / MXFP4 weights (MTP237;
  ``data/gaudi.json`` ``fp4_weights``).
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight import vendors
from mtp_audit.report import Evidence, Severity
from mtp_audit.report.questions import MTP_HEADS, STARTS


def check_rocm_fp4_path(ctx: Any) -> None:
    """MTP242 / MTP243: vLLM's FP4 path on each gfx target (:func:`mtp_audit.preflight.vendors.check_amd_fp4_path`
    over ``data/amd.json`` ``engines.vllm``)."""
    vendors.check_amd_fp4_path(ctx, "vllm", ctx.engine_version, "vLLM")


def check_gfx950_only_switches(ctx: Any) -> None:
    """MTP244: a gfx950-only vLLM switch (``data/amd.json`` ``engines.vllm.gfx950_only_switches``) on a GPU that is
    not gfx950: ignored from the release that gates it on ``on_gfx950()``, a crash before it."""
    others = vendors.gfx_targets_other_than(ctx, "gfx950")
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


def check_ascend_devices(ctx: Any) -> None:
    """MTP246: a first-generation Ascend 910 (``data/ascend.json`` ``vllm_ascend_devices.unsupported_generations``),
    which vllm-ascend does not support."""
    facts = pf.ascend_table()["facts"]["vllm_ascend_devices"]
    old = [g for g in ctx.gpus if (r := vendors.ascend_row(g)) and r["generation"] in facts["unsupported_generations"]]
    if not old:
        return
    g = old[0]
    ctx.add("MTP246", f"NPU {g.index} ({g.name.value}) is a first-generation Ascend 910, which vllm-ascend does not support: "
            f"{facts['text']}", gpu=g, evidence=[Evidence("NPU", f"{g.name.value} ({g.arch.source})"), Evidence("source", facts["source"])],
            remediation="run vllm-ascend on Atlas A2 (910B) / A3 (910C) / 300I (310P)")


def check_ascend_mtp(ctx: Any) -> None:
    """MTP247: the speculative-decoding (MTP) status vllm-ascend documents for the installed vllm-ascend version
    (``data/ascend.json`` ``vllm_ascend_spec_decode``); a gap for a version older than every documented one."""
    va = ctx.facts.package("vllm-ascend")
    v = mx.parse_version(va.value) if va.present else None
    if v is None:
        return
    rows = pf.ascend_table()["facts"]["vllm_ascend_spec_decode"]
    row = next((r for r in reversed(rows) if Version(r["from"]) <= v and (not r.get("until") or v < Version(r["until"]))), None)
    if row is None:
        vendors.gap(ctx, f"vllm-ascend {v}: older than every documented speculative-decoding status (from 0.7.3)", MTP_HEADS)
        return
    ctx.add("MTP247", f"vllm-ascend {v}: speculative decoding (MTP) is {row['status']}",
            evidence=[Evidence("vllm-ascend", f"{va.value} ({va.source})"), Evidence("source", row["source"])])


def _quantization_method(ctx: Any) -> tuple[str, str] | None:
    """``(vLLM quantization method, where it came from)``: the launch's ``--quantization``, else ``modelopt_fp4`` for
    an NVFP4 ModelOpt checkpoint (vLLM's name for it); ``None`` when neither says."""
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    if q:
        return q, f"--quantization {q}"
    if vendors.fp4_format(ctx) == "nvfp4" and ctx.quant is not None:
        return "modelopt_fp4", f"the checkpoint's NVFP4 quantization ({ctx.quant.algo})"
    return None


def check_xpu_quantization(ctx: Any) -> bool:
    """MTP237 on an Intel GPU: vLLM's ``Platform.verify_quantization`` refuses a method outside the XPU list of its
    release (``data/intel.json`` ``vllm_xpu_quantization``); a blocking gap for a release older than the audited
    ones, or of unknown version (whether the launch starts could not be told). ``True`` when the launch names a
    method (the FP4 question is answered: accepted, refused or open), ``False`` when it names none."""
    found = _quantization_method(ctx)
    if found is None:
        return False
    method, how = found
    ver = ctx.engine_version
    rows = pf.intel_table()["facts"]["vllm_xpu_quantization"]
    row = next((r for r in reversed(rows) if ver is not None and Version(r["from"]) <= ver), None)
    if row is None:
        vendors.gap(ctx, f"{how} on an Intel GPU with vLLM {ver or '(version unknown)'}: vLLM's XPU quantization list is "
                    f"read from releases {rows[0]['from']} on; whether this release accepts {method} could not be told", STARTS,
                    blocking=True)
        return True
    if method in row["methods"]:
        return True
    where = Evidence("platform", f"{pf.XPU} ({ctx.facts.accelerator.source})")
    ctx.add("MTP237", f"{how} on an Intel GPU: vLLM {ver} refuses it at start-up, {row['refusal'].replace('<method>', method)}; "
            f"its XPU platform accepts {', '.join(row['methods'])}", severity=Severity.ERROR,
            evidence=[where, Evidence("vLLM", str(ver)), Evidence("quantization", method), Evidence("source", row["source"])],
            remediation="use an MXFP4, FP8, AWQ or GPTQ checkpoint on the Intel GPU, or run the NVFP4 checkpoint on Blackwell")
    return True


def check_gaudi_fp4_weights(ctx: Any) -> bool:
    """MTP237 on Intel Gaudi: the launch loads NVFP4 / MXFP4 weights, for which no quantization backend of the vLLM
    Hardware Plugin for Intel Gaudi is documented (``data/gaudi.json`` ``fp4_weights``). A warning, not an error:
    the evidence is the plugin's documentation (the backends it lists), not its code at a release, so "fails to
    load" is not shown exactly. ``True`` when the launch loads FP4 weights (the FP4 question is answered)."""
    fp4 = vendors.fp4_format(ctx)
    if fp4 is None:
        return False
    f = pf.gaudi_table()["facts"]["fp4_weights"]
    ctx.add("MTP237", f"the launch loads {fp4.upper()} weights on Intel Gaudi: {f['text']}", severity=Severity.WARNING,
            evidence=[Evidence("platform", f"{pf.HPU} ({ctx.facts.accelerator.source})"), Evidence("source", f["source"])],
            remediation="use a BF16 checkpoint quantized to FP8 with Intel Neural Compressor, or an AWQ / GPTQ one, on Gaudi")
    return True


#: vLLM's checks per platform, in the order they run (the switches before the FP4 path: an MTP244 error is the first
#: reason of an AMD GPU's verdict).
PLATFORM_CHECKS = {pf.ROCM: (check_gfx950_only_switches, check_rocm_fp4_path),
                   pf.CANN: (check_ascend_devices, check_ascend_mtp),
                   pf.XPU: (check_xpu_quantization,), pf.HPU: (check_gaudi_fp4_weights,)}
