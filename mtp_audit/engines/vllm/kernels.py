"""vLLM's FP4 kernels on a machine, as the preflight checks them (:class:`VllmKernels`, handed out by
:meth:`mtp_audit.engines.vllm.launch.VllmEngine.kernels`).

Which NVFP4 MoE (``--moe-backend``, ``VLLM_USE_FLASHINFER_MOE_FP4`` / ``VLLM_FLASHINFER_MOE_BACKEND``) and dense
GEMM (``--linear-backend``, ``VLLM_NVFP4_GEMM_BACKEND``) backends a launch asks for, whether each runs on the GPUs,
and vLLM's own Marlin W4A16 fallback below SM100: MTP200, MTP201, MTP226 (declared in :mod:`mtp_audit.preflight.rules`)
and vLLM's own MTP231, MTP232 (declared in :mod:`mtp_audit.engines.vllm.preflight_rules`). Facts: ``matrix["vllm"]`` (each row names the vLLM wheel file:line it was read
from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from mtp_audit.engines.vllm.platforms import PLATFORM_CHECKS
from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight.analyze import Context, cc_str, ev, index_ranges, narrowest_tensor_core_type, sm_name
from mtp_audit.preflight.kernels import KernelChecks, LaunchSyntax
from mtp_audit.report import Evidence
from mtp_audit.report import questions as Q

#: vLLM flags the preflight interprets: canonical name -> option strings (wheel:vllm-0.20.0:vllm/engine/arg_utils.py:
#: ``--quantization``/``-q`` line 768, ``--tensor-parallel-size``/``-tp`` line 925, ``--moe-backend`` line 1368;
#: ``--linear-backend`` from 0.24.0, arg_utils.py:1485). The model is ``--model`` or ``vllm serve``'s positional
#: (wheel:vllm-0.20.0:vllm/entrypoints/cli/serve.py:45-46). Option names may use ``_`` for ``-``
#: (wheel:vllm-0.20.0:vllm/utils/argparse_utils.py:300-320).
VLLM_FLAGS: dict[str, tuple[str, ...]] = {
    "--model-path": ("--model",),
    "--quantization": ("--quantization", "-q"),
    "--tp": ("--tensor-parallel-size", "-tp"),
    "--kv-cache-dtype": ("--kv-cache-dtype",),
    "--moe-backend": ("--moe-backend",),
    "--linear-backend": ("--linear-backend",),
    "--speculative-config": ("--speculative-config",),
    "--device": ("--device",),  # DeviceConfig.device through get_kwargs: wheel:vllm-0.9.2:vllm/engine/arg_utils.py:397,813
}
#: vLLM lower-cases these values and turns '-' into '_' (arg_utils.py:1367 in 0.20.0; KernelConfig validators).
VLLM_NORMALIZED_VALUES = ("--moe-backend", "--linear-backend")

#: vLLM ``--quantization`` values that load FP4 weights (QuantizationMethods, wheel:vllm-0.20.0:vllm/model_executor/layers/quantization/__init__.py:17-34).
FP4_QUANTIZATIONS = ("modelopt_fp4", "modelopt_mixed", "mxfp4", "gpt_oss_mxfp4")

#: vLLM ``--quantization`` values whose name does not say the FP4 format they load: ModelOpt's mixed-precision
#: checkpoints (NVFP4 and FP8 layers; wheel:vllm-0.33.0:vllm/model_executor/layers/quantization/__init__.py:166).
FP4_FORMATS = {"modelopt_mixed": "nvfp4"}


#: Backends tried for a fix, best first, per kind and SM major (vLLM names, matrix ``vllm.nvfp4_backend_sms``).
_VLLM_FIX_ORDER = {"moe": ("flashinfer_cutlass", "cutlass", "marlin"),
                   "linear": ("flashinfer_cutlass", "cutlass", "marlin"), "linear12": ("flashinfer_cudnn", "flashinfer_cutlass", "cutlass", "marlin")}


@dataclass(frozen=True)
class VllmRequest:
    """One explicit vLLM FP4 backend choice of the launch.

    Attributes:
        kind: ``"moe"`` or ``"linear"`` (dense GEMM).
        backend: the backend in ``--moe-backend`` / ``--linear-backend`` spelling; ``"flashinfer"`` for
            ``VLLM_USE_FLASHINFER_MOE_FP4=1`` without ``VLLM_FLASHINFER_MOE_BACKEND`` (any FlashInfer NVFP4 MoE).
        via: how the launch asks for it (``"--moe-backend flashinfer_trtllm"``, ``"VLLM_NVFP4_GEMM_BACKEND=cutlass"``).
        form: ``"flag"`` or ``"env"`` (the remediation is given in the same form).
        source: where vLLM reads it (matrix row source).
        off_sm100: the backend vLLM uses instead off the SM100 family, when it substitutes one itself
            (``VLLM_FLASHINFER_MOE_BACKEND=latency`` -> flashinfer_cutlass), else ``None``.
    """

    kind: str
    backend: str
    via: str
    form: str
    source: str
    off_sm100: str | None = None

    def backend_on(self, cc: tuple[int, int]) -> str:
        """The backend vLLM runs on compute capability ``cc`` for this request."""
        return self.off_sm100 if self.off_sm100 and cc[0] != 10 else self.backend


def _vllm() -> dict[str, Any]:
    return mx.load()["vllm"]


def vllm_backend_runs(kind: str, backend: str, cc: tuple[int, int]) -> tuple[bool | None, str]:
    """Whether vLLM's NVFP4 ``backend`` of ``kind`` runs on compute capability ``cc``, with the matrix row's source;
    ``(None, "")`` for a backend the matrix has no row for. ``"flashinfer"`` (any FlashInfer MoE) runs where
    flashinfer_cutlass, flashinfer_trtllm or flashinfer_cutedsl runs."""
    if backend == "flashinfer":
        parts = [vllm_backend_runs("moe", b, cc) for b in ("flashinfer_trtllm", "flashinfer_cutedsl", "flashinfer_cutlass")]
        return any(ok for ok, _ in parts), "; ".join(src for _, src in parts)
    for row in _vllm()["nvfp4_backend_sms"]:
        if row["kind"] == kind and row["backend"] == backend:
            if "sm_families" in row:
                return cc[0] * 10 in row["sm_families"], row["source"]
            return tuple(cc) >= tuple(row["min_cc"]), row["source"]
    return None, ""


def _vllm_env_row(name: str) -> dict[str, Any]:
    return next(r for r in _vllm()["env_vars"] if r["name"] == name)


def _vllm_flag_row(flag: str) -> dict[str, Any]:
    return next(r for r in _vllm()["flags"] if r["flag"] == flag)


def _vllm_requests(ctx: Context) -> list[VllmRequest]:
    """The explicit FP4 backend choices of a vLLM launch, after MTP226 (flag missing / invalid value) and MTP232
    (retired env var) findings and version gaps. An explicit ``--moe-backend`` wins over the env vars (the oracle
    checks it first: wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:216 before :228)."""
    v = ctx.engine_version
    out: list[VllmRequest] = []
    given: dict[str, str] = {}
    for flag, kind in (("--moe-backend", "moe"), ("--linear-backend", "linear")):
        val = ctx.launch.get(flag) if ctx.launch else None
        if val is None:
            continue
        row = _vllm_flag_row(flag)
        first = row["vllm"].lstrip(">=")
        if v is None:
            ctx.gap(f"vLLM version unknown: {flag} {val} not checked against the vLLM release (the flag exists from vLLM {first})", question=Q.STARTS)
        elif not mx.in_range(v, row["vllm"]):
            fix = ("upgrade vLLM to >= 0.17.0; on this version choose the FlashInfer MoE with VLLM_USE_FLASHINFER_MOE_FP4=1 and "
                   "VLLM_FLASHINFER_MOE_BACKEND, or leave the MoE backend to vLLM" if flag == "--moe-backend" else
                   "drop --linear-backend and set VLLM_NVFP4_GEMM_BACKEND (vLLM 0.11.1-0.23), or upgrade vLLM to >= 0.22.0")
            ctx.add("MTP226", f"vLLM {v} has no {flag} option (added in vLLM {first}): the server stops with 'unrecognized arguments'",
                    evidence=[Evidence(flag, val), ev("vllm", ctx.facts.package("vllm")), Evidence("source", row["source"])], remediation=fix)
            continue
        else:
            ch = next((c for c in row["choices"] if mx.in_range(v, c["vllm"])), None)
            if ch is None:
                ctx.gap(f"{flag} {val} not checked: the choices of vLLM {v} are not in the capability matrix (read from the "
                        + ", ".join(c["vllm"] for c in row["choices"]) + " wheels)", question=Q.STARTS)
            elif val not in ch["values"]:
                ctx.add("MTP226", f"{flag} {val} is not accepted by vLLM {v}: argparse stops with 'invalid choice' (choices: {', '.join(ch['values'])})",
                        evidence=[Evidence(flag, val), Evidence("source", ch["source"])], remediation=f"use one of: {', '.join(ch['values'])}")
                continue
        given[kind] = val
        if val != "auto":
            out.append(VllmRequest(kind, val, f"{flag} {val}", "flag", row["source"]))
    retired = _vllm()["retired_env_vars"]
    set_vars = [n for n in retired["names"] if ctx.launch_env(n) is not None]
    for name in set_vars:
        if v is not None and mx.in_range(v, retired["vllm"]):
            kind = "linear" if name in ("VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_FBGEMM", "VLLM_USE_NVFP4_CT_EMULATIONS") else "moe"
            fix = "--linear-backend <backend> (e.g. --linear-backend marlin)" if kind == "linear" else "--moe-backend <backend> (e.g. --moe-backend flashinfer_cutlass)"
            ctx.add("MTP232", f"{name}={ctx.launch_env(name)} is not read by vLLM {v}: it was removed in vLLM 0.24.0, which only logs "
                    f"'Unknown vLLM environment variable detected: {name}' and chooses the backend itself (with --fail-on-environ-validation the "
                    "server refuses to start)", evidence=[Evidence(name, str(ctx.launch_env(name))), ev("vllm", ctx.facts.package("vllm")),
                                                          Evidence("source", retired["source"])],
                    remediation=f"unset {name} and pass {fix}")
    if v is None and set_vars:
        ctx.gap(f"vLLM version unknown: whether {', '.join(set_vars)} {'is' if len(set_vars) == 1 else 'are'} still read "
                "(removed in vLLM 0.24.0) was not checked", question=Q.FP4)

    def applies(name: str) -> bool:
        return v is None or mx.in_range(v, _vllm_env_row(name)["vllm"])

    if "linear" not in given:
        val = ctx.launch_env("VLLM_NVFP4_GEMM_BACKEND")
        row = _vllm_env_row("VLLM_NVFP4_GEMM_BACKEND")
        if val and applies("VLLM_NVFP4_GEMM_BACKEND") and val in row["values"] and row["values"][val] not in ("marlin", "emulation"):
            out.append(VllmRequest("linear", row["values"][val], f"VLLM_NVFP4_GEMM_BACKEND={val}", "env", row["source"]))
        if str(ctx.launch_env("VLLM_USE_TRTLLM_FP4_GEMM") or "") == "1" and applies("VLLM_USE_TRTLLM_FP4_GEMM"):
            r = _vllm_env_row("VLLM_USE_TRTLLM_FP4_GEMM")
            out.append(VllmRequest("linear", "flashinfer_trtllm", "VLLM_USE_TRTLLM_FP4_GEMM=1", "env", r["source"]))
    fi = str(ctx.launch_env("VLLM_USE_FLASHINFER_MOE_FP4") or "")
    row = _vllm_env_row("VLLM_USE_FLASHINFER_MOE_FP4")
    raises = v is not None and v >= Version(row["raises_from"])
    if "moe" not in given and fi not in ("", "0") and applies("VLLM_USE_FLASHINFER_MOE_FP4") and raises:
        be = ctx.launch_env("VLLM_FLASHINFER_MOE_BACKEND")
        brow = _vllm_env_row("VLLM_FLASHINFER_MOE_BACKEND")
        if be in brow["values"]:
            out.append(VllmRequest("moe", brow["values"][be], f"VLLM_USE_FLASHINFER_MOE_FP4={fi} VLLM_FLASHINFER_MOE_BACKEND={be}", "env",
                                   row["source"] + "; " + brow["source"], brow["latency_off_sm100"] if be == "latency" else None))
        else:
            out.append(VllmRequest("moe", "flashinfer", f"VLLM_USE_FLASHINFER_MOE_FP4={fi}", "env", row["source"]))
    elif "moe" not in given and fi not in ("", "0") and v is None:
        ctx.gap(f"vLLM version unknown: what VLLM_USE_FLASHINFER_MOE_FP4={fi} does on this GPU depends on it (vLLM {row['raises_from']}-0.23 "
                "raise when no FlashInfer NVFP4 MoE runs; 0.11 falls back to Marlin)", question=Q.FP4)
    return out


def _vllm_fix(ctx: Context, req: VllmRequest, cc: tuple[int, int]) -> str:
    """A vLLM-only remediation for ``req`` failing on ``cc``, in the request's own form (flag or env var)."""
    v = ctx.engine_version
    if req.kind == "moe":
        order = _VLLM_FIX_ORDER["moe"]
    else:
        order = _VLLM_FIX_ORDER["linear12" if cc[0] == 12 else "linear"]
    alt = next((b for b in order if vllm_backend_runs("moe" if req.kind == "moe" else "linear", b, cc)[0]), "marlin")
    auto = " (or drop it: below SM100 vLLM picks Marlin W4A16 by itself)" if cc[0] < 10 else ""
    if req.form == "flag":
        flag = "--moe-backend" if req.kind == "moe" else "--linear-backend"
        return f"{flag} {alt}{auto}"
    if req.kind == "linear":
        env_val = {b: e for e, b in _vllm_env_row("VLLM_NVFP4_GEMM_BACKEND")["values"].items()}.get(alt, "marlin")
        newer = " (vLLM >= 0.22: --linear-backend " + alt + ")"
        return f"VLLM_NVFP4_GEMM_BACKEND={env_val}{auto}{newer}" if v is None or v < Version("0.24") else f"--linear-backend {alt}"
    if alt == "flashinfer_cutlass":
        return "VLLM_FLASHINFER_MOE_BACKEND=throughput (FlashInfer CUTLASS MoE), or unset VLLM_FLASHINFER_MOE_BACKEND (vLLM >= 0.17: --moe-backend flashinfer_cutlass)"
    return ("unset VLLM_USE_FLASHINFER_MOE_FP4 (vLLM then falls back to Marlin W4A16 below SM100)" + (" or pass --moe-backend marlin" if v is not None and v >= Version("0.17") else ""))


