"""Live collection off NVIDIA: ``amd-smi`` / ``rocm-smi``, ``npu-smi``, ``xpu-smi``, ``hl-smi``, torch's HIP build and
the CANN toolkit info.

Run by :func:`mtp_audit.preflight.collect.collect_live` when NVML and nvidia-smi list no GPU, under the same rules
as the NVIDIA tools (:func:`mtp_audit.preflight.collect.run_tool`: a bounded time per command, never a raise; a tool
that is missing, fails or times out is a reason on the missing fact). The tools' text is parsed by
:mod:`mtp_audit.preflight.vendor_dumps`, as a pasted dump of the same tool would be.

Commands: ``amd-smi static --asic --driver`` and ``amd-smi version`` (ROCm >= 6.1; the ``GPU: N`` blocks with
``MARKET_NAME`` / ``TARGET_GRAPHICS_VERSION``), else ``rocm-smi --showproductname --showdriverversion``; ``npu-smi
info``; ``xpu-smi discovery`` (Intel GPUs); ``hl-smi`` (Gaudi). Files (read bounded, never executed): ``torch/version.py``'s ``hip = '...'`` (the ROCm torch was built
with), ``<ASCEND_TOOLKIT_HOME or /usr/local/Ascend/ascend-toolkit/latest>/<arch>-linux/ascend_toolkit_install.info``
(``version=8.1.RC1``), the file vllm-ascend's collect_env reads.
"""

from __future__ import annotations

import platform as _platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtp_audit.preflight import vendor_dumps
from mtp_audit.preflight.facts import Fact, MachineFacts

#: The default CANN toolkit folder (vllm-ascend collect_env.py get_cann_info; sglang check_env NPUEnv).
CANN_DEFAULT = "/usr/local/Ascend/ascend-toolkit/latest"


def read_torch_hip(text: str) -> Fact:
    """The ``hip = '...'`` of ``torch/version.py`` (a ROCm build of torch), missing for ``None`` or no line."""
    m = re.search(r"^hip\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]+)['\"]|None)", text, re.M)
    if m and m.group(1):
        return Fact.of(m.group(1), "torch/version.py (hip)")
    return Fact.absent("torch/version.py says hip = None (not a ROCm build)" if m else "torch/version.py has no 'hip' line")


def _amd(timeout: float, run: Callable[..., Any], run_tool: Callable[..., tuple[str | None, str]]) -> tuple[MachineFacts | None, list[str]]:
    notes: list[str] = []
    out, why = run_tool(["amd-smi", "static", "--asic", "--driver"], timeout, run)
    if out is not None:
        ver, _ = run_tool(["amd-smi", "version"], timeout, run)
        m = vendor_dumps.parse_amd_smi(out + "\n" + (ver or ""), "amd-smi")
        if m.gpus:
            return m, notes
        notes.append("amd-smi static listed no GPU")
    else:
        notes.append(f"amd-smi: {why}")
    out, why = run_tool(["rocm-smi", "--showproductname", "--showdriverversion"], timeout, run)
    if out is not None:
        m = vendor_dumps.parse_rocm_smi(out)
        if m.gpus:
            return m, notes
        notes.append("rocm-smi listed no GPU")
    else:
        notes.append(f"rocm-smi: {why}")
    return None, notes


def _cann_version(env: dict[str, str], read: Callable[[Path], str | None]) -> Fact:
    home = env.get("ASCEND_TOOLKIT_HOME") or CANN_DEFAULT
    path = Path(home) / f"{_platform.machine() or 'x86_64'}-linux" / "ascend_toolkit_install.info"
    text = read(path)
    if text is None:
        return Fact.absent(f"{path} not readable")
    m = re.search(r"^version=(\S+)", text, re.M)
    return Fact.of(m.group(1), str(path)) if m else Fact.absent(f"{path} has no version= line")


def collect_vendor(*, timeout: float, run: Callable[..., Any], run_tool: Callable[..., tuple[str | None, str]],
                   env: dict[str, str], read: Callable[[Path], str | None]) -> tuple[MachineFacts | None, list[str]]:
    """The AMD, Ascend, Intel GPU or Gaudi devices of this machine (:class:`MachineFacts` with ``gpus``, ``gpu_list``,
    ``driver_version``, ``rocm_version`` / ``cann_version`` and ``accelerator``), or ``None`` with the notes saying
    why (each tool missing, failing or listing nothing). ``read`` returns a small file's text or ``None``."""
    amd, notes = _amd(timeout, run, run_tool)
    if amd is not None:
        return amd, notes
    npu = _one_tool(["npu-smi", "info"], "NPU", vendor_dumps.parse_npu_smi, timeout, run, run_tool, notes)
    if npu is not None:
        from dataclasses import replace

        return replace(npu, cann_version=_cann_version(env, read)), notes
    for cmd, parse in ((["xpu-smi", "discovery"], vendor_dumps.parse_xpu_smi), (["hl-smi"], vendor_dumps.parse_hl_smi)):
        found = _one_tool(cmd, "device", parse, timeout, run, run_tool, notes)
        if found is not None:
            return found, notes
    return None, notes


def _one_tool(cmd: list[str], kind: str, parse: Callable[[str], MachineFacts], timeout: float, run: Callable[..., Any],
              run_tool: Callable[..., tuple[str | None, str]], notes: list[str]) -> MachineFacts | None:
    """The devices one tool lists (parsed as a pasted dump of it would be), or ``None`` with a note in ``notes``."""
    out, why = run_tool(cmd, timeout, run)
    if out is None:
        notes.append(f"{cmd[0]}: {why}")
        return None
    facts = parse(out)
    if not facts.gpus:
        notes.append(f"{' '.join(cmd)} listed no {kind}")
        return None
    return facts
