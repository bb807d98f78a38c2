"""SGLang's FP4 kernels on a machine, as the preflight checks them (:class:`SGLangKernels`, handed out by
:meth:`mtp_audit.engines.sglang.launch.SGLangEngine.kernels`).

Which FP4 GEMM (``--fp4-gemm-backend``) and NVFP4 MoE runner (``--moe-runner-backend``) SGLang picks on GPU 0
(``get_device_sm``), what each needs (flashinfer, cuDNN, nvcc for the JIT kernels of 0.5.10 on, sgl-kernel
cubins), and the flags it refuses: MTP200/MTP201, MTP209 and MTP226 (declared in :mod:`mtp_audit.preflight.rules`)
and SGLang's own MTP207-MTP223 and MTP230 (declared in :mod:`mtp_audit.engines.sglang.preflight_rules`).
Facts come from the sglang analyzer's facts of the release the launch runs when given
(:func:`mtp_audit.engines.sglang.audit_sglang`), else from the capability matrix (``matrix["sglang"]``, each row
naming the wheel file:line it was read from).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from mtp_audit.engines.sglang.matrix import resolve_auto, sglang_row
from mtp_audit.engines.sglang.platforms import PLATFORM_CHECKS
from mtp_audit.preflight import matrix as mx
from mtp_audit.preflight.analyze import (
    Context,
    cc_str,
    ev,
    index_ranges,
    known_bad_text,
    narrowest_tensor_core_type,
    sm_name,
)
from mtp_audit.preflight.elf import cubin_loads_on, fp4_capable_cubins
from mtp_audit.preflight.facts import Fact, GpuFacts
from mtp_audit.preflight.kernels import KernelChecks, LaunchSyntax
from mtp_audit.report import Evidence, Severity
from mtp_audit.report import questions as Q

#: SGLang ``--quantization`` values that load FP4 weights.
FP4_QUANTIZATIONS = ("modelopt_fp4", "nvfp4_online", "mxfp4", "modelopt_mixed", "w4afp8")

#: SGLang ``--quantization`` values whose name does not say the FP4 format they load: ModelOpt's mixed-precision
#: checkpoints (NVFP4 and FP8 layers; wheel:sglang-0.5.23:sglang/srt/layers/quantization/__init__.py:72).
FP4_FORMATS = {"modelopt_mixed": "nvfp4"}

#: Flags the preflight interprets, with their aliases (SGLang server_args names).
FLAGS: dict[str, tuple[str, ...]] = {
    "--model-path": ("--model-path", "--model"),
    "--quantization": ("--quantization",),
    "--fp4-gemm-backend": ("--fp4-gemm-backend",),
    "--moe-runner-backend": ("--moe-runner-backend",),
    "--speculative-algorithm": ("--speculative-algorithm",),
    "--tp": ("--tp", "--tp-size", "--tensor-parallel-size"),
    "--ep": ("--ep", "--ep-size", "--expert-parallel-size"),
    "--attention-backend": ("--attention-backend",),
    "--kv-cache-dtype": ("--kv-cache-dtype",),
    "--device": ("--device",),  # wheel:sglang-0.5.9:sglang/srt/server_args.py:3296 (cuda, xpu, hpu, npu, cpu)
}
BOOL_FLAGS = ("--enable-pdmux",)


def _flag_from_sglang_facts(ctx: Context, flag: str) -> dict[str, Any] | None:
    if not ctx.engine_facts:
        return None
    args = ctx.engine_facts.get("cli_arguments") or {}
    return args.get(flag) if isinstance(args, dict) else None


def effective_backend(ctx: Context, flag: str, table: str) -> tuple[str | None, str, str]:
    """``(backend, how, source)`` SGLang will use for ``flag`` on GPU 0.

    ``how`` is ``"explicit"``, ``"default"`` or ``"auto"``. ``backend`` is ``None`` when it cannot be
    told (SGLang version unknown, or outside the matrix), with the reason in ``source``.
    """
    cc = ctx.cc0
    given = ctx.launch.get(flag) if ctx.launch else None
    if given and given != "auto":
        return given, "explicit", "launch command"
    sg = ctx.engine_version
    if sg is None:
        return None, "auto", "SGLang version unknown"
    value = given
    how = "auto"
    if value is None:
        arg = _flag_from_sglang_facts(ctx, flag)
        if arg and arg.get("default"):
            value = str(arg["default"]).strip("'\"")
            how = "default"
            if value != "auto":
                return value, how, f"sglang analyzer: {arg.get('default_location') or arg.get('location', 'server_args')}"
        elif table == "fp4_gemm_backend":
            row = sglang_row(table, sg)
            if row and row.get("default") and row["default"] != "auto":
                return row["default"], "default", row["source"]
            if row and row.get("effective_default") and "auto" not in row:
                return row["effective_default"], "default", row["source"]
    if cc is None:
        return None, how, "GPU compute capability unknown"
    to, src = resolve_auto(table, sg, cc, ctx.launch.get("--quantization") if ctx.launch else None)
    return to, "auto", src


def _has(members: list[Any]) -> str:
    return "has" if len(members) == 1 else "have"


def check_no_native_fp4(ctx: Context) -> None:
    """MTP200 / MTP201 on SGLang: no FP4 tensor cores (SM < 100); Marlin W4A16 fallback and its cost. MTP200 is an
    error below SM80 (SGLang's 'auto' picks the Marlin fallback on SM80-SM90 only) and for a known SGLang without the
    fallback (< 0.5.13); a warning naming both cases when the version is unknown on SM80-SM90.
    (vLLM's own: :func:`mtp_audit.engines.vllm.kernels.check_vllm_fp4`)."""
    marlin = mx.load()["marlin_w4a16"]
    sg = ctx.engine_version
    gemm, _, _ = effective_backend(ctx, "--fp4-gemm-backend", "fp4_gemm_backend")
    moe, _, _ = effective_backend(ctx, "--moe-runner-backend", "moe_runner_backend_nvfp4")
    has_marlin = sg is not None and sg >= Version(mx.load()["sglang"]["marlin_fallback_from"])
    # one finding per GPU model (name and compute capability) over all its GPUs, as MTP228 groups them
    groups: dict[tuple[Any, tuple[int, int]], list[Any]] = {}
    for g in ctx.gpus:
        if g.cc is not None and g.cc[0] < 10 and ctx.fp4_intent:
            groups.setdefault((g.name.value, g.cc), []).append(g)
    for (_, cc), members in groups.items():
        g = members[0]
        label = f"GPU {g.index}" if len(members) == 1 else f"GPUs {index_ranges(m.index for m in members)}"
        evs = [ev("GPU", g.name), ev("compute capability", g.compute_capability), ev("FP4 instruction", f"none ({narrowest_tensor_core_type(cc)})")]
        if ctx.probe and ctx.probe.results:
            for r in ctx.probe.results:
                evs.append(Evidence(f"probe {r['path']}", r.get("error") or r["status"]))
        marlin_detail = f"{marlin['what']}. Cost: {marlin['cost']}."
        if has_marlin and gemm == "marlin" and moe in ("marlin", None):
            ctx.add("MTP201", f"{label} ({g.name.value}, {sm_name(cc)}) {_has(members)} no FP4 tensor cores; SGLang {sg} runs this NVFP4 checkpoint "
                    "through Marlin W4A16 (4-bit weights, BF16 tensor-core math)", gpus=members, evidence=evs, detail=marlin_detail)
            continue
        severity = None
        if cc < (8, 0):
            # 'auto' picks Marlin W4A16 on SM80-SM90 only: below that every SGLang runs its native NVFP4 kernels
            fallback, detail = ("SGLang picks its Marlin W4A16 fallback on SM80-SM90 only ('auto'), so on "
                                f"{sm_name(cc)} its native NVFP4 kernels refuse this GPU whatever its version"), marlin_detail
        elif sg is None:
            # which of the two happens depends on the release: without exact evidence of it, a warning naming both
            fallback, detail = "it needs SGLang >= 0.5.13's Marlin W4A16 fallback (version unknown)", (
                "On SGLang >= 0.5.13 the fallback is Marlin W4A16 (--fp4-gemm-backend marlin --moe-runner-backend marlin; "
                f"'auto' picks it on SM80-SM90): {marlin_detail} An older SGLang has no Marlin NVFP4 fallback and its "
                "native NVFP4 kernels refuse this GPU.")
            severity = Severity.WARNING
        elif has_marlin:
            fallback, detail = f"SGLang {sg} falls back to Marlin W4A16 (4-bit weights, BF16 math)", (
                f"SGLang {sg} falls back to Marlin W4A16 (--fp4-gemm-backend marlin --moe-runner-backend marlin; 'auto' picks it "
                f"on SM80-SM90): {marlin_detail}")
        else:
            fallback, detail = f"SGLang {sg} has no Marlin NVFP4 fallback (added in 0.5.13): native NVFP4 kernels will refuse this GPU", ""
        ctx.add("MTP200", f"{label} ({g.name.value}, compute capability {cc_str(cc)}) {_has(members)} no FP4 tensor cores "
                f"(SM100/SM103/SM110/SM120/SM121 only); {fallback}", gpus=members, evidence=evs, detail=detail, severity=severity,
                remediation=("Run NVFP4 on Blackwell (B200/B300/RTX PRO 6000/RTX 50xx/GB10), or accept W4A16: "
                             "--fp4-gemm-backend marlin --moe-runner-backend marlin on SGLang >= 0.5.13"
                             + ("" if has_marlin or sg is None else f" (upgrade from {sg})")))


def check_jit_nvcc(ctx: Context) -> None:
    """MTP207: SGLang >= 0.5.10 JIT-compiles its NVFP4 kernels; needs nvcc new enough for the SM (SGLang only)."""
    sg = ctx.engine_version
    cc = ctx.cc0
    if sg is None or cc is None or cc[0] < 10 or not ctx.fp4_intent or sg < Version(mx.load()["sglang"]["jit_nvfp4_from"]):
        return
    floors = {tuple(r["target_for"]): r for r in mx.load()["toolkit_floors"]}
    row = floors.get(cc)
    need = row["min_nvcc"] if row else "12.8"
    tk = ctx.facts.toolkit
    g = next(x for x in ctx.gpus if x.cc == cc)
    if not tk.present:
        if ctx.facts.origin == "live" or "not found" in str(tk.missing) or "Not Available" in str(tk.missing):
            ctx.add("MTP207", f"SGLang {sg} JIT-compiles its NVFP4 kernels for {sm_name(cc)} at first use, but no nvcc was found ({tk.missing})",
                    gpu=g, evidence=[ev("nvcc", tk), ev("sglang", sg)],
                    remediation=f"Install the CUDA toolkit >= {need} and set CUDA_HOME (e.g. export CUDA_HOME=/usr/local/cuda-13.0)")
        else:
            ctx.gap(f"nvcc version unknown ({tk.missing}); SGLang {sg} JIT kernels need nvcc >= {need} for {sm_name(cc)}", question=Q.FP4,
                    why_open=tk.why_open)
        return
    tv = mx.parse_version(tk.value)
    if tv is not None and tv < Version(need):
        ctx.add("MTP207", f"nvcc {tk.value} cannot build sm_{cc[0]}{cc[1]}a kernels (needs >= {need}); SGLang {sg} JIT-compiles its NVFP4 kernels at first use",
                gpu=g, evidence=[ev("nvcc", tk), ev("GPU", g.compute_capability)],
                remediation=f"Install CUDA toolkit >= {need} and point CUDA_HOME at it")


_KERNEL_PKGS = ("sgl-kernel", "sglang-kernel")


def check_kernel_binaries(ctx: Context) -> None:
    """MTP208: the sgl-kernel / sglang-kernel shared object has no cubin that loads on (or can run FP4 on) the GPU
    (SGLang only: vLLM does not load sgl-kernel)."""
    bins = [b for b in ctx.facts.binaries if b.package in _KERNEL_PKGS and b.targets.present and "sm90/" not in b.path]
    if not bins:
        return
    sg = ctx.engine_version
    aot_fp4 = sg is None or sg < Version(mx.load()["sglang"]["jit_nvfp4_from"])
    for cc in sorted({g.cc for g in ctx.gpus if g.cc and g.cc[0] >= 10}):
        g = next(x for x in ctx.gpus if x.cc == cc)
        for b in bins:
            targets = tuple(b.targets.value)
            loads = [t for t in targets if cubin_loads_on(t, cc)]
            ptx_ok = [p for p in (b.ptx.value or ()) if p.startswith("compute_") and not p.endswith("a") and int(p[8:].rstrip("af")) // 10 <= cc[0]]
            evs = [Evidence("cubins", ", ".join(targets) or "none"), ev("compute capability", g.compute_capability)]
            if not loads and not ptx_ok:
                extra = (" (sm_120a cubins load only on 12.0, not on GB10's 12.1)" if cc == (12, 1) and "sm_120a" in targets else "")
                ctx.add("MTP208", f"{b.package} {b.path} has no kernel image for {sm_name(cc)} (GPU {g.index}, {g.name.value}): found {', '.join(targets)}{extra}; "
                        "the first kernel fails with 'no kernel image is available for execution on the device'",
                        gpu=g, evidence=evs,
                        remediation=("Install a build with sm_121a (e.g. sgl-kernel==<ver>+cu130 from SGLang's cu130 wheel index) or build sgl-kernel "
                                     "from source with nvcc >= 13.0 on aarch64; check with cuobjdump --list-elf"
                                     if cc == (12, 1) else f"Install an sgl-kernel built with nvcc >= 12.8 (sm_{cc[0]}{cc[1]}a) for your torch"))
            elif aot_fp4 and ctx.fp4_intent and not fp4_capable_cubins(targets, cc):
                ctx.add("MTP208", f"{b.package} {b.path} has only plain cubins for {sm_name(cc)} ({', '.join(loads)}): SGLang {sg or '<= 0.5.9'} runs NVFP4 from these AOT kernels, "
                        "and FP4 code built without the a/f suffix compiles to trap stubs or a software E2M1 path (NaN)",
                        gpu=g, evidence=evs,
                        remediation=f"Rebuild sgl-kernel with nvcc >= 12.8 so it gets sm_{cc[0]}{cc[1]}a and -DENABLE_NVFP4=1")


def _resolve_fp4_backend(ctx: Context, flag: str, matrix_key: str, result_key: str, label: str) -> tuple[Any, ...] | None:
    """Shared start of the FP4 backend checks: GPU 0's capability (None below SM100 or without FP4
    intent), the backend ``flag`` resolves to (:func:`effective_backend`, recorded in
    ``ctx.resolved[result_key]``; a gap when unknown), GPU 0's facts and the base evidence.

    Returns ``(cc, gpu, backend, how, source, evidence)`` or ``None`` when there is nothing to check.
    """
    cc = ctx.cc0
    if cc is None or not ctx.fp4_intent or cc[0] < 10:
        return None
    backend, how, src = effective_backend(ctx, flag, matrix_key)
    ctx.resolved[result_key] = {"value": backend, "how": how, "source": src}
    if backend is None:
        ctx.gap(f"effective {flag} unknown ({src})", question=Q.FP4)
        return None
    g = next(x for x in ctx.gpus if x.cc == cc)
    evs = [Evidence(label, f"{backend} ({how}; {src})"), ev("compute capability", g.compute_capability)]
    return cc, g, backend, how, src, evs


def check_gemm_backend(ctx: Context) -> None:
    """MTP210 trtllm, MTP211 cute-dsl, MTP212 flashinfer_cutlass on SM12x, MTP213/214 cuDNN."""
    resolved = _resolve_fp4_backend(ctx, "--fp4-gemm-backend", "fp4_gemm_backend", "fp4_gemm_backend", "fp4 gemm backend")
    if resolved is None:
        return
    cc, g, backend, how, src, evs = resolved
    label = f"--fp4-gemm-backend {backend}" + ("" if how == "explicit" else f" (SGLang {ctx.engine_version} '{how}' resolves to it on {sm_name(cc)})")
    sm = cc[0] * 10 + cc[1]
    fi = ctx.flashinfer
    if backend == "flashinfer_trtllm" and cc[0] != 10:
        ctx.add("MTP210", f"{label} is SM100/SM103-only: flashinfer raises \"mm_fp4 does not support backend 'trtllm' with capability {sm}\" on compute capability {cc_str(cc)}",
                gpu=g, evidence=evs, remediation="--fp4-gemm-backend flashinfer_cudnn (known-good on SM120 with cuDNN >= 9.10.2 / cudnn-frontend >= 1.13)")
    if backend == "flashinfer_cutedsl":
        rows = [r for r in mx.load()["flashinfer_mm_fp4"] if r["backend"] == "cute-dsl" and (fi is None and r["flashinfer"].startswith("<") or mx.in_range(fi, r["flashinfer"]))]
        sms = rows[0]["sms"] if rows else []
        if sm not in sms:
            ctx.add("MTP211", f"{label}: flashinfer {fi or '(version unknown)'} has no cute-dsl FP4 GEMM for SM{sm} (supported: {', '.join(map(str, sms))})",
                    gpu=g, evidence=evs, remediation="--fp4-gemm-backend flashinfer_cudnn" + (" (or flashinfer >= 0.7.4 for explicit cute-dsl on SM12x)" if cc[0] == 12 else ""))
    if backend == "flashinfer_cutlass" and cc[0] == 12:
        bad = [k for k in mx.load()["known_bad"] if "flashinfer_cutlass" in k.get("gemm_backend", []) and mx.in_range(fi, k["flashinfer"])]
        sev = Severity.ERROR if bad else None
        ctx.add("MTP212", f"{label} on {sm_name(cc)}: the flashinfer CUTLASS dense FP4 GEMM has public NaN/zero-output reports on SM12x "
                f"(NaN rows under mixed batches, gh:sgl-project/sglang#20047)" + "".join(f"; {known_bad_text(fi, k)}" for k in bad),
                gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))], severity=sev,
                remediation="--fp4-gemm-backend flashinfer_cudnn (the incident's known-good SM120 combination with --moe-runner-backend flashinfer_cutlass)")
    if backend == "flashinfer_cudnn":
        _check_cudnn(ctx, g, cc, evs)


