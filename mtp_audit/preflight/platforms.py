"""Which platform a machine is (NVIDIA CUDA, AMD ROCm, Ascend CANN, Intel XPU, Intel Gaudi HPU or CPU only), and the
AMD / Ascend / Intel / Gaudi device tables.

Every machine source (live collection, a tool dump, free-form text, a container image tag, ``--device npu`` in a
launch) yields the platform before any capability check: :func:`detect` reads the facts a source left and returns a
:class:`~mtp_audit.preflight.facts.Fact` whose ``source`` says which fact decided it. The NVIDIA checks run only on
CUDA (or where nothing says otherwise, as before); ROCm and CANN get their own checks
(:mod:`mtp_audit.preflight.vendors`).

Tables (shipped data, every row with its source):

- ``mtp_audit/data/amd.json``: AMD product names -> gfx target (ROCm GPU specs,
  https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html), what each gfx target computes natively
  (ROCm precision support, https://rocm.docs.amd.com/en/latest/reference/precision-support.html: MXFP4 only on
  gfx950/CDNA4; FP8 e4m3fnuz on gfx942, e4m3fn on gfx950), and the FP4 paths of vLLM and SGLang on ROCm read
  from their wheels.
- ``mtp_audit/data/ascend.json``: Ascend NPU names -> model and Atlas series (vllm-ascend FAQ), and the
  vllm-ascend / SGLang-NPU facts the preflight reports.
- ``mtp_audit/data/intel.json``: Intel GPU names (and the PCI ids clinfo prints for some) -> product and family, and
  vLLM's XPU quantization list read from its wheels.
- ``mtp_audit/data/gaudi.json``: Gaudi names (hl-smi's ``HL-225``) -> generation, and the Gaudi plugin's documented
  quantization backends.

Names are matched on whole words as in :mod:`mtp_audit.preflight.gpus` (``"MI300X"`` = ``mi 300 x``), the longest
alias winning, so ``"MI300"`` never matches inside ``"MI3000"`` and ``"910B"`` yields to ``"910B3"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts
from mtp_audit.preflight.gpus import words

CUDA, ROCM, CANN, CPU = "cuda", "rocm", "cann", "cpu"
#: Intel GPUs (vLLM's ``xpu`` platform, SGLang ``--device xpu``) and Intel Gaudi accelerators (``hpu``).
XPU, HPU = "xpu", "hpu"
#: Platform value -> the words the reports use.
LABELS = {CUDA: "NVIDIA CUDA", ROCM: "AMD ROCm", CANN: "Ascend CANN", XPU: "Intel XPU", HPU: "Intel Gaudi HPU",
          CPU: "CPU only (no accelerator)"}

#: A gfx target as ROCm prints it (``gfx942:sramecc+:xnack-``, ``gfx90a``, ``gfx1100``).
GFX = re.compile(r"(?<![a-z0-9])gfx(\d{3,4}|90[0-9a-f])(?![0-9a-z])", re.I)

#: HIP's (major, minor) of a gfx target: hipDeviceProp_t.major/.minor, what torch.cuda.get_device_capability() and
#: ``sglang.check_env``'s "Compute Capability" print on ROCm. Source: wheel:vllm-0.20.0:vllm/platforms/rocm.py:196-210
#: ("gfx90a -> (9, 0), gfx942 -> (9, 4), gfx950 -> (9, 5), gfx1100 -> (11, 0), gfx1200 -> (12, 0)").
HIP_CC_TO_GFX = {(9, 0): "gfx90a", (9, 4): "gfx942", (9, 5): "gfx950", (9, 6): "gfx906", (9, 8): "gfx908"}


@lru_cache(maxsize=4)
def _table(name: str) -> dict[str, Any]:
    return json.loads(resources.files("mtp_audit").joinpath(f"data/{name}.json").read_text(encoding="utf-8"))


def amd_table() -> dict[str, Any]:
    """The parsed ``data/amd.json`` (cached)."""
    return _table("amd")


def ascend_table() -> dict[str, Any]:
    """The parsed ``data/ascend.json`` (cached)."""
    return _table("ascend")


def intel_table() -> dict[str, Any]:
    """The parsed ``data/intel.json`` (cached)."""
    return _table("intel")


def gaudi_table() -> dict[str, Any]:
    """The parsed ``data/gaudi.json`` (cached)."""
    return _table("gaudi")


@dataclass(frozen=True)
class DeviceMatch:
    """One AMD or Ascend table hit: ``product`` (row name), ``alias`` (as written in the table), ``row`` (the table
    row: ``gfx`` for AMD, ``series``/``generation`` for Ascend) and ``source``."""

    product: str
    alias: str
    row: dict[str, Any]
    source: str


@lru_cache(maxsize=4)
def _index(name: str) -> dict[tuple[str, ...], tuple[str, int]]:
    out: dict[tuple[str, ...], tuple[str, int]] = {}
    for i, row in enumerate(_table(name)["products"]):
        for alias in row["aliases"]:
            out[words(alias)] = (alias, i)
    return out


def _lookup(name: str, text: str) -> DeviceMatch | None:
    """The longest alias of table ``name`` found in ``text`` as whole words; ``None`` when none, or when aliases of
    two rows with different targets are found (a name is one product)."""
    ws = words(text)
    idx = _index(name)
    longest = max((len(k) for k in idx), default=0)
    hits: list[tuple[int, str, int]] = []
    for i in range(len(ws)):
        for n in range(min(longest, len(ws) - i), 0, -1):
            hit = idx.get(tuple(ws[i:i + n]))
            if hit is not None:
                hits.append((n, hit[0], hit[1]))
                break
    if not hits:
        return None
    rows = _table(name)["products"]
    key = {"amd": "gfx", "intel": "product"}.get(name, "generation")
    if len({rows[r][key] for _, _, r in hits}) > 1:
        return None
    n, alias, r = max(hits, key=lambda h: (h[0], len(h[1])))
    return DeviceMatch(rows[r]["product"], alias, rows[r], rows[r]["source"])


def amd_lookup(text: str) -> DeviceMatch | None:
    """The AMD product named in ``text`` (``"AMD Instinct MI300X OAM"`` -> MI300X, gfx942), or ``None``."""
    return _lookup("amd", text)


def ascend_lookup(text: str) -> DeviceMatch | None:
    """The Ascend NPU named in ``text`` (``"910B3"``, ``"Ascend910_9392"``), or ``None``."""
    return _lookup("ascend", text)


def intel_lookup(text: str) -> DeviceMatch | None:
    """The Intel GPU named in ``text`` (``"Intel(R) Data Center GPU Max 1550"`` -> Max 1550; clinfo's
    ``"Intel(R) Graphics [0x56a1]"`` by its PCI id), or ``None``."""
    hit = _lookup("intel", text)
    if hit is not None:
        return hit
    m = _PCI_ID.search(text)
    if m is None:
        return None
    pid = "0x" + m.group(1).lower().rjust(4, "0")
    for row in intel_table()["products"]:
        if pid in row.get("pci_ids", ()):
            return DeviceMatch(row["product"], f"PCI id {pid}", row, row["source"])
    return None


def gaudi_lookup(text: str) -> DeviceMatch | None:
    """The Gaudi accelerator named in ``text`` (``"HL-225"`` -> Gaudi 2), or ``None``."""
    return _lookup("gaudi", text)


#: The PCI device id a driver prints when it has no marketing name (``Intel(R) Graphics [0x56a1]``).
_PCI_ID = re.compile(r"\[0x([0-9a-fA-F]{3,4})\]")


def intel_arch(name: str) -> Fact:
    """The product and family of one Intel GPU as the table has them (``"Intel Data Center GPU Max 1550"``, family
    in the source); missing for a name the table does not hold (``"Intel(R) Graphics [0xe211]"`` of a PCI id it lacks)."""
    hit = intel_lookup(name) if name else None
    if hit is None:
        return Fact.absent(f"'{name}' is not in the Intel GPU table")
    family = f"{hit.row['family']}; " if hit.row.get("family") else ""
    return Fact.of(hit.product, f"Intel GPU table ({family}'{name}' matched '{hit.alias}'; {hit.source})")


def gaudi_arch(name: str) -> Fact:
    """The Gaudi generation of an accelerator name (``"HL-325L"`` -> ``"Gaudi 3"``)."""
    hit = gaudi_lookup(name) if name else None
    if hit is None:
        return Fact.absent(f"'{name}' is not in the Gaudi table")
    return Fact.of(hit.row["generation"], f"Gaudi table ('{name}' matched '{hit.alias}'; {hit.source})")


def gfx_in(text: str) -> str | None:
    """The one gfx target written in ``text`` (``"gfx942"``), ``None`` when none or several differ."""
    found = {f"gfx{m.group(1).lower()}" for m in GFX.finditer(text)}
    return found.pop() if len(found) == 1 else None


def gfx_target(gfx: str | None) -> dict[str, Any] | None:
    """The ``targets`` row of ``data/amd.json`` for ``gfx`` (``"gfx950"``), or ``None`` when not in the table."""
    return next((t for t in amd_table()["targets"] if t["gfx"] == gfx), None) if gfx else None


def amd_arch(name: str, written: str | None = None, where: str = "") -> Fact:
    """The gfx target of one AMD GPU: the one written (``written``, e.g. the ``gfx942`` of
    ``"AMD Instinct MI300X (gfx942:sramecc+:xnack-)"``) or else the product table; a disagreement is missing."""
    hit = amd_lookup(name) if name else None
    written = written or (gfx_in(name) if name else None)
    if written and hit and hit.row["gfx"] != written:
        return Fact.absent(f"conflict: {where or 'the dump'} writes {written} but '{name}' is {hit.row['gfx']} ({hit.source})")
    if written:
        return Fact.of(written, f"{where} ('{written}' written)" if where else f"'{written}' written")
    if hit:
        return Fact.of(hit.row["gfx"], f"AMD product table ({hit.source}; '{name}' matched '{hit.alias}')")
    return Fact.absent(f"'{name}' is not in the AMD product table and no gfx target is written")


def ascend_arch(name: str) -> Fact:
    """The Ascend model of an NPU name as the table has it (``"Ascend 910B3"``), with the Atlas series in the source."""
    hit = ascend_lookup(name) if name else None
    if hit is None:
        return Fact.absent(f"'{name}' is not in the Ascend NPU table")
    return Fact.of(hit.product, f"Ascend NPU table ({hit.row['series']}; '{name}' matched '{hit.alias}'; {hit.source})")


_AMD_NAME = re.compile(r"\bamd\b|instinct|radeon|\bmi\d{2,3}[a-z]?\b", re.I)
_ASCEND_NAME = re.compile(r"ascend|\b910[a-z0-9_]*|\b310p", re.I)
_NVIDIA_NAME = re.compile(r"nvidia|geforce|tesla|quadro", re.I)
_INTEL_NAME = re.compile(r"intel\(r\)|\bintel\b.{0,20}\b(?:arc|graphics|gpu)\b|\barc\(tm\)|data center gpu (?:max|flex)", re.I)
_GAUDI_NAME = re.compile(r"\bgaudi|\bhl-[23]\d\d", re.I)


def _gpu_evidence(gpus: tuple[GpuFacts, ...]) -> Fact | None:
    """The platform the GPU list says: a gfx target or an AMD name -> ROCm, an Ascend name -> CANN, a compute
    capability with an NVIDIA name -> CUDA."""
    for g in gpus:
        name = str(g.name.value or "")
        arch = str(g.arch.value or "")
        if arch.startswith("gfx") or (name and _AMD_NAME.search(name)):
            return Fact.of(ROCM, f"GPU {g.index} '{name or arch}' ({g.arch.source or g.name.source})")
        if arch.lower().startswith("ascend") or (name and (_ASCEND_NAME.search(name) or ascend_lookup(name))):
            return Fact.of(CANN, f"NPU {g.index} '{name or arch}' ({g.arch.source or g.name.source})")
        if name and (_GAUDI_NAME.search(name) or gaudi_lookup(name)):
            return Fact.of(HPU, f"HPU {g.index} '{name}' ({g.name.source})")
        if name and (_INTEL_NAME.search(name) or intel_lookup(name)) and not _NVIDIA_NAME.search(name):
            return Fact.of(XPU, f"GPU {g.index} '{name}' ({g.name.source})")
    for g in gpus:
        name = str(g.name.value or "")
        if _NVIDIA_NAME.search(name) or g.cc:
            return Fact.of(CUDA, f"GPU {g.index} '{name or '?'}' ({g.name.source or g.compute_capability.source})")
    return None


def _stack_evidence(m: MachineFacts) -> Fact | None:
    """The platform the software stack says: torch's ROCm build or a ``+rocm`` tag, torch_npu / CANN / vllm-ascend,
    torch's CUDA build."""
    tv = str(m.torch_version.value or "")
    if m.rocm_version.present:
        return Fact.of(ROCM, f"ROCm {m.rocm_version.value} ({m.rocm_version.source})")
    if "+rocm" in tv:
        return Fact.of(ROCM, f"torch {tv} (+rocm build; {m.torch_version.source})")
    for dist in ("torch-npu", "vllm-ascend", "sgl-kernel-npu"):
        f = m.packages.get(dist)
        if f is not None and f.present:
            return Fact.of(CANN, f"{dist} {f.value} ({f.source})")
    if m.cann_version.present:
        return Fact.of(CANN, f"CANN {m.cann_version.value} ({m.cann_version.source})")
    if "+xpu" in tv:
        return Fact.of(XPU, f"torch {tv} (+xpu build; {m.torch_version.source})")
    if m.torch_cuda.present:
        return Fact.of(CUDA, f"torch built for CUDA {m.torch_cuda.value} ({m.torch_cuda.source})")
    return None


