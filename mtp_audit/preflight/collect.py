"""Collect :class:`MachineFacts` from the live machine without loading a model or importing torch.

Order of sources (``../shared/research/blackwell_fp4.md`` §7):

1. GPUs (index, name, UUID, compute capability, memory), driver and the driver's CUDA version through
   NVML (``nvidia-ml-py``, import name ``pynvml``) when importable; NVML creates no CUDA context.
   Otherwise, or when forced (``MTP_AUDIT_NO_NVML=1``, ``mtp-audit preflight --no-nvml``),
   ``nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,uuid --format=csv,noheader``
   and the plain ``nvidia-smi`` table (its header gives the CUDA version; its rows stand in for the CSV
   when an old nvidia-smi rejects a query field), each with a time-out. Both paths list every GPU the
   driver enumerates; ``CUDA_VISIBLE_DEVICES`` is then applied (:func:`mtp_audit.preflight.visible.cuda_visible`)
   and the full list kept in ``MachineFacts.enumerated``.
2. The CUDA toolkit: ``nvcc --version`` from ``$CUDA_HOME``/``$CUDA_PATH``, then ``PATH``, then
   ``/usr/local/cuda`` (SGLang's ``_jit_cuda_version`` order).
3. torch's version and CUDA build from ``torch/version.py`` read as text (torch is never imported
   unless ``import_torch=True``, and then only in a child process with a time-out).
4. Package versions and ``Requires-Dist`` torch pins via ``importlib.metadata``.
5. SM targets of the kernel packages' shared objects via :mod:`mtp_audit.preflight.elf`.

Every failure becomes a missing fact with its reason (NVML error text, "nvidia-smi not found",
"nvidia-smi did not answer within 10 s"); nothing raises for a machine-side problem.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtp_audit.engines.registry import engine_distributions
from mtp_audit.preflight.facts import (
    PACKAGES,
    BinaryFacts,
    Fact,
    GpuFacts,
    MachineFacts,
)

#: Seconds allowed for each external command (nvidia-smi, nvcc).
DEFAULT_TIMEOUT_S = 10.0
#: Seconds allowed for the ``--import-torch`` child process.
TORCH_TIMEOUT_S = 60.0
#: Most shared objects scanned per package (flashinfer-jit-cache ships hundreds).
MAX_SO_PER_PACKAGE = 64
#: Environment variables recorded in the facts.
ENV_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "FLASHINFER_CUDA_ARCH_LIST", "TORCH_CUDA_ARCH_LIST", "SGLANG_FLASHINFER_FP4_GEMM_BACKEND", "CUDA_HOME", "CUDA_PATH",
            # vLLM's FP4/MoE kernel switches (matrix["vllm"]["env_vars"] / ["retired_env_vars"])
            "VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_FLASHINFER_MOE_BACKEND", "VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_TRTLLM_FP4_GEMM",
            "VLLM_MXFP4_USE_MARLIN", "VLLM_USE_FBGEMM", "VLLM_USE_NVFP4_CT_EMULATIONS", "VLLM_USE_FLASHINFER_MOE_FP8",
            "VLLM_USE_FLASHINFER_MOE_FP16", "VLLM_USE_FLASHINFER_MOE_MXFP4_BF16", "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8",
            "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8_CUTLASS",
            # ROCm / Ascend switches and device filters (mtp_audit.preflight.vendors)
            "VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_FP4BMM", "VLLM_ROCM_USE_AITER_FP4_ASM_GEMM", "SGLANG_USE_AITER",
            "HIP_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_TOOLKIT_HOME")

#: Packages whose shared objects are scanned, with the import folders that hold their ``.so`` files.
KERNEL_PACKAGES = {
    **{dist: folders for dist, folders in engine_distributions().items() if folders},
    "flashinfer-python": ("flashinfer/",),
    "flashinfer-jit-cache": ("flashinfer_jit_cache/",),
}

#: Environment variable that makes the live collection skip NVML and use nvidia-smi (any of 1/true/yes/on).
NO_NVML_ENV = "MTP_AUDIT_NO_NVML"
#: The nvidia-smi query of the fallback path (fields documented in ``nvidia-smi --help-query-gpu``).
SMI_QUERY = ("nvidia-smi", "--query-gpu=index,name,compute_cap,driver_version,memory.total,uuid", "--format=csv,noheader")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def run_tool(cmd: list[str], timeout: float, run: Runner = _run) -> tuple[str | None, str]:
    """Run an external command; return ``(stdout, "")`` or ``(None, reason)``. Never raises."""
    try:
        cp = run(cmd, timeout)
    except FileNotFoundError:
        return None, f"{cmd[0]} not found"
    except subprocess.TimeoutExpired:
        return None, f"{Path(cmd[0]).name} did not answer within {timeout:g} s"
    except OSError as exc:
        return None, f"{Path(cmd[0]).name} could not run: {exc.strerror or exc}"
    if cp.returncode != 0:
        msg = (cp.stderr or cp.stdout or "").strip().splitlines()
        return None, f"{Path(cmd[0]).name} exited with {cp.returncode}" + (f": {msg[-1][:200]}" if msg else "")
    return cp.stdout, ""


# --- GPUs ----------------------------------------------------------------------------------------


def _nvml_gpus(nvml: Any) -> tuple[list[GpuFacts], Fact, Fact, list[str]]:
    """GPUs via an imported ``pynvml`` module. Raises whatever NVML raises at init/count."""
    notes: list[str] = []
    nvml.nvmlInit()
    try:
        drv = nvml.nvmlSystemGetDriverVersion()
        driver = Fact.of(drv.decode() if isinstance(drv, bytes) else str(drv), "nvml")
        try:
            v = int(nvml.nvmlSystemGetCudaDriverVersion_v2())
            cuda = Fact.of(f"{v // 1000}.{(v % 1000) // 10}", "nvml")
        except Exception as exc:  # noqa: BLE001 - any NVML error is a missing fact
            cuda = Fact.absent(f"NVML error: {exc}", source="nvml")
        gpus = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            try:
                h = nvml.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:  # noqa: BLE001
                gpus.append(GpuFacts(index=i, name=Fact.absent(f"NVML error: {exc}", "nvml"),
                                     compute_capability=Fact.absent(f"NVML error: {exc}", "nvml"),
                                     memory_bytes=Fact.absent(f"NVML error: {exc}", "nvml")))
                notes.append(f"NVML: GPU {i}: {exc}")
                continue
            facts = {}
            for key, fn in (("name", lambda h=h: nvml.nvmlDeviceGetName(h)),
                            ("cc", lambda h=h: tuple(int(x) for x in nvml.nvmlDeviceGetCudaComputeCapability(h))),
                            ("mem", lambda h=h: int(nvml.nvmlDeviceGetMemoryInfo(h).total)),
                            ("uuid", lambda h=h: nvml.nvmlDeviceGetUUID(h))):
                try:
                    val = fn()
                    facts[key] = Fact.of(val.decode() if isinstance(val, bytes) else val, "nvml")
                except Exception as exc:  # noqa: BLE001
                    facts[key] = Fact.absent(f"NVML error: {exc}", "nvml")
            gpus.append(GpuFacts(index=i, name=facts["name"], compute_capability=facts["cc"], memory_bytes=facts["mem"],
                                 uuid=facts["uuid"]))
        return gpus, driver, cuda, notes
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _load_nvml() -> Any:
    if importlib.util.find_spec("pynvml") is None:
        return None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated 'pynvml' package warns on import
        import pynvml  # type: ignore[import-not-found]  # optional (nvidia-ml-py): absent is a note
    return pynvml


def nvml_disabled(env: dict[str, str] | None = None) -> bool:
    """Whether :data:`NO_NVML_ENV` asks to skip NVML (value 1/true/yes/on, case-insensitive)."""
    return (dict(os.environ if env is None else env).get(NO_NVML_ENV, "").strip().lower()) in ("1", "true", "yes", "on")


def collect_gpus(*, timeout: float = DEFAULT_TIMEOUT_S, run: Runner = _run, nvml_loader: Callable[[], Any] = _load_nvml,
                 use_nvml: bool | None = None) -> tuple[tuple[GpuFacts, ...], Fact, Fact, Fact, list[str]]:
    """``(gpus, gpu_list, driver_version, cuda_driver_version, notes)`` from NVML, else nvidia-smi.

    Args:
        timeout: seconds allowed for each nvidia-smi call.
        run: command runner (tests pass one that replays recorded nvidia-smi output).
        nvml_loader: returns the ``pynvml`` module or ``None``.
        use_nvml: ``False`` skips NVML (the nvidia-smi path); ``None`` reads :data:`NO_NVML_ENV`.

    Every GPU the driver enumerates is listed (NVML and nvidia-smi ignore ``CUDA_VISIBLE_DEVICES``).
    ``gpu_list``'s source names the path taken (``"nvml"``, ``"nvidia-smi --query-gpu"``, ``"nvidia-smi table"``).
    """
    notes: list[str] = []
    if use_nvml is None:
        use_nvml = not nvml_disabled()
    nvml = None
    if not use_nvml:
        notes.append(f"NVML skipped ({NO_NVML_ENV}=1 or --no-nvml); using nvidia-smi")
    else:
        try:
            nvml = nvml_loader()
        except Exception as exc:  # noqa: BLE001 - a broken pynvml install is a note, not a crash
            notes.append(f"pynvml failed to import: {exc}")
        if nvml is None and not notes:
            notes.append("nvidia-ml-py (pynvml) not installed; using nvidia-smi")
    if nvml is not None:
        try:
            gpus, driver, cuda, n = _nvml_gpus(nvml)
            notes += n
            return tuple(gpus), Fact.of(len(gpus), "nvml"), driver, cuda, notes
        except Exception as exc:  # noqa: BLE001
            notes.append(f"NVML failed ({type(exc).__name__}: {exc}); falling back to nvidia-smi")
    from mtp_audit.preflight.envdump import parse_nvidia_smi, parse_nvidia_smi_csv

    out, why = run_tool(list(SMI_QUERY), timeout, run)
    head, why2 = run_tool(["nvidia-smi"], timeout, run)
    table = parse_nvidia_smi(head) if head else None
    cuda = table.cuda_driver_version if table is not None else Fact.absent(why2, "nvidia-smi")
    if out is not None:
        csv = parse_nvidia_smi_csv(out, source="nvidia-smi --query-gpu", complete=True)
        if csv.gpus:
            return csv.gpus, csv.gpu_list, csv.driver_version, cuda, notes
        why = "nvidia-smi --query-gpu printed no GPU row"
    if table is not None and table.gpus:
        # an nvidia-smi older than the query fields (compute_cap arrived in R510): the table has index, name, memory
        notes.append(f"nvidia-smi --query-gpu failed ({why}); GPUs read from the nvidia-smi table (no UUIDs; "
                     "compute capability from the GPU name)")
        return table.gpus, Fact.of(len(table.gpus), "nvidia-smi table"), table.driver_version, cuda, notes
    reason = f"NVML unavailable and {why}" if use_nvml else why
    return (), Fact.absent(reason, "nvidia-smi"), Fact.absent(why, "nvidia-smi"), cuda if cuda.present else Fact.absent(why, "nvidia-smi"), notes


# --- toolkit, torch, packages, binaries ----------------------------------------------------------


def find_nvcc(env: dict[str, str] | None = None, which: Callable[[str], str | None] = shutil.which) -> tuple[Path | None, str]:
    """Locate nvcc like SGLang/tvm-ffi: ``$CUDA_HOME``/``$CUDA_PATH``, ``PATH``, ``/usr/local/cuda``."""
    env = dict(os.environ if env is None else env)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            p = Path(env[var]) / "bin" / "nvcc"
            if p.is_file():
                return p, f"${var}"
    w = which("nvcc")
    if w:
        return Path(w), "PATH"
    p = Path("/usr/local/cuda/bin/nvcc")
    if p.is_file():
        return p, "/usr/local/cuda"
    return None, "nvcc not found (checked $CUDA_HOME, $CUDA_PATH, PATH, /usr/local/cuda)"


def collect_toolkit(*, timeout: float = DEFAULT_TIMEOUT_S, run: Runner = _run) -> tuple[Fact, Fact]:
    """``(toolkit release, cuda_home)`` from ``nvcc --version``."""
    nvcc, how = find_nvcc()
    if nvcc is None:
        return Fact.absent(how, "nvcc"), Fact.absent(how, "nvcc")
    out, why = run_tool([str(nvcc), "--version"], timeout, run)
    home = Fact.of(str(nvcc.resolve().parent.parent), f"nvcc via {how}")
    if out is None:
        return Fact.absent(why, "nvcc"), home
    m = re.search(r"release (\d+\.\d+)", out)
    return (Fact.of(m.group(1), f"{nvcc} --version") if m else Fact.absent("unrecognised nvcc --version output", "nvcc")), home


def read_torch_version_py(text: str) -> tuple[Fact, Fact]:
    """``(__version__, cuda)`` from the text of ``torch/version.py`` (never imported)."""
    v = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    c = re.search(r"^cuda\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]+)['\"]|None)", text, re.M)
    version = Fact.of(v.group(1), "torch/version.py") if v else Fact.absent("torch/version.py has no __version__")
    if c and c.group(1):
        cuda = Fact.of(c.group(1), "torch/version.py")
    elif c:
        cuda = Fact.absent("torch/version.py says cuda = None (a CPU or ROCm build)", "torch/version.py")
    else:
        cuda = Fact.absent("torch/version.py has no 'cuda' line")
    return version, cuda


def collect_torch() -> tuple[Fact, Fact]:
    """torch version and CUDA build from ``torch/version.py``, located with ``find_spec`` (no import)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError) as exc:
        return Fact.absent(f"torch not locatable: {exc}"), Fact.absent("torch not locatable")
    if spec is None or not spec.submodule_search_locations:
        return Fact.absent("torch not installed"), Fact.absent("torch not installed")
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_bytes_bounded

    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        text = read_bytes_bounded(path, 1024 * 1024).decode("utf-8", "replace")
    except InputError as exc:
        return Fact.absent(f"torch/version.py: {exc.problem}"), Fact.absent(f"torch/version.py: {exc.problem}")
    return read_torch_version_py(text)