def _cudnn_backend(ctx: Context) -> Fact:
    for name in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"):
        f = ctx.facts.package(name)
        if f.present:
            return f
    return Fact.absent("nvidia-cudnn-cu12/-cu13 not recorded")


def _check_cudnn(ctx: Context, g: GpuFacts, cc: tuple[int, int], evs: list[Evidence]) -> None:
    c = mx.load()["cudnn_fp4"]
    be = _cudnn_backend(ctx)
    fe = ctx.facts.package("nvidia-cudnn-frontend")
    problems = []
    if be.present and (mx.parse_version(be.value) or Version("0")) < Version(c["backend_min"]):
        problems.append(f"cuDNN {be.value} < {c['backend_min']}")
    if fe.present and (mx.parse_version(fe.value) or Version("0")) < Version(c["frontend_min"]):
        problems.append(f"cudnn-frontend {fe.value} < {c['frontend_min']}")
    for f, name in ((be, "cuDNN backend"), (fe, "nvidia-cudnn-frontend")):
        if not f.present:
            if "not installed" in str(f.missing):
                problems.append(f"{name} not installed")
            else:
                ctx.gap(f"{name} version unknown ({f.missing}); flashinfer_cudnn needs cuDNN >= {c['backend_min']} and cudnn-frontend >= {c['frontend_min']}",
                        question=Q.FP4, why_open=f.why_open)
    if problems:
        ctx.add("MTP213", f"--fp4-gemm-backend flashinfer_cudnn needs cuDNN >= {c['backend_min']} and cudnn-frontend >= {c['frontend_min']}: " + "; ".join(problems),
                gpu=g, evidence=evs + [ev("cuDNN", be), ev("cudnn-frontend", fe)],
                remediation=f"pip install 'nvidia-cudnn-cu13>={c['backend_min']}' 'nvidia-cudnn-frontend>={c['frontend_min']}' (cu12 stacks: nvidia-cudnn-cu12)")
    if ctx.mxfp4 and cc[0] == 12 and be.present and (mx.parse_version(be.value) or Version("0")) < Version(c["mxfp4_sm12x_backend_min"]):
        ctx.add("MTP214", f"cuDNN {be.value} has no MXFP4 FP4 GEMM on SM120/SM121 (needs >= {c['mxfp4_sm12x_backend_min']})", gpu=g,
                evidence=[ev("cuDNN", be), Evidence("checkpoint", "MXFP4")], remediation=f"pip install 'nvidia-cudnn-cu13>={c['mxfp4_sm12x_backend_min']}'")


