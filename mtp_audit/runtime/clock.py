"""Wall-clock stamps at the start of log lines, for checking that time runs forward.

A log made by ``cat server.log*`` holds the rotated files out of order (the newest first, older ones after
it: time goes back at each file boundary), and one file may hold several engine starts. The stamps read
here let :class:`mtp_audit.runtime.extract.LogFacts` split such a log into runs and report the latest.

Stamps, as the engines and log collectors print them (every field bounded, anchored at the line start):

* ISO date and time: CRI/kubectl (``2025-07-25T07:53:08.2+08:00 stdout F``), SGLang (``[2026-07-21 15:00:13 TP0]``,
  ``sglang/srt/utils/common.py`` log format ``[%(asctime)s%(prefix)s]``), Python ``logging`` defaults
  (``2026-01-01 00:00:00,123 INFO``);
* vLLM's ``LEVEL MM-DD HH:MM:SS`` (``vllm/logger.py`` ``_FORMAT``: ``%(levelname)s %(asctime)s ...``, datefmt
  ``%m-%d %H:%M:%S``), with or without a ``(EngineCore_DP0 pid=N)`` process tag: no year;
* llama.cpp's time since start (``0.06.895.980 I``: minutes.seconds.milliseconds.microseconds,
  ``common/log.cpp``): it starts again at each process start, so going back means a restart, never an older file.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_ISO = re.compile(r"\[?(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
_VLLM = re.compile(r"(?:\(\w{1,64} pid=\d{1,10}\)[ \t]{0,8})?[A-Z]{4,8}[ \t]{1,4}(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
_LCPP = re.compile(r"(\d{1,6})\.(\d\d)\.(\d\d\d)\.\d\d\d [IWED] ")

#: Seconds a wall-clock stamp may go back before it counts as time going backwards (processes of one engine
#: write their lines a little out of order); llama.cpp's time since start may go back 1 s.
SLACK_SECONDS = 60


class Stamp(NamedTuple):
    """A line's stamp: ``kind`` (``"date"``: year known, ``"month-day"``: vLLM's, ``"since-start"``: llama.cpp's)
    and ``seconds`` (comparable within one kind only), ``text`` as printed."""

    kind: str
    seconds: float
    text: str


def stamp(line: str) -> Stamp | None:
    """The stamp at the start of ``line`` (see the module docstring), or None. O(1): anchored, bounded fields."""
    m = _ISO.match(line)
    if m:
        y, mo, d, h, mi, s = (int(x) for x in m.groups())
        return Stamp("date", ((y * 12 + mo) * 31 + d) * 86400.0 + h * 3600 + mi * 60 + s, m.group(0).lstrip("["))
    m = _VLLM.match(line)
    if m:
        mo, d, h, mi, s = (int(x) for x in m.groups())
        return Stamp("month-day", (mo * 31 + d) * 86400.0 + h * 3600 + mi * 60 + s, m.group(0)[-14:])
    m = _LCPP.match(line)
    if m:
        mi, s, ms = (int(x) for x in m.groups())
        return Stamp("since-start", mi * 60 + s + ms / 1000.0, m.group(0).strip())
    return None


def went_back(prev: Stamp | None, now: Stamp | None) -> bool:
    """True when ``now`` is more than :data:`SLACK_SECONDS` before ``prev`` on the same kind of clock."""
    if prev is None or now is None or prev.kind != now.kind:
        return False
    return now.seconds < prev.seconds - (1.0 if now.kind == "since-start" else SLACK_SECONDS)