def collect_packages() -> tuple[dict[str, Fact], dict[str, Fact]]:
    """``(versions, torch pins)`` of :data:`PACKAGES` via ``importlib.metadata``."""
    versions: dict[str, Fact] = {}
    requires: dict[str, Fact] = {}
    for name in PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            versions[name] = Fact.absent("not installed", "importlib.metadata")
            continue
        versions[name] = Fact.of(dist.version, "importlib.metadata")
        for req in dist.requires or ():
            m = re.match(r"^torch\s*(?:\(([^)]*)\)|([=<>!~][^;]*))", req.strip())
            if m and "extra ==" not in req:
                requires[f"{name} -> torch"] = Fact.of((m.group(1) or m.group(2) or "").strip(), f"{name} METADATA Requires-Dist")
    return versions, requires


def collect_binaries() -> tuple[BinaryFacts, ...]:
    """SM targets of the kernel packages' shared objects (see :data:`KERNEL_PACKAGES`)."""
    from mtp_audit.preflight.elf import ElfError, sm_targets

    out: list[BinaryFacts] = []
    for pkg, prefixes in KERNEL_PACKAGES.items():
        try:
            dist = md.distribution(pkg)
        except md.PackageNotFoundError:
            continue
        files = [f for f in (dist.files or ()) if str(f).endswith(".so") and str(f).startswith(prefixes)]
        for f in sorted(files, key=str)[:MAX_SO_PER_PACKAGE]:
            rel = str(f)
            try:
                path = Path(str(dist.locate_file(f)))  # a SimplePath (typeshed); a pathlib.Path for installed packages
                cubins, ptx = sm_targets(path)
                out.append(BinaryFacts(pkg, rel, Fact.of(cubins, "ELF fatbin"), Fact.of(ptx, "ELF fatbin")))
            except (ElfError, OSError) as exc:
                out.append(BinaryFacts(pkg, rel, Fact.absent(f"cannot read ELF: {exc}"), Fact.absent("cannot read ELF")))
    return tuple(out)


