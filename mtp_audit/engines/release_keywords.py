"""The release keywords of :func:`mtp_audit.launch.audit_launch`, typed for a library user's type checker.

Apart from :mod:`mtp_audit.engines.registry` because a ``TypedDict`` costs ~0.9 ms to create (one ``compile`` per
annotation, ``typing.ForwardRef``), and a checkpoint audit, which asks the registry for its heads hooks, never needs it;
:mod:`mtp_audit.launch` imports it for type checkers only. One key per built-in engine id of
:data:`mtp_audit.engines.registry.ENGINE_SPECS`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from mtp_audit.report import Report


class ReleaseKeywords(TypedDict, total=False):
    """The release keywords of :func:`mtp_audit.launch.audit_launch` (``**releases``), typed for a library user's
    type checker: one per built-in engine id (the release of the command's engine to check against), and
    ``compare_sglang`` (a second SGLang release to compare with; an engine that cannot compare refuses it). What
    each target may be is the engine's own (:meth:`mtp_audit.engines.base.Engine.release`); an engine registered at
    run time takes its id (and ``compare_`` and its id) as a keyword too.
    """

    sglang: str | os.PathLike[str] | Report | None
    compare_sglang: str | os.PathLike[str] | Report | None
    vllm: str | os.PathLike[str] | None
    llamacpp: str | None
    trtllm: None
