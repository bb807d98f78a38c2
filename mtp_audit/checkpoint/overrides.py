"""Engine code that ignores a checkpoint's quantization exclude list for the MTP module, as the engines lend it.

An exclude list that does not cover an MTP linear stored unquantized makes an engine that trusts the list
build that module quantized, and the BF16 weight then fails to load (or loads as garbage): MTP007 is an error.
Some engines know this and build the MTP module (or part of it) unquantized for one architecture and one
quantization method whatever the list says; then the same checkpoint loads on that engine, and MTP007 is a
warning naming it. Each engine keeps its own rows (its
:meth:`~mtp_audit.engines.base.Engine.list_overrides` hook, read in the named release: wheel from PyPI, file and
line numbers of that release); ``tests/test_checkpoint_severity.py`` re-reads the cited lines from the real wheels.

Nothing here reads files.
"""

from __future__ import annotations

from mtp_audit.checkpoint.heads import MtpQuantOverride

__all__ = ["MtpQuantOverride", "overrides_for", "quant_overrides"]


def quant_overrides() -> tuple[MtpQuantOverride, ...]:
    """Every engine's rows, in registry order (:func:`mtp_audit.engines.registry.checkpoint_hooks`; only the
    modules that hold the rows are imported)."""
    from mtp_audit.engines.registry import checkpoint_hooks

    return tuple(row for _engine, rows in checkpoint_hooks("list_overrides") for row in rows())


def overrides_for(family: str | None, method: str, algo: str) -> list[MtpQuantOverride]:
    """The engines' rows that apply to a checkpoint of ``family`` quantized with ``method`` / ``algo``."""
    return [o for o in quant_overrides() if o.applies(family, method, algo)]
