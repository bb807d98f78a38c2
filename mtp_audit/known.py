"""A fact together with how much of it is known: the typed answer analyzers hand each other.

A pasted ``nvidia-smi`` table cut after its second GPU row does not say "2 GPUs"; it says "at least 2".
Prose that names a GPU without writing a count says "at least one, count unknown". A check that needs an
exact value and gets less answers its own question with "could not tell" (a gap), never with an error or
a pass built on the missing part. :class:`Known` carries the value, its :data:`Extent` and its
:class:`Provenance` (which input, which line, how it was read), so no consumer has to read that back
out of a message.

Engine-neutral: nothing here names a serving engine or a dump format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

T = TypeVar("T")

#: How much of a value the evidence shows.
#: ``"exact"``: the whole of it was seen (a table whose end is seen, a count written out, a live query);
#: ``"at least"``: a lower bound (a table cut before its end, products named without a count);
#: ``"unknown"``: nothing usable was seen (``value`` is ``None``).
Extent = Literal["exact", "at least", "unknown"]
EXACT: Extent = "exact"
AT_LEAST: Extent = "at least"
UNKNOWN: Extent = "unknown"
EXTENTS: tuple[Extent, ...] = (EXACT, AT_LEAST, UNKNOWN)


@dataclass(frozen=True)
class Provenance:
    """Where a value was read and how.

    Attributes:
        where: the input it came from: a reader and, when known, the file (``"nvidia-smi table"``,
            ``"env-dump:sglang-check-env"``, ``"nvml"``).
        line: 1-based line in that input, or ``None`` (a live query, a whole-file count).
        how: one phrase: how the value was read and why it has its extent
            (``"table cut: no closing border or Processes block after GPU row 2"``).
    """

    where: str
    line: int | None = None
    how: str = ""

    def __str__(self) -> str:
        at = f" line {self.line}" if self.line is not None else ""
        return f"{self.where}{at}" + (f" ({self.how})" if self.how else "")


@dataclass(frozen=True)
class Known(Generic[T]):
    """One value, its extent and its provenance.

    Attributes:
        value: the value seen (for ``"at least"`` the lower bound), or ``None`` when ``extent`` is ``"unknown"``.
        extent: see :data:`Extent`.
        source: see :class:`Provenance`.
        why_open: for an ``"unknown"`` value, why it is open (a :class:`~mtp_audit.report.Gap`'s ``why_open``):
            ``"not-examined"`` (:data:`mtp_audit.report.questions.NOT_EXAMINED`) when it was not looked for by
            request (``--no-machine``), ``None`` when it was looked for and not seen (``source.how`` says why).

    Raises:
        ValueError: (at construction) an extent outside :data:`EXTENTS`, an ``"unknown"`` with a value, or an
            ``"exact"`` / ``"at least"`` without one.
    """

    value: T | None
    extent: Extent
    source: Provenance
    why_open: str | None = None

    def __post_init__(self) -> None:
        if self.extent not in EXTENTS:
            raise ValueError(f"extent must be one of {EXTENTS}, not {self.extent!r}")
        if (self.value is None) != (self.extent == UNKNOWN):
            raise ValueError(f"a Known with extent {self.extent!r} {'needs' if self.value is None else 'takes no'} value")

    @classmethod
    def exact(cls, value: T, source: Provenance) -> Known[T]:
        """The whole value was seen."""
        return cls(value, EXACT, source)

    @classmethod
    def at_least(cls, value: T, source: Provenance) -> Known[T]:
        """``value`` is a lower bound (the evidence stops before the end)."""
        return cls(value, AT_LEAST, source)

    @classmethod
    def unknown(cls, source: Provenance, why_open: str | None = None) -> Known[T]:
        """Nothing usable was seen; ``source.how`` says why in words, ``why_open`` whether it was looked for."""
        return cls(None, UNKNOWN, source, why_open)

    def describe(self) -> str:
        """``"8"``, ``"at least 2"`` or ``"unknown"``, followed by the provenance in brackets."""
        head = "unknown" if self.value is None else (str(self.value) if self.extent == EXACT else f"at least {self.value}")
        return f"{head} [{self.source}]"


def covers(known: Known[int], need: int) -> bool | None:
    """Whether a count of ``known`` surely reaches ``need``: ``True`` (yes, whatever the extent, since an
    "at least" bound already reaches it), ``False`` (an exact count below ``need``) or ``None`` (could not
    tell: a lower bound below ``need``, or no count)."""
    if known.value is None:
        return None
    if known.value >= need:
        return True
    return False if known.extent == EXACT else None
