"""Environment dumps of AMD ROCm, Ascend, Intel XPU and Intel Gaudi machines: ``rocm-smi``, ``amd-smi``, ``npu-smi
info``, ``xpu-smi discovery``, ``sycl-ls``, ``clinfo``, ``hl-smi``, and the ROCm / Ascend / XPU lines of
``torch.utils.collect_env``, ``vllm collect-env`` (vllm-ascend's variant) and ``sglang.check_env``.

Formats, as their tools print them (samples with their public source in ``fixtures/preflight/envdumps/amd`` and
``fixtures/preflight/envdumps/ascend``):

- torch / vLLM collect_env on ROCm: ``ROCM used to build PyTorch: 6.3.42131-fa1d09cbd``, ``HIP runtime version``,
  ``GPU models and configuration: AMD Instinct MI300X (gfx942:sramecc+:xnack-)`` (torch names device 0 only: its
  ``get_gpu_info`` prints ``get_device_name(None)`` and ``gcnArchName`` on HIP), vLLM's ``ROCM Version`` and its
  ``GPU Topology`` (``rocm-smi --showtopo``: one ``GPUn`` column per GPU).
- ``sglang.check_env`` on ROCm (``ROCM available``, ``HIPCC: HIP version: ...``, ``ROCM Driver Version``) and on
  Ascend (``NPU 0,1: Ascend910B3``, ``CANN: 8.2.RC1``, ``Ascend Driver Version``): wheel:sglang-0.5.23:sglang/check_env.py:238-300,338-430.
- vllm-ascend's collect_env: ``vLLM Ascend Version``, ``[pip3] torch-npu==...``, an ``NPU:`` section holding
  ``npu-smi info`` and a ``CANN:`` section holding ``ascend_toolkit_install.info`` (``version=8.1.RC1``):
  vllm-project/vllm-ascend collect_env.py (env_info_fmt).
- ``npu-smi info``: the box table (``| npu-smi 23.0.3  Version: 23.0.3 |``, one ``| 0  910B1 | OK | ...`` row and
  one ``| 0 | 0000:C1:00.0 | ... HBM used / total`` row per NPU).
- ``rocm-smi`` (the table, ``--showproductname``: ``GPU[0] : Card Series: AMD Instinct MI300X OAM``, ``GFX Version``)
  and ``amd-smi`` (``amd-smi static``: ``GPU: 0`` blocks with ``MARKET_NAME`` / ``TARGET_GRAPHICS_VERSION``; the
  monitor header ``ROCm version: 6.4.1``; ``amd-smi version``).

Intel and Gaudi (samples with their public source in ``fixtures/preflight/envdumps/intel`` and ``.../gaudi``):

- torch collect_env on XPU (torch >= 2.8, pytorch/pytorch#137846): ``Is XPU available: True``, ``XPU used to build
  PyTorch: 20250101``, ``Intel GPU driver version:`` with ``* intel-opencl-icd: ...`` items, ``Intel GPU models
  onboard:`` (one ``* name`` line per GPU) and ``Intel GPU models detected:`` (``* [0] _XpuDeviceProperties(name=...,
  total_memory=65536MB, ...)``, what torch sees).
- ``xpu-smi discovery``: a box table of ``| 0 | Device Name: ... |`` blocks (xpumanager).
- ``sycl-ls``: ``[level_zero:gpu][level_zero:0] Intel(R) ..., Intel(R) Arc(TM) B390 GPU 30.0.4 [1.15.38308+4]``
  (the Level Zero GPUs; ``opencl:gpu`` lines name the same GPUs again and are read only without Level Zero ones).
- ``clinfo``: ``Device Name`` lines under an Intel ``Platform Name`` of ``Device Type GPU`` (the driver may print
  ``Intel(R) Graphics [0x56a1]``, a PCI id).
- ``hl-smi``: the box table (``| HL-SMI Version: hl-1.20.0-fw-58.1.1.1 |``, ``| Driver Version: 1.19.1-6f47ddd |``,
  one ``|   0  HL-225   N/A  | 0000:9a:00.0 ...`` row and one ``| ... |   768MiB /  98304MiB | ...`` row per AIP).

Nothing is guessed: a fact a dump does not show is missing with the reason, and a device count the dump does not
give (torch collect_env names device 0 only) is a partial list (:data:`~mtp_audit.preflight.facts.PARTIAL_GPU_LIST`).
"""

from __future__ import annotations

import re

from mtp_audit.known import AT_LEAST, EXACT
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight.facts import PARTIAL_GPU_LIST, Fact, GpuFacts, MachineFacts
from mtp_audit.preflight.lineindex import index_for

_MIB = 1024 * 1024