def check_vllm_fp4(ctx: Context) -> None:
    """vLLM: MTP200 (no FP4 fallback in this vLLM below SM100), MTP201 (Marlin W4A16 fallback and its cost),
    MTP226 (--moe-backend / --linear-backend missing from this vLLM or value not accepted), MTP231 (an explicit
    FP4 backend that cannot run on the GPU), MTP232 (FP4/MoE env var that vLLM >= 0.24 no longer reads).

    Facts: ``matrix["vllm"]`` (each row names the vLLM wheel file:line it was read from).
    """
    _vllm_unchecked_options(ctx)
    requests = _vllm_requests(ctx)
    if not ctx.fp4_intent:
        return
    if requests and ctx.mxfp4:
        ctx.gap("vLLM MXFP4 backend requirements are not in the capability matrix (NVFP4 only): " + ", ".join(r.via for r in requests) + " not checked", question=Q.FP4)
    one_kind = len({x.cc for x in ctx.gpus}) == 1  # every GPU has the same SM: findings are the machine's
    for cc in sorted({g.cc for g in ctx.gpus if g.cc}):
        group = [g for g in ctx.gpus if g.cc == cc]
        label = f"GPU {group[0].index}" if len(group) == 1 else f"GPUs {index_ranges(x.index for x in group)}"
        at = None if one_kind else group[0]
        failed = _vllm_backends_fail(ctx, requests if not ctx.mxfp4 else [], cc, group[0], label, at)
        if cc[0] < 10:
            _vllm_below_sm100(ctx, cc, group[0], label, at, failed)


