"""What SGLang does off NVIDIA, as the preflight checks it (:data:`PLATFORM_CHECKS`, handed out through
:attr:`mtp_audit.engines.sglang.kernels.SGLangKernels.platform_checks`; rules MTP242, MTP243 and MTP248 of
:mod:`mtp_audit.preflight.rules`).

The preflight says what the machine is (platform, gfx targets, NPU models: :mod:`mtp_audit.preflight.vendors`); this
module says what SGLang does with it:

- AMD ROCm: SGLang's FP4 path per gfx target: MXFP4 MoE through AITER on gfx95 only ('mxfp4' is not even a
  quantization elsewhere), no NVFP4 path on ROCm (``data/amd.json`` ``engines.sglang``, read from the SGLang wheels).
- Ascend: ``--quantization mxfp4`` on SGLang's NPU backend (0.5.23 on) is an online MXFP4 W4A4 scheme for Ascend 950
  only (MTP248, ``data/ascend.json`` ``sglang_npu_mxfp4``).
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight import vendors
from mtp_audit.report import Evidence


def check_rocm_fp4_path(ctx: Any) -> None:
    """MTP242 / MTP243: SGLang's FP4 path on each gfx target (:func:`mtp_audit.preflight.vendors.check_amd_fp4_path`
    over ``data/amd.json`` ``engines.sglang``)."""
    vendors.check_amd_fp4_path(ctx, "sglang", ctx.engine_version, "SGLang")


def check_npu_mxfp4(ctx: Any) -> bool:
    """MTP248: ``--quantization mxfp4`` on SGLang's NPU backend (from the release in ``sglang_npu_mxfp4.from``, or an
    unknown one) with an NPU that is not of the generation it needs (Ascend 950), or whose model is unknown.
    ``True`` when it answered the launch's MXFP4 question (that flag on such a release), else ``False``."""
    f = pf.ascend_table()["facts"]["sglang_npu_mxfp4"]
    sg = ctx.engine_version
    q = (ctx.launch.get("--quantization") or "").lower() if ctx.launch else ""
    if q != "mxfp4" or (sg is not None and sg < Version(f["from"])):
        return False
    bad = [g for g in ctx.gpus if (r := vendors.ascend_row(g)) is None or r["generation"] != f["needs_generation"]]
    if not bad:
        return True
    g = bad[0]
    ctx.add("MTP248", f"--quantization mxfp4 on SGLang's NPU backend: {f['text']}; NPU {g.index} is {g.name.value or 'unknown'}",
            gpu=g, evidence=[Evidence("NPU", f"{g.name.value} ({g.arch.value or g.arch.missing})"), Evidence("source", f["source"])],
            remediation="use an msmodelslim W8A8 / W4A8 checkpoint on this NPU, or run MXFP4 on Ascend 950")
    return True


#: SGLang's checks per platform.
PLATFORM_CHECKS = {pf.ROCM: (check_rocm_fp4_path,), pf.CANN: (check_npu_mxfp4,)}
