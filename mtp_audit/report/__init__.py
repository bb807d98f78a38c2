"""The one report model every analyzer builds (:mod:`mtp_audit.report.model`) and the rule registry
(:mod:`mtp_audit.report.rules`).

``from mtp_audit.report import Report, Finding, ...`` imports the model; the registry is imported
explicitly (``from mtp_audit.report.rules import Rule``).
"""

from mtp_audit.report.model import (
    EXIT_FINDINGS,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    SCHEMA_VERSION,
    Evidence,
    Finding,
    Gap,
    IgnoredFinding,
    Location,
    Report,
    Severity,
    Status,
    Suppression,
    Target,
    exit_code,
)

__all__ = ["EXIT_FINDINGS", "EXIT_INCONCLUSIVE", "EXIT_OK", "EXIT_USAGE", "SCHEMA_VERSION", "Evidence", "Finding", "Gap",
           "IgnoredFinding", "Location", "Report", "Severity", "Status", "Suppression", "Target", "exit_code"]
