"""``python -m mtp_audit`` runs the CLI.

``python -m`` puts the current directory first on ``sys.path``; audited checkouts are data, so before
anything else is imported that entry is removed: a checkout holding ``json.py``, ``zipfile.py`` or
``tokenize.py`` must never be imported by the audit run inside it (the console script ``mtp-audit`` never
had the current directory on ``sys.path``).
"""

import os
import sys


def _drop_current_directory() -> None:
    """Remove ``''`` and the current directory from ``sys.path`` (where ``python -m`` put them)."""
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


_drop_current_directory()

from mtp_audit.cli.fast import main  # noqa: E402 - after sys.path is cleaned

sys.exit(main())