def _vllm_unchecked_options(ctx: Context) -> None:
    """Gaps for the launch's vLLM options the preflight has no table for, and for a vLLM that is not installed."""
    if ctx.launch is None:
        return
    known = {a for names in VLLM_FLAGS.values() for a in names}
    rest = [o for o in dict.fromkeys(ctx.launch.options) if o not in known]
    if rest:
        ctx.gap(f"vLLM options not checked (no vLLM option table at hand): {', '.join(rest)}", question=Q.STARTS)
    vp = ctx.facts.package("vllm")
    if not vp.present and "not installed" in str(vp.missing) and not ctx.engine_fact("version"):
        ctx.gap("vllm is not installed in this environment: the launch runs a vLLM from elsewhere (or fails to start); "
                "checks that depend on the vLLM version were skipped", question=Q.STACK)


def _vllm_backends_fail(ctx: Context, requests: list[Any], cc: tuple[int, int], g: Any, label: str, at: Any) -> bool:
    """MTP231 for each explicitly requested NVFP4 backend that cannot run on compute capability ``cc``; whether any."""
    failed = False
    for req in requests:
        ok, src = vllm_backend_runs(req.kind, req.backend_on(cc), cc)
        if ok is None or ok:
            continue
        failed = True
        what = ("vLLM raises \"Found VLLM_USE_FLASHINFER_MOE_FP4=1, but no FlashInfer NVFP4 MoE backend supports the configuration\""
                if req.backend == "flashinfer" else
                "an explicit choice is not replaced by a fallback: model loading fails (\"NvFp4 MoE backend ... does not support the deployment configuration\")"
                if req.kind == "moe" else "an explicit choice is not replaced by a fallback: model loading (or the first FP4 GEMM) fails")
        ctx.add("MTP231", f"{req.via}: vLLM's {req.backend_on(cc)} NVFP4 {'MoE' if req.kind == 'moe' else 'GEMM'} cannot run on {label} "
                f"({g.name.value}, {sm_name(cc)}); {what}", gpu=at,
                evidence=[Evidence("requested", req.via), ev("compute capability", g.compute_capability),
                          ev("vllm", ctx.facts.package("vllm")), Evidence("requirement", src), Evidence("read by", req.source)],
                remediation=_vllm_fix(ctx, req, cc))
    return failed


