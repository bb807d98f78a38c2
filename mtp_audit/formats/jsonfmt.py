"""JSON output: ``Report.to_dict()``, sorted keys, 2-space indent, trailing newline.

Validated in tests against ``mtp_audit/schema/report.schema.json``.
"""

from __future__ import annotations

import json

from mtp_audit.report import Report


def render(report: Report) -> str:
    """Render ``report`` as deterministic JSON text."""
    return json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