def detect(m: MachineFacts) -> Fact:
    """The platform of ``m``: a platform a source stated (a tool of one vendor: ``npu-smi``, ``amd-smi``,
    ``nvidia-smi``) wins, then the GPUs, then the software stack; ``cpu`` only when a source stated it (torch
    reports no accelerator). Missing, with the reason, when nothing says."""
    if m.accelerator.present:
        return m.accelerator
    return _gpu_evidence(m.gpus) or _stack_evidence(m) or Fact.absent(
        "no GPU, NPU or accelerator build is shown" if not m.accelerator.missing or m.accelerator.missing == "not observed"
        else m.accelerator.missing)


def with_platform(m: MachineFacts) -> MachineFacts:
    """``m`` with its platform decided (:func:`detect`) and, on ROCm / CANN, each device's ``arch`` filled from its
    name where the source did not write it (gfx target from the AMD table, model from the Ascend table)."""
    plat = detect(m)
    gpus = m.gpus
    # a source that read the architecture (or found a conflict) is kept; only a device nobody looked at is filled
    unread = lambda g: not g.arch.present and g.arch.missing in (None, "not observed")  # noqa: E731
    if plat.value == ROCM:
        gpus = tuple(replace(g, arch=amd_arch(str(g.name.value or ""))) if unread(g) else g for g in gpus)
        gpus = tuple(_hip_cc_arch(g) for g in gpus)
    elif plat.value == CANN:
        gpus = tuple(replace(g, arch=ascend_arch(str(g.name.value or ""))) if unread(g) else g for g in gpus)
    elif plat.value in (XPU, HPU):
        arch_of = intel_arch if plat.value == XPU else gaudi_arch
        gpus = tuple(replace(g, arch=arch_of(str(g.name.value or ""))) if unread(g) else g for g in gpus)
    if plat.value in (ROCM, CANN, XPU, HPU):
        # the "compute capability" a ROCm/NPU tool prints is not an NVIDIA one: kept out of the NVIDIA checks
        gpus = tuple(replace(g, compute_capability=Fact.absent(f"not an NVIDIA GPU ({LABELS[plat.value]})",
                                                               source=g.compute_capability.source)) if g.cc else g for g in gpus)
    return replace(m, accelerator=plat, gpus=gpus)


