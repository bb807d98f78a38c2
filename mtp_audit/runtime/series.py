"""Speculative-decoding statistics over time, in bounded memory.

One :class:`Interval` per statistics line the engine printed (a vLLM ``SpecDecoding metrics`` line every
log interval, an SGLang ``Decode batch`` line, a llama-server request summary). A :class:`Series` keeps
exact totals and at most :data:`MAX_BUCKETS` buckets of consecutive intervals: when full, neighbouring
buckets merge (each bucket then covers twice as many intervals), so a week-long log and a ten-line
paste both give a curve of at most :data:`MAX_BUCKETS` points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

#: Most buckets kept per series.
MAX_BUCKETS = 256

SPARK = "▁▂▃▄▅▆▇█"


class Interval(NamedTuple):
    """One statistics line.

    Attributes:
        line: 1-based line number.
        mean_len: mean acceptance length (tokens per verification step, the bonus token included), or None.
        rate: draft acceptance rate as a fraction 0..1 (accepted / drafted), or None.
        accepted: accepted draft tokens in the interval, or None.
        drafted: drafted tokens in the interval, or None.
        per_pos: acceptance rate per draft position (fractions), or ().
        source: the process, engine or slot that printed it (``"APIServer pid=95669"``, ``"slot 1"``), or None.
    """

    line: int
    mean_len: float | None = None
    rate: float | None = None
    accepted: int | None = None
    drafted: int | None = None
    per_pos: tuple[float, ...] = ()
    source: str | None = None

    @property
    def value(self) -> float | None:
        """The figure plotted: mean acceptance length when printed, else 1 + rate (same scale for k=1)."""
        if self.mean_len is not None:
            return self.mean_len
        return None if self.rate is None else 1.0 + self.rate

    @property
    def accepted_nothing(self) -> bool:
        """True when the interval shows no accepted draft token at all."""
        if self.accepted is not None and self.drafted:
            return self.accepted == 0
        if self.mean_len is not None:
            return self.mean_len <= 1.0
        return self.rate is not None and self.rate == 0.0


@dataclass
class Bucket:
    """Consecutive intervals merged: line range, count, sum of plotted values, intervals accepting nothing."""

    first_line: int
    last_line: int
    count: int = 0
    value_sum: float = 0.0
    value_count: int = 0
    zero: int = 0

    @property
    def value(self) -> float | None:
        """Mean plotted value of the bucket, or None when no interval had one."""
        return self.value_sum / self.value_count if self.value_count else None


@dataclass
class Series:
    """Exact totals plus a bounded curve of one engine's statistics.

    Attributes:
        intervals: number of statistics lines.
        accepted / drafted: sums over intervals that printed both (tokens).
        len_sum / len_count: for the mean of printed mean acceptance lengths, each weighted by the
            interval's drafted tokens (1 when the engine does not print them).
        rate_sum / rate_count: for the plain mean of printed rates (when counts are missing).
        zero: intervals that accepted nothing.
        first / last: the first and last intervals (for evidence).
        buckets: the curve (at most :data:`MAX_BUCKETS`).
        width: intervals per bucket.
        sources: distinct sources seen (at most 64 kept), with their own accepted/drafted sums.
        per_pos_last: per-position rates of the last interval that printed them.
    """

    intervals: int = 0
    accepted: int = 0
    drafted: int = 0
    len_sum: float = 0.0
    len_count: int = 0
    rate_sum: float = 0.0
    rate_count: int = 0
    zero: int = 0
    first: Interval | None = None
    last: Interval | None = None
    buckets: list[Bucket] = field(default_factory=list)
    width: int = 1
    sources: dict[str, list[int]] = field(default_factory=dict)
    per_pos_last: tuple[float, ...] = ()
    counted: int = 0
    impossible: Interval | None = None
    #: the trailing run of intervals that accepted nothing: its length, first line, and the stamp there (or None)
    tail_zero: int = 0
    tail_zero_first: int | None = None
    tail_zero_time: str | None = None
    #: the last statistics line as printed: (line, text)
    last_printed: tuple[int, str] | None = None
    #: the interval with the highest mean acceptance length (held against the draft length the log configures)
    len_high: Interval | None = None

    def add(self, iv: Interval) -> None:
        """Count ``iv`` in the totals and the curve (O(1) amortised, bounded memory). ``counted`` is the number of
        intervals that printed both token counts; ``impossible`` the first interval whose figures no engine prints
        (more accepted than drafted tokens, a rate above 100 %, a negative count, a mean acceptance length below 1:
        every verification step yields at least the target's own token)."""
        self.intervals += 1
        self.first = self.first or iv
        self.last = iv
        if self.impossible is None and _impossible(iv):
            self.impossible = iv
        if iv.accepted is not None and iv.drafted is not None:
            self.counted += 1
            self.accepted += iv.accepted
            self.drafted += iv.drafted
            self._source(iv)
        if iv.mean_len is not None:
            if self.len_high is None or iv.mean_len > (self.len_high.mean_len or 0.0):
                self.len_high = iv
            weight = iv.drafted if iv.drafted else 1
            self.len_sum += iv.mean_len * weight
            self.len_count += weight
        if iv.rate is not None:
            self.rate_sum += iv.rate
            self.rate_count += 1
        if iv.per_pos:
            self.per_pos_last = iv.per_pos
        zero = iv.accepted_nothing
        self.zero += zero
        if zero:
            self.tail_zero += 1
            if self.tail_zero == 1:
                self.tail_zero_first, self.tail_zero_time = iv.line, None
        else:
            self.tail_zero = 0
        self._bucket(iv, zero)

    def _source(self, iv: Interval) -> None:
        if iv.source is None or (iv.source not in self.sources and len(self.sources) >= 64):
            return
        acc = self.sources.setdefault(iv.source, [0, 0, 0])
        acc[0] += iv.accepted or 0
        acc[1] += iv.drafted or 0
        acc[2] += 1

    def _bucket(self, iv: Interval, zero: bool) -> None:
        if not self.buckets or self.buckets[-1].count >= self.width:
            if len(self.buckets) >= MAX_BUCKETS:
                self._halve()
            if not self.buckets or self.buckets[-1].count >= self.width:
                self.buckets.append(Bucket(iv.line, iv.line))
        b = self.buckets[-1]
        b.last_line = iv.line
        b.count += 1
        b.zero += zero
        if iv.value is not None:
            b.value_sum += iv.value
            b.value_count += 1

    def _halve(self) -> None:
        merged = []
        for i in range(0, len(self.buckets), 2):
            pair = self.buckets[i:i + 2]
            b = Bucket(pair[0].first_line, pair[-1].last_line)
            for p in pair:
                b.count += p.count
                b.zero += p.zero
                b.value_sum += p.value_sum
                b.value_count += p.value_count
            merged.append(b)
        self.buckets = merged
        self.width *= 2

    @property
    def rate(self) -> float | None:
        """Overall draft acceptance rate: accepted / drafted tokens when counted, else the mean printed rate."""
        if self.drafted:
            return self.accepted / self.drafted
        return self.rate_sum / self.rate_count if self.rate_count else None

    @property
    def mean_len(self) -> float | None:
        """Mean of the printed mean acceptance lengths weighted by drafted tokens (None when none was printed)."""
        return self.len_sum / self.len_count if self.len_count else None

    def thirds(self) -> tuple[float, float] | None:
        """Mean plotted value of the first and the last third of the curve, or None with fewer than 6 points."""
        vals = [b.value for b in self.buckets if b.value is not None]
        if len(vals) < 6:
            return None
        k = len(vals) // 3
        return sum(vals[:k]) / k, sum(vals[-k:]) / k

    def sparkline(self, width: int = 48) -> str:
        """The curve as at most ``width`` block characters, scaled from 1.0 (nothing accepted) to its maximum."""
        vals = [b.value for b in self.buckets]
        if len(vals) > width:
            step = len(vals) / width
            vals = [_mean(vals[int(i * step):int((i + 1) * step)]) for i in range(width)]
        top = max((v for v in vals if v is not None), default=1.0)
        span = max(top - 1.0, 1e-9)
        out = []
        for v in vals:
            if v is None:
                out.append(" ")
            else:
                out.append(SPARK[min(len(SPARK) - 1, max(0, int((v - 1.0) / span * (len(SPARK) - 1) + 0.5)))])
        return "".join(out)


def _mean(vals: list[float | None]) -> float | None:
    got = [v for v in vals if v is not None]
    return sum(got) / len(got) if got else None


def _impossible(iv: Interval) -> bool:
    if iv.accepted is not None and (iv.accepted < 0 or (iv.drafted is not None and (iv.drafted < 0 or iv.accepted > iv.drafted))):
        return True
    if iv.mean_len is not None and iv.mean_len < 1.0:
        return True
    return iv.rate is not None and not 0.0 <= iv.rate <= 1.0
