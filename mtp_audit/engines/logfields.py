"""Field readers shared by the engines' log readers: numbers after a key, ``key: value`` parts of a statistics line.
No engine knowledge here (each engine's lines are in its own ``logdialect``/``logread`` modules)."""

from __future__ import annotations

import re

_NUM = re.compile(r"[0-9]*\.?[0-9]+")
_SIGNED = re.compile(r"[+-]?[0-9]{1,12}(?:\.[0-9]{1,12})?")
#: Longest value read before the separator a format prints after it.
FIGURE_CHARS = 32


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


def figure(text: str, key: str, sep: str = ",", decimals: int = 2) -> tuple[str, float | None]:
    """The figure a format prints as ``key`` + value + ``sep`` with ``decimals`` decimals (``"accept len: 3.05, "``,
    ``{:.2f}``), judged whole: ``("absent", None)`` without ``key``; ``("end", value)`` when the line stops after a
    whole value (all its decimals: no cut shortens one value into another) but before ``sep`` (a fold may go on on the
    next line); ``("cut", None)`` when it stops inside the value (``1``, ``1.``, ``1.9`` of ``1.95``); ``("bad", None)``
    when the value is not a number (``nan``, ``inf``, words); ``("ok", value)`` (a sign kept: ``-3.00`` is -3.0, for
    the caller's bounds)."""
    i = text.find(key)
    if i < 0:
        return "absent", None
    start = i + len(key)
    m = _SIGNED.match(text, start)
    if m is not None and text.startswith(sep, m.end()):  # the value as the engine prints it, then its separator
        return "ok", float(m.group(0))
    j = text.find(sep, start, start + FIGURE_CHARS)
    if j < 0:
        rest = text[start:].strip()
        if len(rest) >= FIGURE_CHARS or any(c.isspace() for c in rest):
            return "bad", None
        return ("end", float(rest)) if whole(rest, decimals) else ("cut", None)
    token = text[start:j].strip()
    return ("ok", float(token)) if _SIGNED.fullmatch(token) else ("bad", None)


def whole(value: str, decimals: int) -> bool:
    """True when ``value`` is a number printed with exactly ``decimals`` decimals (``%.2f``): cutting characters off
    its end cannot leave another such number, so a line ending with it was not cut inside it."""
    return re.fullmatch(rf"[+-]?[0-9]{{1,12}}\.[0-9]{{{decimals}}}", value) is not None
