"""The FP4 verdict for TensorRT-LLM's own kernels (:meth:`TrtllmEngine.fp4_verdict
<mtp_audit.engines.trtllm.launch.TrtllmEngine.fp4_verdict>`): which GPUs run its native NVFP4 GEMMs, from the sourced
facts of :mod:`mtp_audit.engines.trtllm.knowledge` (``FP4_GEMM``, ``FP4_PLUGIN``, ``SUPPORT_MATRIX``, the W4A16 paths
below SM100). Rule MTP718.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mtp_audit.engines.base import Fp4Verdict, GpuFp4, KernelQuestion
from mtp_audit.engines.machine import machine_gpus
from mtp_audit.engines.outcome import fp4_needed
from mtp_audit.engines.trtllm import knowledge as K
from mtp_audit.engines.trtllm.rules import RULES_BY_ID
from mtp_audit.report import Evidence, Finding, Gap, Location

ENGINE = "trtllm"
KERNELS = "NVFP4 (W4A4) GEMM and fused MoE (CUTLASS, trtllm::fp4_gemm)"
SOURCES = (K.FP4_GEMM, K.FP4_PLUGIN, K.SUPPORT_MATRIX, K.MARLIN_MOE, K.W4A16_HOPPER)


def gpu_answer(index: int, name: str | None, cc: tuple[int, int] | None) -> GpuFp4:
    """One GPU against :data:`~mtp_audit.engines.trtllm.knowledge.FP4_GEMM_CCS`."""
    shown = f"{cc[0]}.{cc[1]}" if cc else None
    if cc is None:
        return GpuFp4(index, name, None, "unknown", ("compute capability unknown",))
    if cc in K.FP4_GEMM_CCS:
        return GpuFp4(index, name, shown, "capable", ((f"{K.FP4_GEMM_CCS[cc]} has FP4 tensor cores and TensorRT-LLM's NVFP4 "
                                                       f"GEMM has a tile configuration for it ({K.FP4_GEMM})"),))
    if cc[0] < 10:
        return GpuFp4(index, name, shown, "not capable", ((f"SM{cc[0]}{cc[1]} has no FP4 tensor cores; TensorRT-LLM's NVFP4 "
                                                           f"GEMM has SM100/SM103/SM120 configurations only ({K.FP4_GEMM})"),))
    return GpuFp4(index, name, shown, "unknown", ((f"SM{cc[0]}{cc[1]} has FP4 tensor cores, but TensorRT-LLM's NVFP4 GEMM names "
                                                   f"no configuration for it ({K.FP4_GEMM})"),))


def overall(gpus: tuple[GpuFp4, ...]) -> str:
    """The worst per-GPU verdict (``"unknown"`` without GPUs)."""
    kinds = {g.native_fp4 for g in gpus}
    if not kinds:
        return "unknown"
    return "not capable" if "not capable" in kinds else "unknown" if "unknown" in kinds else "capable"


def w4a16_path(options: Mapping[str, Any], cc: tuple[int, int]) -> str:
    """What runs instead of native FP4 on ``cc`` below SM100, in words (the MoE backend the YAML picks decides)."""
    backend = str(options.get("moe_backend") or "").upper()
    if backend == "MARLIN" and cc[0] * 10 + cc[1] in K.MARLIN_MOE_CCS:
        return ("moe_config.backend MARLIN runs the MoE layers as Marlin W4A16 (4-bit weights, BF16 math) on SM89-SM99 "
                f"({K.MARLIN_MOE})")
    return ("builds with the Hopper W4A16 fallback (NVIDIA/TensorRT-LLM PR #14775, merged 2026-05-30) dequantize the NVFP4 "
            "weights to BF16 (no FP4 speed-up); earlier builds fail at kernel dispatch (NVIDIA/TensorRT-LLM #12558)")


def fp4_verdict(question: KernelQuestion) -> Fp4Verdict:
    """The verdict for one launch: ``"not applicable"`` for a checkpoint audited as not FP4; else per GPU, with MTP718
    and a blocking gap (which path this unread TensorRT-LLM build takes) for GPUs without FP4 tensor cores."""
    needed = fp4_needed(question.checkpoint, None)
    if needed is False:
        return Fp4Verdict(ENGINE, False, "not applicable", kernels=KERNELS, sources=SOURCES,
                          reason="the checkpoint is not FP4: TensorRT-LLM runs no FP4 kernels for it")
    gpus = tuple(gpu_answer(*g) for g in machine_gpus(question.machine))
    findings, gaps = _below_sm100(gpus, question.options) if needed else ((), ())
    return Fp4Verdict(ENGINE, needed, overall(gpus), gpus, KERNELS, SOURCES, findings, gaps)


def _below_sm100(gpus: tuple[GpuFp4, ...], options: Mapping[str, Any]) -> tuple[tuple[Finding, ...], tuple[Gap, ...]]:
    """MTP718 for the GPUs without FP4 tensor cores (one finding per compute capability) and the blocking gap."""
    low = sorted({g.compute_capability for g in gpus if g.native_fp4 == "not capable" and g.compute_capability})
    findings = []
    for shown in low:
        cc = (int(shown.split(".")[0]), int(shown.split(".")[1]))
        names = sorted({str(g.name) for g in gpus if g.compute_capability == shown})
        idx = ",".join(str(g.gpu) for g in gpus if g.compute_capability == shown)
        findings.append(RULES_BY_ID["MTP718"].finding(
            f"GPU {idx} ({', '.join(names)}, compute capability {shown}) has no FP4 tensor cores and TensorRT-LLM's native "
            f"NVFP4 kernels are built for SM100/SM103/SM120 only: this NVFP4 checkpoint does not run as FP4 here; "
            + w4a16_path(options, cc),
            Location(symbol="machine"),
            evidence=[Evidence("compute capability", shown), Evidence("NVFP4 GEMM", K.FP4_GEMM),
                      Evidence("precisions", K.SUPPORT_MATRIX)]))
    gaps = (Gap("launch", "FP4 on GPUs without FP4 tensor cores: TensorRT-LLM's release is not read, so whether this build "
                          "dequantizes NVFP4 to W4A16 or fails at kernel dispatch could not be told", None, True),) if low else ()
    return tuple(findings), gaps