def _vllm_below_sm100(ctx: Context, cc: tuple[int, int], g: Any, label: str, at: Any, failed: bool) -> None:
    """MTP200 / MTP201 (and gaps) for GPUs without FP4 tensor cores: which fallback this vLLM takes, at what cost."""
    v = ctx.engine_version
    evs = [ev("GPU", g.name), ev("compute capability", g.compute_capability), ev("vllm", ctx.facts.package("vllm")),
           Evidence("FP4 instruction", f"none ({narrowest_tensor_core_type(cc)})")]
    if ctx.mxfp4:
        _vllm_mxfp4_below_sm100(ctx, cc, g, label, at, evs)
        return
    rows = _vllm()["nvfp4_fallback"]
    fb = next((r for r in rows if mx.in_range(v, r["vllm"])), None) if v is not None else None
    if cc < tuple(_vllm()["marlin_min_cc"]):
        ctx.add("MTP200", f"{label} ({g.name.value}, compute capability {cc_str(cc)}): no FP4 tensor cores, and below vLLM's Marlin FP4 "
                f"floor (compute capability 7.5): vLLM has no NVFP4 kernel for it", gpu=at, evidence=evs + [Evidence("source", _vllm()["marlin_min_cc_source"])],
                remediation="Run on a GPU of compute capability >= 7.5 (Marlin W4A16) or Blackwell (native NVFP4)")
        return
    if fb is not None and fb["fallback"] == "none":
        ctx.add("MTP200", f"{label} ({g.name.value}, compute capability {cc_str(cc)}): no FP4 tensor cores, and vLLM {v} has no Marlin NVFP4 "
                "fallback: it raises 'Current platform does not support NVFP4 quantization. Please use Blackwell and above.'",
                gpu=at, evidence=evs + [Evidence("source", fb["source"])],
                remediation="Upgrade vLLM (>= 0.9.2 falls back to Marlin W4A16 on its own below SM100), or run NVFP4 on Blackwell")
        return
    if failed:
        return  # the explicit backend stops the load first; its finding says how to get the Marlin fallback
    if fb is None:
        known = "vLLM version unknown" if v is None else f"vLLM {v} is between the releases the capability matrix was read from"
        ctx.gap(f"{known}: the Marlin NVFP4 fallback below SM100 is in vLLM 0.9.2 and >= 0.11 (checked wheels), not in 0.8.5", question=Q.FP4)
    marlin = mx.load()["marlin_w4a16"]
    head = f"vLLM {v}" if fb is not None else "vLLM (0.9.2 and >= 0.11 in the checked wheels)"
    extra = _vllm_dense_marlin_note(ctx, fb)
    ctx.add("MTP201", f"{label} ({g.name.value}, {sm_name(cc)}): no FP4 tensor cores; {head} falls back on its own to Marlin W4A16 for "
            f"this FP4 checkpoint: {marlin['what']}. Cost: {marlin['cost']}.{extra}", gpu=at,
            evidence=evs + [Evidence("source", fb["source"] if fb else rows[-1]["source"])],
            remediation="Accept the W4A16 cost, or move the deployment to Blackwell for native NVFP4 (no vLLM flag is needed for the fallback)")


