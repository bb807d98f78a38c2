"""mtp-audit: will this MoE deployment use its MTP / NextN heads, and can this GPU stack run its FP4 kernels?

Audit functions (each returns a :class:`Report`; bad input raises :class:`InputError`):

- :func:`audit_checkpoint` (path or hub id ``org/name[@rev]``): MTP layers, tensors, bytes, formats.
- :func:`compare_checkpoints` (base, derived): what an export dropped, renamed or left unquantized.
- :func:`audit_sglang` / :func:`diff_sglang`: what SGLang runs for the MTP flags; what an upgrade changed.
- :func:`audit_vllm` / :func:`diff_vllm`: what vLLM runs for ``--speculative-config``; what an upgrade changed.
- :func:`audit_machine` (also ``preflight``): FP4 capability of this machine or of pasted environment dumps
  (``env_dumps``, ``facts_file``, ``machine_facts``).
- :func:`audit_launch` (argv list or one command string): the above cross-checked into one verdict.

Typed answers from a report (no text parsing): :func:`launch_result` (:class:`LaunchVerdict` enum, corrected
argv), :func:`checkpoint_facts`, :func:`fp4_readiness`. :func:`apply_config` applies a ``[tool.mtp-audit]``
configuration as the CLI does; :func:`render` gives text, JSON, SARIF or Markdown; :func:`exit_code` the CLI's
exit code.

Side effects: none on the host process. No output is printed (diagnostics go to the ``logging`` logger
``mtp_audit``; progress bars only inside ``mtp_audit.progress.requested()``, which the CLI enters); the garbage collector's state is restored after
bulk JSON parsing; huggingface_hub's shared client is not modified. A cold SGLang scan (nothing cached) of a tree
with more than 512 KB to parse forks two short-lived parse workers when a second core is free, the platform is
Linux and the calling process runs no other thread; they end with the scan (``MTP_AUDIT_SCAN_WORKERS=1``: never). The only writes are the result
caches (``$MTP_AUDIT_CACHE_DIR``, empty to turn them off; hub functions take ``cache_dir`` / ``use_cache``).

Names are imported lazily (PEP 562), so ``import mtp_audit`` and ``mtp-audit --help`` stay fast; type
checkers read ``__init__.pyi`` (re-exports of the real definitions) and ``py.typed``.

Every function checks its arguments (a wrong type or an unknown keyword argument raises ``TypeError`` naming the
function and the argument) and runs as one bounded run (totals of bytes read, parsed JSON and network time):
:mod:`mtp_audit.api`.
"""

from __future__ import annotations

import sys


def _drop_current_directory() -> None:
    """Remove ``''`` and the current directory from ``sys.path``: ``python -m mtp_audit`` puts it first, and an
    audited checkout (often the current directory) may hold ``tokenize.py``, ``json.py`` or ``zipfile.py``; it is
    data, never code. Uses only ``sys`` and ``os``, which the interpreter has loaded before any of this."""
    import os

    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    keep = []
    for entry in sys.path:
        try:
            same = entry in ("", ".") or (cwd is not None and os.path.realpath(entry) == cwd)
        except (OSError, ValueError):
            same = False
        if not same:
            keep.append(entry)
    sys.path[:] = keep


if sys.argv[:1] == ["-m"]:  # runpy imports this package for ``python -m mtp_audit`` before __main__ runs
    _drop_current_directory()
if sys.argv[:1] == ["-m"] or sys.argv[0].endswith("mtp-audit"):  # the CLI, from its first line: a Ctrl-C that
    from mtp_audit.cli.signals import watch  # Python swallows while modules load still stops the run

    watch()

from typing import Any  # noqa: E402 - after the current directory is gone

__version__ = "0.1.0"


_LAZY = {
    "audit_checkpoint": "mtp_audit.checkpoint",
    "compare_checkpoints": "mtp_audit.compare.analyze",
    "audit_sglang": "mtp_audit.engines.sglang",
    "diff_sglang": "mtp_audit.engines.sglang",
    "audit_vllm": "mtp_audit.engines.vllm",
    "diff_vllm": "mtp_audit.engines.vllm",
    "preflight": "mtp_audit.preflight",
    "audit_machine": "mtp_audit.preflight",
    "audit_launch": "mtp_audit.launch",
    "launch_result": "mtp_audit.results",
    "checkpoint_facts": "mtp_audit.results",
    "fp4_readiness": "mtp_audit.results",
    "apply_config": "mtp_audit.results",
    "LaunchVerdict": "mtp_audit.results",
    "LaunchResult": "mtp_audit.results",
    "CheckpointFacts": "mtp_audit.results",
    "Fp4Readiness": "mtp_audit.results",
    "BackendChoice": "mtp_audit.results",
    "Configured": "mtp_audit.results",
    "render": "mtp_audit.formats",
    "Report": "mtp_audit.report",
    "Finding": "mtp_audit.report",
    "Gap": "mtp_audit.report",
    "Severity": "mtp_audit.report",
    "Location": "mtp_audit.report",
    "Evidence": "mtp_audit.report",
    "Status": "mtp_audit.report",
    "exit_code": "mtp_audit.report",
    "Rule": "mtp_audit.report.rules",
    "all_rules": "mtp_audit.report.rules",
    "get_rule": "mtp_audit.report.rules",
    "InputError": "mtp_audit.errors",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    """Import a public name on first access."""
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mtp_audit' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), name)
    if callable(value) and not isinstance(value, type):
        from mtp_audit.api import public

        value = public(name, value)
    if name != "preflight":  # the subpackage of that name replaces the attribute when it is imported
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name (``dir(mtp_audit)`` lists the audit functions before they are imported)."""
    return sorted(set(globals()) | set(__all__))
