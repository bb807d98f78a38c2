"""vLLM analyzer: what vLLM runs for ``--speculative-config``.

Public API:

- :func:`audit_vllm(target) <mtp_audit.engines.vllm.audit.audit_vllm>` -> Report; ``target`` is a
  checkout, package folder, unpacked wheel, ``.whl`` file or ``None`` (installed vllm).
- :func:`diff_vllm(old_report, new_report) <mtp_audit.engines.vllm.diff.diff_vllm>` -> Report.
- :func:`open_for_launch(target) <mtp_audit.engines.vllm.draft.open_for_launch>` -> LaunchView: the
  report plus ``hf_config_override`` run on one checkpoint's config (``mtp-audit launch -- vllm serve``).

The facts contract (``report.facts["vllm"]``) is documented in docs/vllm.md.
"""

from __future__ import annotations

from typing import Any

_LAZY = {"audit_vllm": "mtp_audit.engines.vllm.audit", "diff_vllm": "mtp_audit.engines.vllm.diff",
         "open_for_launch": "mtp_audit.engines.vllm.draft"}

__all__ = ["audit_vllm", "diff_vllm", "open_for_launch"]


def __getattr__(name: str) -> Any:
    """Import ``audit_vllm`` / ``diff_vllm`` on first access (PEP 562), keeping ``--help`` fast."""
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mtp_audit.engines.vllm' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