def check_moe_backend(ctx: Context) -> None:
    """MTP215 SM100-only MoE backends, MTP216 'auto'->TRTLLM (0.5.10-0.5.12; 0.5.13 on without --quantization modelopt_fp4), MTP217 cutlass+NVFP4,
    MTP219 old flashinfer CUTLASS MoE on SM12x, MTP220 TRTLLM MoE NaN flashinfer range."""
    resolved = _resolve_fp4_backend(ctx, "--moe-runner-backend", "moe_runner_backend_nvfp4", "moe_runner_backend", "moe runner backend")
    if resolved is None:
        return
    cc, g, backend, how, src, evs = resolved
    sg = ctx.engine_version
    fi = ctx.flashinfer
    sm100_only = mx.load()["sglang"]["sm100_only_moe_backends"]
    if backend in sm100_only and cc[0] != 10:
        if how == "explicit":
            ctx.add("MTP215", f"--moe-runner-backend {backend} uses trtllm-gen / CuTe-DSL MoE kernels that are SM100-only; GPU {g.index} is {sm_name(cc)} (compute capability {cc_str(cc)})",
                    gpu=g, evidence=evs, remediation="--moe-runner-backend flashinfer_cutlass")
        elif sg is not None and sg >= Version("0.5.13"):
            # 0.5.13 on move auto to flashinfer_cutlass on SM120 only for --quantization modelopt_fp4 (0.5.23
            # overrides.py:1513-1518); without it the ModelOpt MoE layer picks flashinfer_trtllm (modelopt_quant.py:3117-3123)
            ctx.add("MTP216", f"SGLang {sg} keeps --moe-runner-backend auto without --quantization modelopt_fp4, and the ModelOpt "
                    f"NVFP4 MoE layer then picks {backend} for every compute capability >= 10.0; its MoE kernels are SM100-only "
                    f"and fail on {sm_name(cc)}", gpu=g, evidence=evs,
                    remediation="--quantization modelopt_fp4 (SGLang then picks flashinfer_cutlass on SM110/SM120), or "
                                "--moe-runner-backend flashinfer_cutlass")
        else:
            ctx.add("MTP216", f"SGLang {sg} resolves --moe-runner-backend auto to {backend} for every compute capability >= 10.0; its NVFP4 MoE is SM100-only and fails on {sm_name(cc)}",
                    gpu=g, evidence=evs, remediation="--moe-runner-backend flashinfer_cutlass (or upgrade to SGLang >= 0.5.13, whose auto picks flashinfer_cutlass on SM120)")
    q = (ctx.launch.get("--quantization") if ctx.launch else "") or ""
    nvfp4 = q == "modelopt_fp4" or bool(ctx.quant and str(ctx.quant.algo).upper() == "NVFP4")
    if backend == "cutlass" and how == "explicit" and nvfp4 and sg is not None and sg >= Version("0.5.13"):
        ctx.add("MTP217", f"SGLang {sg} raises 'moe_runner_backend=cutlass is not supported for NVFP4 MoE'", gpu=g, evidence=evs,
                remediation="--moe-runner-backend flashinfer_cutlass")
    if backend == "flashinfer_cutlass" and cc[0] == 12 and fi is not None and fi < Version("0.6.8"):
        ctx.add("MTP219", f"flashinfer {fi} vendors CUTLASS 4.2.1, whose SM120 grouped block-scaled FP4 MoE GEMM fails to initialise or returns garbage (and crashes GB10 CUDA-graph capture)",
                gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))],
                remediation="pip install 'flashinfer-python>=0.6.8' (CUTLASS 4.4.2) with matching flashinfer-cubin / flashinfer-jit-cache")
    if backend in ("flashinfer_trtllm", "flashinfer_trtllm_routed") and cc[0] == 10:
        for k in mx.load()["known_bad"]:
            if k["id"] == "fi-trtllm-moe-nan" and mx.in_range(fi, k["flashinfer"]):
                ctx.add("MTP220", known_bad_text(fi, k),
                        gpu=g, evidence=evs + [ev("flashinfer", ctx.facts.package("flashinfer-python"))],
                        remediation="pip install 'flashinfer-python>=0.6.18' (or <=0.6.16rc4), or --moe-runner-backend flashinfer_cutlass")