_TORCH_CHILD = r"""
import json, torch
d = {"version": torch.__version__, "cuda": torch.version.cuda, "arch_list": [], "devices": []}
try:
    d["arch_list"] = list(torch.cuda.get_arch_list())
except Exception as e:
    d["arch_error"] = str(e)
try:
    for i in range(torch.cuda.device_count()):
        d["devices"].append({"name": torch.cuda.get_device_name(i), "cc": list(torch.cuda.get_device_capability(i))})
except Exception as e:
    d["device_error"] = str(e)
print("MTP_AUDIT_TORCH " + json.dumps(d))
"""


def collect_torch_imported(timeout: float = TORCH_TIMEOUT_S, run: Runner = _run) -> tuple[Fact, dict[str, Any] | None]:
    """With ``--import-torch``: import torch in a child process; ``(arch list, raw dict)``."""
    out, why = run_tool([sys.executable, "-c", _TORCH_CHILD], timeout, run)
    if out is None:
        return Fact.absent(f"importing torch failed: {why}", "--import-torch"), None
    m = re.search(r"^MTP_AUDIT_TORCH (.+)$", out, re.M)
    if not m:
        return Fact.absent("torch child printed no result", "--import-torch"), None
    d = json.loads(m.group(1))
    arch = Fact.of(tuple(d["arch_list"]), "torch.cuda.get_arch_list()") if d.get("arch_list") else Fact.absent(d.get("arch_error", "empty arch list"), "--import-torch")
    return arch, d


