"""SGLang analyzer: what SGLang will do with your flags.

Public API:

- :func:`audit_sglang(target) <mtp_audit.engines.sglang.audit.audit_sglang>` -> Report; ``target`` is a
  checkout, package folder, unpacked wheel, ``.whl`` file or ``None`` (installed sglang).
- :func:`diff_sglang(old_report, new_report) <mtp_audit.engines.sglang.diff.diff_sglang>` -> Report.

The facts contract (``report.facts["sglang"]``) is documented in docs/sglang.md.
"""

from __future__ import annotations

from typing import Any

#: Public names -> defining module. Imported on first use, so that importing
#: ``mtp_audit.cli.sglang`` (which ``mtp-audit --help`` does to list commands) does not pull in the
#: analyzer (ast and the module index: ~40 ms).
_LAZY = {"audit_sglang": "mtp_audit.engines.sglang.audit", "diff_sglang": "mtp_audit.engines.sglang.diff"}

__all__ = ["audit_sglang", "diff_sglang"]


def __getattr__(name: str) -> Any:
    """Import ``audit_sglang`` / ``diff_sglang`` on first access (PEP 562)."""
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mtp_audit.engines.sglang' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