def check_nvfp4_online(ctx: Context) -> None:
    """MTP218: --quantization nvfp4_online is SM100/SM103-only (an SGLang quantization)."""
    if not ctx.launch or (ctx.launch.get("--quantization") or "") != "nvfp4_online":
        return
    for g in ctx.gpus:
        if g.cc and g.cc[0] != 10:
            ctx.add("MTP218", f"--quantization nvfp4_online is supported only on Blackwell SM100/SM103; GPU {g.index} is {sm_name(g.cc)}", gpu=g,
                    evidence=[ev("compute capability", g.compute_capability)], remediation="use a pre-quantized NVFP4 checkpoint with --quantization modelopt_fp4")
            return


def check_fp8_kv_trtllm_mha(ctx: Context) -> None:
    """MTP222: FP8 KV cache + trtllm_mha attention on SM12x (SGLang's --attention-backend)."""
    if not ctx.launch:
        return
    cc = ctx.cc0
    attn = ctx.launch.get("--attention-backend")
    kv_flag = (ctx.launch.get("--kv-cache-dtype") or "").lower()
    kv = kv_flag.startswith("fp8") or (kv_flag in ("", "auto") and bool(ctx.quant and str(ctx.quant.kv_cache or "").upper() == "FP8"))
    if cc and cc[0] == 12 and attn == "trtllm_mha" and kv:
        g = next(x for x in ctx.gpus if x.cc == cc)
        ctx.add("MTP222", f"--attention-backend trtllm_mha with an FP8 KV cache on {sm_name(cc)}: there is no FP8 prefill FMHA for SM120/SM121; the server dies in CUDA-graph capture",
                gpu=g, evidence=[Evidence("kv cache", kv_flag or f"FP8 ({ctx.quant.source if ctx.quant else ''})"), ev("compute capability", g.compute_capability)],
                remediation="--attention-backend flashinfer (or triton), or --kv-cache-dtype bf16")


