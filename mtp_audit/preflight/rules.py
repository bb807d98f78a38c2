"""Preflight rules of the machine (MTP200-MTP206, MTP209, MTP221, MTP224-MTP229) and of the AMD ROCm, Ascend, Intel XPU,
Gaudi and CPU-only platforms (MTP233, MTP236-MTP237, MTP240-MTP249): documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.preflight.analyze` and :mod:`mtp_audit.preflight.vendors`; each rule here names
the candidate rule of ``../shared/research/blackwell_fp4.md`` §10 (R01-R35) it implements. Examples are environment
dumps (``env.txt``, sglang check_env or vllm collect-env format, built by :mod:`mtp_audit.synth.dumps`) or stored facts
(``facts.json``) plus launch-command args. Rules whose meaning holds for several engines name each engine's semantics;
the finding's message and fix name only the engine the verdict is for (:mod:`mtp_audit.preflight.engine`). The rules
of one engine's own kernels and options are declared in that engine's package (``mtp_audit/engines/<engine>/
preflight_rules.py``); :func:`preflight_rules` gathers them all.
"""

from __future__ import annotations

import functools
import json

from mtp_audit.report import Severity
from mtp_audit.report import questions as Q
from mtp_audit.report.rules import Example, Rule
from mtp_audit.synth.dumps import (
    AITER_SERVE,
    B200,
    GB10,
    H200,
    MI355,
    RTX5090,
    SG,
    VFP8,
    VL,
    VMX,
    env,
    facts_json,
    hl_smi,
    npu_env,
    rocm_env,
    xpu_env,
)

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research/blackwell_fp4.md


def ex(fires: bool, note: str, files: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Example:
    """A preflight rule example: ``files`` (default: an SM120 check_env dump as ``env.txt``) and the launch ``args``."""
    return Example(fires=fires, files=files or {"env.txt": env()}, args=args, note=note)


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str,
      examples: tuple[Example, ...], *, question: str | None = None) -> Rule:
    """A preflight rule (:class:`Rule` with analyzer ``"preflight"``); ``question``: the question its findings answer
    (:mod:`mtp_audit.report.questions`)."""
    return Rule(id, name, "preflight", sev, summary, what, why, fix, sources, basis, examples, question)


