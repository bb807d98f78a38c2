"""SGLang's rows of the capability matrix (``matrix["sglang"]`` of ``mtp_audit/data/matrix.json``): which backend
choices each SGLang release has, and what its ``auto`` resolves to per GPU. Each row names the SGLang wheel file it was
read from (``source``); the matrix itself is loaded by :mod:`mtp_audit.preflight.matrix`.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from mtp_audit.preflight import matrix as mx


def sglang_row(table: str, sglang: Version | None) -> dict[str, Any] | None:
    """The row of ``matrix["sglang"][table]`` whose version range contains ``sglang``."""
    for row in mx.load()["sglang"][table]:
        if mx.in_range(sglang, row["sglang"]):
            return row
    return None


def resolve_auto(table: str, sglang: Version | None, cc: tuple[int, int],
                 quantization: str | None = None) -> tuple[str | None, str]:
    """What ``auto`` resolves to on SGLang ``sglang`` and a GPU of ``cc``, with the row's source (and the rule's
    ``note`` where it has one). A rule with ``quantization`` holds only when the launch's ``--quantization`` is one
    of those values (SGLang 0.5.15-0.5.23 move ``auto`` to ``flashinfer_cutlass`` on SM120 only for
    ``--quantization modelopt_fp4``); the first rule that holds wins.

    Returns ``(None, reason)`` when the version or the SM is not covered by the matrix.
    """
    row = sglang_row(table, sglang)
    if row is None:
        return None, f"SGLang {sglang} is outside the capability matrix"
    if "auto" not in row:
        return row.get("effective_default"), row["source"]
    skipped = False
    for rule in row["auto"]:
        if cc[0] not in rule["sm_major"]:
            continue
        if "quantization" in rule and (quantization or "").lower() not in rule["quantization"]:
            skipped = True  # the rule for this SM needs a --quantization the launch does not give: say why not
            continue
        return rule["to"], row["source"] + (f"; {rule['note']}" if skipped and rule.get("note") else "")
    return None, f"the matrix has no 'auto' rule for SM{cc[0]}{cc[1]} on SGLang {sglang}"