def check_pdmux(ctx: Context) -> None:
    """MTP223: --enable-pdmux on Blackwell (an SGLang flag)."""
    if not ctx.launch or "--enable-pdmux" not in ctx.launch.bools:
        return
    cc = ctx.cc0
    if cc and cc[0] >= 10:
        g = next(x for x in ctx.gpus if x.cc == cc)
        ctx.add("MTP223", f"--enable-pdmux raises 'Unsupported compute capability: {cc_str(cc)}' in pdmux_context.get_arch_constraints", gpu=g,
                evidence=[ev("compute capability", g.compute_capability)], remediation="drop --enable-pdmux")


LAUNCH_CHECK = "the full argparse check of the command (prefixes, types, every value) is `mtp-audit launch --sglang <wheel|checkout>`"


def _choices_from_matrix(flag: str, sg: Version | None) -> tuple[list[str] | None, str]:
    """Argparse choices of ``flag`` on SGLang ``sg`` from the matrix (``sglang.launch_choices``), with the row's source."""
    for row in mx.load()["sglang"].get("launch_choices", {}).get(flag, []):
        if mx.in_range(sg, row["sglang"]):
            return list(row["choices"]), row["source"]
    return None, ""


def _known_options(ctx: Context) -> set[str] | None:
    """Every option string of the SGLang the launch will run (first names and aliases), or ``None`` without a table."""
    from mtp_audit.engines.sglang.release import Release

    args = Release.of(ctx.engine_facts).cli
    if not args:
        return None
    names = {"-h", "--help"}
    for flag, rec in args.items():
        names.add(flag)
        names.update(str(a) for a in rec.get("aliases") or ())
    return names