SIGNATURES: dict[str, re.Pattern[str]] = {
    "rocm-env": re.compile(r"ROCM used to build PyTorch\s*:\s*\d|HIP runtime version\s*:\s*\d|ROCM available: True|"
                           r"ROCM Version\s*:\s*\d|HIPCC: HIP version", re.M),
    "ascend-env": re.compile(r"vLLM Ascend Version\s*:|^NPU [\d,]+: \S|^CANN: \S|package_name=Ascend-cann|"
                             r"^\[pip3?\] torch[-_]npu==|^torch_npu: \d|NPU available: True", re.M),
    # the header, or (an excerpt that starts inside the table) a row with npu-smi's Health column
    "npu-smi": re.compile(r"npu-smi \d|^\|\s*\d{1,3}\s+[\w.-]{2,40}\s*\|\s*(?:OK|Warning|Alarm|Critical)\s*\|", re.M),
    "rocminfo": re.compile(r"^[ \t]*Marketing Name:[ \t]+\S|^[ \t]*Name:[ \t]+gfx\d", re.M),
    "rocm-smi": re.compile(r"ROCm System Management Interface|^GPU\[\d{1,3}\]\s*:", re.M),
    "amd-smi": re.compile(r"AMDSMI Tool|AMD-SMI \d|^[ \t]*MARKET_NAME[ \t]*:|TARGET_GRAPHICS_VERSION\s*:", re.M),
    "xpu-env": re.compile(r"^Is XPU available\s*:\s*True|^XPU used to build PyTorch\s*:\s*\d|^Intel GPU models (?:onboard|detected)\s*:",
                          re.M),
    "xpu-smi": re.compile(r"^\|\s*\d{1,3}\s*\|\s*Device (?:Type|Name):", re.M),
    "sycl-ls": re.compile(r"^\[(?:level_zero|opencl|ext_oneapi_level_zero):(?:gpu|cpu|acc|fpga)\]", re.M),
    "clinfo": re.compile(r"^[ \t]*Platform Name[ \t]{2,}\S[^\n]*\n(?:[^\n]*\n){0,3}?[ \t]*Device Name[ \t]{2,}\S|"
                         r"^Number of devices[ \t]{2,}\d", re.M),
    "hl-smi": re.compile(r"HL-SMI Version:|^\|\s*AIP\s+Name\b", re.M),
}
FORMATS = tuple(SIGNATURES)


def _line(text: str, pos: int) -> int:
    return index_for(text).line_of(pos)


def _first(text: str, rx: re.Pattern[str], fmt: str, group: int = 1) -> Fact:
    m = rx.search(text)
    if not m:
        return Fact.absent(f"the {fmt} lines show no {rx.pattern[:40]!r}", source=fmt)
    v = m.group(group).strip()
    if v.lower() in ("n/a", "could not collect", "not available", "none", ""):
        return Fact.absent(f"{fmt} says '{v}'", source=f"{fmt} line {_line(text, m.start())}")
    return Fact.of(v, f"{fmt} line {_line(text, m.start())}")


_TORCH_ROCM = re.compile(r"ROCM used to build PyTorch\s*:\s*([^\n]+)")
_HIP_RUNTIME = re.compile(r"HIP runtime version\s*:\s*([^\n]+)")
_VLLM_ROCM = re.compile(r"^ROCM Version\s*:\s*([^\n]+)", re.M)
_HIPCC = re.compile(r"HIPCC: HIP version:?\s*([^\s]+)")
_ROCM_DRIVER = re.compile(r"ROCM Driver Version: ([^\n]+)")
_GPU_LINE = re.compile(r"GPU models and configuration\s*:[ \t]*([^\n]*)")
_TOPO_HEADER = re.compile(r"^[ \t]*((?:GPU\d{1,3}[ \t]+){1,255}GPU\d{1,3})[ \t]*$", re.M)
_CUDA_AVAILABLE = re.compile(r"Is CUDA available\s*:\s*(False|No)\b")


def parse_rocm_env(text: str) -> MachineFacts:
    """The ROCm lines of torch/vLLM collect_env and sglang check_env: torch's ROCm build (or the HIP runtime, or
    vLLM's ROCm Version), device 0's name and gfx target, the GPU count of vLLM's GPU Topology, the ROCm driver."""
    fmt = "rocm-env"
    rocm = _first(text, _TORCH_ROCM, fmt).or_(_first(text, _VLLM_ROCM, fmt)).or_(_first(text, _HIP_RUNTIME, fmt)).or_(_first(text, _HIPCC, fmt))
    gpus: list[GpuFacts] = []
    gpu_list = Fact.absent("the ROCm lines name no GPU")
    m = _GPU_LINE.search(text)
    if m and m.group(1).strip() and not re.match(r"\s*(GPU \d|could not collect|n/a|no cuda)", m.group(1), re.I):
        name = re.sub(r"\s*\(gfx[^)]*\)\s*$", "", m.group(1).strip())
        where = f"{fmt} line {_line(text, m.start(1))}"
        gpus.append(GpuFacts(0, name=Fact.of(name, where), arch=pf.amd_arch(name, pf.gfx_in(m.group(1)), where),
                             compute_capability=Fact.absent("ROCm: no NVIDIA compute capability"),
                             memory_bytes=Fact.absent("collect_env does not print GPU memory")))
        topo = _TOPO_HEADER.search(text)
        n = len(topo.group(1).split()) if topo else 0
        if topo and n > 1:
            gpus += [GpuFacts(i, name=gpus[0].name, arch=gpus[0].arch, compute_capability=gpus[0].compute_capability,
                              memory_bytes=gpus[0].memory_bytes) for i in range(1, n)]
            gpu_list = Fact.of(n, f"{fmt}: device 0 named, {n} GPUs in the GPU Topology (line {_line(text, topo.start())})")
        else:
            gpu_list = Fact.of(1, f"{fmt} ({PARTIAL_GPU_LIST} 1 GPU: torch collect_env names device 0 only)", AT_LEAST)
    acc = Fact.absent("not stated by the ROCm lines")
    if rocm.present or re.search(r"ROCM available: True", text):
        acc = Fact.of(pf.ROCM, rocm.source if rocm.present else f"{fmt} ('ROCM available: True')")
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), gpu_list=gpu_list, rocm_version=rocm, accelerator=acc,
                        driver_version=_first(text, _ROCM_DRIVER, fmt))


