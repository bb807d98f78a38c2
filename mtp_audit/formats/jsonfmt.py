"""JSON output: ``Report.to_dict()``, sorted keys, 2-space indent, trailing newline.

Validated in tests against ``mtp_audit/schema/report.schema.json``.
"""

from __future__ import annotations

from typing import Any

from mtp_audit.formats.indented import dumps
from mtp_audit.report import Report


def render(report: Report, *, shown: Any = None) -> str:
    """Render ``report`` as deterministic JSON text. ``shown`` (a display filter, see
    :func:`mtp_audit.formats.render`) keeps only the findings it lists in ``findings`` and
    ``ignored``; ``summary`` and ``status`` still count every finding."""
    doc = report.to_dict()
    if shown is not None:
        doc["findings"] = [f.to_dict() for f in report.findings if shown(f)]
        doc["ignored"] = [i.to_dict() for i in report.ignored if shown(i.finding)]
    return dumps(doc) + "\n"  # = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False), faster