def check_flag_choices(ctx: Context) -> None:
    """MTP226: a value of --fp4-gemm-backend / --moe-runner-backend / --quantization outside this SGLang version's
    choices (or --fp4-gemm-backend on a version without it); MTP230: an option this SGLang does not have.

    Choices come from the sglang analyzer's ``cli_arguments`` when given, else from the matrix
    (``sglang.fp4_gemm_backend`` rows, ``sglang.launch_choices``: ``MOE_RUNNER_BACKEND_CHOICES`` /
    ``QUANTIZATION_CHOICES`` of sglang/srt/server_args.py (<= 0.5.18) or sglang/srt/arg_groups/choices.py (>= 0.5.20)
    in each wheel). Unknown options need the option table, which only the sglang analyzer gives; without it the
    options the preflight does not interpret are listed in a non-blocking gap.
    """
    if not ctx.launch or not ctx.launch.engine == "sglang":
        return
    sg = ctx.engine_version
    for flag in ("--fp4-gemm-backend", "--moe-runner-backend", "--quantization"):
        given = ctx.launch.get(flag)
        if given is None:
            continue
        arg = _flag_from_sglang_facts(ctx, flag)
        if arg is not None:
            choices, src = arg.get("choices"), f"sglang analyzer: {arg.get('choices_location') or arg.get('location', '?')}"
        elif ctx.engine_facts is not None and isinstance(ctx.engine_facts.get("cli_arguments"), dict):
            continue  # an option the SGLang does not have: MTP230 below
        elif flag == "--fp4-gemm-backend":
            row = sglang_row("fp4_gemm_backend", sg) if sg else None
            choices, src = (row.get("choices"), row["source"]) if row else (None, "")
            if row is not None and choices is None:
                ctx.add("MTP226", f"SGLang {sg} has no {flag} option (added in 0.5.8; older versions read SGLANG_FLASHINFER_FP4_GEMM_BACKEND): "
                        "the launch stops with 'unrecognized arguments'",
                        evidence=[Evidence(flag, given), Evidence("source", src)], remediation=f"drop {flag} and set SGLANG_FLASHINFER_FP4_GEMM_BACKEND, or upgrade SGLang")
                continue
        else:
            choices, src = _choices_from_matrix(flag, sg)
        if not choices and arg is None:
            why = f"the choices of SGLang {sg} are not in the capability matrix" if sg else "the SGLang version is unknown"
            ctx.gap(f"{flag} {given} not checked: {why}; {LAUNCH_CHECK}", question=Q.STARTS)
        elif choices and given not in choices:
            ctx.add("MTP226", f"{flag} {given} is not accepted by SGLang {sg or '(version unknown)'}: argparse stops with 'invalid choice' "
                    f"(choices: {', '.join(choices)})",
                    evidence=[Evidence(flag, given), Evidence("source", src)], remediation=f"use one of: {', '.join(choices)}")
    known = _known_options(ctx)
    if known is not None:
        for opt in dict.fromkeys(ctx.launch.options):
            if opt in known or any(k.startswith(opt) for k in known if k.startswith("--")):
                continue  # exact, or a prefix argparse may accept (allow_abbrev): `mtp-audit launch` decides
            ctx.add("MTP230", f"SGLang {sg or '(version unknown)'} has no option {opt}: the launch would stop with 'unrecognized arguments' "
                    f"({LAUNCH_CHECK})", evidence=[Evidence("option", opt), Evidence("source", "sglang analyzer: cli_arguments")],
                    remediation=f"drop {opt} or correct its spelling; run mtp-audit launch for the whole command")
    else:
        interpreted = {a for names in FLAGS.values() for a in names} | set(BOOL_FLAGS)
        rest = [o for o in dict.fromkeys(ctx.launch.options) if o not in interpreted]
        if rest:
            ctx.gap(f"options not checked (no SGLang option table at hand): {', '.join(rest)}; {LAUNCH_CHECK}", question=Q.STARTS)