_NPU_LINE = re.compile(r"^NPU ([\d,]{1,400}): ([^\n]+)$", re.M)
_CANN_KV = re.compile(r"^CANN: ([^\n]+)$", re.M)
_CANN_INFO = re.compile(r"package_name=Ascend-cann-toolkit[ \t]*\n[ \t]*version=([^\s]+)")
_ASCEND_DRIVER = re.compile(r"Ascend Driver Version: ([^\n]+)")
_VLLM_ASCEND = re.compile(r"vLLM Ascend Version\s*:\s*([^\s]+)")
_TORCH_NPU = re.compile(r"^(?:\[pip3?\] torch[-_]npu==|torch_npu: )(\S+)", re.M)
_SGL_NPU = re.compile(r"^(?:\[pip3?\] sgl[-_]kernel[-_]npu==|sgl[-_]kernel[-_]npu: )(\S+)", re.M)


def parse_ascend_env(text: str) -> MachineFacts:
    """The Ascend lines of vllm-ascend's collect_env and sglang check_env: NPU names (``NPU 0,1: Ascend910B3``),
    CANN (``CANN: 8.2.RC1`` / ``version=`` of the toolkit install info), the driver, torch_npu, vllm-ascend,
    sgl-kernel-npu."""
    fmt = "ascend-env"
    gpus: dict[int, GpuFacts] = {}
    for m in _NPU_LINE.finditer(text):
        name = m.group(2).strip()
        for i in m.group(1).split(","):
            if i.strip().isdigit():
                gpus.setdefault(int(i), GpuFacts(int(i), name=Fact.of(name, f"{fmt} line {_line(text, m.start())}"), arch=pf.ascend_arch(name),
                                                 compute_capability=Fact.absent("Ascend NPU: no NVIDIA compute capability"),
                                                 memory_bytes=Fact.absent("check_env does not print NPU memory")))
    packages: dict[str, Fact] = {}
    for dist, rx in (("vllm-ascend", _VLLM_ASCEND), ("torch-npu", _TORCH_NPU), ("sgl-kernel-npu", _SGL_NPU)):
        f = _first(text, rx, fmt)
        if f.present:
            packages[dist] = Fact.of(re.sub(r"\s*\(git sha.*$", "", str(f.value)), f.source)
    cann = _first(text, _CANN_KV, fmt).or_(_first(text, _CANN_INFO, fmt))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus[i] for i in sorted(gpus)),
                        gpu_list=Fact.of(len(gpus), fmt) if gpus else Fact.absent("the Ascend lines name no NPU"),
                        cann_version=cann, packages=packages, driver_version=_first(text, _ASCEND_DRIVER, fmt),
                        accelerator=Fact.of(pf.CANN, f"{fmt} (Ascend software: {', '.join(sorted(packages)) or 'CANN'})")
                        if packages or cann.present or gpus else Fact.absent("not stated"))


_NPU_HEAD = re.compile(r"npu-smi (\S+)\s+Version:\s*(\S+)")
_NPU_ROW = re.compile(r"^\|\s*(\d{1,3})\s+([A-Za-z0-9][\w.-]{1,40}(?: [A-Za-z0-9][\w.-]{0,20})?)\s*\|\s*(OK|Warning|Alarm|Critical|"
                      r"Normal|Abnormal|[A-Z][a-z]{1,12})\s*\|[^\n]*(?:\n\|\s*(\d{1,3})(?:\s+\d{1,3})?\s+\|\s*([0-9A-Fa-f:.]{7,16})?\s*\|?"
                      r"([^|\n]*)\|?)?", re.M)
_HBM = re.compile(r"(\d{1,9})\s*/\s*(\d{1,9})\s*$")


