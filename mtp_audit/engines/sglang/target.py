"""Which source tree is SGLang's: the :class:`~mtp_audit.sources.tree.EnginePackage` for ``sglang`` and
:func:`open_target`, the SGLang form of :func:`mtp_audit.sources.tree.open_tree`."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.sources.tree import EnginePackage, SourceTree, open_tree

#: Every SGLang from 0.1 to 0.5.23 declares its server arguments in ``sglang/srt/server_args.py``
#: (0.5.15 on moved most fields to ``srt/arg_groups/`` but keeps ``server_args.py`` with ``ServerArgs``
#: and ``prepare_server_args``).
SGLANG = EnginePackage(name="sglang", title="SGLang", inner="srt", marker="srt/server_args.py",
                       marker_what="SGLang's server-arguments source", article="an")


def open_target(target: str | Path | None) -> SourceTree:
    """Open an SGLang checkout, package folder, unpacked wheel, ``.whl`` or (``None``) the installed sglang.

    Raises:
        InputError: see :func:`mtp_audit.sources.tree.open_tree`.
    """
    return open_tree(target, SGLANG)