def _vllm_mxfp4_below_sm100(ctx: Context, cc: tuple[int, int], g: Any, label: str, at: Any, evs: list[Evidence]) -> None:
    """MTP201 (weight-only MXFP4 kernels and their cost) where the matrix covers this vLLM, a gap where it does not."""
    v = ctx.engine_version
    mrow = _vllm()["mxfp4_fallback"]
    if v is None or not mx.in_range(v, mrow["vllm"]):
        ctx.gap(f"{'vLLM version unknown' if v is None else f'vLLM {v}'}: its MXFP4 path below SM100 is in the capability matrix "
                f"for vLLM {mrow['vllm']} only (weight-only MXFP4 kernels there)", question=Q.FP4)
        return
    marlin = mx.load()["marlin_w4a16"]
    ctx.add("MTP201", f"{label} ({g.name.value}, {sm_name(cc)}): no FP4 tensor cores; vLLM {v} runs this MXFP4 checkpoint with "
            f"{mrow['what']}. Cost: {marlin['cost']}.", gpu=at, evidence=evs + [Evidence("source", mrow["source"])],
            remediation="Accept the weight-only cost, or move the deployment to Blackwell for native MXFP4 (no vLLM flag is needed)")


def _vllm_dense_marlin_note(ctx: Context, fb: dict[str, Any] | None) -> str:
    """For vLLM releases whose Marlin fallback covers MoE layers only: the note (and gap) that the dense layers of a
    ModelOpt checkpoint may not fall back when FlashInfer is installed."""
    v = ctx.engine_version
    if fb is None or fb["fallback"] != "marlin-moe-only":
        return ""
    modelopt = (ctx.launch is not None and (ctx.launch.get("--quantization") or "") == "modelopt_fp4") or bool(
        ctx.quant and "hf_quant_config" in ctx.quant.source)
    fi = ctx.facts.package("flashinfer-python")
    if not modelopt or (not fi.present and "not installed" in str(fi.missing)):
        return ""
    ctx.gap(f"vLLM {v}: {fb['dense_note']} ({fb['source']}); with FlashInfer "
            f"{'installed' if fi.present else 'possibly installed'} the dense layers of this ModelOpt checkpoint may not use Marlin "
            "(whether FlashInfer's FP4 GEMM then runs below SM100 was not established)", question=Q.FP4)
    return " The MoE layers fall back to Marlin; the dense layers may not (see the gaps)."