#: The evidence label of MTP209 from the release's own torch pin (:func:`check_release_torch_pin`), which the
#: installed packages' ``Requires-Dist`` form of MTP209 does not carry: a launch tells the two apart by it
#: (:func:`mtp_audit.engines.sglang.launch.evaluate.relax_other_release_pin`).
PIN_SOURCE = "pin source"


def check_release_torch_pin(ctx: Context) -> None:
    """MTP209 from the matrix's SGLang torch pins (``sglang.torch_pins``), where the machine recorded no
    ``Requires-Dist: torch`` pin of its own (:func:`mtp_audit.preflight.analyze.check_torch_pins`)."""
    tv = ctx.facts.torch_version
    sg = ctx.engine_version
    if not tv.present or ctx.pins_checked:
        return
    if sg is None:
        _pin_undecided(ctx)
        return
    installed = mx.base(mx.parse_version(tv.value) or Version("0"))
    for row in mx.load()["sglang"]["torch_pins"]:
        if mx.in_range(sg, row["sglang"]) and installed != Version(row["torch"]):
            ctx.add("MTP209", f"sglang {sg} pins torch=={row['torch']} (and its sgl-kernel is built for it) but torch {tv.value} is installed",
                    evidence=[ev("sglang", ctx.facts.package("sglang")), ev("torch", tv), Evidence(PIN_SOURCE, mx.load()["sglang"]["torch_pins_source"])],
                    remediation=f"pip install torch=={row['torch']} (cu128+ build), or rebuild sgl-kernel from source against torch {installed} with nvcc >= 12.8 "
                                "(sm_100a/sm_120a + ENABLE_NVFP4)")


def _pin_undecided(ctx: Context) -> None:
    """The torch pin (MTP209) cannot be checked without SGLang's release: a version line cut from the dump, or a
    source checkout (``0.0.0.devN+g<sha>``) whose pins are its own. The native-FP4 verdict then stays undecided (taking
    the version away must not turn MTP209's error into a pass), also where the preflight only assumed SGLang (a cut
    that removes the lines naming it must not either); not where SGLang is shown as not installed."""
    pkg = ctx.facts.package("sglang")
    if (pkg.missing or "").startswith("not installed"):  # live: "not installed"; check_env: "... (Module Not Found)"
        return
    why = f"SGLang {pkg.value} is not a release" if pkg.present else "SGLang's version is not shown"
    ctx.undecided.append(f"{why}, so its torch pin (MTP209) was not checked")


def _backend_summary(ctx: Context, flag: str, key: str, table: str) -> str | None:
    """The summary line of a backend flag: the requested value, and what SGLang makes of it when known.

    ``"flashinfer_cutlass"`` (given), ``"auto -> flashinfer_cudnn"`` (auto resolved per the matrix or the sglang
    analyzer), ``"flashinfer_cutlass (default)"`` (not given), ``None`` when neither is known.
    """
    requested = ctx.launch.get(flag) if ctx.launch else None
    r = ctx.resolved.get(key)
    if r is None and (requested is not None or ctx.launch is not None):
        value, how, _ = effective_backend(ctx, flag, table)
        r = {"value": value, "how": how}
    effective = r.get("value") if r is not None else None
    if requested is None:
        return f"{effective} ({r['how']})" if effective and r else None
    if effective is None or effective == requested:
        return requested if effective else f"{requested} (effective value unknown)"
    return f"{requested} -> {effective}"


