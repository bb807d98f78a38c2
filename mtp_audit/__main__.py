"""``python -m mtp_audit`` runs the CLI."""

import sys

from mtp_audit.cli.main import main

sys.exit(main())