def _backend_summary(ctx: Context) -> dict[str, str | None]:
    """``moe_backend`` / ``linear_backend`` summary lines of a vLLM launch: what the command asks for (flag, or an
    env var vLLM reads), ``"auto"`` when nothing; below SM100 ``auto`` is shown resolving to Marlin (the fallback
    of ``matrix["vllm"]["nvfp4_fallback"]``). ``None`` for both without a launch."""
    if ctx.launch is None:
        return {"moe_backend": None, "linear_backend": None}
    out: dict[str, str | None] = {}
    low = ctx.cc0 is not None and ctx.cc0[0] < 10 and ctx.fp4_intent
    for key, flag, envs in (("moe_backend", "--moe-backend", ("VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_FLASHINFER_MOE_BACKEND")),
                            ("linear_backend", "--linear-backend", ("VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_TRTLLM_FP4_GEMM"))):
        val = ctx.launch.get(flag)
        env = [f"{n}={ctx.launch_env(n)}" for n in envs if ctx.launch_env(n) is not None]
        if val and val != "auto":
            out[key] = val
        elif env and not val:
            out[key] = " ".join(env)
        else:
            out[key] = "auto -> marlin (below SM100)" if low else "auto"
    return out


@dataclass(frozen=True)
class VllmKernels(KernelChecks):
    """vLLM's answers to the preflight (see :class:`~mtp_audit.preflight.kernels.KernelChecks`)."""

    label: str = "vLLM"
    package: str | None = "vllm"
    checks: tuple[Any, ...] = (check_vllm_fp4,)
    fp4_quantizations: tuple[str, ...] = FP4_QUANTIZATIONS
    fp4_formats: Mapping[str, str] = field(default_factory=lambda: FP4_FORMATS)
    device_choice: str = ("vLLM chooses FP4 kernels from current_platform.get_device_capability(), device 0 by default "
                          "(wheel:vllm-0.20.0:vllm/platforms/cuda.py:592)")
    torch_pin_holder: str = "vllm wheel (its Requires-Dist torch==...)"
    memory_remediation: str = "--gpu-memory-utilization 0.85 or less on GB10 (vLLM)"
    probe_mismatch_remediation: str = ("switch the dense FP4 GEMM: --linear-backend flashinfer_cudnn (vLLM >= 0.22) or "
                                       "VLLM_NVFP4_GEMM_BACKEND=flashinfer-cudnn (vLLM 0.11.1-0.23), and re-run --probe")
    syntax: LaunchSyntax = LaunchSyntax(VLLM_FLAGS, (), underscores=True, lowered=VLLM_NORMALIZED_VALUES,
                                        positional_model=("vllm", "serve"))
    platform_checks: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: PLATFORM_CHECKS)

    def summary(self, ctx: Any) -> dict[str, str | None]:
        """vLLM's version and the NVFP4 MoE / dense GEMM backends the launch asks for."""
        return {"sglang": None, "vllm": str(ctx.engine_version) if ctx.engine_version else None, **_backend_summary(ctx)}

    def flag_semantics(self, ctx: Any, release_facts: Any, ask_installed: bool, matrix_source: str) -> str:
        """The capability matrix's vLLM rows (the sglang analyzer says nothing about vLLM)."""
        return matrix_source + " (vllm rows)"
