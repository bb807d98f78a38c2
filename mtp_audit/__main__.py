"""``python -m mtp_audit`` runs the CLI.

``python -m`` puts the current directory first on ``sys.path``; audited checkouts are data, so the package
(``mtp_audit/__init__.py``, which runpy imports before this module) removes that entry before its first
standard-library import: a checkout holding ``json.py``, ``zipfile.py`` or ``tokenize.py`` is never imported by
the audit run inside it (the console script ``mtp-audit`` never had the current directory on ``sys.path``).
"""

import sys

try:
    from mtp_audit.cli.fast import main
except KeyboardInterrupt:  # Ctrl-C before the CLI has loaded: one line, exit 130, no traceback
    sys.stderr.write("mtp-audit: interrupted\n")
    sys.exit(130)

sys.exit(main())
