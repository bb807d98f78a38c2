"""SGLang analyzer: what SGLang will do with your flags (issue 3).

Public API:

- :func:`audit_sglang(target) <mtp_audit.sglang.audit.audit_sglang>` -> Report; ``target`` is a
  checkout, package folder, unpacked wheel, ``.whl`` file or ``None`` (installed sglang).
- :func:`diff_sglang(old_report, new_report) <mtp_audit.sglang.diff.diff_sglang>` -> Report.

The facts contract (``report.facts["sglang"]``) is documented in docs/sglang.md.
"""

from __future__ import annotations

from mtp_audit.sglang.audit import audit_sglang
from mtp_audit.sglang.diff import diff_sglang

__all__ = ["audit_sglang", "diff_sglang"]