def _hip_cc_arch(g: GpuFacts) -> GpuFacts:
    """A ROCm GPU whose gfx target is unknown but whose HIP (major, minor) was printed (sglang check_env)."""
    if g.arch.present or "conflict" in str(g.arch.missing) or not g.cc or g.cc not in HIP_CC_TO_GFX:
        return g
    gfx = HIP_CC_TO_GFX[g.cc]
    return replace(g, arch=Fact.of(gfx, f"HIP compute capability {g.cc[0]}.{g.cc[1]} ({g.compute_capability.source}) = {gfx} "
                                        "(wheel:vllm-0.20.0:vllm/platforms/rocm.py:196-210)"))


#: Container images that name their platform: repository pattern -> platform. ROCm: rocm/vllm, rocm/sgl-dev,
#: rocm/pytorch, vllm/vllm-openai-rocm, lmsysorg/sglang:*-rocm*; CANN: quay.io/ascend/vllm-ascend, quay.io/ascend/sglang,
#: ascendai/cann, lmsysorg/sglang:*-npu* / *-cann*.
IMAGE_PLATFORM = re.compile(
    r"(?<![\w/.-])(?:docker\.io/|quay\.io/|m\.daocloud\.io/quay\.io/)?("
    r"rocm/(?:vllm|vllm-dev|sgl-dev|pytorch|sglang)|vllm/vllm-openai-rocm|ascend/vllm-ascend|ascend/cann|ascendai/cann|"
    r"ascendai/vllm-ascend|ascend/sglang|lmsysorg/sglang)(?::([A-Za-z0-9][\w.\-]{0,80}))?", re.I)


def image_platform(repo: str, tag: str) -> str | None:
    """Platform of a container image (``rocm/vllm:latest`` -> rocm, ``quay.io/ascend/vllm-ascend:v0.9.1`` -> cann,
    ``lmsysorg/sglang:v0.5.4-rocm630`` -> rocm, ``lmsysorg/sglang:v0.5.4-cann8.2`` -> cann); ``None`` when the image
    does not say (a plain ``lmsysorg/sglang`` tag is the CUDA image, judged elsewhere)."""
    r, t = repo.lower(), (tag or "").lower()
    if r.startswith("rocm/") or r.endswith("-rocm"):
        return ROCM
    if "ascend" in r:
        return CANN
    if r == "lmsysorg/sglang":
        if "rocm" in t or "mi30" in t or "mi35" in t:
            return ROCM
        if "npu" in t or "cann" in t or "a2" in t.split("-") or "a3" in t.split("-"):
            return CANN
    return None


#: ``--device`` values of SGLang (server_args.py: cuda, xpu, hpu, npu, cpu) and vLLM (older --device) -> platform.
DEVICE_FLAG = {"npu": CANN, "hip": ROCM, "rocm": ROCM, "cuda": CUDA, "cpu": CPU, "xpu": XPU, "hpu": HPU}
