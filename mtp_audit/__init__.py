"""mtp-audit: will this MoE deployment use its MTP / NextN heads, and can this GPU stack run its FP4 kernels?

Public API (imported lazily so ``mtp-audit --help`` stays fast):

- :func:`audit_checkpoint` (``mtp_audit.checkpoint``) -> :class:`Report`
- :func:`compare_checkpoints` (``mtp_audit.compare.analyze``) -> :class:`Report`
- :func:`audit_launch` (``mtp_audit.launch``) -> :class:`Report` (the three analyzers plus launch cross-checks)
- :class:`Report`, :class:`Finding`, :class:`Gap`, :class:`Severity`, :class:`Location`, :class:`Evidence`
- :func:`all_rules`, :func:`get_rule`

Every function here checks its arguments (wrong types and unknown keyword arguments raise ``TypeError``
with one clear line) and runs as one bounded run: :mod:`mtp_audit.api`. ``mtp_audit.preflight(...)``
works whether or not the ``mtp_audit.preflight`` subpackage has been imported (the subpackage is callable).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "audit_checkpoint": ("mtp_audit.checkpoint", "audit_checkpoint"),
    "audit_sglang": ("mtp_audit.engines.sglang", "audit_sglang"),
    "diff_sglang": ("mtp_audit.engines.sglang", "diff_sglang"),
    "preflight": ("mtp_audit.preflight", "preflight"),
    "compare_checkpoints": ("mtp_audit.compare.analyze", "compare_checkpoints"),
    "audit_launch": ("mtp_audit.launch", "audit_launch"),
    "Report": ("mtp_audit.report", "Report"),
    "Finding": ("mtp_audit.report", "Finding"),
    "Gap": ("mtp_audit.report", "Gap"),
    "Severity": ("mtp_audit.report", "Severity"),
    "Location": ("mtp_audit.report", "Location"),
    "Evidence": ("mtp_audit.report", "Evidence"),
    "Status": ("mtp_audit.report", "Status"),
    "exit_code": ("mtp_audit.report", "exit_code"),
    "all_rules": ("mtp_audit.report.rules", "all_rules"),
    "get_rule": ("mtp_audit.report.rules", "get_rule"),
    "InputError": ("mtp_audit.errors", "InputError"),
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mtp_audit' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attr)
    if callable(value) and not isinstance(value, type):
        from mtp_audit.api import public

        value = public(name, value)
    if name != "preflight":  # the subpackage of that name replaces the attribute when it is imported
        globals()[name] = value
    return value
