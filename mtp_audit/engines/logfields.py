"""Field readers shared by the engines' log readers: numbers after a key, ``key: value`` parts of a statistics line.
No engine knowledge here (each engine's lines are in its own ``logdialect``/``logread`` modules)."""

from __future__ import annotations

import re

_NUM = re.compile(r"[0-9]*\.?[0-9]+")


def fields(text: str) -> dict[str, str]:
    """``key: value`` pairs of a ``, ``-separated engine statistics line; a part without ``: `` continues the
    previous value (a per-position list). ``"Accepted: 66 tokens, Drafted: 66 tokens"`` ->
    ``{"Accepted": "66 tokens", "Drafted": "66 tokens"}``."""
    out: dict[str, str] = {}
    last = None
    for part in text.split(","):
        key, sep, val = part.partition(": ")
        if sep:
            last = key.strip()
            out[last] = val.strip()
        elif last is not None and part.strip():
            out[last] += ", " + part.strip()
    return out


def after(text: str, key: str) -> float | None:
    """The number right after ``key`` in ``text`` (``"accept len: 3.05, "`` -> 3.05), or None."""
    i = text.find(key)
    if i < 0:
        return None
    m = _NUM.match(text, i + len(key))
    return float(m.group(0)) if m else None


def number(text: str) -> float | None:
    """The number at the start of ``text`` (blanks stripped), or None."""
    m = _NUM.match(text.strip())
    return float(m.group(0)) if m else None


def integer(text: str) -> int | None:
    """The number at the start of ``text`` as an integer, or None."""
    m = _NUM.match(text.strip())
    return int(float(m.group(0))) if m else None


def numbers(text: str) -> list[float]:
    """Every number in ``text``."""
    return [float(x) for x in _NUM.findall(text)]
