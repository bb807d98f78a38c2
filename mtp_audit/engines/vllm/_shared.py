"""The one place the vLLM analyzer imports shared mtp-audit helpers from.

Paths follow the layout of main's ``layout:`` commit: bounded reads in :mod:`mtp_audit.sources.bounded`,
the report model in :mod:`mtp_audit.report`, the rule registry in :mod:`mtp_audit.report.rules`, the
content-addressed scan cache in :mod:`mtp_audit.engines.code.cache`.
"""

from __future__ import annotations

from mtp_audit.engines.code.cache import cache_dir
from mtp_audit.engines.code.cache import load as cache_load
from mtp_audit.engines.code.cache import store as cache_store
from mtp_audit.errors import InputError
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity
from mtp_audit.report.rules import Example, Rule
from mtp_audit.sources.bounded import read_bytes_bounded, read_json_bounded
from mtp_audit.sources.tree import ZIP_ERRORS

__all__ = ["InputError", "ZIP_ERRORS", "read_bytes_bounded", "read_json_bounded", "Evidence", "Finding", "Gap", "Location",
           "Report", "Severity", "Example", "Rule", "cache_folder", "cache_load", "cache_store"]


def cache_folder(version: int):  # type: ignore[no-untyped-def]
    """``<mtp-audit cache>/vllm-scan-v<version>`` (:func:`mtp_audit.engines.code.cache.cache_dir`), or ``None`` when
    caching is disabled."""
    return cache_dir(f"vllm-scan-v{version}")