def parse_npu_smi(text: str) -> MachineFacts:
    """``npu-smi info``: the version header (the driver) and one row pair per NPU chip (name, HBM total in MB)."""
    fmt = "npu-smi"
    hm = _NPU_HEAD.search(text)
    driver = Fact.of(hm.group(2), f"{fmt} header line {_line(text, hm.start())}") if hm else Fact.absent("no npu-smi header line")
    gpus: list[GpuFacts] = []
    rows = list(_NPU_ROW.finditer(text))
    for m in rows:
        name = m.group(2).strip()
        hbm = _HBM.search((m.group(6) or "").strip())
        mem = (Fact.of(int(hbm.group(2)) * _MIB, f"{fmt} line {_line(text, m.start(4)) if m.group(4) else '?'} (HBM-Usage total, MB)") if hbm and int(hbm.group(2))
               else Fact.absent("npu-smi shows no HBM total for this NPU"))
        chip = f"chip {m.group(4)}" if m.group(4) else "chip row cut"
        gpus.append(GpuFacts(len(gpus), name=Fact.of(name, f"{fmt} line {_line(text, m.start())} (NPU {m.group(1)}, {chip})"),
                             arch=pf.ascend_arch(name), compute_capability=Fact.absent("Ascend NPU: no NVIDIA compute capability"),
                             memory_bytes=mem))
    cut = bool(gpus) and ("Process" not in text or not hm)
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), driver_version=driver,
                        gpu_list=((Fact.of(len(gpus), f"{fmt} (table cut: {PARTIAL_GPU_LIST} {len(gpus)} NPU row(s))", AT_LEAST) if cut
                                   else Fact.of(len(gpus), fmt))
                                  if gpus else Fact.absent("the npu-smi table lists no NPU row")),
                        accelerator=(Fact.of(pf.CANN, f"{fmt} header line {_line(text, hm.start())}") if hm else
                                     Fact.of(pf.CANN, f"{fmt} table rows (line {_line(text, rows[0].start())})") if gpus
                                     else Fact.absent("not stated")))


_SMI_KV = re.compile(r"^GPU\[(\d{1,3})\]\s*:\s*(Card Series|Card series|Card Model|Card model|Device Name|Market Name|GFX Version|"
                     r"Driver version)\s*:\s*([^\n]+?)\s*$", re.M)
_SMI_ROW = re.compile(r"^(\d{1,3})\s+\d{1,4}\s+0x[0-9a-fA-F]{4},\s", re.M)
_AMDSMI_BLOCK = re.compile(r"^GPU: (\d{1,3})\s*$", re.M)
_AMDSMI_KV = re.compile(r"^[ \t]*(MARKET_NAME|TARGET_GRAPHICS_VERSION|PRODUCT_NAME)[ \t]*:[ \t]*([^\n]+?)[ \t]*$", re.M)
_AMDSMI_ROCM = re.compile(r"ROCm version:\s*(\d+\.\d+(?:\.\d+)?)")
_AMDSMI_DRIVER = re.compile(r"amdgpu version:\s*(\S+)|^[ \t]*DRIVER:[ \t]*\n[ \t]*NAME:[ \t]*amdgpu[ \t]*\n[ \t]*VERSION:[ \t]*(\S+)", re.M)
#: amd-smi's default monitor table (ROCm 6.4+): ``| 0000:63:00.0 AMD Radeon RX 7900 XTX | ...`` then ``|   0   0  N/A ...``
#: (the GPU index starts the second row), as in gh:ROCm/TheRock#1737.
_AMDSMI_ROW = re.compile(r"^\|\s*[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d\s+([^|\n]{2,60}?)\s*\|[^\n]*\n\|\s*(\d{1,3})\s", re.M)


def _smi_gpus(fmt: str, entries: dict[int, dict[str, tuple[str, int]]]) -> list[GpuFacts]:
    out = []
    for i in sorted(entries):
        e = entries[i]
        name = next((e[k] for k in ("name", "model") if k in e), None)
        gfx = e.get("gfx")
        nf = Fact.of(name[0], f"{fmt} line {name[1]}") if name else Fact.absent(f"{fmt} shows no product name for GPU {i}")
        arch = (Fact.of(gfx[0], f"{fmt} line {gfx[1]}") if gfx and pf.GFX.fullmatch(gfx[0]) else
                pf.amd_arch(name[0], None, f"{fmt} line {name[1]}") if name else Fact.absent("no gfx target shown"))
        out.append(GpuFacts(i, name=nf, arch=arch, compute_capability=Fact.absent("ROCm: no NVIDIA compute capability"),
                            memory_bytes=Fact.absent(f"{fmt} memory not read")))
    return out


