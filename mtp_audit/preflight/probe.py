"""``--probe``: run one tiny FP4 GEMM on the GPU and compare it with a BF16 reference.

The probe runs in a child Python process with a time-out, so a hung kernel or a crashing driver
cannot take the audit down, and torch is never imported into the mtp-audit process itself. The
child prints one JSON line; :func:`run_probe` returns it as a :class:`ProbeResult`.

Paths tried, in order (each one's outcome is recorded and printed):

1. flashinfer ``mm_fp4`` with the FP4 GEMM backend the launch would use (``flashinfer_cudnn`` ->
   ``backend="cudnn"``), NVFP4 (E2M1 values, 16-element blocks, FP8 E4M3 scales), when flashinfer
   imports. Reference: the BF16 product of the same inputs; FP4 quantisation error is large, so the
   tolerance is a relative Frobenius error of 0.25 (typical NVFP4 error on Gaussian data is ~0.1).
2. ``torch._scaled_mm`` with ``torch.float4_e2m1fn_x2`` inputs and uniform FP8 E4M3 block scales
   of 1.0, where the torch build has the FP4 dtype. The inputs are exactly representable E2M1
   values, so the dequantised BF16 reference is exact and the tolerance is 1e-2 relative.

On a GPU without FP4 tensor cores (compute capability major < 10, e.g. H200 = 9.0) the probe
reports "not capable" and still records what the FP4 call answered, without crashing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

#: Seconds the whole probe child may run.
PROBE_TIMEOUT_S = 180.0

_CHILD = r'''
import json, sys, time
res = {"ran": [], "gpu": None, "cc": None, "results": []}
def emit():
    print("MTP_AUDIT_PROBE " + json.dumps(res)); sys.stdout.flush()
try:
    import torch
except Exception as e:
    res["error"] = f"torch does not import: {type(e).__name__}: {e}"; emit(); sys.exit(0)
res["torch"] = torch.__version__
if not torch.cuda.is_available():
    res["error"] = "torch.cuda.is_available() is False"; emit(); sys.exit(0)
res["gpu"] = torch.cuda.get_device_name(0)
res["cc"] = list(torch.cuda.get_device_capability(0))
backend = sys.argv[1] if len(sys.argv) > 1 else ""
M = N = K = 128

def check(name, out, ref, tol, t0):
    out = out.float(); ref = ref.float()
    nan = int(torch.isnan(out).sum()); inf = int(torch.isinf(out).sum())
    rel = float((out - ref).norm() / ref.norm().clamp_min(1e-12)) if nan == 0 and inf == 0 else None
    ok = nan == 0 and inf == 0 and rel is not None and rel <= tol
    res["results"].append({"path": name, "status": "ok" if ok else "mismatch", "nan": nan, "inf": inf,
                           "rel_error": rel, "tolerance": tol, "seconds": round(time.perf_counter() - t0, 4),
                           "shape": [M, N, K]})

# 1. flashinfer mm_fp4
try:
    import flashinfer
    fi_backend = backend[len("flashinfer_"):] if backend.startswith("flashinfer_") else "auto"
    res["ran"].append(f"flashinfer {getattr(flashinfer, '__version__', '?')} mm_fp4(backend={fi_backend!r}) NVFP4 {M}x{N}x{K}")
    t0 = time.perf_counter()
    try:
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g)
        a_gs = (448 * 6) / a.float().abs().max(); b_gs = (448 * 6) / b.float().abs().max()
        a_fp4, a_sf = flashinfer.fp4_quantize(a, a_gs, 16, False, True)
        b_fp4, b_sf = flashinfer.fp4_quantize(b, b_gs, 16, False, True)
        alpha = (1.0 / (a_gs * b_gs)).float()
        out = flashinfer.mm_fp4(a_fp4, b_fp4.T, a_sf, b_sf.T, alpha, torch.bfloat16, backend=fi_backend)
        torch.cuda.synchronize()
        check(f"flashinfer.mm_fp4[{fi_backend}]", out, a.float() @ b.float().T, 0.25, t0)
    except Exception as e:
        res["results"].append({"path": f"flashinfer.mm_fp4[{fi_backend}]", "status": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"})
except ImportError as e:
    res["ran"].append(f"flashinfer not importable ({e}); skipped mm_fp4")

# 2. torch._scaled_mm with float4_e2m1fn_x2
fp4 = getattr(torch, "float4_e2m1fn_x2", None)
if fp4 is None:
    res["ran"].append("torch has no float4_e2m1fn_x2 dtype; skipped torch._scaled_mm FP4")
else:
    res["ran"].append(f"torch._scaled_mm float4_e2m1fn_x2 x float4_e2m1fn_x2, FP8 E4M3 block-16 scales = 1.0, {M}x{N}x{K}")
    t0 = time.perf_counter()
    try:
        table = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
        g = torch.Generator().manual_seed(0)
        ca = torch.randint(0, 16, (M, K), generator=g, dtype=torch.uint8)
        cb = torch.randint(0, 16, (N, K), generator=g, dtype=torch.uint8)
        pack = lambda c: (c[:, 0::2] | (c[:, 1::2] << 4)).contiguous()
        a = pack(ca).cuda().view(fp4); b = pack(cb).cuda().view(fp4)
        sa = torch.ones(M * K // 16, device="cuda").to(torch.float8_e4m3fn)
        sb = torch.ones(N * K // 16, device="cuda").to(torch.float8_e4m3fn)
        out = torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)
        torch.cuda.synchronize()
        ref = (table[ca.long()] @ table[cb.long()].T).cuda()
        check("torch._scaled_mm[float4_e2m1fn_x2]", out, ref, 1e-2, t0)
    except Exception as e:
        res["results"].append({"path": "torch._scaled_mm[float4_e2m1fn_x2]", "status": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"})

# BF16 reference GEMM on the same shape, to show the device works at all
try:
    t0 = time.perf_counter()
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16); y = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    z = x @ y; torch.cuda.synchronize()
    res["ran"].append(f"BF16 reference GEMM {M}x{N}x{K}: finite={bool(torch.isfinite(z).all())}")
except Exception as e:
    res["ran"].append(f"BF16 reference GEMM failed: {type(e).__name__}: {e}")
emit()
'''


@dataclass(frozen=True)
class ProbeResult:
    """What the probe ran and saw.

    Attributes:
        ran: one human line per attempted step (printed by the CLI).
        gpu: device 0's name, or ``None``.
        cc: device 0's ``(major, minor)``, or ``None``.
        results: per FP4 path: ``{"path", "status": "ok"|"mismatch"|"error", "nan", "inf",
            "rel_error", "tolerance", "seconds", "error"}``.
        error: why nothing ran (torch missing, no GPU, time-out), or ``None``.
    """

    ran: tuple[str, ...] = ()
    gpu: str | None = None
    cc: tuple[int, int] | None = None
    results: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stored in ``facts["preflight"]["probe"]``)."""
        return {"ran": list(self.ran), "gpu": self.gpu, "cc": list(self.cc) if self.cc else None,
                "results": [dict(r) for r in self.results], "error": self.error}


