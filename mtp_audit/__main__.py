"""``python -m mtp_audit`` runs the CLI.

``python -m`` puts the current directory first on ``sys.path``; audited checkouts are data, so before
anything else is imported that entry is removed: a checkout holding ``json.py``, ``zipfile.py`` or
``tokenize.py`` must never be imported by the audit run inside it (the console script ``mtp-audit`` never
had the current directory on ``sys.path``).
"""

import sys

from mtp_audit import _drop_current_directory  # the package ran it already for python -m; idempotent

_drop_current_directory()

from mtp_audit.cli.fast import main  # noqa: E402 - after sys.path is cleaned

sys.exit(main())