def parse_amd_smi(text: str, fmt: str = "amd-smi") -> MachineFacts:
    """``rocm-smi`` (``GPU[0] : Card Series / GFX Version / Driver version`` lines, or the table's device rows) and
    ``amd-smi`` (``GPU: N`` blocks with ``MARKET_NAME`` / ``TARGET_GRAPHICS_VERSION``, monitor rows, the ROCm and
    amdgpu versions of its header)."""
    entries: dict[int, dict[str, tuple[str, int]]] = {}
    driver = Fact.absent(f"{fmt} shows no driver version")
    for m in _SMI_KV.finditer(text):
        key = {"gfx version": "gfx", "driver version": "driver", "card model": "model"}.get(m.group(2).lower(), "name")
        if key == "driver":
            driver = driver.or_(Fact.of(m.group(3), f"{fmt} line {_line(text, m.start())}"))
            continue
        entries.setdefault(int(m.group(1)), {}).setdefault(key, (m.group(3), _line(text, m.start())))
    blocks = list(_AMDSMI_BLOCK.finditer(text))
    for j, b in enumerate(blocks):
        end = blocks[j + 1].start() if j + 1 < len(blocks) else len(text)
        for kv in _AMDSMI_KV.finditer(text, b.end(), end):
            key = "gfx" if kv.group(1) == "TARGET_GRAPHICS_VERSION" else "name"
            if kv.group(2).strip().upper() not in ("N/A", ""):
                entries.setdefault(int(b.group(1)), {}).setdefault(key, (kv.group(2), _line(text, kv.start())))
    for m in _AMDSMI_ROW.finditer(text):
        entries.setdefault(int(m.group(2)), {}).setdefault("name", (m.group(1).strip(), _line(text, m.start())))
    if not entries:
        for m in _SMI_ROW.finditer(text):
            entries.setdefault(int(m.group(1)), {})
    dm = _AMDSMI_DRIVER.search(text)
    if dm:
        driver = driver.or_(Fact.of(dm.group(1) or dm.group(2), f"{fmt} line {_line(text, dm.start())}"))
    gpus = _smi_gpus(fmt, entries)
    # rocm-smi ends its output with "End of ROCm SMI Log", amd-smi's table view with its Processes box: device rows
    # without them may be a table cut short
    cut = ((fmt == "rocm-smi" and "End of ROCm SMI Log" not in text)
           or (fmt == "amd-smi" and "AMD-SMI " in text and "Processes" not in text))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), driver_version=driver,
                        gpu_list=(Fact.of(len(gpus), f"{fmt} (the end of its output is not seen: {PARTIAL_GPU_LIST} {len(gpus)} GPU(s))", AT_LEAST)
                                  if cut else Fact.of(len(gpus), fmt)) if gpus else Fact.absent(f"the {fmt} output lists no GPU"),
                        rocm_version=_first(text, _AMDSMI_ROCM, fmt),
                        accelerator=Fact.of(pf.ROCM, f"{fmt} output"))


def parse_rocm_smi(text: str) -> MachineFacts:
    """``rocm-smi`` output (:func:`parse_amd_smi` reads both tools' lines)."""
    return parse_amd_smi(text, "rocm-smi")


_ROCMINFO_AGENT = re.compile(r"^[ \t]*Name:[ \t]+(gfx[0-9a-f]{3,4})\b[^\n]*(?:\n[^\n]*){0,4}?\n[ \t]*Marketing Name:[ \t]*([^\n]*)", re.M)


def parse_rocminfo(text: str) -> MachineFacts:
    """``rocminfo``: one GPU per agent whose ``Name`` is a gfx target, named by its ``Marketing Name`` (a cut or
    empty marketing name keeps the gfx target as the device's identity)."""
    fmt = "rocminfo"
    gpus: list[GpuFacts] = []
    for m in _ROCMINFO_AGENT.finditer(text):
        where = f"{fmt} line {_line(text, m.start(1))}"
        name = m.group(2).strip()
        gpus.append(GpuFacts(len(gpus), name=Fact.of(name, where) if len(name) > 2 else Fact.absent(f"rocminfo's Marketing Name is '{name}'"),
                             arch=Fact.of(m.group(1), where), compute_capability=Fact.absent("ROCm: no NVIDIA compute capability"),
                             memory_bytes=Fact.absent("rocminfo memory not read")))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus),
                        # rocminfo ends its agent list with "*** Done ***": without it the list may be cut
                        gpu_list=(Fact.of(len(gpus), fmt) if "*** Done ***" in text else
                                  Fact.of(len(gpus), f"{fmt} (no '*** Done ***': {PARTIAL_GPU_LIST} {len(gpus)} GPU(s))", AT_LEAST))
                        if gpus else Fact.absent("rocminfo lists no gfx agent"),
                        accelerator=Fact.of(pf.ROCM, f"{fmt} output") if gpus else Fact.absent("not stated"))


