"""The capability matrix (``mtp_audit/data/matrix.json``) and small helpers to query it.

The matrix is data, versioned by ``matrix_version``; each row carries its primary ``source`` (an SGLang or
flashinfer file inside a named wheel, CUDA documentation, or a public issue URL), shown to users in evidence,
and a ``research`` key (``*_research`` next to ``*_source``) naming the section of
``../shared/research/blackwell_fp4.md`` (§1-§6) it was taken from, for maintainers only.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The parsed matrix (cached). Raises ``OSError``/``ValueError`` only if the package is broken."""
    text = resources.files("mtp_audit").joinpath("data/matrix.json").read_text(encoding="utf-8")
    return json.loads(text)


#: Most digits one version component may have; longer runs are not versions (see :func:`parse_version`).
MAX_VERSION_DIGITS = 32
_HUGE_NUMBER = re.compile(rf"\d{{{MAX_VERSION_DIGITS + 1}}}")


def parse_version(text: str | None) -> Version | None:
    """PEP 440 version of ``text`` with any local tag (``+cu130``) kept; ``None`` if unparsable or if it
    holds a number of more than :data:`MAX_VERSION_DIGITS` digits (no real version does; ``int`` refuses
    more than 4300)."""
    if not text or _HUGE_NUMBER.search(str(text)):
        return None
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        m = re.match(r"\d+(\.\d+)*", str(text).strip())
        try:
            return Version(m.group(0)) if m else None
        except InvalidVersion:
            return None


def base(v: Version) -> Version:
    """``0.6.14+cu130`` -> ``0.6.14`` (drops the local tag; keeps pre/post/dev)."""
    return Version(str(v).split("+", 1)[0])


def in_range(version: Version | None, spec: str) -> bool:
    """Whether ``version`` (local tag ignored) satisfies ``spec`` (``">=0.5.10,<0.5.13"``); pre-releases count."""
    if version is None:
        return False
    try:
        return SpecifierSet(spec, prereleases=True).contains(base(version), prereleases=True)
    except InvalidSpecifier:
        return False


def cc_from_name(name: str) -> tuple[tuple[int, int], str] | None:
    """Compute capability of a GPU product name, with the source of the table row that matched.

    The table is ``mtp_audit/data/gpus.json`` (see :mod:`mtp_audit.preflight.gpus`: whole-word, longest
    match, case and punctuation ignored); a name with no complete product alias returns ``None`` (the
    caller reports the fact as missing rather than guessing).
    """
    from mtp_audit.preflight.gpus import cc_from_name as _cc

    return _cc(name)


def sglang_row(table: str, sglang: Version | None) -> dict[str, Any] | None:
    """The row of ``matrix["sglang"][table]`` whose version range contains ``sglang``."""
    for row in load()["sglang"][table]:
        if in_range(sglang, row["sglang"]):
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


def driver_floor(cuda: str) -> tuple[str, str] | None:
    """Minimum Linux driver for a CUDA ``major.minor`` (the highest table row <= it), with its source."""
    want = parse_version(cuda)
    best = None
    for row in load()["driver_floors"]:
        v = parse_version(row["cuda"])
        if want is not None and v is not None and v <= want:
            best = (row["min_driver"], row["source"])
    return best


def version_tuple(text: str) -> tuple[int, ...]:
    """``"580.95.05"`` -> ``(580, 95, 5)`` for numeric comparison of driver versions. A component of more
    than :data:`MAX_VERSION_DIGITS` digits is read as its first :data:`MAX_VERSION_DIGITS` (never a
    ``ValueError`` from ``int``'s 4300-digit limit)."""
    return tuple(int(x[:MAX_VERSION_DIGITS]) for x in re.findall(r"\d+", text))