def _platform() -> Fact:
    if sys.platform.startswith("win"):
        return Fact.of("windows", "sys.platform")
    try:
        text = Path("/proc/version").read_text(encoding="utf-8", errors="replace")[:4096].lower()
    except OSError:
        text = ""
    return Fact.of("wsl2" if "microsoft" in text else sys.platform, "sys.platform, /proc/version")


def collect_live(*, import_torch: bool = False, timeout: float = DEFAULT_TIMEOUT_S, run: Runner = _run,
                 nvml_loader: Callable[[], Any] = _load_nvml, use_nvml: bool | None = None,
                 environ: dict[str, str] | None = None) -> MachineFacts:
    """Collect every fact from this machine. Never raises for machine-side problems.

    Args:
        import_torch: also import torch (in a child process) for its arch list and device view.
        timeout: seconds allowed for each external command.
        run: command runner (tests inject one that hangs or fails).
        nvml_loader: returns the ``pynvml`` module or ``None`` (tests inject failing NVML).
        use_nvml: ``False`` forces the nvidia-smi path; ``None`` reads :data:`NO_NVML_ENV`.
        environ: the environment to read (``CUDA_VISIBLE_DEVICES`` and :data:`ENV_VARS`); ``None``: ``os.environ``.

    ``gpus`` are the GPUs CUDA would show this process (``CUDA_VISIBLE_DEVICES`` applied, see
    :func:`mtp_audit.preflight.visible.cuda_visible`); when that filter changed the list, ``enumerated``
    keeps every GPU the driver listed.
    """
    from mtp_audit.preflight.visible import cuda_visible, nvidia_visible_note

    env = dict(os.environ if environ is None else environ)
    if use_nvml is None:
        use_nvml = not nvml_disabled(env)
    all_gpus, gpu_list, driver, cuda, notes = collect_gpus(timeout=timeout, run=run, nvml_loader=nvml_loader, use_nvml=use_nvml)
    gpus = all_gpus
    enumerated: tuple[GpuFacts, ...] = ()
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is not None and all_gpus:
        view = cuda_visible(all_gpus, vis, source="environment", device_order=env.get("CUDA_DEVICE_ORDER"))
        gpus = view.gpus
        notes += list(view.notes)
        if gpus != all_gpus:
            enumerated = all_gpus
    nv = nvidia_visible_note(env.get("NVIDIA_VISIBLE_DEVICES"), "environment")
    if nv:
        notes.append(nv)
    vendor = None
    if not all_gpus:
        vendor, vnotes = _collect_vendor(timeout, run, env)
        notes += vnotes
        if vendor is not None:
            gpus, gpu_list, driver = vendor.gpus, vendor.gpu_list, vendor.driver_version
    toolkit, cuda_home = collect_toolkit(timeout=timeout, run=run)
    torch_version, torch_cuda = collect_torch()
    packages, requires = collect_packages()
    arch = Fact.absent("torch not imported (pass --import-torch)")
    if import_torch:
        arch, raw = collect_torch_imported(run=run)
        if raw and raw.get("devices"):
            notes.append("torch sees: " + "; ".join(f"{d['name']} ({d['cc'][0]}.{d['cc'][1]})" for d in raw["devices"]))
    return MachineFacts(
        origin="live",
        gpus=gpus,
        gpu_list=gpu_list,
        driver_version=driver,
        cuda_driver_version=cuda,
        toolkit=toolkit,
        cuda_home=cuda_home,
        torch_version=torch_version,
        torch_cuda=torch_cuda,
        torch_arch_list=arch,
        packages=packages,
        requires=requires,
        binaries=collect_binaries(),
        env={k: env[k] for k in ENV_VARS if k in env},
        platform=_platform(),
        notes=tuple(notes),
        enumerated=enumerated,
        accelerator=vendor.accelerator if vendor is not None else Fact.absent("not observed"),
        rocm_version=vendor.rocm_version.or_(_torch_hip()) if vendor is not None else _torch_hip(),
        cann_version=vendor.cann_version if vendor is not None else Fact.absent("not observed"),
    )


def _collect_vendor(timeout: float, run: Runner, env: dict[str, str]) -> tuple[MachineFacts | None, list[str]]:
    """AMD / Ascend devices when NVML and nvidia-smi list none (:mod:`mtp_audit.preflight.collect_vendors`)."""
    from mtp_audit.preflight.collect_vendors import collect_vendor

    return collect_vendor(timeout=timeout, run=run, run_tool=run_tool, env=env, read=_read_small)


def _read_small(path: Path) -> str | None:
    """A small text file (1 MiB bound), or ``None`` when it is missing or unreadable."""
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_bytes_bounded

    try:
        return read_bytes_bounded(path, 1024 * 1024).decode("utf-8", "replace")
    except (InputError, OSError):
        return None


def _torch_hip() -> Fact:
    """torch's ROCm build (``hip = ...`` of ``torch/version.py``), missing when not a ROCm build or not installed."""
    from mtp_audit.preflight.collect_vendors import read_torch_hip

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return Fact.absent("torch not locatable")
    if spec is None or not spec.submodule_search_locations:
        return Fact.absent("torch not installed")
    text = _read_small(Path(list(spec.submodule_search_locations)[0]) / "version.py")
    return read_torch_hip(text) if text is not None else Fact.absent("torch/version.py not readable")