_XPU_DETECTED = re.compile(r"^\*\s*\[(\d{1,3})\]\s*_XpuDeviceProperties\(name='([^'\n]{1,120})'([^\n]*)$", re.M)
#: one more bullet after torch's indexed list (``* [1] _XpuDev``, cut short): still an entry of it, not its end
_XPU_ENTRY_START = re.compile(r"[ \t]*\*")
_XPU_MEMORY = re.compile(r"total_memory=(\d{1,9})MB")
_XPU_LIST = re.compile(r"^Intel GPU models onboard\s*:[ \t]*\n((?:\*[^\n]*\n?){1,256})", re.M)
_XPU_DRIVER = re.compile(r"^\*\s*(?:intel-opencl-icd|intel_opencl)\s*:\s*(\S{1,60})", re.M)
_XPU_BUILD = re.compile(r"^XPU used to build PyTorch\s*:\s*(\S{1,40})", re.M)


def _intel_gpu(i: int, name: str, where: str, memory: Fact | None = None) -> GpuFacts:
    return GpuFacts(i, name=Fact.of(name, where), arch=pf.intel_arch(name),
                    compute_capability=Fact.absent("Intel XPU: no NVIDIA compute capability"),
                    memory_bytes=memory or Fact.absent("this tool does not print the GPU's memory"))


def parse_xpu_env(text: str) -> MachineFacts:
    """The XPU lines of torch collect_env (torch >= 2.8): the GPUs torch detects (name, ``total_memory``), else the
    ones onboard; the Intel compute runtime's version; ``Is XPU available: True`` as the platform."""
    fmt = "xpu-env"
    gpus: list[GpuFacts] = []
    for m in _XPU_DETECTED.finditer(text):
        where = f"{fmt} line {_line(text, m.start())}"
        mem = _XPU_MEMORY.search(m.group(3))
        gpus.append(_intel_gpu(len(gpus), m.group(2).strip(), where + " (detected by torch)",
                               Fact.of(int(mem.group(1)) * _MIB, where + " (total_memory, MB)") if mem else None))
    onboard = _XPU_LIST.search(text)
    names = [ln[1:].strip() for ln in onboard.group(1).splitlines() if ln[1:].strip()] if onboard else []
    start = _line(text, onboard.start()) if onboard else 0
    for k in range(len(gpus), len(names)):  # onboard but not (or not shown as) detected
        gpus.append(_intel_gpu(k, names[k], f"{fmt} line {start + 1 + k} (onboard)"))
    det = list(_XPU_DETECTED.finditer(text))
    detected = len(det)
    # exact only from torch's indexed list, seen whole: a line that is not one of its entries follows it (a paste may
    # stop inside it) and its indices run 0..N-1 (rows dropped from the middle leave a gap); the onboard list has no
    # indices, so bullets dropped from its middle cannot be told from a shorter list: its count is a lower bound
    detected_whole = bool(det) and bool(text[det[-1].end():].strip()) and \
        not _XPU_ENTRY_START.match(text[det[-1].end():].lstrip("\n")) and [int(m.group(1)) for m in det] == list(range(detected))
    whole = detected_whole and len(names) <= detected
    extent = EXACT if whole else AT_LEAST
    cut = "" if whole else f", {PARTIAL_GPU_LIST} {len(gpus)}: the list's end is not seen"
    if not gpus:
        gpu_list = Fact.absent("the XPU lines list no GPU")
    elif detected and len(names) > detected:
        gpu_list = Fact.of(len(gpus), f"{fmt} ({len(names)} onboard, {detected} detected by torch{cut})", extent)
    elif detected:
        gpu_list = Fact.of(len(gpus), f"{fmt} (detected by torch{cut})", extent)
    else:
        gpu_list = Fact.of(len(gpus), f"{fmt} (onboard list; torch's detected list not shown{cut})", extent)
    avail = re.search(r"^Is XPU available\s*:\s*True", text, re.M)
    acc = (Fact.of(pf.XPU, f"{fmt} line {_line(text, avail.start())} ('Is XPU available: True')") if avail else
           Fact.of(pf.XPU, f"{fmt} (Intel GPUs listed)") if gpus else Fact.absent("not stated"))
    build = _first(text, _XPU_BUILD, fmt)
    notes = (f"torch built with oneAPI {build.value} ({build.source})",) if build.present else ()
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), gpu_list=gpu_list, accelerator=acc, notes=notes,
                        driver_version=_first(text, _XPU_DRIVER, fmt))


_XPUSMI_NAME = re.compile(r"^\|\s*(\d{1,3})?\s*\|\s*Device Name:\s*([^|\n]{1,120}?)\s*\|", re.M)
_XPUSMI_DEVICE = re.compile(r"^\|\s*(\d{1,3})\s*\|", re.M)


