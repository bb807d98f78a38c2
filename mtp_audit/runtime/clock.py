"""Wall-clock stamps at the start of log lines, for checking that time runs forward.

A log made by ``cat server.log*`` holds the rotated files out of order (the newest first, older ones after
it: time goes back at each file boundary), and one file may hold several engine starts. The stamps read
here let :class:`mtp_audit.runtime.extract.LogFacts` split such a log into runs and report the latest.

Stamps, as the engines and log collectors print them (every field bounded, anchored at the line start):

* ISO date and time: CRI/kubectl (``2025-07-25T07:53:08.2+08:00 stdout F``), SGLang (``[2026-07-21 15:00:13 TP0]``,
  ``sglang/srt/utils/common.py`` log format ``[%(asctime)s%(prefix)s]``), Python ``logging`` defaults
  (``2026-01-01 00:00:00,123 INFO``);
* the engines' own (each dialect's ``stamps``): vLLM's ``LEVEL MM-DD HH:MM:SS`` (``vllm/logger.py`` ``_FORMAT``,
  datefmt ``%m-%d %H:%M:%S``), with or without a ``(EngineCore_DP0 pid=N)`` process tag: no year (``month-day``);
  llama.cpp's time since start (``0.06.895.980 I``: minutes.seconds.milliseconds.microseconds, ``common/log.cpp``;
  ``since-start``): it starts again at each process start, so going back means a restart, never an older file.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

_ISO = re.compile(r"\[?(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")


@lru_cache(maxsize=1)
def engine_stamps() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The engines' own stamp formats (each dialect's ``stamps``: ``month-day``, ``since-start``), compiled."""
    from mtp_audit.runtime.command import dialects

    return tuple((kind, re.compile(rx)) for d in dialects() for kind, rx in d.stamps)

#: Seconds a wall-clock stamp may go back before it counts as time going backwards (processes of one engine
#: write their lines a little out of order); llama.cpp's time since start may go back 1 s.
SLACK_SECONDS = 60


class Stamp(NamedTuple):
    """A line's stamp: ``kind`` (``"date"``: year known, ``"month-day"``: vLLM's, ``"since-start"``: llama.cpp's),
    ``key`` (sorts in time order within one kind: the digits as printed, zero-padded), ``text`` as printed."""

    kind: str
    key: str
    text: str

    @property
    def seconds(self) -> float:
        """Seconds on this kind's clock (comparable within one kind only)."""
        d = [int(x) for x in re.findall(r"\d+", self.key)]
        if self.kind == "date":
            return ((d[0] * 12 + d[1]) * 31 + d[2]) * 86400.0 + d[3] * 3600 + d[4] * 60 + d[5]
        if self.kind == "month-day":
            return (d[0] * 31 + d[1]) * 86400.0 + d[2] * 3600 + d[3] * 60 + d[4]
        return d[0] * 60 + d[1] + d[2] / 1000.0


def stamp(line: str) -> Stamp | None:
    """The stamp at the start of ``line`` (see the module docstring), or None. O(1): anchored, bounded fields, no
    arithmetic (``Stamp.seconds`` computes it only when time seems to go back)."""
    m = _ISO.match(line)
    if m:
        text = m.group(0).lstrip("[")
        return Stamp("date", text.replace("T", " "), text)
    for kind, rx in engine_stamps():
        m = rx.match(line)
        if m is None:
            continue
        if kind == "month-day":
            text = "{}-{} {}:{}:{}".format(*m.groups()[:5])
            return Stamp(kind, text, text)
        return Stamp(kind, f"{int(m.group(1)):06d}.{m.group(2)}.{m.group(3)}", m.group(0).strip())
    return None


def went_back(prev: Stamp | None, now: Stamp | None) -> bool:
    """True when ``now`` is more than :data:`SLACK_SECONDS` before ``prev`` on the same kind of clock."""
    if prev is None or now is None or prev.kind != now.kind or now.key >= prev.key:
        return False
    return now.seconds < prev.seconds - (1.0 if now.kind == "since-start" else SLACK_SECONDS)
