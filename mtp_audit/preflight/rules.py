"""Preflight rules MTP200-MTP232 (NVIDIA) and MTP236-MTP237, MTP240-MTP249 (AMD ROCm, Ascend, Intel XPU, Gaudi, CPU-only machines): documentation, sources and runnable examples.

The checks live in :mod:`mtp_audit.preflight.analyze`; each rule here names the candidate rule of
``../shared/research/blackwell_fp4.md`` §10 (R01-R35) it implements. Examples are environment dumps
(``env.txt``, sglang check_env or vllm collect-env format) or stored facts (``facts.json``) plus launch-command args.
Rules whose meaning holds for both engines name each engine's semantics; the finding's message and fix name only the
engine the verdict is for (:mod:`mtp_audit.preflight.engine`). MTP231/MTP232 are vLLM-only.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mtp_audit.report import Severity
from mtp_audit.report.questions import FP4, MTP_HEADS, STACK, STARTS
from mtp_audit.report.rules import Example, Rule

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
# Maintainers' research notes behind these sources (not shipped; user-facing sources cite the
# public reports, code and files those notes name): ../shared/research/blackwell_fp4.md

B200 = ("NVIDIA B200", "10.0")
H200 = ("NVIDIA H200", "9.0")
PRO6000 = ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
GB10 = ("NVIDIA GB10", "12.1")

SG = ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "modelopt_fp4")


def env(gpu: tuple[str, str] = PRO6000, *, n: int = 8, torch: str = "2.9.1+cu130", sglang: str = "0.5.9",
        kernel: tuple[str, str] = ("sgl_kernel", "0.3.21"), flashinfer: str = "0.6.8", driver: str = "580.95.05",
        nvcc: str = "13.0", cubin: str | None = None, jit: str = "Module Not Found") -> str:
    """A ``python3 -m sglang.check_env`` dump in the real format (gh:sgl-project/sglang#24834)."""
    ids = ",".join(str(i) for i in range(n))
    nv = f"Cuda compilation tools, release {nvcc}, V{nvcc}.88" if nvcc else "Not Available"
    return (f"Python: 3.12.3 (main, Jan 22 2026, 20:57:42) [GCC 13.3.0]\nCUDA available: True\nGPU {ids}: {gpu[0]}\n"
            f"GPU {ids} Compute Capability: {gpu[1]}\nCUDA_HOME: /usr/local/cuda\nNVCC: {nv}\nCUDA Driver Version: {driver}\n"
            f"PyTorch: {torch}\nsglang: {sglang}\n{kernel[0]}: {kernel[1]}\nflashinfer_python: {flashinfer}\n"
            f"flashinfer_cubin: {cubin or flashinfer}\nflashinfer_jit_cache: {jit}\ntriton: 3.5.1\nvllm: Module Not Found\n")


def vllm_env(gpu: tuple[str, str] = H200, *, n: int = 8, vllm: str = "0.20.0", torch: str = "2.10.0+cu129", torch_cuda: str = "12.9",
             driver: str = "580.95.05", flashinfer: str = "0.6.8", env_vars: dict[str, str] | None = None) -> str:
    """A ``vllm collect-env`` dump in the real boxed format (wheel:vllm-0.20.0:vllm/collect_env.py:822-875; the CUDA
    section as in gh:vllm-project/vllm#57932), with its ``Environment Variables`` section."""
    gpus = "\n".join(f"GPU {i}: {gpu[0]}" for i in range(n))
    envs = "\n".join(f"{k}={v}" for k, v in (env_vars or {}).items())
    return (f"==============================\n       PyTorch Info\n==============================\nPyTorch version              : {torch}\n"
            f"Is debug build               : False\nCUDA used to build PyTorch   : {torch_cuda}\n\n"
            "==============================\n       CUDA / GPU Info\n==============================\nIs CUDA available            : True\n"
            f"CUDA runtime version         : {torch_cuda}\nGPU models and configuration :\n{gpus}\n\nNvidia driver version        : {driver}\n\n"
            f"==============================\nVersions of relevant libraries\n==============================\n[pip3] flashinfer-python=={flashinfer}\n"
            f"[pip3] torch=={torch}\n[conda] Could not collect\n\n==============================\n         vLLM Info\n==============================\n"
            f"ROCM Version                 : Could not collect\nvLLM Version                 : {vllm}\nvLLM Build Flags:\n  CUDA Archs: Not Set; ROCm: Disabled\n\n"
            f"==============================\n     Environment Variables\n==============================\n{envs}\n")


VL = ("vllm", "serve", "m", "--quantization", "modelopt_fp4")


def rocm_env(gpu: str = "AMD Instinct MI300X (gfx942:sramecc+:xnack-)", *, n: int = 8, vllm: str = "0.20.0", torch: str = "2.9.0+rocm7.0",
             rocm: str = "7.0.51831-a3e329ad8", env_vars: dict[str, str] | None = None) -> str:
    """A ``vllm collect-env`` dump of a ROCm machine in the real format (ROCm lines as in gh:vllm-project/vllm#51964 and
    gh:vllm-project/vllm#7951; one ``GPUn`` column per GPU in the GPU Topology, as ``rocm-smi --showtopo`` prints)."""
    topo = "       " + " ".join(f"GPU{i}" for i in range(n))
    envs = "\n".join(f"{k}={v}" for k, v in (env_vars or {}).items())
    return (f"==============================\n       PyTorch Info\n==============================\nPyTorch version              : {torch}\n"
            f"Is debug build               : False\nCUDA used to build PyTorch   : N/A\nROCM used to build PyTorch   : {rocm}\n\n"
            "==============================\n       CUDA / GPU Info\n==============================\nIs CUDA available            : True\n"
            f"CUDA runtime version         : Could not collect\nGPU models and configuration : {gpu}\nNvidia driver version        : Could not collect\n"
            f"HIP runtime version          : {rocm}\n\n==============================\n         vLLM Info\n==============================\n"
            f"ROCM Version                 : {rocm}\nvLLM Version                 : {vllm}\nGPU Topology:\n{topo}\n\n"
            f"==============================\n     Environment Variables\n==============================\n{envs}\n")


def npu_env(npu: str = "910B3", *, n: int = 8, vllm: str = "0.9.1", vllm_ascend: str = "0.9.1", cann: str = "8.1.RC1") -> str:
    """vllm-ascend's collect_env output in the real format (vllm-project/vllm-ascend collect_env.py env_info_fmt; the
    npu-smi table as in gh:vllm-project/vllm-ascend#750)."""
    rows = "".join(f"| {i}     {npu:<20}| OK            | 94.2        41                0    / 0             |\n"
                   f"| 0                         | 0000:C{i}:00.0  | 0           0    / 0          3335 / 65536         |\n"
                   "+===========================+===============+====================================================+\n" for i in range(n))
    return ("PyTorch version: 2.5.1\nIs debug build: False\n\nVersions of relevant libraries:\n[pip3] torch==2.5.1\n[pip3] torch-npu==2.5.1\n"
            f"vLLM Version: {vllm}\nvLLM Ascend Version: {vllm_ascend}\n\nENV Variables:\nASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n\nNPU:\n"
            "+------------------------------------------------------------------------------------------------+\n"
            "| npu-smi 24.1.0                   Version: 24.1.0                                               |\n"
            "+---------------------------+---------------+----------------------------------------------------+\n"
            "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n"
            "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n"
            "+===========================+===============+====================================================+\n"
            + rows + "\nCANN:\npackage_name=Ascend-cann-toolkit\nversion=" + cann + "\ninnerversion=V100R001C21\n")


MI355 = "AMD Instinct MI355X (gfx950:sramecc+:xnack-)"
VMX = ("vllm", "serve", "m", "--quantization", "mxfp4")


def xpu_env(gpu: str = "Intel(R) Data Center GPU Max 1550", *, n: int = 4, vllm: str = "0.33.0") -> str:
    """torch collect_env's XPU section in the real format (pytorch/pytorch#137846: ``Is XPU available``, ``Intel GPU
    models onboard`` / ``detected``), with a ``vLLM Version`` line as ``vllm collect-env`` prints it."""
    onboard = "".join(f"* {gpu}\n" for _ in range(n))
    detected = "".join(f"* [{i}] _XpuDeviceProperties(name='{gpu}', platform_name='Intel(R) oneAPI Unified Runtime over Level-Zero', "
                       "type='gpu', driver_version='1.6.31294+21', total_memory=65536MB, max_compute_units=512)\n" for i in range(n))
    return ("PyTorch version: 2.8.0+xpu\nIs debug build: False\nCUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n\n"
            "Is CUDA available: False\nCUDA runtime version: No CUDA\nGPU models and configuration: No CUDA\nIs XPU available: True\n"
            "XPU used to build PyTorch: 20250101\nIntel GPU driver version:\n* intel_opencl: 24.39.31294.21-1032~22.04\n"
            f"Intel GPU models onboard:\n{onboard}Intel GPU models detected:\n{detected}vLLM Version: {vllm}\n")


def hl_smi(n: int = 8, name: str = "HL-225") -> str:
    """``hl-smi`` in the real format (the table of ray-project/ray doc/source/serve/tutorials/intel-gaudi-inference.md)."""
    rows = "".join(f"|   {i}  {name:<16}    N/A  | 0000:9{i}:00.0     N/A |                   0  |\n"
                   "| N/A   22C   N/A  96W /  600W  |   768MiB /  98304MiB |     0%            0% |\n"
                   "|-------------------------------+----------------------+----------------------+\n" for i in range(n))
    return ("+-----------------------------------------------------------------------------+\n"
            "| HL-SMI Version:                              hl-1.20.0-fw-58.1.1.1          |\n"
            "| Driver Version:                                     1.19.1-6f47ddd          |\n"
            "|-------------------------------+----------------------+----------------------+\n"
            "| AIP  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncor-Events|\n"
            "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | AIP-Util  Compute M. |\n"
            "|===============================+======================+======================|\n" + rows
            + "| Compute Processes:                                               AIP Memory |\n")


def facts_json(gpu: tuple[str, str] = PRO6000, *, n: int = 8, torch: str = "2.12.0+cu130", torch_cuda: str = "13.0", sglang: str = "0.5.9",
               packages: dict[str, str] | None = None, binaries: dict[str, list[str]] | None = None, driver: str = "580.95.05",
               cuda_driver: str = "13.0", nvcc: str = "13.0", env_vars: dict[str, str] | None = None, platform: str = "linux",
               memory: int | None = 102_641_467_392) -> str:
    """A stored-facts document (the ``--save-facts`` format) for examples that need cuDNN versions or SM targets."""
    from mtp_audit.preflight.facts import BinaryFacts, Fact, GpuFacts, MachineFacts

    maj, mnr = (int(x) for x in gpu[1].split("."))
    pk = {"sglang": sglang, "torch": torch, "sgl-kernel": "0.3.21", "flashinfer-python": "0.6.8", "flashinfer-cubin": "0.6.8",
          "nvidia-cudnn-cu13": "9.19.0.56", "nvidia-cudnn-frontend": "1.16.0"}
    pk.update(packages or {})
    m = MachineFacts(
        origin="facts-file",
        gpus=tuple(GpuFacts(i, Fact.of(gpu[0], "example"), Fact.of((maj, mnr), "example"),
                            Fact.of(memory, "example") if memory else Fact.absent("nvidia-smi reports memory as 'Not Supported' (unified memory on GB10)"))
                   for i in range(n)),
        gpu_list=Fact.of(n, "example"), driver_version=Fact.of(driver, "example"), cuda_driver_version=Fact.of(cuda_driver, "example"),
        toolkit=Fact.of(nvcc, "example") if nvcc else Fact.absent("nvcc not found (checked $CUDA_HOME, $CUDA_PATH, PATH, /usr/local/cuda)"),
        torch_version=Fact.of(torch, "example"), torch_cuda=Fact.of(torch_cuda, "example"),
        packages={k: (Fact.of(v, "example") if v else Fact.absent("not installed")) for k, v in pk.items()},
        binaries=tuple(BinaryFacts(p.split(":")[0], p.split(":")[1], Fact.of(tuple(t), "example"), Fact.of((), "example")) for p, t in (binaries or {}).items()),
        env=env_vars or {}, platform=Fact.of(platform, "example"))
    return json.dumps(m.to_dict(), indent=1)


def _ex(fires: bool, note: str, files: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Example:
    return Example(fires=fires, files=files or {"env.txt": env()}, args=args, note=note)


SM120_KERNEL = {"sgl-kernel:sgl_kernel/sm100/common_ops.abi3.so": ["sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a"]}
INCIDENT_ARGS = SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN", "--tp", "8")


#: A cut-down ``facts["sglang"]`` of SGLang 0.5.9 (choices and locations from wheel:sglang-0.5.9:sglang/srt/server_args.py).
EXAMPLE_SGLANG_FACTS: dict[str, Any] = {"version": "0.5.9", "cli_arguments": {
    "--model-path": {"choices": None, "default": None, "location": "sglang/srt/server_args.py:2894", "aliases": ["--model"]},
    "--quantization": {"choices": ["modelopt_fp4", "fp8", "mxfp4"], "default": None, "location": "sglang/srt/server_args.py:3064", "aliases": []},
    "--fp4-gemm-backend": {"choices": ["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"], "default": "flashinfer_cutlass",
                           "location": "sglang/srt/server_args.py:3903", "aliases": []},
    "--moe-runner-backend": {"choices": ["auto", "cutlass", "flashinfer_cutlass", "flashinfer_trtllm", "triton"], "default": "auto",
                             "location": "sglang/srt/server_args.py:4093", "aliases": []}}}


def R(id: str, name: str, sev: Severity, summary: str, what: str, why: str, fix: str, sources: tuple[str, ...], basis: str, examples: tuple[Example, ...]) -> Rule:
    return Rule(id, name, "preflight", sev, summary, what, why, fix, sources, basis, examples)


RULES: tuple[Rule, ...] = (
    R("MTP200", "no-native-fp4", E, "The GPU has no FP4 tensor cores (compute capability below 10.0): native FP4 kernels refuse it unless the engine falls back to W4A16",
      "SGLang: flags GPUs of compute capability < 10.0 (Hopper H100/H200, Ada, Ampere) when FP4 is intended (bare preflight, an FP4 --quantization or an FP4 checkpoint), unless the launch already selects the Marlin W4A16 fallback; on SGLang >= 0.5.13 the message names the Marlin W4A16 fallback and its cost; with the SGLang version unknown it is a warning naming both cases (>= 0.5.13 falls back, older refuses the GPU). vLLM falls back to Marlin W4A16 on its own (MTP201), so for vLLM this fires only where vLLM has no fallback: vLLM <= 0.8.5, or a GPU below Marlin's compute capability 7.5.",
      "FP4 MMA instructions exist only on SM100/SM103/SM110 (tcgen05) and SM120/SM121 (mma.sync kind::mxf4nvf4). SGLang's native NVFP4 GEMMs refuse SM90 ('ModelOpt NVFP4 native dense GEMM backends require SM100+'); vLLM 0.8.5 raises 'Current platform does not support NVFP4 quantization. Please use Blackwell and above.'",
      "Use a Blackwell GPU, or run weight-only: SGLang >= 0.5.13 --fp4-gemm-backend marlin --moe-runner-backend marlin; vLLM >= 0.9.2 does it by itself (W4A16, BF16 math).",
      ("wheel:sglang-0.5.23:sglang/srt/layers/quantization/modelopt_quant.py", "wheel:vllm-0.8.5:vllm/model_executor/layers/quantization/modelopt.py:265-268",
       "wheel:vllm-0.33.0:vllm/model_executor/kernels/linear/nvfp4/marlin.py"), "code",
      (_ex(True, "H200 with an NVFP4 launch on SGLang 0.5.9 (no Marlin fallback)", {"env.txt": env(H200, torch="2.9.1+cu128")}, SG),
       _ex(True, "H200 with vLLM 0.8.5 (no Marlin NVFP4 fallback yet)", {"env.txt": vllm_env(vllm="0.8.5", torch="2.6.0+cu124", torch_cuda="12.4")}, VL),
       _ex(False, "B200: FP4 tensor cores present", {"env.txt": env(B200, torch="2.9.1+cu128")}, SG),
       _ex(False, "H200 with vLLM 0.20.0: it falls back to Marlin by itself (MTP201, a warning)", {"env.txt": vllm_env()}, VL))),
    R("MTP201", "marlin-w4a16-fallback", W, "NVFP4 runs as Marlin W4A16 on a GPU without FP4 tensor cores",
      "Fires when a GPU below SM100 will run an FP4 checkpoint through Marlin: SGLang >= 0.5.13 with its Marlin backends, or vLLM >= 0.9.2, which picks Marlin by itself when no FP4 kernel supports the GPU (no flag needed) and no explicit FP4 backend stops the load first (MTP231). The message gives the cost.",
      "Marlin dequantizes 4-bit weights to BF16 inside the GEMM: it works, but all math runs at BF16 tensor-core rate; FP4's compute advantage is gone and activations stay BF16.",
      "Accept the cost, or move the deployment to Blackwell for native NVFP4.",
      ("wheel:sglang-0.5.13:sglang/srt/layers/quantization/fp4_utils.py",
       "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:260-268 and nvfp4/marlin.py:35", "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:161-169"), "code",
      (_ex(True, "H200 on SGLang 0.5.16, auto resolves to marlin", {"env.txt": env(H200, sglang="0.5.16", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.3"))}, SG),
       _ex(True, "H200 collect-env of vLLM 0.20.0 with an NVFP4 launch", {"env.txt": vllm_env()}, VL),
       _ex(False, "H200 on SGLang 0.5.9: no Marlin NVFP4 path (MTP200 fires instead)", {"env.txt": env(H200, torch="2.9.1+cu128")}, SG),
       _ex(False, "B200 on vLLM 0.20.0: native NVFP4", {"env.txt": vllm_env(B200)}, VL))),
    R("MTP202", "mixed-compute-capabilities", E, "GPUs of different compute capability in one server",
      "Fires when the GPUs listed have more than one compute capability.",
      "SGLang reads device 0's SM (get_device_sm) and chooses FP4 backends for it; vLLM asks current_platform.get_device_capability(), device 0 by default; other GPUs may not run them.",
      "Use identical GPUs, or restrict CUDA_VISIBLE_DEVICES to one kind.",
      ("sglang/srt/utils/common.py get_device_sm (wheel:sglang-0.5.23)", "wheel:vllm-0.20.0:vllm/platforms/cuda.py:592"), "code",
      (_ex(True, "an H200 and a B200 in one dump", {"env.txt": env(B200, n=1).replace("GPU 0: NVIDIA B200\nGPU 0 Compute Capability: 10.0", "GPU 0: NVIDIA B200\nGPU 1: NVIDIA H200\nGPU 0 Compute Capability: 10.0\nGPU 1 Compute Capability: 9.0")}),
       _ex(False, "eight identical RTX PRO 6000")),),
    R("MTP203", "torch-cuda-too-old-for-blackwell", E, "torch is built for a CUDA older than 12.8 on a Blackwell GPU",
      "Fires when torch's CUDA build (torch/version.py, the +cuXXX tag or collect_env's 'CUDA used to build PyTorch') is below 12.8 and a GPU has compute capability >= 10.0.",
      "CUDA 12.6 builds carry kernels up to sm_90 only: torch warns 'sm_120 is not compatible with the current PyTorch installation' and every kernel fails with 'no kernel image is available'.",
      "Install a cu128+ torch build (PyPI default from torch 2.8) matching your sglang/sgl-kernel pin.",
      ("gh:xorbitsai/inference#3866", "https://github.com/pytorch/pytorch/issues/150733"), "code",
      (_ex(True, "RTX 5090 with torch 2.6.0+cu126", {"env.txt": env(RTX5090, n=1, torch="2.6.0+cu126")}),
       _ex(False, "RTX 5090 with torch 2.9.1+cu128", {"env.txt": env(RTX5090, n=1, torch="2.9.1+cu128")}))),
    R("MTP204", "gb10-torch-capability-warning", INFO, "torch's capability-range warning on GB10 is cosmetic",
      "Fires on GB10 (12.1) with a torch built for CUDA 12.8/12.9, which prints a '(8.0) - (12.0)' range warning.",
      "The warning looks fatal but SM121 runs sm_120 code; knowing that saves a reinstall.",
      "Nothing to do (a cu130 torch does not print it).",
      ("gh:sgl-project/sglang#13198", "https://discuss.pytorch.org/t/nvidia-dgx-spark-support/223677"), "bug report",
      (_ex(True, "GB10 with torch 2.9.1+cu129", {"env.txt": env(GB10, n=1, torch="2.9.1+cu129")}),
       _ex(False, "GB10 with torch 2.9.1+cu130", {"env.txt": env(GB10, n=1, torch="2.9.1+cu130")}))),
    R("MTP205", "driver-older-than-cuda-stack", E, "The driver is older than the CUDA the installed stack needs",
      "Fires when the driver version is below the CUDA toolkit's documented minimum for torch's CUDA build or for CUDA-13 components (sglang-kernel 0.4.x, flashinfer-jit-cache +cu13x), or when the driver's CUDA version is lower.",
      "User-space CUDA newer than the driver fails at the first CUDA call ('CUDA driver version is insufficient').",
      "Upgrade the driver (>= 580.65.06 for CUDA 13.0), install cuda-compat, or use builds for the driver's CUDA.",
      ("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (driver table)",), "documentation",
      (_ex(True, "torch cu130 on driver 570.172.08", {"env.txt": env(B200, torch="2.9.1+cu130", driver="570.172.08")}),
       _ex(False, "torch cu130 on driver 580.95.05", {"env.txt": env(B200, torch="2.9.1+cu130")}))),
    R("MTP206", "driver-too-old-for-blackwell", E, "The driver predates Blackwell support",
      "Fires when a Blackwell GPU (compute capability >= 10.0) runs a driver older than 570.26.",
      "Blackwell needs R570+; older drivers do not drive the GPU (or only without CUDA 12.8 features).",
      "Install driver >= 570.26 (>= 580.65.06 for CUDA 13 stacks).",
      ("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/",), "documentation",
      (_ex(True, "B200 on driver 560.35.03", {"env.txt": env(B200, torch="2.9.1+cu126", driver="560.35.03")}),
       _ex(False, "B200 on driver 570.172.08", {"env.txt": env(B200, torch="2.9.1+cu128", driver="570.172.08")}))),
    R("MTP207", "jit-nvcc-missing-or-old", E, "SGLang's JIT NVFP4 kernels need an nvcc that supports the GPU",
      "Fires for SGLang >= 0.5.10 with FP4 on a Blackwell GPU when nvcc is missing or older than the target needs (12.8 for sm_100a/sm_120a, 12.9 for sm_103a/sm_121a).",
      "From 0.5.10 the NVFP4 quant/GEMM/MoE kernels are compiled at first use with override_jit_cuda_arch(..., suffix='a'); without a suitable nvcc engine init fails.",
      "Install a CUDA toolkit >= the floor and set CUDA_HOME.",
      ("sglang/jit_kernel/nvfp4.py (wheel:sglang-0.5.10)", "gh:vllm-project/vllm#50705"), "code",
      (_ex(True, "GB10 with nvcc 12.8 on SGLang 0.5.12", {"env.txt": env(GB10, n=1, sglang="0.5.12", nvcc="12.8", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2.post2"), flashinfer="0.6.11.post1")}, SG + ("--moe-runner-backend", "flashinfer_cutlass")),
       _ex(False, "GB10 with nvcc 13.0", {"env.txt": env(GB10, n=1, sglang="0.5.12", nvcc="13.0", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2.post2"), flashinfer="0.6.11.post1")}, SG + ("--moe-runner-backend", "flashinfer_cutlass")))),
    R("MTP208", "kernel-binary-no-fp4-cubin", E, "The sgl-kernel binary has no usable kernel image for this GPU",
      "Reads the SM targets compiled into sgl-kernel / sglang-kernel shared objects (ELF fatbin) and fires when none loads on the GPU (an sm_120a cubin does not load on GB10 = 12.1), or when only plain (no a/f) cubins exist and SGLang <= 0.5.9 runs FP4 from them.",
      "A missing image fails with 'no kernel image is available for execution on the device' at the first RMSNorm; plain sm_120 FP4 code compiles to trap stubs or a software E2M1 path that produced NaN.",
      "Install a build containing the right target (sm_121a for GB10, e.g. +cu130 wheels) or rebuild with nvcc >= 12.8; verify with cuobjdump --list-elf.",
      ("gh:mmcdermott/MEDS_EIC_AR#163", "gh:vllm-project/vllm#37725", "sglang/kernels/jit/utils/arch.py (wheel:sglang-0.5.23)"), "code",
      (_ex(True, "GB10 with an sm_120a-only sgl-kernel", {"facts.json": facts_json(GB10, n=1, binaries=SM120_KERNEL, memory=None)}, SG),
       _ex(False, "RTX PRO 6000 with the same sgl-kernel", {"facts.json": facts_json(PRO6000, binaries=SM120_KERNEL, torch="2.9.1+cu130")}, SG))),
    R("MTP209", "kernel-wheel-torch-mismatch", E, "sgl-kernel / sglang is built for a different torch",
      "Fires when a kernel wheel's Requires-Dist torch pin (live) or the SGLang release's torch pin (matrix) differs from the installed torch version.",
      "sgl-kernel's compiled ops are ABI-bound to one torch version; a nightly torch (as in the incident) forces a from-source build.",
      "Install the pinned torch, or rebuild sgl-kernel from source against your torch with nvcc >= 12.8.",
      ("sglang / sglang-kernel wheel METADATA", "gh:mmcdermott/MEDS_EIC_AR#163"), "code",
      (_ex(True, "SGLang 0.5.9 (pins torch 2.9.1) with torch 2.12.0+cu130", {"env.txt": env(torch="2.12.0+cu130")}),
       _ex(False, "SGLang 0.5.9 with torch 2.9.1+cu130", {"env.txt": env(torch="2.9.1+cu130")}))),
    R("MTP210", "fp4-gemm-trtllm-needs-sm100", E, "--fp4-gemm-backend flashinfer_trtllm on a GPU that is not SM100/SM103",
      "Fires when the effective FP4 GEMM backend is flashinfer_trtllm and the GPU's major compute capability is not 10.",
      "flashinfer's trtllm FP4 GEMM lists only SM100/103(/107): 'mm_fp4 does not support backend 'trtllm' with capability 120'.",
      "Use --fp4-gemm-backend flashinfer_cudnn on SM120/SM121.",
      ("wheel:flashinfer-python-0.7.4:flashinfer/gemm/gemm_base.py _trtllm_gemm_fp4_requirement", "gh:flashinfer-ai/flashinfer#2577", "gh:sgl-project/sglang#35739"), "code",
      (_ex(True, "RTX PRO 6000 with --fp4-gemm-backend flashinfer_trtllm", None, SG + ("--fp4-gemm-backend", "flashinfer_trtllm")),
       _ex(False, "B200 with --fp4-gemm-backend flashinfer_trtllm", {"env.txt": env(B200, torch="2.9.1+cu130")}, SG + ("--fp4-gemm-backend", "flashinfer_trtllm")))),
    R("MTP211", "fp4-gemm-cutedsl-unsupported", E, "--fp4-gemm-backend flashinfer_cutedsl on an SM the installed flashinfer lacks",
      "Fires when the effective FP4 GEMM backend is flashinfer_cutedsl and the installed flashinfer's cute-dsl SM list lacks the GPU (SM12x before flashinfer 0.7.4, SM110 always).",
      "The CuTe-DSL FP4 GEMM is tcgen05-based (SM10x); SM12x support came later and explicit-only.",
      "Use --fp4-gemm-backend flashinfer_cudnn.",
      ("wheel:flashinfer-python-0.6.8 and 0.7.4 gemm_base.py",), "code",
      (_ex(True, "RTX PRO 6000, flashinfer 0.6.8, flashinfer_cutedsl", {"env.txt": env(sglang="0.5.12", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2.post2"))}, SG + ("--fp4-gemm-backend", "flashinfer_cutedsl")),
       _ex(False, "B200, flashinfer_cutedsl", {"env.txt": env(B200, sglang="0.5.12", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2.post2"))}, SG + ("--fp4-gemm-backend", "flashinfer_cutedsl")))),
    R("MTP212", "fp4-gemm-flashinfer-cutlass-sm12x", W, "flashinfer CUTLASS dense FP4 GEMM on SM120/SM121 has NaN reports",
      "Fires when the effective FP4 GEMM backend on SM12x is flashinfer_cutlass (explicit, or 'auto' on SGLang <= 0.5.9 / >= 0.5.13); an error for known-bad flashinfer releases (<= 0.6.3, 0.6.12).",
      "NaN rows in dense MLP layers under heterogeneous batches on SM120 (sgl-project/sglang#20047), all-zero outputs with flashinfer 0.6.3, M-dependent zeros with 0.6.12. The incident produced correct output only with flashinfer_cudnn.",
      "--fp4-gemm-backend flashinfer_cudnn (with --moe-runner-backend flashinfer_cutlass).",
      ("gh:sgl-project/sglang#20047", "gh:flashinfer-ai/flashinfer#2577", "gh:flashinfer-ai/flashinfer#3398"), "bug report",
      (_ex(True, "RTX PRO 6000 on SGLang 0.5.9 with the default backend", None, SG),
       _ex(False, "the incident's flags", {"facts.json": facts_json(binaries=SM120_KERNEL, torch="2.9.1+cu130")}, INCIDENT_ARGS))),
    R("MTP213", "cudnn-fp4-requirements", E, "flashinfer_cudnn FP4 GEMM without a new enough cuDNN",
      "Fires when the effective FP4 GEMM backend is flashinfer_cudnn and the cuDNN backend (nvidia-cudnn-cu12/13) is below 9.10.2 or nvidia-cudnn-frontend below 1.13 (or not installed).",
      "flashinfer's _check_cudnn_fp4_availability refuses the cudnn path below these versions.",
      "pip install 'nvidia-cudnn-cu13>=9.10.2' 'nvidia-cudnn-frontend>=1.13'.",
      ("wheel:flashinfer-python-0.7.4:flashinfer/gemm/gemm_base.py _check_cudnn_fp4_availability",), "code",
      (_ex(True, "cuDNN 9.7.1 with flashinfer_cudnn", {"facts.json": facts_json(packages={"nvidia-cudnn-cu13": "9.7.1.26"}, binaries=SM120_KERNEL, torch="2.9.1+cu130")}, INCIDENT_ARGS),
       _ex(False, "cuDNN 9.19 / frontend 1.16", {"facts.json": facts_json(binaries=SM120_KERNEL, torch="2.9.1+cu130")}, INCIDENT_ARGS))),
    R("MTP214", "cudnn-mxfp4-sm12x", E, "cuDNN older than 9.14 has no MXFP4 GEMM on SM120/SM121",
      "Fires for an MXFP4 checkpoint or --quantization mxfp4 with flashinfer_cudnn on SM12x and cuDNN < 9.14.",
      "flashinfer raises CUDNN_FP4_MXFP4_SM120_CUDNN_VERSION_ERROR.",
      "pip install 'nvidia-cudnn-cu13>=9.14'.",
      ("wheel:flashinfer-python-0.7.4:flashinfer/gemm/gemm_base.py",), "code",
      (_ex(True, "MXFP4 with cuDNN 9.12", {"facts.json": facts_json(packages={"nvidia-cudnn-cu13": "9.12.0.46"}, torch="2.9.1+cu130")}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4", "--fp4-gemm-backend", "flashinfer_cudnn")),
       _ex(False, "MXFP4 with cuDNN 9.19", {"facts.json": facts_json(torch="2.9.1+cu130")}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4", "--fp4-gemm-backend", "flashinfer_cudnn")))),
    R("MTP215", "moe-backend-sm100-only", E, "An SM100-only MoE runner backend on a non-SM100 GPU",
      "Fires when --moe-runner-backend is flashinfer_trtllm, flashinfer_trtllm_routed, flashinfer_cutedsl, flashinfer_megamoe or experimental_sgl_trtllm and the GPU is not SM10x.",
      "trtllm-gen / CuTe-DSL MoE kernels use tcgen05/TMEM, which SM12x lacks.",
      "--moe-runner-backend flashinfer_cutlass.",
      ("wheel:sglang-0.5.23:sglang/srt/arg_groups/overrides.py",), "code",
      (_ex(True, "RTX PRO 6000 with flashinfer_trtllm MoE", None, SG + ("--moe-runner-backend", "flashinfer_trtllm")),
       _ex(False, "RTX PRO 6000 with flashinfer_cutlass MoE", None, SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn")))),
    R("MTP216", "moe-auto-resolves-to-trtllm", E, "SGLang's 'auto' MoE runner picks an SM100-only kernel on SM11x/SM12x",
      "Fires for NVFP4 with --moe-runner-backend auto (or unset) on compute capability 11.x/12.x: on SGLang 0.5.10-0.5.12 "
      "always, on 0.5.13 and later when --quantization is not modelopt_fp4 (SGLang moves auto to flashinfer_cutlass on "
      "SM120 only for that flag; the checkpoint's own quantization config is read later).",
      "create_moe_runner() sends every device with compute capability >= 10.0 to FLASHINFER_TRTLLM, whose NVFP4 path is SM100-only.",
      "--moe-runner-backend flashinfer_cutlass; on SGLang >= 0.5.13 also --quantization modelopt_fp4.",
      ("wheel:sglang-0.5.12 modelopt_quant.py create_moe_runner", "gh:sgl-project/sglang#39807",
       "wheel:sglang-0.5.23 sglang/srt/arg_groups/overrides.py:1513-1518, layers/quantization/modelopt_quant.py:3117-3123"), "code",
      (_ex(True, "RTX PRO 6000 on SGLang 0.5.11, MoE runner unset", {"env.txt": env(sglang="0.5.11", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2"))}, SG),
       _ex(False, "same with --moe-runner-backend flashinfer_cutlass", {"env.txt": env(sglang="0.5.11", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.2"))}, SG + ("--moe-runner-backend", "flashinfer_cutlass")))),
    R("MTP217", "moe-cutlass-nvfp4", E, "--moe-runner-backend cutlass with NVFP4 on SGLang >= 0.5.13",
      "Fires for an NVFP4 launch with --moe-runner-backend cutlass on SGLang >= 0.5.13.",
      "SGLang raises NotImplementedError('moe_runner_backend=cutlass is not supported for NVFP4 MoE').",
      "--moe-runner-backend flashinfer_cutlass.",
      ("wheel:sglang-0.5.23:sglang/srt/layers/quantization/modelopt_quant.py",), "code",
      (_ex(True, "SGLang 0.5.16 with cutlass MoE", {"env.txt": env(B200, sglang="0.5.16", torch="2.11.0+cu130", kernel=("sglang-kernel", "0.4.3"))}, SG + ("--moe-runner-backend", "cutlass")),
       _ex(False, "SGLang 0.5.9 with cutlass MoE (still supported there)", {"env.txt": env(B200, torch="2.9.1+cu130")}, SG + ("--moe-runner-backend", "cutlass")))),
    R("MTP218", "nvfp4-online-sm100-only", E, "--quantization nvfp4_online on a GPU that is not SM100/SM103",
      "Fires for --quantization nvfp4_online when a GPU's major compute capability is not 10.",
      "SGLang: 'supported only on NVIDIA Blackwell SM100/SM103 GPUs'.",
      "Use a pre-quantized NVFP4 checkpoint with --quantization modelopt_fp4.",
      ("wheel:sglang-0.5.23:sglang/srt/arg_groups/overrides.py",), "code",
      (_ex(True, "RTX PRO 6000 with nvfp4_online", None, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "nvfp4_online")),
       _ex(False, "B200 with nvfp4_online", {"env.txt": env(B200, torch="2.9.1+cu130")}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "nvfp4_online")))),
    R("MTP219", "flashinfer-cutlass-moe-old-flashinfer-sm12x", W, "flashinfer < 0.6.8 CUTLASS FP4 MoE on SM120/SM121",
      "Fires when the effective MoE runner on SM12x is flashinfer_cutlass and flashinfer-python is older than 0.6.8 (vendored CUTLASS 4.2.1).",
      "SM120 grouped block-scaled GEMM tactics fail init (shared-memory overflow) or return garbage; GB10 crashes in CUDA-graph capture; fixed by CUTLASS 4.4.2 in flashinfer 0.6.8.",
      "pip install 'flashinfer-python>=0.6.8' with matching flashinfer-cubin / -jit-cache.",
      ("gh:flashinfer-ai/flashinfer#2723", "gh:NVIDIA/cutlass#3096", "gh:flashinfer-ai/flashinfer#2776", "gh:flashinfer-ai/flashinfer#2798"), "bug report",
      (_ex(True, "RTX PRO 6000, flashinfer 0.6.3", {"env.txt": env(flashinfer="0.6.3")}, SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn")),
       _ex(False, "RTX PRO 6000, flashinfer 0.6.8", None, SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn")))),
    R("MTP220", "trtllm-moe-nan-flashinfer-range", E, "TRTLLM NVFP4 MoE NaN regression in flashinfer 0.6.16rc5-0.6.17",
      "Fires on SM10x when the effective MoE runner is flashinfer_trtllm(_routed) and flashinfer-python is in [0.6.16rc5, 0.6.18).",
      "The tile-192 path emits NaNs (GSM8K 0.000).",
      "flashinfer-python >= 0.6.18 (or <= 0.6.16rc4), or --moe-runner-backend flashinfer_cutlass.",
      ("gh:flashinfer-ai/flashinfer#4486", "gh:sgl-project/sglang#34629"), "bug report",
      (_ex(True, "B200, flashinfer 0.6.17, auto MoE on SGLang 0.5.20", {"env.txt": env(B200, sglang="0.5.20", torch="2.13.0+cu130", kernel=("sglang-kernel", "0.4.8"), flashinfer="0.6.17")}, SG),
       _ex(False, "B200, flashinfer 0.6.18", {"env.txt": env(B200, sglang="0.5.20", torch="2.13.0+cu130", kernel=("sglang-kernel", "0.4.8"), flashinfer="0.6.18")}, SG))),
    R("MTP221", "flashinfer-version-mismatch", W, "flashinfer-python, -cubin and -jit-cache versions differ",
      "Fires when the base versions of flashinfer-python, flashinfer-cubin and flashinfer-jit-cache are not all equal.",
      "Mismatched cubins / prebuilt modules load against a different Python API (flashinfer collect_env prints MISMATCH).",
      "Install one version of all three.",
      ("gh:flashinfer-ai/flashinfer#4549",), "code",
      (_ex(True, "flashinfer-python 0.6.8 with flashinfer-cubin 0.6.3", {"env.txt": env(cubin="0.6.3")}),
       _ex(False, "all 0.6.8", {"env.txt": env(jit="0.6.8+cu130")}))),
    R("MTP222", "fp8-kv-trtllm-mha-sm12x", E, "FP8 KV cache with trtllm_mha attention on SM120/SM121",
      "Fires on SM12x for --attention-backend trtllm_mha with --kv-cache-dtype fp8* or a checkpoint whose kv_cache_quant_algo is FP8.",
      "There is no FP8 prefill FMHA for SM120/SM121; the server dies in CUDA-graph capture.",
      "--attention-backend flashinfer (or triton), or --kv-cache-dtype bf16.",
      ("gh:sgl-project/sglang#39807",), "bug report",
      (_ex(True, "RTX PRO 6000, trtllm_mha + fp8_e4m3", None, SG + ("--attention-backend", "trtllm_mha", "--kv-cache-dtype", "fp8_e4m3")),
       _ex(False, "RTX PRO 6000, flashinfer attention + fp8_e4m3", None, SG + ("--attention-backend", "flashinfer", "--kv-cache-dtype", "fp8_e4m3")))),
    R("MTP223", "pdmux-unsupported-on-blackwell", E, "--enable-pdmux on Blackwell",
      "Fires for --enable-pdmux on compute capability >= 10.0.",
      "pdmux_context.get_arch_constraints maps only 6.x-9.x and raises 'Unsupported compute capability: 12.0'.",
      "Drop --enable-pdmux.",
      ("gh:sgl-project/sglang#32933",), "bug report",
      (_ex(True, "RTX PRO 6000 with --enable-pdmux", None, SG + ("--enable-pdmux",)),
       _ex(False, "RTX PRO 6000 without it", None, SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn")))),
    R("MTP224", "flashinfer-arch-list-plain-sm12x", E, "FLASHINFER_CUDA_ARCH_LIST with plain 12.0/12.1 on flashinfer <= 0.6.0",
      "Fires when FLASHINFER_CUDA_ARCH_LIST contains 12.0 or 12.1 without a/f and flashinfer-python <= 0.6.0 (which used it verbatim).",
      "FP4 code compiled for plain sm_120 traps or runs a software E2M1 path that gave NaN.",
      "export FLASHINFER_CUDA_ARCH_LIST='12.0a' (or '12.0f' with CUDA >= 12.9; GB10 '12.1a').",
      ("wheel:flashinfer-python-0.6.0 compilation_context.py", "gh:vllm-project/vllm#37725"), "code",
      (_ex(True, "FLASHINFER_CUDA_ARCH_LIST=12.0 with flashinfer 0.5.3", {"facts.json": facts_json(packages={"flashinfer-python": "0.5.3", "flashinfer-cubin": "0.5.3"}, env_vars={"FLASHINFER_CUDA_ARCH_LIST": "12.0"}, torch="2.9.1+cu130")}),
       _ex(False, "FLASHINFER_CUDA_ARCH_LIST=12.0a", {"facts.json": facts_json(packages={"flashinfer-python": "0.5.3", "flashinfer-cubin": "0.5.3"}, env_vars={"FLASHINFER_CUDA_ARCH_LIST": "12.0a"}, torch="2.9.1+cu130")}))),
    R("MTP225", "gpu-memory-not-reported", INFO, "GPU memory is reported as 'Not Supported' (unified memory)",
      "Fires when nvidia-smi/NVML reports the GPU's memory as 'Not Supported' (GB10).",
      "Memory-fraction defaults sized from GPU memory overcommit unified memory.",
      "Size the cache down: SGLang --mem-fraction-static, vLLM --gpu-memory-utilization <= 0.85 (the finding names only the engine the verdict is for).",
      ("gh:NVIDIA/k8s-device-plugin#1482", "gh:vllm-project/recipes#632"), "bug report",
      (_ex(True, "GB10 nvidia-smi", {"env.txt": "+---+\n| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n|=====|\n|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |\n| N/A   40C    P8              4W /  N/A  | Not Supported          |      0%      Default |\n"}),
       _ex(False, "B200 nvidia-smi with memory", {"env.txt": "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n|   0  NVIDIA B200                    On  |   00000000:63:00.0 Off |                    0 |\n| N/A   26C    P0            139W / 1000W |       0MiB / 183359MiB |      0%      Default |\n"}))),
    R("MTP226", "launch-flag-value-not-accepted", E, "A backend flag (or value) this engine version does not accept",
      "SGLang: fires when the value of --fp4-gemm-backend, --moe-runner-backend or --quantization is not among the SGLang version's argparse choices (from the sglang analyzer, else the matrix's per-version rows read from each wheel), or when --fp4-gemm-backend is given to SGLang < 0.5.8, which has no such flag. vLLM: fires for --moe-backend on vLLM < 0.17.0 or --linear-backend on vLLM < 0.22.0 (the flags do not exist there), or a value outside the version's MoEBackend / LinearBackend choices. The message lists the valid choices. It does not change the per-GPU MTP228 verdict.",
      "argparse stops the server with 'invalid choice' / 'unrecognized arguments' before the model loads.",
      "Use one of the listed choices for your version.",
      ("sglang/srt/server_args.py (<= 0.5.18) and sglang/srt/arg_groups/choices.py (>= 0.5.20) per wheel: FP4_GEMM_RUNNER_BACKEND_CHOICES, MOE_RUNNER_BACKEND_CHOICES, QUANTIZATION_CHOICES",
       "wheel:vllm-0.16.0/0.17.0:vllm/engine/arg_utils.py (--moe-backend from 0.17.0)", "wheel:vllm-0.21.0/0.22.0:vllm/engine/arg_utils.py (--linear-backend from 0.22.0, line 1447)",
       "wheel:vllm-0.20.0:vllm/config/kernel.py:108-120 MoEBackend"), "code",
      (_ex(True, "marlin on SGLang 0.5.9", None, SG + ("--fp4-gemm-backend", "marlin")),
       _ex(True, "--moe-backend on vLLM 0.14.0 (added in 0.17.0)", {"env.txt": vllm_env(vllm="0.14.0")}, VL + ("--moe-backend", "marlin")),
       _ex(True, "--moe-backend flashinfer_b12x on vLLM 0.20.0 (a choice from 0.22.0)", {"env.txt": vllm_env(PRO6000, vllm="0.20.0")}, VL + ("--moe-backend", "flashinfer_b12x")),
       _ex(False, "--moe-backend marlin on vLLM 0.20.0", {"env.txt": vllm_env()}, VL + ("--moe-backend", "marlin")),
       _ex(True, "--moe-runner-backend nonsense on SGLang 0.5.9", None, SG + ("--moe-runner-backend", "nonsense")),
       _ex(False, "flashinfer_cudnn on SGLang 0.5.9", None, SG + ("--fp4-gemm-backend", "flashinfer_cudnn")))),
    R("MTP227", "probe-fp4-gemm-wrong", E, "The --probe FP4 GEMM gave NaN/Inf or a wrong result",
      "With --probe on an FP4-capable GPU: fires when the tiny FP4 GEMM has NaN/Inf or differs from the BF16 reference beyond tolerance (error), or fails to run (warning).",
      "A backend that is wrong on a 128x128x128 GEMM will be wrong in the model.",
      "Switch the FP4 GEMM backend and re-run --probe.",
      ("mtp_audit/preflight/probe.py",), "code",
      (_ex(True, "probe result with NaN (stored facts + probe.json)", {"env.txt": env(), "probe.json": json.dumps({"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "cc": [12, 0], "ran": ["flashinfer mm_fp4(backend='cutlass')"], "results": [{"path": "flashinfer.mm_fp4[cutlass]", "status": "mismatch", "nan": 3, "inf": 0, "rel_error": None, "tolerance": 0.25}]})}),
       _ex(False, "probe result ok", {"env.txt": env(), "probe.json": json.dumps({"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "cc": [12, 0], "ran": ["flashinfer mm_fp4(backend='cudnn')"], "results": [{"path": "flashinfer.mm_fp4[cudnn]", "status": "ok", "nan": 0, "inf": 0, "rel_error": 0.09, "tolerance": 0.25}]})}))),
    R("MTP228", "native-fp4-verdict", INFO, "Per-GPU verdict: native FP4 capable, not capable or unknown",
      "Always reports whether native FP4 can run (capable), cannot (not capable, with the error rules that say why) or could not be told (unknown, with the missing fact): one finding per group of GPUs with the same name, compute capability and verdict, listing the GPU indices (GPUs 0-7), and the engine the verdict is for ('on vLLM 0.20.0', 'on SGLang (version unknown) (assumed)'); its evidence says where the engine came from and any hint that disagrees. A capable group has no fix; the others name the error findings and gaps to fix.",
      "It is the headline answer of the preflight; errors and gaps explain it.",
      "Fix the error findings named in the verdict, and the gaps of the same report.",
      ("mtp_audit/data/matrix.json: the capability matrix, every row with its public source (mtp-audit ships it)",), "code",
      (_ex(True, "any GPU gets a verdict"), _ex(False, "no GPU in the dump: no per-GPU verdict (a blocking gap instead)", {"env.txt": "PyTorch version: 2.9.1+cu128\nCUDA used to build PyTorch: 12.8\n"}))),
    R("MTP229", "wsl2-windows-sm12x", W, "SM12x FP4 on WSL2 / Windows",
      "Fires when the platform is WSL2 or Windows and a GPU is SM12x with FP4 intended.",
      "Most public SM120 FP4 reports on WSL2 needed extra patching of flashinfer/CUTLASS.",
      "Run on native Linux.",
      ("gh:flashinfer-ai/flashinfer#2723",), "bug report",
      (_ex(True, "WSL2 host", {"facts.json": facts_json(platform="wsl2", torch="2.9.1+cu130")}), _ex(False, "Linux host", {"facts.json": facts_json(torch="2.9.1+cu130")}))),
    R("MTP230", "launch-option-unknown", W, "An option the SGLang version does not have",
      "With the SGLang option table at hand (the sglang analyzer's cli_arguments: an installed sglang, or `mtp-audit launch --sglang`), fires for each --option of the launch that is neither an option string of that version nor a prefix of one. Without the table, options the preflight does not interpret are listed in a non-blocking gap. The full argparse check (prefixes, types, values) is `mtp-audit launch`.",
      "argparse stops the server with 'unrecognized arguments' before the model loads.",
      "Drop or respell the option; run mtp-audit launch --sglang <wheel|checkout> on the whole command.",
      ("sglang/srt/server_args.py prepare_server_args (argparse.ArgumentParser, allow_abbrev default True)", "docs/sglang.md cli_arguments"), "code",
      (_ex(True, "--bogus-flag on SGLang 0.5.9", {"env.txt": env(), "sglang_facts.json": json.dumps(EXAMPLE_SGLANG_FACTS)}, SG + ("--bogus-flag", "x")),
       _ex(False, "only known options (and an accepted prefix)", {"env.txt": env(), "sglang_facts.json": json.dumps(EXAMPLE_SGLANG_FACTS)}, SG + ("--fp4-gemm", "flashinfer_cudnn")))),
)

RULES = RULES + (
    R("MTP231", "vllm-fp4-backend-cannot-run", E, "An explicit vLLM FP4 backend that cannot run on this GPU",
      "vLLM only. Fires when the launch asks for an NVFP4 backend whose kernels do not run on the GPU's compute capability: --moe-backend (vLLM >= 0.17) flashinfer_trtllm / flashinfer_cutedsl off the SM100 family, flashinfer_cutlass / cutlass below SM100, flashinfer_b12x off SM12x; --linear-backend (vLLM >= 0.22) or VLLM_NVFP4_GEMM_BACKEND (0.11.1-0.23; from 0.22 only while --linear-backend is auto) cutlass / flashinfer_cutlass / flashinfer_cudnn below SM100, flashinfer_trtllm off SM100/SM103; VLLM_USE_FLASHINFER_MOE_FP4=1 (0.15-0.23) below SM100 or with VLLM_FLASHINFER_MOE_BACKEND=masked_gemm off SM100. Requirements are read from each kernel's is_supported / _supports_current_device in the vLLM wheel (matrix vllm.nvfp4_backend_sms).",
      "An explicit backend is not replaced by vLLM's fallback: the MoE oracle raises 'NvFp4 MoE backend ... does not support the deployment configuration', a forced dense kernel raises 'Forced NVFP4 kernel ... is not supported', or FlashInfer refuses the compute capability at the first GEMM. Left on auto, vLLM would have picked a kernel that runs (Marlin below SM100).",
      "Drop the explicit backend (auto), or name one that runs on the GPU; the finding's fix uses the same form (flag or env var) as the launch.",
      ("wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/oracle/nvfp4.py:216-260", "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:615-650",
       "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/experts/trtllm_nvfp4_moe.py:88-95", "wheel:vllm-0.20.0:vllm/model_executor/layers/fused_moe/flashinfer_cutlass_moe.py:125-177",
       "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/nvfp4/flashinfer.py:23-35"), "code",
      (_ex(True, "H200, vLLM 0.20.0, --moe-backend flashinfer_trtllm", {"env.txt": vllm_env()}, VL + ("--moe-backend", "flashinfer_trtllm")),
       _ex(True, "H200, vLLM 0.20.0, VLLM_NVFP4_GEMM_BACKEND=cutlass in the dump's environment", {"env.txt": vllm_env(env_vars={"VLLM_NVFP4_GEMM_BACKEND": "cutlass"})}, VL),
       _ex(True, "RTX PRO 6000, vLLM 0.20.0, --moe-backend flashinfer_cutedsl", {"env.txt": vllm_env(PRO6000)}, VL + ("--moe-backend", "flashinfer_cutedsl")),
       _ex(False, "RTX PRO 6000, vLLM 0.20.0, --moe-backend flashinfer_cutlass", {"env.txt": vllm_env(PRO6000)}, VL + ("--moe-backend", "flashinfer_cutlass")),
       _ex(False, "H200, vLLM 0.20.0, --moe-backend marlin", {"env.txt": vllm_env()}, VL + ("--moe-backend", "marlin")))),
    R("MTP232", "vllm-retired-fp4-env-var", W, "An FP4/MoE env var that vLLM >= 0.24 no longer reads",
      "vLLM only. Fires when the launch (a NAME=VALUE prefix) or the machine's environment sets one of the FP4/MoE variables removed in vLLM 0.24.0 (VLLM_USE_FLASHINFER_MOE_FP4, VLLM_FLASHINFER_MOE_BACKEND, VLLM_NVFP4_GEMM_BACKEND, VLLM_MXFP4_USE_MARLIN, VLLM_USE_FBGEMM, VLLM_USE_NVFP4_CT_EMULATIONS and the other VLLM_USE_FLASHINFER_MOE_* switches) and the vLLM is 0.24.0 or newer.",
      "The backend you chose is silently not applied: vLLM only logs 'Unknown vLLM environment variable detected' and picks the backend itself (with --fail-on-environ-validation it refuses to start). The cost is whatever the automatic choice is instead of yours.",
      "Unset the variable and pass the KernelConfig flag: --moe-backend for MoE, --linear-backend for dense GEMMs.",
      ("wheel:vllm-0.20.0:vllm/envs.py vs wheel:vllm-0.24.0:vllm/envs.py (environment_variables keys)", "wheel:vllm-0.24.0:vllm/envs.py:1998-2004"), "code",
      (_ex(True, "VLLM_USE_FLASHINFER_MOE_FP4=1 before vllm serve on vLLM 0.24.0", {"env.txt": vllm_env(B200, vllm="0.24.0")}, ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + VL),
       _ex(False, "the same on vLLM 0.20.0, which still reads it", {"env.txt": vllm_env(B200)}, ("VLLM_USE_FLASHINFER_MOE_FP4=1",) + VL))),
)

RULES = RULES + (
    R("MTP233", "ascend-nvfp4-cannot-run", E, "An NVFP4 checkpoint or --quantization on an Ascend NPU",
      "Ascend only: fires when the launch loads NVFP4 (a ModelOpt / compressed-tensors NVFP4 checkpoint, or --quantization modelopt_fp4 / nvfp4).",
      "NVFP4 weights need NVIDIA FP4 kernels (CUDA tensor cores). No Ascend backend runs them: vllm-ascend quantises W8A8 / W4A8 "
      "(msmodelslim), and SGLang's NPU FP4 is an online MXFP4 W4A4 scheme for Ascend 950 only, fed from BF16 weights. The load fails.",
      "Use an msmodelslim W8A8 / W4A8 (or BF16) checkpoint on the NPU, or run the NVFP4 checkpoint on Blackwell.",
      ("https://docs.vllm.ai/projects/ascend/en/v0.9.1/user_guide/support_matrix/supported_features.html",
       "wheel:sglang-0.5.23:sglang/srt/layers/quantization/npu_mxfp4_w4a4.py:1-16"), "documentation",
      (_ex(True, "910B3, SGLang 0.5.23, --quantization modelopt_fp4", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "modelopt_fp4")),
       _ex(False, "910B3, SGLang 0.5.23, --quantization mxfp4 (MTP248's question)", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "mxfp4")))),
    R("MTP236", "xpu-hpu-fp4-not-applicable", INFO, "The FP4 checks do not apply to Intel GPUs (XPU) and Gaudi HPUs",
      "Intel XPU and Gaudi only: always says that the NVIDIA FP4 checks (compute capability, CUDA, FlashInfer / sgl-kernel cubins) do not cover vLLM's XPU platform or the Gaudi plugin, as a note: never 'not capable', never a refused input, no exit-code change.",
      "An Intel GPU or Gaudi machine asked 'can it run FP4' deserves an answer, not 'nothing recognisable as an environment'.",
      "Nothing to fix; see MTP237 for a quantization the engine refuses on the device.",
      ("wheel:vllm-0.34.0:vllm/platforms/xpu.py:103-131", "https://docs.vllm.ai/projects/gaudi/en/latest/features/floating_point_8.html"), "documentation",
      (_ex(True, "4 x Data Center GPU Max 1550", {"env.txt": xpu_env()}), _ex(True, "8 x Gaudi 2 (hl-smi)", {"env.txt": hl_smi()}),
       _ex(False, "MI300X machine", {"env.txt": rocm_env()}))),
    R("MTP237", "xpu-hpu-quantization-refused", E, "A quantization the engine refuses on an Intel GPU or a Gaudi HPU",
      "Intel XPU with vLLM 0.33 or later: fires when the launch's --quantization (or vLLM's method for an NVFP4 ModelOpt checkpoint, modelopt_fp4) is not in the XPU platform's supported_quantization, which Platform.verify_quantization enforces at start-up (an error; older releases are not audited: a gap that blocks nothing). Gaudi with vLLM: fires for NVFP4 / MXFP4 weights, for which the vLLM Gaudi plugin documents no backend (a warning: documentation, not code).",
      "vLLM stops with 'ValueError: modelopt_fp4 quantization is currently not supported in xpu.' before loading weights.",
      "Use an MXFP4, FP8, AWQ or GPTQ checkpoint on the Intel GPU (FP8 with Intel Neural Compressor, AWQ or GPTQ on Gaudi), or run the NVFP4 checkpoint on Blackwell.",
      ("wheel:vllm-0.33.0:vllm/platforms/xpu.py:113-131", "wheel:vllm-0.34.0:vllm/platforms/interface.py:1168-1173",
       "https://docs.vllm.ai/projects/gaudi/en/latest/features/floating_point_8.html"), "code",
      (_ex(True, "Max 1550, vLLM 0.33.0, --quantization modelopt_fp4", {"env.txt": xpu_env()}, VL),
       _ex(False, "Max 1550, vLLM 0.33.0, --quantization mxfp4 (in the XPU list)", {"env.txt": xpu_env()}, VMX))),
    R("MTP240", "platform", INFO, "The machine's platform (NVIDIA CUDA, AMD ROCm, Ascend CANN, Intel XPU, Intel Gaudi HPU or CPU only) and where it came from",
      "Off NVIDIA: always reports the platform, the devices (gfx target or Ascend model) and the stack (ROCm, CANN, torch, driver, AITER, torch_npu, vllm-ascend), each with the dump line or table row it came from. The platform is decided before any capability check: a tool of one vendor (npu-smi, amd-smi / rocm-smi), the devices named, torch's ROCm build or +rocm tag, torch_npu / vllm-ascend / CANN, a container image (rocm/vllm, quay.io/ascend/vllm-ascend) or the launch's --device npu / hip.",
      "The NVIDIA checks are meaningless off CUDA; saying what the machine is comes first.",
      "Nothing to fix; check that the platform and devices are the ones you meant.",
      ("mtp_audit/data/amd.json", "mtp_audit/data/ascend.json", "https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html"), "documentation",
      (_ex(True, "a vLLM collect-env of an MI300X machine", {"env.txt": rocm_env()}), _ex(True, "vllm-ascend collect_env of a 910B3 machine", {"env.txt": npu_env()}),
       _ex(False, "an NVIDIA machine: the platform is in the summary, not a finding", {"env.txt": vllm_env()}, VL))),
    R("MTP241", "nvidia-checks-not-applicable", INFO, "The NVIDIA FP4 checks do not apply to this platform",
      "Off NVIDIA (ROCm, CANN, Intel XPU, Gaudi HPU, CPU only): says that the NVIDIA checks (MTP200-MTP227, MTP229-MTP232: FP4 tensor cores by compute capability, CUDA driver and toolkit floors, torch's CUDA build, FlashInfer / sgl-kernel cubins) were not run, and which checks ran instead.",
      "Not applicable is an answer: it is neither 'not capable' nor a refused input, and it does not change the exit code.",
      "Nothing to fix.", ("mtp_audit/preflight/vendors.py",), "code",
      (_ex(True, "Ascend machine", {"env.txt": npu_env()}), _ex(False, "H200 machine", {"env.txt": vllm_env()}, VL))),
    R("MTP242", "amd-fp4-path", W, "The FP4 path of the engine on this AMD GPU: native, or emulated with its cost",
      "ROCm only, when FP4 is intended (bare preflight, an FP4 --quantization or checkpoint): per gfx target, MXFP4 runs natively only on gfx950 (CDNA4: MI350X / MI355X; info); elsewhere (gfx942 = CDNA3: MI300X / MI300A / MI325X / MI308X, gfx90a, RDNA) vLLM emulates it (Quark: weights dequantised, activations quantise-dequantised, BF16 math; gpt-oss MXFP4: Triton with MXFP4 weights upcast) and NVFP4 everywhere (vLLM >= 0.20: EmulationNvFp4LinearKernel is the only ROCm NVFP4 kernel; vLLM 0.11: Petit, with the petit-kernel package) (warning, with the cost). The path is read per engine version from data/amd.json.",
      "Emulation keeps the 4-bit weights in memory but computes at BF16 rate with extra dequantisation: slower than FP8 on the same GPU.",
      "Run MXFP4 on gfx950; on gfx942 prefer an FP8 checkpoint (FP8 e4m3fnuz matrix cores).",
      ("https://rocm.docs.amd.com/en/latest/reference/precision-support.html", "wheel:vllm-0.20.0:vllm/platforms/rocm.py:798-816",
       "wheel:vllm-0.20.0:vllm/model_executor/layers/quantization/quark/schemes/quark_ocp_mx.py:215-237", "wheel:vllm-0.20.0:vllm/model_executor/kernels/linear/__init__.py:260-273",
       "wheel:vllm-0.11.0:vllm/model_executor/layers/quantization/petit.py:128-137"), "code",
      (_ex(True, "MI300X (gfx942), vLLM 0.20.0, --quantization mxfp4: emulated", {"env.txt": rocm_env()}, VMX),
       _ex(True, "MI355X (gfx950), vLLM 0.20.0, NVFP4: emulated", {"env.txt": rocm_env(MI355)}, VL),
       _ex(False, "MI300X, vLLM 0.20.0, an FP8 launch", {"env.txt": rocm_env()}, ("vllm", "serve", "m", "--quantization", "fp8")))),
    R("MTP243", "amd-fp4-not-runnable", E, "An FP4 checkpoint the engine cannot run on this AMD GPU",
      "ROCm only: fires when the engine has no path at all for the launch's FP4 format on the GPU: SGLang --quantization mxfp4 off gfx95 ('mxfp4' is registered on HIP only when mxfp_supported(), else 'Invalid quantization method' / 'Current platform gfx942 not support mxfp4 computation'), SGLang NVFP4 on ROCm (its NVFP4 kernels are CUDA-only). An error when the launch names the format, a warning for a bare preflight.",
      "The server stops while loading the model.",
      "Use an MXFP4 checkpoint on gfx950, an FP8 / BF16 checkpoint elsewhere, or vLLM's emulated path.",
      ("wheel:sglang-0.5.9:sglang/srt/layers/quantization/__init__.py:81-86", "wheel:sglang-0.5.9:sglang/srt/layers/quantization/mxfp4.py:227-237",
       "wheel:sglang-0.5.9:sglang/srt/layers/quantization/modelopt_quant.py:84-90"), "code",
      (_ex(True, "MI300X, SGLang 0.5.9, --quantization mxfp4", {"env.txt": rocm_env().replace("vLLM Version                 : 0.20.0", "vLLM Version                 : N/A") + "sglang: 0.5.9\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4")),
       _ex(False, "MI355X, SGLang 0.5.9, --quantization mxfp4 (native)", {"env.txt": rocm_env(MI355).replace("vLLM Version                 : 0.20.0", "vLLM Version                 : N/A") + "sglang: 0.5.9\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--quantization", "mxfp4")))),
    R("MTP244", "amd-gfx950-only-switch", E, "A gfx950-only vLLM switch on a GPU that is not gfx950",
      "vLLM on ROCm: fires when VLLM_ROCM_USE_AITER_FP4BMM (on by default from vLLM 0.15 with VLLM_ROCM_USE_AITER=1) or VLLM_ROCM_USE_AITER_FP4_ASM_GEMM is on and a GPU is not gfx950. Before the gate vLLM does not check the GPU and crashes: an error for 0.15-0.16 (the crash is reported on 0.16.0rc2), a warning for 0.17-0.19 and an unknown version (the gate, PR #35250, is first seen in the audited 0.20.0 wheel); from 0.20.0 it is ignored off gfx950 (info).",
      "MI300X crashes with 'MXFP4 quantization is not supported on gfx942' or an illegal instruction (gh:vllm-project/vllm#34641).",
      "Set the switch to 0, or upgrade vLLM.",
      ("gh:vllm-project/vllm#34641", "gh:vllm-project/vllm#35250", "wheel:vllm-0.20.0:vllm/_aiter_ops.py:1335-1346"), "bug report",
      (_ex(True, "MI300X, vLLM 0.16.0, VLLM_ROCM_USE_AITER=1 (FP4 BMM on by default)", {"env.txt": rocm_env(vllm="0.16.0")}, ("VLLM_ROCM_USE_AITER=1", "vllm", "serve", "m")),
       _ex(False, "MI355X, vLLM 0.16.0, VLLM_ROCM_USE_AITER=1", {"env.txt": rocm_env(MI355, vllm="0.16.0")}, ("VLLM_ROCM_USE_AITER=1", "vllm", "serve", "m")))),
    R("MTP245", "ascend-fp4-not-applicable", INFO, "The FP4 checks do not apply to Ascend NPUs",
      "Ascend only: always says that NVFP4 and the GPU MXFP4 kernels do not exist on Ascend NPUs (quantisation there is W8A8 / W4A8), as a note: never 'not capable', never a refused input, no exit-code change.",
      "An NPU machine asked 'can it run FP4' deserves an answer, not a silence or an error.",
      "Nothing to fix; quantise for Ascend with msmodelslim (W8A8 / W4A8).",
      ("https://docs.vllm.ai/projects/ascend/en/v0.9.1/user_guide/support_matrix/supported_features.html",), "documentation",
      (_ex(True, "910B3 machine", {"env.txt": npu_env()}), _ex(False, "MI300X machine", {"env.txt": rocm_env()}))),
    R("MTP246", "ascend-910-not-vllm-ascend", W, "A first-generation Ascend 910 with vllm-ascend",
      "vLLM on Ascend: fires for an Ascend 910 / 910 Pro B / 910 Premium A (Ascend-cann-kernels-910), which vllm-ascend does not support (its FAQ lists Atlas A2, A3 and 300I only).",
      "vllm-ascend's kernels are built for 910B / 910C / 310P; the first-generation 910 fails at startup or in custom ops.",
      "Run on Atlas A2 (910B), A3 (910C) or 300I (310P).",
      ("https://docs.vllm.ai/projects/ascend/en/v0.11.0/faqs.html", "gh:vllm-project/vllm-ascend#1047"), "documentation",
      (_ex(True, "910ProB machine", {"env.txt": npu_env("910ProB")}), _ex(False, "910B3 machine", {"env.txt": npu_env()}))),
    R("MTP247", "vllm-ascend-mtp-status", INFO, "The speculative-decoding (MTP) status vllm-ascend documents for its version",
      "vLLM on Ascend with a known vllm-ascend version: says what vllm-ascend's feature matrix documents for speculative decoding at that version (0.7.3: functional with usage limits; 0.9.0 on: functional, basic support, DeepSeek MTP through --speculative-config method deepseek_mtp).",
      "Whether the MTP heads can draft at all depends on the plugin, not on vLLM alone.",
      "Read the linked feature matrix for the limits of your version.",
      ("https://docs.vllm.ai/projects/ascend/en/v0.7.3/user_guide/suppoted_features.html", "https://docs.vllm.ai/projects/ascend/en/v0.11.0/user_guide/support_matrix/supported_features.html"), "documentation",
      (_ex(True, "vllm-ascend 0.9.1", {"env.txt": npu_env()}), _ex(False, "vllm-ascend version not shown", {"env.txt": npu_env().replace("vLLM Ascend Version: 0.9.1\n", "")}))),
    R("MTP248", "sglang-npu-mxfp4-needs-950", W, "SGLang NPU --quantization mxfp4 on an NPU that is not Ascend 950",
      "SGLang on Ascend (0.5.23 on): fires when the launch asks --quantization mxfp4, which SGLang's NPU backend maps to an online dual-level MXFP4 W4A4 scheme that requires Ascend 950 (A5), and an NPU is another model.",
      "The scheme's matmul kernel exists only on Ascend 950.",
      "Use an msmodelslim W8A8 / W4A8 checkpoint on this NPU.",
      ("wheel:sglang-0.5.23:sglang/srt/layers/quantization/npu_mxfp4_w4a4.py:1-16", "wheel:sglang-0.5.23:sglang/srt/layers/quantization/__init__.py:107-116"), "code",
      (_ex(True, "910B3, SGLang 0.5.23, --quantization mxfp4", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu", "--quantization", "mxfp4")),
       _ex(False, "910B3, SGLang 0.5.23, no quantization", {"env.txt": npu_env().replace("vLLM Version: 0.9.1\nvLLM Ascend Version: 0.9.1\n", "") + "sglang: 0.5.23\n"},
           ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu")))),
    R("MTP249", "launch-device-platform-mismatch", E, "The launch's --device names another platform than the machine's",
      "Fires when the launch's --device (npu, hip/rocm, cuda, cpu) names a platform the machine facts contradict (an npu launch on a ROCm machine).",
      "The engine cannot open a device of that kind: it stops at startup.",
      "Drop --device or set it to the machine's platform.",
      ("sglang/srt/server_args.py --device (cuda, xpu, hpu, npu, cpu)",), "code",
      (_ex(True, "--device npu on an MI300X machine", {"env.txt": rocm_env()}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu")),
       _ex(False, "--device npu on a 910B3 machine", {"env.txt": npu_env()}, ("python", "-m", "sglang.launch_server", "--model-path", "m", "--device", "npu")))),
)

#: The question the findings of each check off NVIDIA answer (:mod:`mtp_audit.report.questions`): whether the FP4
#: kernels can run (the engine's FP4 path, FP4 checks not applicable, FP4 weights on an NPU), whether the server starts
#: (a quantization or switch the engine refuses there, a device it does not support, a --device of another platform),
#: the stack (the platform, its devices and versions), the MTP heads (vllm-ascend's speculative-decoding status).
PLATFORM_QUESTIONS = {"MTP233": FP4, "MTP236": FP4, "MTP237": STARTS, "MTP240": STACK, "MTP241": FP4, "MTP242": FP4,
                      "MTP243": FP4, "MTP244": STARTS, "MTP245": FP4, "MTP246": STARTS, "MTP247": MTP_HEADS, "MTP248": FP4,
                      "MTP249": STARTS}
RULES = tuple(dataclasses.replace(r, question=PLATFORM_QUESTIONS[r.id]) if r.id in PLATFORM_QUESTIONS else r for r in RULES)

RULES_BY_ID = {r.id: r for r in RULES}