def parse_xpu_smi(text: str) -> MachineFacts:
    """``xpu-smi discovery``: one ``| N | Device Name: ... |`` block per GPU (the device id on the block's first row)."""
    fmt = "xpu-smi"
    import bisect

    gpus: list[GpuFacts] = []
    rows = [(d.start(), int(d.group(1))) for d in _XPUSMI_DEVICE.finditer(text)]
    starts = [r[0] for r in rows]
    for m in _XPUSMI_NAME.finditer(text):
        k = bisect.bisect_right(starts, m.start()) - 1  # the block's device id: the last id row at or before the name
        index = int(m.group(1)) if m.group(1) else rows[k][1] if k >= 0 else len(gpus)
        gpus.append(_intel_gpu(index, m.group(2).strip(), f"{fmt} line {_line(text, m.start())} (device {index})"))
    cut = bool(gpus) and (not _table_end_seen(text) or not _indices_whole(gpus))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus),
                        gpu_list=(Fact.of(len(gpus), f"{fmt} (table cut: {PARTIAL_GPU_LIST} {len(gpus)} GPU(s))", AT_LEAST) if cut
                                  else Fact.of(len(gpus), fmt)
                                  if gpus else Fact.absent("the xpu-smi table lists no device name")),
                        accelerator=Fact.of(pf.XPU, f"{fmt} output") if gpus else Fact.absent("not stated"))


_SYCL_LINE = re.compile(r"^\[(level_zero|ext_oneapi_level_zero|opencl):gpu\]\[(?:level_zero|ext_oneapi_level_zero|opencl):(\d{1,3})\]"
                        r" ([^,\n]{1,120}), ([^\n]{1,160}?) (?:OpenCL \S+ NEO\s+|\d+\.\d+\.\d+ )?\[([^\]\n]{1,40})\]\s*$", re.M)


def parse_sycl_ls(text: str) -> MachineFacts:
    """``sycl-ls``: the Level Zero GPUs (the ``opencl:gpu`` lines name the same GPUs again: read only when no Level
    Zero GPU is listed), each with its driver version in brackets."""
    fmt = "sycl-ls"
    lines = list(_SYCL_LINE.finditer(text))
    l0 = [m for m in lines if m.group(1) != "opencl"]
    use = l0 or lines
    use = [m for m in use if "intel" in m.group(3).lower()]  # the platform: Intel's Level Zero or OpenCL runtime
    gpus = [_intel_gpu(i, m.group(4).strip(), f"{fmt} line {_line(text, m.start())} ({m.group(1)}:{m.group(2)})")
            for i, m in enumerate(use)]
    driver = Fact.of(use[0].group(5), f"{fmt} line {_line(text, use[0].start())}") if gpus else Fact.absent("sycl-ls lists no Intel GPU")
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), driver_version=driver,
                        gpu_list=(Fact.of(len(gpus), fmt + ("" if l0 else " (OpenCL GPUs: Level Zero lists none)")) if gpus
                                  else Fact.absent("sycl-ls lists no Intel GPU")),
                        accelerator=Fact.of(pf.XPU, f"{fmt} output") if gpus else Fact.absent("not stated"))


_CL_PLATFORM = re.compile(r"^[ \t]*Platform Name[ \t]{2,}([^\n]{1,120}?)[ \t]*$", re.M)
_CL_DEVICE = re.compile(r"^[ \t]*Device Name[ \t]{2,}([^\n]{1,120}?)[ \t]*$", re.M)
_CL_TYPE = re.compile(r"^[ \t]*Device Type[ \t]{2,}(\w{1,20})", re.M)


def parse_clinfo(text: str) -> MachineFacts:
    """``clinfo``: the ``Device Name`` of each GPU (``Device Type GPU``, or an Intel graphics platform when the type
    is cut off) under an Intel ``Platform Name``."""
    fmt = "clinfo"
    gpus: list[GpuFacts] = []
    plats = list(_CL_PLATFORM.finditer(text))
    for m in _CL_DEVICE.finditer(text):
        plat = next((p.group(1) for p in reversed(plats) if p.start() < m.start()), "")
        kind = _CL_TYPE.search(text, m.end(), m.end() + 2000)
        gpu = kind.group(1).upper() == "GPU" if kind else "graphics" in plat.lower()
        if gpu and "intel" in plat.lower():
            gpus.append(_intel_gpu(len(gpus), m.group(1), f"{fmt} line {_line(text, m.start())} ({plat})"))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus),
                        gpu_list=Fact.of(len(gpus), fmt) if gpus else Fact.absent("clinfo lists no Intel GPU"),
                        accelerator=Fact.of(pf.XPU, f"{fmt} output (Intel OpenCL GPU)") if gpus else Fact.absent("not stated"))


_HL_VERSION = re.compile(r"HL-SMI Version:\s*(\S{1,60})")
_HL_DRIVER = re.compile(r"^\|\s*Driver Version:\s*(\S{1,60})", re.M)
_HL_ROW = re.compile(r"^\|\s*(\d{1,3})\s+(HL-\w{2,8})\s[^|\n]{0,40}\|\s*([0-9a-fA-F:.]{7,16})?[^\n]*"
                     r"(?:\n\|[^|\n]{0,60}\|\s*\d{1,9}\s?Mi[Bb]\s*/\s*(\d{1,9})\s?Mi[Bb])?", re.M)


