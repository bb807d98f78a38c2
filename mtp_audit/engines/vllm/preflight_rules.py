"""vLLM's own preflight rules: an explicit FP4 backend its kernels cannot run on the GPU (MTP231), and an FP4/MoE
environment variable its release no longer reads (MTP232). The checks are vLLM's kernel checks
(:mod:`mtp_audit.engines.vllm.kernels`); the preflight finds these rules through :func:`mtp_audit.report.rules.rule_modules`.
"""

from __future__ import annotations

from mtp_audit.preflight.rules import E, R, W, ex
from mtp_audit.report import questions as Q
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.dumps import B200, PRO6000, VL, vllm_env

RULES: tuple[Rule, ...] = (
    R("MTP231", "vllm-fp4-backend-cannot-run", E, "An explicit vLLM FP4 backend that cannot run on this GPU",
      "vLLM only. Fires when the launch asks for an NVFP4 backend whose kernels do not run on the GPU's compute capability: --moe-backend (vLLM >= 0.17) flashinfer_trtllm / flashinfer_cutedsl off the SM100 family, flashinfer_cutlass / cutlass below SM100, flashinfer_b12x off SM12x; --linear-backend (vLLM >= 0.22) or VLLM_NVFP4_GEMM_BACKEND (0.11.1-0.23; from 0.22 only while --linear-backend is auto) cutlass / flashinfer_cutlass / flashinfer_cudnn below SM100, flashinfer_trtllm off SM100/SM103; VLLM_USE_FLASHINFER_MOE_FP4=1 (0.15-0.23) below SM100 or with VLLM_FLASHINFER_MOE_BACKEND=masked_gemm off SM100. Requirements are read from each kernel's is_supported / _supports_current_device in the vLLM wheel (matrix vllm.nvfp4_backend_sms).",
      "An explicit backend is not replaced by vLLM's fallback: the MoE oracle raises 'NvFp4 MoE backend ... does not support the deployment configuration', a forced dense kernel raises 'Forced NVFP4 kernel ... is not supported', or FlashInfer refuses the compute capability at the first GEMM. Left on auto, vLLM would have picked a kernel that runs (Marlin below SM100).",
      "Drop the explicit backend (auto), or name one that runs on the GPU; the finding's fix uses the same form (flag or env var) as the launch.",
      ("wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:216-260", "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:615-650",
       "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/experts/trtllm_nvfp4_moe.py:88-95", "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/flashinfer_cutlass_moe.py:125-177",
       "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/nvfp4/flashinfer.py:23-35"), "code",
      (ex(True, "H200, vLLM 0.20.0, --moe-backend flashinfer_trtllm", {"env.txt": vllm_env()}, VL + ("--moe-backend", "flashinfer_trtllm")),
       ex(True, "H200, vLLM 0.20.0, VLLM_NVFP4_GEMM_BACKEND=cutlass in the dump's environment", {"env.txt": vllm_env(env_vars={"VLLM_NVFP4_GEMM_BACKEND": "cutlass"})}, VL),
       ex(True, "RTX PRO 6000, vLLM 0.20.0, --moe-backend flashinfer_cutedsl", {"env.txt": vllm_env(PRO6000)}, VL + ("--moe-backend", "flashinfer_cutedsl")),
       ex(False, "RTX PRO 6000, vLLM 0.20.0, --moe-backend flashinfer_cutlass", {"env.txt": vllm_env(PRO6000)}, VL + ("--moe-backend", "flashinfer_cutlass")),
       ex(False, "H200, vLLM 0.20.0, --moe-backend marlin", {"env.txt": vllm_env()}, VL + ("--moe-backend", "marlin"))), question=Q.FP4),
    R("MTP232", "vllm-retired-fp4-env-var", W, "An FP4/MoE env var that vLLM >= 0.24 no longer reads",
      "vLLM only. Fires when the launch (a NAME=VALUE prefix) or the machine's environment sets one of the FP4/MoE variables removed in vLLM 0.24.0 (VLLM_USE_FLASHINFER_MOE_FP4, VLLM_FLASHINFER_MOE_BACKEND, VLLM_NVFP4_GEMM_BACKEND, VLLM_MXFP4_USE_MARLIN, VLLM_USE_FBGEMM, VLLM_USE_NVFP4_CT_EMULATIONS and the other VLLM_USE_FLASHINFER_MOE_* switches) and the vLLM is 0.24.0 or newer.",
      "The backend you chose is silently not applied: vLLM only logs 'Unknown vLLM environment variable detected' and picks the backend itself (with --fail-on-environ-validation it refuses to start). The cost is whatever the automatic choice is instead of yours.",
      "Unset the variable and pass the KernelConfig flag: --moe-backend for MoE, --linear-backend for dense GEMMs.",
      ("wheel:vllm-0.20.0:vllm/envs.py vs wheel:vllm-0.24.0:vllm/envs.py (environment_variables keys)", "wheel:vllm-0.24.0:vllm/envs.py:1998-2004"), "code",
      (ex(True, "VLLM_USE_FLASHINFER_MOE_FP4=1 before vllm serve on vLLM 0.24.0", {"env.txt": vllm_env(B200, vllm="0.24.0")}, ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + VL),
       ex(False, "the same on vLLM 0.20.0, which still reads it", {"env.txt": vllm_env(B200)}, ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + VL)), question=Q.FP4),
)


#: vLLM's examples of the preflight rules whose meaning holds for several engines (declared in
#: :mod:`mtp_audit.preflight.rules`, which gives SGLang's); appended to those rules' own
#: (:func:`mtp_audit.report.rules.analyzer_rules`).
EXAMPLES: dict[str, tuple[Example, ...]] = {
    "MTP200": (ex(True, "H200 with vLLM 0.8.5 (no Marlin NVFP4 fallback yet)", {"env.txt": vllm_env(vllm="0.8.5", torch="2.6.0+cu124", torch_cuda="12.4")}, VL),
               ex(False, "H200 with vLLM 0.20.0: it falls back to Marlin by itself (MTP201, a warning)", {"env.txt": vllm_env()}, VL)),
    "MTP201": (ex(True, "H200 collect-env of vLLM 0.20.0 with an NVFP4 launch", {"env.txt": vllm_env()}, VL),
               ex(False, "B200 on vLLM 0.20.0: native NVFP4", {"env.txt": vllm_env(B200)}, VL)),
    "MTP226": (ex(True, "--moe-backend on vLLM 0.14.0 (added in 0.17.0)", {"env.txt": vllm_env(vllm="0.14.0")}, VL + ("--moe-backend", "marlin")),
               ex(True, "--moe-backend flashinfer_b12x on vLLM 0.20.0 (a choice from 0.22.0)", {"env.txt": vllm_env(PRO6000, vllm="0.20.0")}, VL + ("--moe-backend", "flashinfer_b12x")),
               ex(False, "--moe-backend marlin on vLLM 0.20.0", {"env.txt": vllm_env()}, VL + ("--moe-backend", "marlin"))),
    "MTP240": (ex(False, "an NVIDIA machine: the platform is in the summary, not a finding", {"env.txt": vllm_env()}, VL),),
    "MTP241": (ex(False, "H200 machine", {"env.txt": vllm_env()}, VL),),
}