RULES: tuple[Rule, ...] = (
    R("MTP200", "no-native-fp4", E, "The GPU has no FP4 tensor cores (compute capability below 10.0): native FP4 kernels refuse it unless the engine falls back to W4A16",
      "SGLang: flags GPUs of compute capability < 10.0 (Hopper H100/H200, Ada, Ampere) when FP4 is intended (bare preflight, an FP4 --quantization or an FP4 checkpoint), unless the launch already selects the Marlin W4A16 fallback; on SGLang >= 0.5.13 the message names the Marlin W4A16 fallback and its cost; with the SGLang version unknown it is a warning naming both cases (>= 0.5.13 falls back, older refuses the GPU). vLLM falls back to Marlin W4A16 on its own (MTP201), so for vLLM this fires only where vLLM has no fallback: vLLM <= 0.8.5, or a GPU below Marlin's compute capability 7.5.",
      "FP4 MMA instructions exist only on SM100/SM103/SM110 (tcgen05) and SM120/SM121 (mma.sync kind::mxf4nvf4). SGLang's native NVFP4 GEMMs refuse SM90 ('ModelOpt NVFP4 native dense GEMM backends require SM100+'); vLLM 0.8.5 raises 'Current platform does not support NVFP4 quantization. Please use Blackwell and above.'",
      "Use a Blackwell GPU, or run weight-only: SGLang >= 0.5.13 --fp4-gemm-backend marlin --moe-runner-backend marlin; vLLM >= 0.9.2 does it by itself (W4A16, BF16 math).",
      ("wheel:sglang-0.5.23:sglang/srt/layers/quantization/modelopt_quant.py", "wheel:vllm-0.8.5:vllm/model_executor/layers/quantization/modelopt.py:265-268",
       "wheel:vllm-0.33.0:vllm/model_executor/kernels/linear/nvfp4/marlin.py"), "code",
      (ex(True, "H200 with an NVFP4 launch on SGLang 0.5.9 (no Marlin fallback)", {"env.txt": env(H200, torch="2.9.1+cu128")}, SG),
       ex(False, "B200: FP4 tensor cores present", {"env.txt": env(B200, torch="2.9.1+cu128")}, SG)), question=Q.FP4),
    R("MTP201", "marlin-w4a16-fallback", W, "NVFP4 runs as Marlin W4A16 on a GPU without FP4 tensor cores",
      "Fires when a GPU below SM100 will run an FP4 checkpoint through Marlin: SGLang >= 0.5.13 with its Marlin backends, or vLLM >= 0.9.2, which picks Marlin by itself when no FP4 kernel supports the GPU (no flag needed) and no explicit FP4 backend stops the load first (MTP231). The message gives the cost.",
      "Marlin dequantizes 4-bit weights to BF16 inside the GEMM: it works, but all math runs at BF16 tensor-core rate; FP4's compute advantage is gone and activations stay BF16.",
      "Accept the cost, or move the deployment to Blackwell for native NVFP4.",
      ("wheel:sglang-0.5.13:sglang/srt/layers/quantization/fp4_utils.py",
       "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:260-268 and nvfp4/marlin.py:35", "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:161-169"), "code",
      (ex(True, "H200 on SGLang 0.5.16, auto resolves to marlin", {"env.txt": env(H200, sglang="0.5.16", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.3"))}, SG),
       ex(False, "H200 on SGLang 0.5.9: no Marlin NVFP4 path (MTP200 fires instead)", {"env.txt": env(H200, torch="2.9.1+cu128")}, SG)),
      question=Q.FP4),
    R("MTP202", "mixed-compute-capabilities", E, "GPUs of different compute capability in one server",
      "Fires when the GPUs listed have more than one compute capability.",
      "SGLang reads device 0's SM (get_device_sm) and chooses FP4 backends for it; vLLM asks current_platform.get_device_capability(), device 0 by default; other GPUs may not run them.",
      "Use identical GPUs, or restrict CUDA_VISIBLE_DEVICES to one kind.",
      ("sglang/srt/utils/common.py get_device_sm (wheel:sglang-0.5.23)", "wheel:vllm-0.20.0:vllm/platforms/cuda.py:592"), "code",
      (ex(True, "an H200 and a B200 in one dump", {"env.txt": env(B200, n=1).replace("GPU 0: NVIDIA B200\nGPU 0 Compute Capability: 10.0", "GPU 0: NVIDIA B200\nGPU 1: NVIDIA H200\nGPU 0 Compute Capability: 10.0\nGPU 1 Compute Capability: 9.0")}),
       ex(False, "eight identical RTX PRO 6000")), question=Q.FP4),
    R("MTP203", "torch-cuda-too-old-for-blackwell", E, "torch is built for a CUDA older than 12.8 on a Blackwell GPU",
      "Fires when torch's CUDA build (torch/version.py, the +cuXXX tag or collect_env's 'CUDA used to build PyTorch') is below 12.8 and a GPU has compute capability >= 10.0.",
      "CUDA 12.6 builds carry kernels up to sm_90 only: torch warns 'sm_120 is not compatible with the current PyTorch installation' and every kernel fails with 'no kernel image is available'.",
      "Install a cu128+ torch build (PyPI default from torch 2.8) matching your sglang/sgl-kernel pin.",
      ("gh:xorbitsai/inference#3866", "https://github.com/pytorch/pytorch/issues/150733"), "code",
      (ex(True, "RTX 5090 with torch 2.6.0+cu126", {"env.txt": env(RTX5090, n=1, torch="2.6.0+cu126")}),
       ex(False, "RTX 5090 with torch 2.9.1+cu128", {"env.txt": env(RTX5090, n=1, torch="2.9.1+cu128")})), question=Q.STACK),
    R("MTP204", "gb10-torch-capability-warning", INFO, "torch's capability-range warning on GB10 is cosmetic",
      "Fires on GB10 (12.1) with a torch built for CUDA 12.8/12.9, which prints a '(8.0) - (12.0)' range warning.",
      "The warning looks fatal but SM121 runs sm_120 code; knowing that saves a reinstall.",
      "Nothing to do (a cu130 torch does not print it).",
      ("gh:sgl-project/sglang#13198", "https://discuss.pytorch.org/t/nvidia-dgx-spark-support/223677"), "bug report",
      (ex(True, "GB10 with torch 2.9.1+cu129", {"env.txt": env(GB10, n=1, torch="2.9.1+cu129")}),
       ex(False, "GB10 with torch 2.9.1+cu130", {"env.txt": env(GB10, n=1, torch="2.9.1+cu130")})), question=Q.STACK),
    R("MTP205", "driver-older-than-cuda-stack", E, "The driver is older than the CUDA the installed stack needs",
      "Fires when the driver version is below the CUDA toolkit's documented minimum for torch's CUDA build or for CUDA-13 components (sglang-kernel 0.4.x, flashinfer-jit-cache +cu13x), or when the driver's CUDA version is lower.",
      "User-space CUDA newer than the driver fails at the first CUDA call ('CUDA driver version is insufficient').",
      "Upgrade the driver (>= 580.65.06 for CUDA 13.0), install cuda-compat, or use builds for the driver's CUDA.",
      ("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (driver table)",), "documentation",
      (ex(True, "torch cu130 on driver 570.172.08", {"env.txt": env(B200, torch="2.9.1+cu130", driver="570.172.08")}),
       ex(False, "torch cu130 on driver 580.95.05", {"env.txt": env(B200, torch="2.9.1+cu130")})), question=Q.STACK),
    R("MTP206", "driver-too-old-for-blackwell", E, "The driver predates Blackwell support",
      "Fires when a Blackwell GPU (compute capability >= 10.0) runs a driver older than 570.26.",
      "Blackwell needs R570+; older drivers do not drive the GPU (or only without CUDA 12.8 features).",
      "Install driver >= 570.26 (>= 580.65.06 for CUDA 13 stacks).",
      ("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/",), "documentation",
      (ex(True, "B200 on driver 560.35.03", {"env.txt": env(B200, torch="2.9.1+cu126", driver="560.35.03")}),
       ex(False, "B200 on driver 570.172.08", {"env.txt": env(B200, torch="2.9.1+cu128", driver="570.172.08")})), question=Q.STACK),
    R("MTP209", "kernel-wheel-torch-mismatch", E, "sgl-kernel / sglang is built for a different torch",
      "Fires when a kernel wheel's Requires-Dist torch pin (live) or the SGLang release's torch pin (matrix) differs from the installed torch version. An error when that release is installed beside the other torch; in mtp-audit launch against a release the machine is not shown to have installed (another SGLang, SGLang not installed, or none recorded) a warning, as vLLM's MTP339: installing it replaces torch.",
      "sgl-kernel's compiled ops are ABI-bound to one torch version; a nightly torch (as in the incident) forces a from-source build.",
      "Install the pinned torch, or rebuild sgl-kernel from source against your torch with nvcc >= 12.8.",
      ("sglang / sglang-kernel wheel METADATA", "gh:mmcdermott/MEDS_EIC_AR#163"), "code",
      (ex(True, "SGLang 0.5.9 (pins torch 2.9.1) with torch 2.12.0+cu130", {"env.txt": env(torch="2.12.0+cu130")}),
       ex(False, "SGLang 0.5.9 with torch 2.9.1+cu130", {"env.txt": env(torch="2.9.1+cu130")})), question=Q.STACK),
    R("MTP221", "flashinfer-version-mismatch", W, "flashinfer-python, -cubin and -jit-cache versions differ",
      "Fires when the base versions of flashinfer-python, flashinfer-cubin and flashinfer-jit-cache are not all equal.",
      "Mismatched cubins / prebuilt modules load against a different Python API (flashinfer collect_env prints MISMATCH).",
      "Install one version of all three.",
      ("gh:flashinfer-ai/flashinfer#4549",), "code",
      (ex(True, "flashinfer-python 0.6.8 with flashinfer-cubin 0.6.3", {"env.txt": env(cubin="0.6.3")}),
       ex(False, "all 0.6.8", {"env.txt": env(jit="0.6.8+cu130")})), question=Q.STACK),
    R("MTP224", "flashinfer-arch-list-plain-sm12x", E, "FLASHINFER_CUDA_ARCH_LIST with plain 12.0/12.1 on flashinfer <= 0.6.0",
      "Fires when FLASHINFER_CUDA_ARCH_LIST contains 12.0 or 12.1 without a/f and flashinfer-python <= 0.6.0 (which used it verbatim).",
      "FP4 code compiled for plain sm_120 traps or runs a software E2M1 path that gave NaN.",
      "export FLASHINFER_CUDA_ARCH_LIST='12.0a' (or '12.0f' with CUDA >= 12.9; GB10 '12.1a').",
      ("wheel:flashinfer-python-0.6.0 compilation_context.py", "gh:vllm-project/vllm#37725"), "code",
      (ex(True, "FLASHINFER_CUDA_ARCH_LIST=12.0 with flashinfer 0.5.3", {"facts.json": facts_json(packages={"flashinfer-python": "0.5.3", "flashinfer-cubin": "0.5.3"}, env_vars={"FLASHINFER_CUDA_ARCH_LIST": "12.0"}, torch="2.9.1+cu130")}),
       ex(False, "FLASHINFER_CUDA_ARCH_LIST=12.0a", {"facts.json": facts_json(packages={"flashinfer-python": "0.5.3", "flashinfer-cubin": "0.5.3"}, env_vars={"FLASHINFER_CUDA_ARCH_LIST": "12.0a"}, torch="2.9.1+cu130")})), question=Q.FP4),
    R("MTP225", "gpu-memory-not-reported", INFO, "GPU memory is reported as 'Not Supported' (unified memory)",
      "Fires when nvidia-smi/NVML reports the GPU's memory as 'Not Supported' (GB10).",
      "Memory-fraction defaults sized from GPU memory overcommit unified memory.",
      "Size the cache down: SGLang --mem-fraction-static, vLLM --gpu-memory-utilization <= 0.85 (the finding names only the engine the verdict is for).",
      ("gh:NVIDIA/k8s-device-plugin#1482", "gh:vllm-project/recipes#632"), "bug report",
      (ex(True, "GB10 nvidia-smi", {"env.txt": "+---+\n| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n|=====|\n|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |\n| N/A   40C    P8              4W /  N/A  | Not Supported          |      0%      Default |\n"}),
       ex(False, "B200 nvidia-smi with memory", {"env.txt": "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n|   0  NVIDIA B200                    On  |   00000000:63:00.0 Off |                    0 |\n| N/A   26C    P0            139W / 1000W |       0MiB / 183359MiB |      0%      Default |\n"})), question=Q.MEMORY),
    R("MTP226", "launch-flag-value-not-accepted", E, "A backend flag (or value) this engine version does not accept",
      "SGLang: fires when the value of --fp4-gemm-backend, --moe-runner-backend or --quantization is not among the SGLang version's argparse choices (from the sglang analyzer, else the matrix's per-version rows read from each wheel), or when --fp4-gemm-backend is given to SGLang < 0.5.8, which has no such flag. vLLM: fires for --moe-backend on vLLM < 0.17.0 or --linear-backend on vLLM < 0.22.0 (the flags do not exist there), or a value outside the version's MoEBackend / LinearBackend choices. The message lists the valid choices. It does not change the per-GPU MTP228 verdict.",
      "argparse stops the server with 'invalid choice' / 'unrecognized arguments' before the model loads.",
      "Use one of the listed choices for your version.",
      ("sglang/srt/server_args.py (<= 0.5.18) and sglang/srt/arg_groups/choices.py (>= 0.5.20) per wheel: FP4_GEMM_RUNNER_BACKEND_CHOICES, MOE_RUNNER_BACKEND_CHOICES, QUANTIZATION_CHOICES",
       "wheel:vllm-0.16.0/0.17.0:vllm/engine/arg_utils.py (--moe-backend from 0.17.0)", "wheel:vllm-0.21.0/0.22.0:vllm/engine/arg_utils.py (--linear-backend from 0.22.0, line 1447)",
       "wheel:vllm-0.20.0:vllm/config/kernel.py:108-120 MoEBackend"), "code",
      (ex(True, "marlin on SGLang 0.5.9", None, SG + ("--fp4-gemm-backend", "marlin")),
       ex(True, "--moe-runner-backend nonsense on SGLang 0.5.9", None, SG + ("--moe-runner-backend", "nonsense")),
       ex(False, "flashinfer_cudnn on SGLang 0.5.9", None, SG + ("--fp4-gemm-backend", "flashinfer_cudnn"))), question=Q.STARTS),
    R("MTP227", "probe-fp4-gemm-wrong", E, "The --probe FP4 GEMM gave NaN/Inf or a wrong result",
      "With --probe on an FP4-capable GPU: fires when the tiny FP4 GEMM has NaN/Inf or differs from the BF16 reference beyond tolerance (error), or fails to run (warning).",
      "A backend that is wrong on a 128x128x128 GEMM will be wrong in the model.",
      "Switch the FP4 GEMM backend and re-run --probe.",
      ("mtp_audit/preflight/probe.py",), "code",
      (ex(True, "probe result with NaN (stored facts + probe.json)", {"env.txt": env(), "probe.json": json.dumps({"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "cc": [12, 0], "ran": ["flashinfer mm_fp4(backend='cutlass')"], "results": [{"path": "flashinfer.mm_fp4[cutlass]", "status": "mismatch", "nan": 3, "inf": 0, "rel_error": None, "tolerance": 0.25}]})}),
       ex(False, "probe result ok", {"env.txt": env(), "probe.json": json.dumps({"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "cc": [12, 0], "ran": ["flashinfer mm_fp4(backend='cudnn')"], "results": [{"path": "flashinfer.mm_fp4[cudnn]", "status": "ok", "nan": 0, "inf": 0, "rel_error": 0.09, "tolerance": 0.25}]})})), question=Q.FP4),
    R("MTP228", "native-fp4-verdict", INFO, "Per-GPU verdict: native FP4 capable, not capable or unknown",
      "Always reports whether native FP4 can run (capable), cannot (not capable, with the error rules that say why) or could not be told (unknown, with the missing fact): one finding per group of GPUs with the same name, compute capability and verdict, listing the GPU indices (GPUs 0-7), and the engine the verdict is for ('on vLLM 0.20.0', 'on SGLang (version unknown) (assumed)'); its evidence says where the engine came from and any hint that disagrees. A capable group has no fix; the others name the error findings and gaps to fix.",
      "It is the headline answer of the preflight; errors and gaps explain it.",
      "Fix the error findings named in the verdict, and the gaps of the same report.",
      ("mtp_audit/data/matrix.json: the capability matrix, every row with its public source (mtp-audit ships it)",), "code",
      (ex(True, "any GPU gets a verdict"), ex(False, "no GPU in the dump: no per-GPU verdict (a blocking gap instead)", {"env.txt": "PyTorch version: 2.9.1+cu128\nCUDA used to build PyTorch: 12.8\n"})), question=Q.FP4),
    R("MTP229", "wsl2-windows-sm12x", W, "SM12x FP4 on WSL2 / Windows",
      "Fires when the platform is WSL2 or Windows and a GPU is SM12x with FP4 intended.",
      "Most public SM120 FP4 reports on WSL2 needed extra patching of flashinfer/CUTLASS.",
      "Run on native Linux.",
      ("gh:flashinfer-ai/flashinfer#2723",), "bug report",
      (ex(True, "WSL2 host", {"facts.json": facts_json(platform="wsl2", torch="2.9.1+cu130")}), ex(False, "Linux host", {"facts.json": facts_json(torch="2.9.1+cu130")})), question=Q.FP4),
)

RULES = RULES + (
    R("MTP233", "ascend-nvfp4-cannot-run", E, "An NVFP4 checkpoint or --quantization on an Ascend NPU",
      "Ascend only: fires when the launch loads NVFP4 (a ModelOpt / compressed-tensors NVFP4 checkpoint, or --quantization modelopt_fp4 / nvfp4).",
      "NVFP4 weights need NVIDIA FP4 kernels (CUDA tensor cores). No Ascend backend runs them: vllm-ascend quantises W8A8 / W4A8 "
      "(msmodelslim), and SGLang's NPU FP4 is an online MXFP4 W4A4 scheme for Ascend 950 only, fed from BF16 weights. The load fails.",
      "Use an msmodelslim W8A8 / W4A8 (or BF16) checkpoint on the NPU, or run the NVFP4 checkpoint on Blackwell.",
      ("https://docs.vllm.ai/projects/ascend/en/v0.9.1/user_guide/support_matrix/supported_features.html",
       "wheel:sglang-0.5.23:sglang/srt/layers/quantization/npu_mxfp4_w4a4.py:1-16"), "documentation",
      (ex(True, "910B3, SGLang 0.5.23, --quantization modelopt_fp4", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "modelopt_fp4")),
       ex(False, "910B3, SGLang 0.5.23, --quantization mxfp4 (MTP248's question)", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "mxfp4"))), question=Q.FP4),
    R("MTP236", "xpu-hpu-fp4-not-applicable", INFO, "The FP4 checks do not apply to Intel GPUs (XPU) and Gaudi HPUs",
      "Intel XPU and Gaudi only: always says that the NVIDIA FP4 checks (compute capability, CUDA, FlashInfer / sgl-kernel cubins) do not cover vLLM's XPU platform or the Gaudi plugin, as a note: never 'not capable', never a refused input, no exit-code change.",
      "An Intel GPU or Gaudi machine asked 'can it run FP4' deserves an answer, not 'nothing recognisable as an environment'.",
      "Nothing to fix; see MTP237 for a quantization the engine refuses on the device.",
      ("wheel:vllm-0.34.0:vllm/platforms/xpu.py:103-131", "https://docs.vllm.ai/projects/gaudi/en/latest/features/floating_point_8.html"), "documentation",
      (ex(True, "4 x Data Center GPU Max 1550", {"env.txt": xpu_env()}), ex(True, "8 x Gaudi 2 (hl-smi)", {"env.txt": hl_smi()}),
       ex(False, "MI300X machine", {"env.txt": rocm_env()})), question=Q.FP4),
    R("MTP237", "xpu-hpu-quantization-refused", E, "A quantization the engine refuses on an Intel GPU or a Gaudi HPU",
      "Intel XPU with vLLM 0.33 or later: fires when the launch's --quantization (or vLLM's method for an NVFP4 ModelOpt checkpoint, modelopt_fp4) is not in the XPU platform's supported_quantization, which Platform.verify_quantization enforces at start-up (an error; older releases are not audited: a gap that blocks nothing). Gaudi with vLLM: fires for NVFP4 / MXFP4 weights, for which the vLLM Gaudi plugin documents no backend (a warning: documentation, not code).",
      "vLLM stops with 'ValueError: modelopt_fp4 quantization is currently not supported in xpu.' before loading weights.",
      "Use an MXFP4, FP8, AWQ or GPTQ checkpoint on the Intel GPU (FP8 with Intel Neural Compressor, AWQ or GPTQ on Gaudi), or run the NVFP4 checkpoint on Blackwell.",
      ("wheel:vllm-0.33.0:vllm/platforms/xpu.py:113-131", "wheel:vllm-0.34.0:vllm/platforms/interface.py:1168-1173",
       "https://docs.vllm.ai/projects/gaudi/en/latest/features/floating_point_8.html"), "code",
      (ex(True, "Max 1550, vLLM 0.33.0, --quantization modelopt_fp4", {"env.txt": xpu_env()}, VL),
       ex(False, "Max 1550, vLLM 0.33.0, --quantization mxfp4 (in the XPU list)", {"env.txt": xpu_env()}, VMX)), question=Q.STARTS),
    R("MTP240", "platform", INFO, "The machine's platform (NVIDIA CUDA, AMD ROCm, Ascend CANN, Intel XPU, Intel Gaudi HPU or CPU only) and where it came from",
      "Off NVIDIA: always reports the platform, the devices (gfx target or Ascend model) and the stack (ROCm, CANN, torch, driver, AITER, torch_npu, vllm-ascend), each with the dump line or table row it came from. The platform is decided before any capability check: a tool of one vendor (npu-smi, amd-smi / rocm-smi), the devices named, torch's ROCm build or +rocm tag, torch_npu / vllm-ascend / CANN, a container image (rocm/vllm, quay.io/ascend/vllm-ascend) or the launch's --device npu / hip.",
      "The NVIDIA checks are meaningless off CUDA; saying what the machine is comes first.",
      "Nothing to fix; check that the platform and devices are the ones you meant.",
      ("mtp_audit/data/amd.json", "mtp_audit/data/ascend.json", "https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html"), "documentation",
      (ex(True, "a vLLM collect-env of an MI300X machine", {"env.txt": rocm_env()}), ex(True, "vllm-ascend collect_env of a 910B3 machine", {"env.txt": npu_env()})), question=Q.STACK),
    R("MTP241", "nvidia-checks-not-applicable", INFO, "The NVIDIA FP4 checks do not apply to this platform",
      "Off NVIDIA (ROCm, CANN, Intel XPU, Gaudi HPU, CPU only): says that the NVIDIA checks (MTP200-MTP227, MTP229-MTP232: FP4 tensor cores by compute capability, CUDA driver and toolkit floors, torch's CUDA build, FlashInfer / sgl-kernel cubins) were not run, and which checks ran instead.",
      "Not applicable is an answer: it is neither 'not capable' nor a refused input, and it does not change the exit code.",
      "Nothing to fix.", ("mtp_audit/preflight/vendors.py",), "code",
      (ex(True, "Ascend machine", {"env.txt": npu_env()}),), question=Q.FP4),
    R("MTP242", "amd-fp4-path", W, "The FP4 path of the engine on this AMD GPU: native, or emulated with its cost",
      "ROCm only, when FP4 is intended (bare preflight, an FP4 --quantization or checkpoint): per gfx target, MXFP4 runs natively only on gfx950 (CDNA4: MI350X / MI355X; info); elsewhere (gfx942 = CDNA3: MI300X / MI300A / MI325X / MI308X, gfx90a, RDNA) vLLM emulates it (Quark: weights dequantised, activations quantise-dequantised, BF16 math; gpt-oss MXFP4: Triton with MXFP4 weights upcast) and NVFP4 everywhere (vLLM >= 0.20: EmulationNvFp4LinearKernel is the only ROCm NVFP4 kernel; vLLM 0.11: Petit, with the petit-kernel package) (warning, with the cost). The path is read per engine version from data/amd.json.",
      "Emulation keeps the 4-bit weights in memory but computes at BF16 rate with extra dequantisation: slower than FP8 on the same GPU.",
      "Run MXFP4 on gfx950; on gfx942 prefer an FP8 checkpoint (FP8 e4m3fnuz matrix cores).",
      ("https://rocm.docs.amd.com/en/latest/reference/precision-support.html", "wheel:vllm-0.20.0:vllm/platforms/rocm.py:798-816",
       "wheel:vllm-0.20.0:vllm/model_executor/layers/quantization/quark/schemes/quark_ocp_mx.py:215-237", "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:260-273",
       "wheel:vllm-0.11.0:vllm/model_executor/layers/quantization/petit.py:128-137"), "code",
      (ex(True, "MI300X (gfx942), vLLM 0.20.0, --quantization mxfp4: emulated", {"env.txt": rocm_env()}, VMX),
       ex(True, "MI355X (gfx950), vLLM 0.20.0, NVFP4: emulated", {"env.txt": rocm_env(MI355)}, VL),
       ex(False, "MI300X, vLLM 0.20.0, an FP8 launch", {"env.txt": rocm_env()}, VFP8)), question=Q.FP4),
    R("MTP243", "amd-fp4-not-runnable", E, "An FP4 checkpoint the engine cannot run on this AMD GPU",
      "ROCm only: fires when the engine has no path at all for the launch's FP4 format on the GPU: SGLang --quantization mxfp4 off gfx95 ('mxfp4' is registered on HIP only when mxfp_supported(), else 'Invalid quantization method' / 'Current platform gfx942 not support mxfp4 computation'), SGLang NVFP4 on ROCm (its NVFP4 kernels are CUDA-only). An error when the launch names the format, a warning for a bare preflight.",
      "The server stops while loading the model.",
      "Use an MXFP4 checkpoint on gfx950, an FP8 / BF16 checkpoint elsewhere, or vLLM's emulated path.",
      ("wheel:sglang-0.5.9:sglang/srt/layers/quantization/__init__.py:81-86", "wheel:sglang-0.5.9:sglang/srt/layers/quantization/mxfp4.py:227-237",
       "wheel:sglang-0.5.9:sglang/srt/layers/quantization/modelopt_quant.py:84-90"), "code",
      (ex(True, "MI300X, SGLang 0.5.9, --quantization mxfp4", {"env.txt": rocm_env().replace("vLLM Version                 : 0.20.0", "vLLM Version                 : N/A") + "sglang: 0.5.9\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4")),
       ex(False, "MI355X, SGLang 0.5.9, --quantization mxfp4 (native)", {"env.txt": rocm_env(MI355).replace("vLLM Version                 : 0.20.0", "vLLM Version                 : N/A") + "sglang: 0.5.9\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4"))), question=Q.FP4),
    R("MTP244", "amd-gfx950-only-switch", E, "A gfx950-only vLLM switch on a GPU that is not gfx950",
      "vLLM on ROCm: fires when VLLM_ROCM_USE_AITER_FP4BMM (on by default from vLLM 0.15 with VLLM_ROCM_USE_AITER=1) or VLLM_ROCM_USE_AITER_FP4_ASM_GEMM is on and a GPU is not gfx950. Before the gate vLLM does not check the GPU and crashes: an error for 0.15-0.16 (the crash is reported on 0.16.0rc2), a warning for 0.17-0.19 and an unknown version (the gate, PR #35250, is first seen in the audited 0.20.0 wheel); from 0.20.0 it is ignored off gfx950 (info).",
      "MI300X crashes with 'MXFP4 quantization is not supported on gfx942' or an illegal instruction (gh:vllm-project/vllm#34641).",
      "Set the switch to 0, or upgrade vLLM.",
      ("gh:vllm-project/vllm#34641", "gh:vllm-project/vllm#35250", "wheel:vllm-0.20.0:vllm/_aiter_ops.py:1335-1346"), "bug report",
      (ex(True, "MI300X, vLLM 0.16.0, VLLM_ROCM_USE_AITER=1 (FP4 BMM on by default)", {"env.txt": rocm_env(vllm="0.16.0")}, AITER_SERVE),
       ex(False, "MI355X, vLLM 0.16.0, VLLM_ROCM_USE_AITER=1", {"env.txt": rocm_env(MI355, vllm="0.16.0")}, AITER_SERVE)), question=Q.STARTS),
    R("MTP245", "ascend-fp4-not-applicable", INFO, "The FP4 checks do not apply to Ascend NPUs",
      "Ascend only: always says that NVFP4 and the GPU MXFP4 kernels do not exist on Ascend NPUs (quantisation there is W8A8 / W4A8), as a note: never 'not capable', never a refused input, no exit-code change.",
      "An NPU machine asked 'can it run FP4' deserves an answer, not a silence or an error.",
      "Nothing to fix; quantise for Ascend with msmodelslim (W8A8 / W4A8).",
      ("https://docs.vllm.ai/projects/ascend/en/v0.9.1/user_guide/support_matrix/supported_features.html",), "documentation",
      (ex(True, "910B3 machine", {"env.txt": npu_env()}), ex(False, "MI300X machine", {"env.txt": rocm_env()})), question=Q.FP4),
    R("MTP246", "ascend-910-not-vllm-ascend", W, "A first-generation Ascend 910 with vllm-ascend",
      "vLLM on Ascend: fires for an Ascend 910 / 910 Pro B / 910 Premium A (Ascend-cann-kernels-910), which vllm-ascend does not support (its FAQ lists Atlas A2, A3 and 300I only).",
      "vllm-ascend's kernels are built for 910B / 910C / 310P; the first-generation 910 fails at startup or in custom ops.",
      "Run on Atlas A2 (910B), A3 (910C) or 300I (310P).",
      ("https://docs.vllm.ai/projects/ascend/en/v0.11.0/faqs.html", "gh:vllm-project/vllm-ascend#1047"), "documentation",
      (ex(True, "910ProB machine", {"env.txt": npu_env("910ProB")}), ex(False, "910B3 machine", {"env.txt": npu_env()})), question=Q.STARTS),
    R("MTP247", "vllm-ascend-mtp-status", INFO, "The speculative-decoding (MTP) status vllm-ascend documents for its version",
      "vLLM on Ascend with a known vllm-ascend version: says what vllm-ascend's feature matrix documents for speculative decoding at that version (0.7.3: functional with usage limits; 0.9.0 on: functional, basic support, DeepSeek MTP through --speculative-config method deepseek_mtp).",
      "Whether the MTP heads can draft at all depends on the plugin, not on vLLM alone.",
      "Read the linked feature matrix for the limits of your version.",
      ("https://docs.vllm.ai/projects/ascend/en/v0.7.3/user_guide/suppoted_features.html", "https://docs.vllm.ai/projects/ascend/en/v0.11.0/user_guide/support_matrix/supported_features.html"), "documentation",
      (ex(True, "vllm-ascend 0.9.1", {"env.txt": npu_env()}), ex(False, "vllm-ascend version not shown", {"env.txt": npu_env().replace("vLLM Ascend Version: 0.9.1\n", "")})), question=Q.MTP_HEADS),
    R("MTP248", "sglang-npu-mxfp4-needs-950", W, "SGLang NPU --quantization mxfp4 on an NPU that is not Ascend 950",
      "SGLang on Ascend (0.5.23 on): fires when the launch asks --quantization mxfp4, which SGLang's NPU backend maps to an online dual-level MXFP4 W4A4 scheme that requires Ascend 950 (A5), and an NPU is another model.",
      "The scheme's matmul kernel exists only on Ascend 950.",
      "Use an msmodelslim W8A8 / W4A8 checkpoint on this NPU.",
      ("wheel:sglang-0.5.23:sglang/srt/layers/quantization/npu_mxfp4_w4a4.py:1-16", "wheel:sglang-0.5.23:sglang/srt/layers/quantization/__init__.py:107-116"), "code",
      (ex(True, "910B3, SGLang 0.5.23, --quantization mxfp4", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "mxfp4")),
       ex(False, "910B3, SGLang 0.5.23, no quantization", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu"))), question=Q.FP4),
    R("MTP249", "launch-device-platform-mismatch", E, "The launch's --device names another platform than the machine's",
      "Fires when the launch's --device (npu, hip/rocm, cuda, cpu) names a platform the machine facts contradict (an npu launch on a ROCm machine).",
      "The engine cannot open a device of that kind: it stops at startup.",
      "Drop --device or set it to the machine's platform.",
      ("sglang/srt/server_args.py --device (cuda, xpu, hpu, npu, cpu)",), "code",
      (ex(True, "--device npu on an MI300X machine", {"env.txt": rocm_env()}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu")),
       ex(False, "--device npu on a 910B3 machine", {"env.txt": npu_env()}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu"))), question=Q.STARTS),
)


def preflight_rules() -> tuple[Rule, ...]:
    """Every preflight rule, sorted by id: those declared here and those each engine declares for its own kernels, with
    the examples engines lend to the rules declared here (:func:`mtp_audit.report.rules.analyzer_rules`)."""
    return tuple(_by_id().values())


def rule_by_id(rule_id: str) -> Rule:
    """The preflight rule ``rule_id`` (``"MTP228"``), wherever it is declared.

    Raises:
        KeyError: no preflight rule of that id.
    """
    return _by_id()[rule_id]


@functools.cache
def _by_id() -> dict[str, Rule]:
    from mtp_audit.report.rules import analyzer_rules

    return {r.id: r for r in sorted(analyzer_rules("preflight"), key=lambda r: r.id)}