def sglang_facts_of(target: Path) -> dict[str, Any] | None:
    """``facts["sglang"]`` of the sglang analyzer run on ``target`` (an installed package folder), or ``None`` when
    it cannot analyze it (the capability matrix is used instead: another analyzer's failure must not break the
    preflight)."""
    from mtp_audit.engines.sglang import audit_sglang

    try:
        report = audit_sglang(target)
    except Exception:  # noqa: BLE001 - another analyzer's failure must not break the preflight
        return None
    facts = getattr(report, "facts", None)
    sg = facts.get("sglang") if isinstance(facts, Mapping) else None
    return dict(sg) if isinstance(sg, dict) else None


def installed_sglang_root() -> Path | None:
    """Folder of the installed ``sglang`` package (located, not imported), or ``None``."""
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@dataclass(frozen=True)
class SGLangKernels(KernelChecks):
    """SGLang's answers to the preflight (see :class:`~mtp_audit.preflight.kernels.KernelChecks`)."""

    label: str = "SGLang"
    package: str | None = "sglang"
    checks: tuple[Any, ...] = (check_no_native_fp4, check_jit_nvcc, check_kernel_binaries, check_release_torch_pin,
                               check_gemm_backend, check_moe_backend, check_nvfp4_online, check_fp8_kv_trtllm_mha,
                               check_pdmux, check_flag_choices)
    fp4_quantizations: tuple[str, ...] = FP4_QUANTIZATIONS
    fp4_formats: Mapping[str, str] = field(default_factory=lambda: FP4_FORMATS)
    fp4_flags: tuple[str, ...] = ("--fp4-gemm-backend",)
    probe_gemm_flag: str | None = "--fp4-gemm-backend"
    device_choice: str = "SGLang chooses FP4 backends from GPU 0 only"
    torch_pin_holder: str = "sglang / sgl-kernel"
    memory_remediation: str = "lower --mem-fraction-static (e.g. 0.7) (SGLang)"
    probe_mismatch_remediation: str = "switch --fp4-gemm-backend (flashinfer_cudnn on SM120) and re-run --probe"
    syntax: LaunchSyntax = LaunchSyntax(FLAGS, BOOL_FLAGS, model_label="--model-path")
    default_flag_checks: tuple[Any, ...] = (check_gemm_backend, check_moe_backend)
    platform_checks: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: PLATFORM_CHECKS)
    #: sgl-kernel (sglang-kernel from 0.5.1x) holds the AOT FP4 quant/GEMM/MoE ops, flashinfer the FP4 GEMM and MoE
    #: runner backends: Requires-Dist of wheel:sglang-0.5.9 METADATA:227,259 (flashinfer_python==0.6.3,
    #: sgl-kernel==0.3.21) and wheel:sglang-0.5.23 METADATA:232,273 (flashinfer_python[cu13]==0.7.2, sglang-kernel==0.4.10).
    fp4_kernel_packages: tuple[tuple[str, ...], ...] = (("sgl-kernel", "sglang-kernel"), ("flashinfer-python",))
    fp4_cubin_packages: tuple[str, ...] = ("sgl-kernel", "sglang-kernel")

    def version(self, ctx: Any) -> Version | None:
        """SGLang's release (:meth:`KernelChecks.version`); a source checkout reports ``0.0.0.devN+g<sha>``: its
        release is unknown (``None``), not "older than 0.1"."""
        v = super().version(ctx)
        return None if v is not None and v < Version("0.1") else v

    def summary(self, ctx: Any) -> dict[str, str | None]:
        """SGLang's version and the FP4 GEMM / MoE runner backends the launch resolves to."""
        return {"sglang": str(ctx.engine_version) if ctx.engine_version else None, "vllm": None,
                "fp4_gemm_backend": _backend_summary(ctx, "--fp4-gemm-backend", "fp4_gemm_backend", "fp4_gemm_backend"),
                "moe_runner_backend": _backend_summary(ctx, "--moe-runner-backend", "moe_runner_backend",
                                                       "moe_runner_backend_nvfp4")}

    def flag_semantics(self, ctx: Any, release_facts: Mapping[str, Any] | None, ask_installed: bool,
                       matrix_source: str) -> str:
        """The sglang analyzer's facts of the release the launch runs: given (already ``ctx.engine_facts``), or those
        of the installed sglang on the live machine, put on ``ctx.engine_facts``; else the matrix."""
        if release_facts is not None:
            return f"sglang analyzer (sglang {release_facts.get('version') or 'version unknown'})"
        if ask_installed and ctx.facts.origin == "live":
            root = installed_sglang_root()
            if root is not None:
                ctx.engine_facts = sglang_facts_of(root)
                if ctx.engine_facts:
                    return "sglang analyzer (installed sglang)"
        return matrix_source
