"""``python -m mtp_audit`` runs the CLI."""

import sys

from mtp_audit.cli.fast import main

sys.exit(main())
