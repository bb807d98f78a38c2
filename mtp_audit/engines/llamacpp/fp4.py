"""The FP4 verdict for llama.cpp's own kernels (:meth:`LlamaCppEngine.fp4_verdict
<mtp_audit.engines.llamacpp.launch.LlamaCppEngine.fp4_verdict>`): a GGUF whose tensors are GGML ``MXFP4`` or
``NVFP4`` runs on every CUDA GPU through llama.cpp's int8 (Q8_1) matrix kernels, and with FP4 tensor-core math only
where ggml's Blackwell MMA path is compiled in. Rule MTP611.

Sources (llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist, ``vendor/llama.cpp``):

- ``ggml/include/ggml.h:429-430``: ``GGML_TYPE_MXFP4 = 39``, ``GGML_TYPE_NVFP4 = 40``.
- ``ggml/src/ggml-cuda/mmq.cu:73-86``: ``mul_mat_q`` has a case for each, at Q8 precision unless the source is Q4
  ("src1 at Q4 uses the native FP4 instructions, which are Blackwell-only"); ``mmvq.cu:49-50``:
  ``vec_dot_mxfp4_q8_1`` / ``vec_dot_nvfp4_q8_1``.
- ``ggml/src/ggml-cuda/mmq.cu:128``: Q4 (native FP4) only ``blackwell_mma_available(cc)``;
  ``ggml/src/ggml-cuda/common.cuh:376-379``: an NVIDIA GPU whose highest compiled arch is at least
  ``GGML_CUDA_CC_BLACKWELL`` (1200, i.e. SM120; ggml's cc is 100 x major + 10 x minor) and below Rubin (1300):
  SM100/SM103 (B200/B300) take the Q8 path.
"""

from __future__ import annotations

from collections.abc import Mapping

from mtp_audit.checkpoint.typed_gguf import GgufModel
from mtp_audit.engines.base import Fp4Verdict, GpuFp4, KernelQuestion
from mtp_audit.engines.machine import machine_gpus
from mtp_audit.report import Evidence, Finding, Location

ENGINE = "llamacpp"
FP4_TYPES = ("MXFP4", "NVFP4")
_SDIST = "llama-cpp-python 0.3.36 sdist vendor/llama.cpp/"
TYPES = _SDIST + "ggml/include/ggml.h:429-430"
Q8_PATH = _SDIST + "ggml/src/ggml-cuda/mmq.cu:73-86, ggml/src/ggml-cuda/mmvq.cu:49-50"
NATIVE = _SDIST + "ggml/src/ggml-cuda/mmq.cu:128, ggml/src/ggml-cuda/common.cuh:376-379"
SOURCES = (TYPES, Q8_PATH, NATIVE)
KERNELS = "MXFP4 / NVFP4 GGUF matrix kernels (ggml-cuda MMQ / MMVQ)"
#: ggml's cc (100 x major + 10 x minor) range of the native FP4 MMA path: [GGML_CUDA_CC_BLACKWELL, GGML_CUDA_CC_RUBIN).
NATIVE_CC = range(1200, 1300)


def fp4_tensor_types(entry: GgufModel | None) -> dict[str, int]:
    """``{"NVFP4": n, ...}``: the GGUF model's tensors of the FP4 types (its :attr:`GgufModel.tensor_types`)."""
    types = entry.tensor_types if entry is not None else {}
    return {t: int(types[t]) for t in FP4_TYPES if types.get(t)}


def gpu_answer(index: int, name: str | None, cc: tuple[int, int] | None) -> GpuFp4:
    """One GPU: native FP4 math where ggml's Blackwell MMA path applies, else the Q8 path (no FP4 math, no error)."""
    if cc is None:
        return GpuFp4(index, name, None, "unknown", ("compute capability unknown",))
    shown, ggml_cc = f"{cc[0]}.{cc[1]}", 100 * cc[0] + 10 * cc[1]
    if ggml_cc in NATIVE_CC:
        return GpuFp4(index, name, shown, "capable", ((f"SM{cc[0]}{cc[1]}: llama.cpp runs MXFP4/NVFP4 with FP4 tensor-core "
                                                       f"math when the build is compiled for it ({NATIVE})"),))
    return GpuFp4(index, name, shown, "not capable", ((f"SM{cc[0]}{cc[1]}: llama.cpp's native FP4 path is SM120-SM12x only "
                                                       f"({NATIVE}); MXFP4/NVFP4 run through its int8 Q8_1 kernels "
                                                       f"({Q8_PATH})"),))


def fp4_verdict(question: KernelQuestion) -> Fp4Verdict:
    """The verdict for one launch: ``question.options["fp4_types"]`` are the GGUF's FP4 tensor types (none: not
    applicable); per GPU otherwise, with an MTP611 note per compute capability without the native path."""
    types = dict(question.options.get("fp4_types") or {})
    if not types:
        return Fp4Verdict(ENGINE, False, "not applicable", kernels=KERNELS, sources=SOURCES,
                          reason="the GGUF has no MXFP4/NVFP4 tensors: llama.cpp runs no FP4 kernels for it")
    platform = question.machine.platform.value if question.machine is not None else None
    if platform in ("rocm", "cann", "cpu"):
        return Fp4Verdict(ENGINE, True, "not applicable", kernels=KERNELS, sources=SOURCES,
                          reason=f"llama.cpp's native FP4 path is NVIDIA-only (GGML_CUDA_CC_IS_NVIDIA, {NATIVE}); on "
                                 f"{platform} its back-end dequantizes MXFP4/NVFP4 or leaves the op to the CPU")
    gpus = tuple(gpu_answer(*g) for g in machine_gpus(question.machine))
    kinds = {g.native_fp4 for g in gpus}
    worst = "unknown" if not kinds or "unknown" in kinds else "not capable" if "not capable" in kinds else "capable"
    return Fp4Verdict(ENGINE, True, worst, gpus, KERNELS, SOURCES, _notes(gpus, types))


def _notes(gpus: tuple[GpuFp4, ...], types: Mapping[str, int]) -> tuple[Finding, ...]:
    """MTP611 per compute capability without llama.cpp's native FP4 path."""
    from mtp_audit.engines.llamacpp.rules import RULES_BY_ID

    held = ", ".join(f"{n:,} {t}" for t, n in sorted(types.items()))
    out = []
    for shown in sorted({g.compute_capability for g in gpus if g.native_fp4 == "not capable" and g.compute_capability}):
        idx = ",".join(str(g.gpu) for g in gpus if g.compute_capability == shown)
        names = ", ".join(sorted({str(g.name) for g in gpus if g.compute_capability == shown}))
        out.append(RULES_BY_ID["MTP611"].finding(
            f"the GGUF's {held} tensor(s) run on GPU {idx} ({names}, compute capability {shown}) through llama.cpp's int8 "
            "Q8_1 kernels: 4-bit weights, no FP4 tensor-core math (llama.cpp's native FP4 path is SM120/SM121 only)",
            Location(symbol="machine"), evidence=[Evidence("compute capability", shown), Evidence("FP4 tensors", held),
                                                  Evidence("native FP4 path", NATIVE)]))
    return tuple(out)
