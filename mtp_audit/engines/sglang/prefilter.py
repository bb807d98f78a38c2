"""Exact byte pre-filters for the extraction passes that would otherwise run a costly regular expression over
every candidate file (:data:`mtp_audit.engines.sglang.scan.PASSES`).

Each finder answers the same question as ``re.compile(PATTERN).search(data) is not None`` for its documented
``pattern`` (the specification, kept beside it and checked against it in the tests), but looks only around the
occurrences of literals every match must hold, found with ``bytes.find`` (C speed). Work is linear in the file
size: occurrences are visited in file order and every backward search starts where the previous one stopped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import AnyStr

from mtp_audit.engines.sglang.names import ASSERTED_SOURCE

#: ASCII word bytes (``\w`` of a bytes pattern).
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
#: ``[\w.]`` bytes map to ``w``, every other byte to ``n``.
_NAME_RUN = bytes(ord("w") if b in _WORD or b == ord(".") else ord("n") for b in range(256))
#: ``[\s(]`` bytes (space, tab, newline, return, form feed, vertical tab, ``(``) map to ``s``, others to ``n``.
_SPACE_RUN = bytes(ord("s") if b in b" \t\n\r\f\v(" else ord("n") for b in range(256))


class WordFinder:
    """``search(data)``: whether ``\\bWORD\\b`` (``WORD`` a run of ASCII word bytes) occurs in ``data``, with
    ``bytes.find`` and a test of the two bytes around each occurrence. ``pattern``: the equivalent regex."""

    def __init__(self, word: bytes) -> None:
        if not word or any(b not in _WORD for b in word):
            raise ValueError(f"not a run of word bytes: {word!r}")
        self.word = word
        self.pattern = re.compile(rb"\b" + word + rb"\b")

    def search(self, data: bytes) -> bool | None:
        """``True`` when the word occurs on word boundaries, else ``None`` (as ``re.Pattern.search`` answers)."""
        return True if word_in(data, self.word) else None


def word_in(data: bytes, word: bytes) -> bool:
    """Whether ``word`` occurs in ``data`` with no ASCII word byte (``[A-Za-z0-9_]``) right before or after it."""
    n = len(word)
    i = data.find(word)
    while i != -1:
        if (i == 0 or data[i - 1] not in _WORD) and (i + n == len(data) or data[i + n] not in _WORD):
            return True
        i = data.find(word, i + 1)
    return False


#: The fields an ``assert`` at start-up may restrict (:data:`~mtp_audit.engines.sglang.names.ASSERTED_SOURCE`).
ASSERTED_FIELDS = tuple(f.encode() for f in ASSERTED_SOURCE.split("|"))
#: An ``assert`` whose test reads a backend field (``assert x.attention_backend in ...``, ``assert (\n a.b.F``).
ASSERT_ON_FIELD = rb"assert[\s(]+[\w.]*\.(" + ASSERTED_SOURCE.encode() + rb")\b"
#: A local copy of a field that an ``assert`` may test later (``    backend = server_args.decode_attention_backend``);
#: the line may end in ``\r\n`` (a checkout with Windows line ends parses the same).
FIELD_COPY_LINE = rb"^[ \t]+\w+ = [\w.]+\.(\w+_)?(" + ASSERTED_SOURCE.encode() + rb")(_str)?[ \t]*\r?$"
_COPY_LINE = re.compile(FIELD_COPY_LINE[1:-1])


class AssertedFieldFinder:
    """``search(data)``: whether ``re.compile(b"(?m)" + ASSERT_ON_FIELD + b"|" + FIELD_COPY_LINE).search(data)``
    matches (:attr:`pattern`), looking only at the occurrences of :data:`ASSERTED_FIELDS`: every match holds one.

    For an occurrence at ``p`` (the field's first byte, ``e`` past its last):

    - :data:`ASSERT_ON_FIELD` matches with the field at ``p`` exactly when ``data[p - 1]`` is ``.``, ``data[e]`` is
      not a word byte, and, with ``r`` the start of the longest run of ``[\\w.]`` bytes ending at ``p - 1`` and ``q``
      the start of the longest run of ``[\\s(]`` bytes ending at ``r - 1``, ``q < r`` and ``data[q - 6:q]`` is
      ``assert``: ``[\\w.]*`` cannot start inside that run (the byte before it would have to be in ``[\\s(]``, a
      disjoint set), nor ``[\\s(]+`` inside its run (``assert`` ends with ``t``).
    - :data:`FIELD_COPY_LINE` holds no newline, so it matches there exactly when the occurrence's whole line
      matches it (``^`` and ``$`` of a multi-line pattern: after or before ``\\n``, or at either end of ``data``).
    """

    pattern = re.compile(rb"(?m)" + ASSERT_ON_FIELD + rb"|" + FIELD_COPY_LINE)

    def search(self, data: bytes) -> bool | None:
        """``True`` when :attr:`pattern` matches somewhere in ``data``, else ``None``."""
        hits = _field_spans(data)
        if not hits:
            return None
        return True if _field_copy_line(data, hits) or _assert_on_field(data, hits) else None


#: The asserted fields that end with ``_backend``, without it: one search for ``_backend`` finds them all.
_BACKEND_PREFIXES = tuple(f[:-8] for f in ASSERTED_FIELDS if f.endswith(b"_backend"))
_OTHER_FIELDS = tuple(f for f in ASSERTED_FIELDS if not f.endswith(b"_backend"))


def _field_spans(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of every occurrence of an asserted field after the first byte, ascending (no field name is
    a suffix of another, so each ``_backend`` ends at most one)."""
    spans = []
    for i in find_all(data, b"_backend"):
        for pre in _BACKEND_PREFIXES:
            if data.endswith(pre, 0, i):
                spans.append((i - len(pre), i + 8))
                break
    spans += [(i, i + len(f)) for f in _OTHER_FIELDS for i in find_all(data, f)]
    return sorted(s for s in spans if s[0] > 0)


def find_all(data: AnyStr, token: AnyStr) -> list[int]:
    """Every offset of ``token`` in ``data`` (bytes or text), ascending, overlapping occurrences included."""
    out, i = [], data.find(token)
    while i != -1:
        out.append(i)
        i = data.find(token, i + 1)
    return out


def _field_copy_line(data: bytes, hits: list[tuple[int, int]]) -> bool:
    """Whether the line of one of ``hits`` (ascending spans of asserted fields) matches :data:`FIELD_COPY_LINE`;
    each line is tried once."""
    line_end = -1
    for p, _ in hits:
        if p <= line_end:
            continue  # on a line already tried
        start = data.rfind(b"\n", max(line_end, 0), p) + 1
        line_end = data.find(b"\n", p)
        if line_end == -1:
            line_end = len(data)
        if data[start:start + 1] in (b" ", b"\t") and _COPY_LINE.fullmatch(data, start, line_end) is not None:
            return True
    return False


def _assert_on_field(data: bytes, hits: list[tuple[int, int]]) -> bool:
    """Whether one of ``hits`` (ascending) is the field of an :data:`ASSERT_ON_FIELD` match (see
    :class:`AssertedFieldFinder`); the two run starts are searched backwards from where the last search stopped."""
    names = spaces = b""
    n = len(data)
    # [0, *_from) searched so far; *_break: the last byte outside the run found there (-1: none). Both run starts
    # only grow as the hits do, so each search goes on from where the previous one stopped.
    name_from = space_from = 0
    name_break = space_break = -1
    for p, e in hits:
        if data[p - 1] != 0x2E:
            continue
        if e < n and data[e] in _WORD:
            continue
        if not names:
            names, spaces = data.translate(_NAME_RUN), data.translate(_SPACE_RUN)
        at = names.rfind(b"n", name_from, p - 1)
        name_break, name_from = (at if at != -1 else name_break), p - 1
        r = name_break + 1
        at = spaces.rfind(b"n", space_from, r)
        space_break, space_from = (at if at != -1 else space_break), r
        q = space_break + 1
        if q < r and q >= 6 and data.startswith(b"assert", q - 6):
            return True
    return False


class AttributeFinder:
    """``search(data)``: whether ``re.compile(rb"\\.(" + source + rb")\\b").search(data)`` matches (:attr:`pattern`)
    for a ``source`` that is an alternation of names each of which is a literal word (``quantization``), a literal
    followed by ``\\w+`` (``speculative_\\w+``) or a literal between ``\\w*`` and ``\\w*`` (``\\w*fp4\\w*``), as
    :data:`~mtp_audit.engines.sglang.names.TRACKED_SOURCE` is. Looks only at the occurrences of the literals
    (``bytes.find``): an occurrence is in a match exactly when the run of word bytes it sits in starts right after a
    ``.`` (``\\w*`` before the literal), or the literal itself does (no ``\\w*``), and that run, or the literal,
    ends where the name may end (``\\b`` after ``\\w*``/``\\w+`` holds at the end of the run; ``\\w+`` needs one
    byte more; a bare literal must end the run)."""

    def __init__(self, source: str) -> None:
        self.pattern = re.compile(rb"\.(" + source.encode() + rb")\b")
        self.names: list[tuple[bytes, bool, str]] = []  # (literal, word bytes may precede it, what may follow)
        for alt in source.split("|"):
            m = re.fullmatch(r"(\\w\*)?(\w+?)(\\w[*+])?", alt)
            if m is None or not m.group(2).isascii():
                raise ValueError(f"not a literal name shape: {alt!r}")
            self.names.append((m.group(2).encode(), bool(m.group(1)), m.group(3) or ""))

    def search(self, data: bytes) -> bool | None:
        """``True`` when :attr:`pattern` matches somewhere in ``data``, else ``None``."""
        n = len(data)
        for lit, any_before, after in self.names:
            i, prev, prev_start = data.find(lit), -1, -1
            while i != -1:
                start, end = i, i + len(lit)
                if any_before:  # back to the start of the word run, or to the previous occurrence's run
                    while start > 0 and start > prev and data[start - 1] in _WORD:
                        start -= 1
                    if start == prev and prev != -1:
                        start = prev_start
                    prev, prev_start = i, start
                if start > 0 and data[start - 1] == 0x2E and _name_may_end(data, end, n, after):
                    return True
                i = data.find(lit, i + 1)
        return None


def _name_may_end(data: bytes, end: int, n: int, after: str) -> bool:
    """Whether a name whose literal part ends at ``end`` can end a match there: after ``\\w*`` always (the run's
    end is a boundary), after ``\\w+`` when one word byte follows, with nothing after when no word byte follows."""
    if after == "\\w*":
        return True
    if after == "\\w+":
        return end < n and data[end] in _WORD
    return end == n or data[end] not in _WORD


#: Bytes that may stand between two tokens on one logical line, or end a physical line inside brackets or after a
#: backslash (comments aside).
_GAP = frozenset(b" \t\f\r\n\\")


def attribute_named(data: bytes, names: set[str]) -> bool:
    """Whether one of ``names`` can be read as an attribute (``x.name``) in the source ``data``: it occurs as a whole
    word (ASCII word bytes) and, going back over spaces, line ends and backslashes, a ``.`` comes first, or a line
    end was crossed (a comment may end the line before, inside brackets). Never false for a real read."""
    return _named_after(data, names, lambda d, j: j > 0 and d[j - 1] == 0x2E)


def class_named(data: bytes, names: set[str]) -> bool:
    """Whether the source ``data`` can define a class named one of ``names`` (``class name``): the name occurs as a
    whole word and, going back over spaces, tabs, form feeds and backslash-newlines (the only things a ``class``
    statement allows between its two words), the word ``class`` comes first. Never false for a real class
    statement."""
    return _named_after(data, names, _class_before, skip=False)


def _class_before(data: bytes, j: int) -> bool:
    while True:
        while j > 0 and data[j - 1] in (0x20, 0x09, 0x0C):
            j -= 1
        if data.endswith(b"\\\r\n", 0, j):
            j -= 3
        elif data.endswith(b"\\\n", 0, j) or data.endswith(b"\\\r", 0, j):
            j -= 2
        else:
            return data.endswith(b"class", 0, j) and (j == 5 or data[j - 6] not in _WORD)


def _named_after(data: bytes, names: set[str], before: Callable[[bytes, int], bool], *, skip: bool = True) -> bool:
    """Whether a name of ``names`` occurs as a whole word with ``before(data, j)`` true, ``j`` its start or (``skip``)
    the start of the gap bytes before it; with ``skip``, crossing a line end there is enough."""
    for name in names:
        word = name.encode()
        n, i = len(word), data.find(word)
        while i != -1:
            if (i == 0 or data[i - 1] not in _WORD) and (i + n == len(data) or data[i + n] not in _WORD):
                j, crossed = i, False
                while skip and j > 0 and data[j - 1] in _GAP:
                    crossed = crossed or data[j - 1] in (0x0A, 0x0D)
                    j -= 1
                if crossed or before(data, j):
                    return True
            i = data.find(word, i + 1)
    return False
