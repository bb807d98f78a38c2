"""Fixture builders for the preflight rules' examples: environment dumps in each tool's real format (``python3 -m
sglang.check_env``, ``vllm collect-env`` of a CUDA, ROCm, Ascend or Intel XPU machine, ``hl-smi``), stored facts
(``--save-facts`` format) and the launch commands the examples pass. Never used by an audit.
"""

from __future__ import annotations

import json

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


#: Launch commands of the vendor rules' examples (an FP8 vLLM launch; vLLM with AITER switched on).
VFP8 = ("vllm", "serve", "m", "--quantization", "fp8")
AITER_SERVE = ("VLLM_ROCM_USE_AITER=1", "vllm", "serve", "m")
SM120_KERNEL = {"sgl-kernel:sgl_kernel/sm100/common_ops.abi3.so": ["sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a"]}
INCIDENT_ARGS = SG + ("--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn", "--speculative-algorithm", "NEXTN", "--tp", "8")
