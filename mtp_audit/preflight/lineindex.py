"""Line numbers for offsets into a dump, in O(log n) per lookup.

The env-dump parsers report where each fact was read (``"sglang-check-env line 7"``). Counting
newlines from the start of the text for every match made parsing quadratic (a 2.6 MB dump
took 29 s). :class:`LineIndex` records the offset of every line start once (one linear pass) and
answers with :func:`bisect.bisect_right`.

Bound: dumps are read through ``mtp_audit.sources.bounded.read_bytes_bounded(..., MAX_TEXT_BYTES)`` (64 MiB), so the index holds
at most one int per line of a 64 MiB text.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

_NL = re.compile("\n")


class LineIndex:
    """Offsets of the line starts of one text.

    Args:
        text: the whole dump (``"\\n"`` line ends; ``"\\r\\n"`` is normalised by the caller).
    """

    __slots__ = ("text", "_starts")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = array("q", [0])
        starts.extend(m.end() for m in _NL.finditer(text))
        self._starts = starts

    def line_of(self, pos: int) -> int:
        """1-based line number of character offset ``pos`` (clamped to the text)."""
        return bisect_right(self._starts, max(0, pos))

    @property
    def lines(self) -> int:
        """Number of lines (a trailing newline does not start a new line)."""
        n = len(self._starts)
        return n - 1 if self.text.endswith("\n") else n


_last: list[LineIndex] = []


def index_for(text: str) -> LineIndex:
    """The :class:`LineIndex` of ``text``, built once per text object (the last one is kept)."""
    if _last and _last[0].text is text:
        return _last[0]
    idx = LineIndex(text)
    _last[:] = [idx]
    return idx
