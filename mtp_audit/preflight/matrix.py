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