def run_probe(backend: str | None = None, *, timeout: float = PROBE_TIMEOUT_S, python: str | None = None) -> ProbeResult:
    """Run the FP4 GEMM probe in a child process. Never raises.

    Args:
        backend: the SGLang ``--fp4-gemm-backend`` value to probe (``"flashinfer_cudnn"``); ``None``
            lets flashinfer choose (``auto``).
        timeout: seconds for the whole child.
        python: interpreter to use (default: this one).
    """
    cmd = [python or sys.executable, "-c", _CHILD, backend or ""]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return ProbeResult(error=f"probe did not finish within {timeout:g} s")
    except OSError as exc:
        return ProbeResult(error=f"probe could not start: {exc}")
    m = re.search(r"^MTP_AUDIT_PROBE (.+)$", cp.stdout, re.M)
    if not m:
        tail = (cp.stderr or cp.stdout).strip().splitlines()
        return ProbeResult(error=f"probe child exited with {cp.returncode}" + (f": {tail[-1][:300]}" if tail else ""))
    d = json.loads(m.group(1))
    return ProbeResult(
        ran=tuple(d.get("ran", ())),
        gpu=d.get("gpu"),
        cc=tuple(d["cc"]) if d.get("cc") else None,
        results=tuple(d.get("results", ())),
        error=d.get("error"),
        raw=d,
    )
