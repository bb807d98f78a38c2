"""Environment dumps of AMD ROCm and Ascend machines: ``rocm-smi``, ``amd-smi``, ``npu-smi info``, and the ROCm /
Ascend lines of ``torch.utils.collect_env``, ``vllm collect-env`` (vllm-ascend's variant) and ``sglang.check_env``.

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

Nothing is guessed: a fact a dump does not show is missing with the reason, and a device count the dump does not
give (torch collect_env names device 0 only) is a partial list (:data:`~mtp_audit.preflight.facts.PARTIAL_GPU_LIST`).
"""

from __future__ import annotations

import re

from mtp_audit.preflight import platforms as pf
from mtp_audit.known import AT_LEAST
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
    "rocminfo": re.compile(r"^\s*Marketing Name:\s+\S|^\s*Name:\s+gfx\d", re.M),
    "rocm-smi": re.compile(r"ROCm System Management Interface|^GPU\[\d{1,3}\]\s*:", re.M),
    "amd-smi": re.compile(r"AMDSMI Tool|AMD-SMI \d|^\s*MARKET_NAME\s*:|TARGET_GRAPHICS_VERSION\s*:", re.M),
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
_TOPO_HEADER = re.compile(r"^\s*((?:GPU\d{1,3}\s+){1,255}GPU\d{1,3})\s*$", re.M)
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
        if n > 1:
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
_CANN_INFO = re.compile(r"package_name=Ascend-cann-toolkit\s*\n\s*version=([^\s]+)")
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
    for m in _NPU_ROW.finditer(text):
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
                                     Fact.of(pf.CANN, f"{fmt} table rows (line {_line(text, _NPU_ROW.search(text).start())})") if gpus
                                     else Fact.absent("not stated")))


_SMI_KV = re.compile(r"^GPU\[(\d{1,3})\]\s*:\s*(Card Series|Card series|Card Model|Card model|Device Name|Market Name|GFX Version|"
                     r"Driver version)\s*:\s*([^\n]+?)\s*$", re.M)
_SMI_ROW = re.compile(r"^(\d{1,3})\s+\d{1,4}\s+0x[0-9a-fA-F]{4},\s", re.M)
_AMDSMI_BLOCK = re.compile(r"^GPU: (\d{1,3})\s*$", re.M)
_AMDSMI_KV = re.compile(r"^\s*(MARKET_NAME|TARGET_GRAPHICS_VERSION|PRODUCT_NAME)\s*:\s*([^\n]+?)\s*$", re.M)
_AMDSMI_ROCM = re.compile(r"ROCm version:\s*(\d+\.\d+(?:\.\d+)?)")
_AMDSMI_DRIVER = re.compile(r"amdgpu version:\s*(\S+)|^\s*DRIVER:\s*\n\s*NAME:\s*amdgpu\s*\n\s*VERSION:\s*(\S+)", re.M)
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


_ROCMINFO_AGENT = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]{3,4})\b[^\n]*(?:\n[^\n]*){0,4}?\n\s*Marketing Name:[ \t]*([^\n]*)", re.M)


def parse_rocminfo(text: str) -> MachineFacts:
    """``rocminfo``: one GPU per agent whose ``Name`` is a gfx target, named by its ``Marketing Name`` (a cut or
    empty marketing name keeps the gfx target as the device's identity)."""
    fmt = "rocminfo"
    gpus = []
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


PARSERS = {
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