def parse_hl_smi(text: str) -> MachineFacts:
    """``hl-smi``: the version lines (the driver) and one row pair per AIP (name such as ``HL-225``, memory total)."""
    fmt = "hl-smi"
    gpus: list[GpuFacts] = []
    for m in _HL_ROW.finditer(text):
        where = f"{fmt} line {_line(text, m.start())} (AIP {m.group(1)})"
        mem = Fact.of(int(m.group(4)) * _MIB, f"{where}, Memory-Usage total MiB") if m.group(4) else Fact.absent(
            "hl-smi shows no memory total for this AIP (row cut)")
        gpus.append(GpuFacts(int(m.group(1)), name=Fact.of(m.group(2), where), arch=pf.gaudi_arch(m.group(2)),
                             compute_capability=Fact.absent("Gaudi HPU: no NVIDIA compute capability"), memory_bytes=mem))
    hm = _HL_VERSION.search(text)
    cut = bool(gpus) and ("Compute Processes" not in text or not _indices_whole(gpus) or not _hl_rows_whole(text, gpus))
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus), driver_version=_first(text, _HL_DRIVER, fmt),
                        gpu_list=(Fact.of(len(gpus), f"{fmt} (table cut: {PARTIAL_GPU_LIST} {len(gpus)} AIP row(s))", AT_LEAST) if cut
                                  else Fact.of(len(gpus), fmt)
                                  if gpus else Fact.absent("the hl-smi table lists no AIP row")),
                        notes=(f"hl-smi {hm.group(1)} ({fmt} line {_line(text, hm.start())})",) if hm else (),
                        accelerator=(Fact.of(pf.HPU, f"{fmt} header line {_line(text, hm.start())}") if hm else
                                     Fact.of(pf.HPU, f"{fmt} table rows") if gpus else Fact.absent("not stated")))


_HL_MEMORY_LINE = re.compile(r"^\|[^|\n]{0,60}\|\s*\d{1,9}\s?Mi[Bb]\s*/\s*\d{1,9}\s?Mi[Bb]", re.M)
_HL_PROCESS = re.compile(r"^\|\s*(\d{1,3})\s+(?:\d{1,9}|N/A)\s+(?:\w{1,3}|N/A)\s", re.M)


def _hl_rows_whole(text: str, gpus: list[GpuFacts]) -> bool:
    """Whether every AIP of the ``hl-smi`` table kept its row: each has its Memory-Usage line, no Memory-Usage line
    is left without its AIP row (the row above it dropped), and the Compute Processes section names no AIP past the
    last row. A paste with lines dropped from the middle fails one of these and lists fewer AIPs than the machine has."""
    if any(not g.memory_bytes.present for g in gpus) or len(_HL_MEMORY_LINE.findall(text)) != len(gpus):
        return False
    procs = text.find("Compute Processes")
    return all(int(m.group(1)) < len(gpus) for m in _HL_PROCESS.finditer(text, max(procs, 0)))


PARSERS = {
    "xpu-env": parse_xpu_env,
    "xpu-smi": parse_xpu_smi,
    "sycl-ls": parse_sycl_ls,
    "clinfo": parse_clinfo,
    "hl-smi": parse_hl_smi,
    "rocm-env": parse_rocm_env,
    "ascend-env": parse_ascend_env,
    "npu-smi": parse_npu_smi,
    "rocm-smi": parse_rocm_smi,
    "amd-smi": parse_amd_smi,
    "rocminfo": parse_rocminfo,
}


def cpu_only(text: str, facts: MachineFacts) -> Fact:
    """``cpu`` when a torch/vLLM collect_env says ``Is CUDA available: False`` for a ``+cpu`` torch build, with no
    ROCm or Ascend software shown; else missing."""
    m = _CUDA_AVAILABLE.search(text)
    tv = str(facts.torch_version.value or "")
    if m and tv.endswith("+cpu") and not facts.rocm_version.present and not facts.cann_version.present:
        return Fact.of(pf.CPU, f"torch {tv} and 'Is CUDA available: {m.group(1)}' (line {_line(text, m.start())})")
    return Fact.absent("not stated")


def _table_end_seen(text: str) -> bool:
    """Whether an ``xpu-smi`` table's end is seen: a line that is not part of the table (a prompt, another tool's
    output) follows its last border. The border after the last device looks like the border between two devices,
    so a paste that stops on a border may have been cut there: its device count is a lower bound."""
    lines = [ln.strip() for ln in text.splitlines()]
    last = max((i for i, ln in enumerate(lines) if ln.startswith(("+", "|"))), default=-1)
    return last >= 0 and any(ln for ln in lines[last + 1:])


def _indices_whole(gpus: list[GpuFacts]) -> bool:
    """Whether the device indices are 0..N-1 with none missing: a paste with rows dropped from the middle (device 0's
    row gone, say) lists fewer devices than the machine has, however complete the table around them looks."""
    return sorted(g.index for g in gpus) == list(range(len(gpus)))
