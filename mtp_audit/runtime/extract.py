"""Facts from an engine log, each with its line number: engine and version, resolved configuration,
draft loading, speculative statistics over time, crashes, benchmark-client lines.

:class:`LogFacts` consumes :class:`~mtp_audit.runtime.reader.LogLine` objects in order (one pass) and
keeps bounded state; the regular expressions and the engine source behind each are in
:mod:`mtp_audit.runtime.patterns`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mtp_audit.engines.base import LogDialect
from mtp_audit.runtime import patterns as P
from mtp_audit.runtime.clock import Stamp, stamp, went_back
from mtp_audit.runtime.command import CommandReader, dialects, may_hold_command, read_command
from mtp_audit.runtime.reader import MARKERS, LogLine
from mtp_audit.runtime.series import Interval, Series

_CRASH_WORDS = ("Traceback", 'File "', "exception", "fatal error", "EngineDead", "GGML_ASSERT", "Segmentation fault",
                "core dumped", "CUDA error", "terminate called", "what():", "ssertion", "error loading model",
                "failed to load draft", "unknown model architecture", "failed to load model, '")
#: Prefixes that container runtimes, process managers and loggers put before a message, whatever the engine:
#: CRI/k8s (``2025-07-25T07:53:08.2+08:00 stdout F``), docker-compose (``name-1  |``); after the engines' own
#: (each dialect's ``prefixes``): an ISO date and time with an optional level, a launcher's ``[53409]``, plain ``LEVEL:``.
COLLECTOR_PREFIXES = (
    r"\d{4}-\d\d-\d\dT[\d:.]{1,32}(?:Z|[+-]\d\d:?\d\d)?[ \t]{1,8}(?:stdout|stderr)[ \t]{1,8}[FP]\s",
    r"[\w.-]{1,128}-\d{1,6}[ \t]{1,16}\|\s",
)
GENERIC_PREFIXES = (
    r"\d{4}-\d\d-\d\d[ T][\d:.,]{1,32}[ \t]{1,8}(?:[A-Z]{1,10}:?[ \t]{1,8})?",
    r"\[\d{1,10}\]\s",
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):?[ \t]{1,8}",
)


@lru_cache(maxsize=1)
def prefix_pattern() -> re.Pattern[str]:
    """The prefixes, anchored at the line start: collectors', each engine's (its dialect's ``prefixes``), generic ones;
    every field bounded."""
    parts = COLLECTOR_PREFIXES + tuple(p for d in dialects() for p in d.prefixes) + GENERIC_PREFIXES
    return re.compile("^(?:" + "|".join(parts) + ")")


#: Most lines read as launch commands in one log (each costs a shell-like split of up to 16 KiB).
MAX_COMMANDS = 512
#: Most lines, and characters, joined into one folded statistics line (a terminal or ``fold`` wrapped it).
MAX_FOLD_LINES = 16
MAX_FOLD_CHARS = 64 * 1024
#: Most statistics lines whose figures could not be read kept for the report (all are counted).
MAX_UNREAD = 8

#: Speculative code paths in a frame's file or function name (a crash there concerns the draft).
SPEC_FRAME = re.compile(r"spec_decode|speculative|eagle|mtp|nextn|proposer|draft", re.I)
INIT_FRAME = re.compile(r"__init__|init_|load_model|load_weights|_build|initialize|from_config|ModelConfig")


def strip_prefixes(text: str) -> str:
    """``text`` without the container, process and timestamp prefixes of :func:`prefix_pattern` (up to 4 nested)."""
    prefix = prefix_pattern()
    for _ in range(4):
        m = prefix.match(text)
        if not m or not m.end():
            break
        text = text[m.end():]
    return text


#: Line starts that are a record of their own even without a logger prefix.
_RECORD_STARTS = ("Traceback", 'File "', "During handling", "The above exception")


def continues(held: str, nxt: str) -> bool:
    """True when ``nxt`` continues ``held`` (a line a terminal or ``fold`` wrapped): ``nxt`` is not a new record (no
    container, engine or logger prefix, no traceback line, not the start ``held``'s message starts with) and, when
    ``held`` ends inside a number, ``nxt`` goes on with the number or its separator (a digit, ``.``, ``,``, ``%``, a
    blank), so that the join is the only reading."""
    if not nxt or prefix_pattern().match(nxt) or nxt.lstrip().startswith(_RECORD_STARTS):
        return False
    if held[-1:] in "0123456789." and held and nxt[0] not in "0123456789.,% ":
        return False
    start = strip_prefixes(held).lstrip()[:12]
    return not (start and nxt.lstrip().startswith(start))


@dataclass
class Crash:
    """A traceback or fatal runtime message.

    Attributes:
        line: where it starts.
        marker: the engine's fatal line when one was seen (``Scheduler hit an exception``), else None.
        frames: the last frames as ``(file, line, function)``, at most 8 kept.
        exception: the exception type (``RuntimeError``), None when the paste stopped before it.
        message: the exception message (first 300 characters).
        exception_line: line number of the exception line.
        cut: the traceback ended before its exception line (a cut paste).
        model_unnamed: a llama.cpp model-load failure whose model the log has not named yet: llama-server prints
            ``error loading model`` for the target and for the draft alike, then names which one failed
            (``tools/server/server-context.cpp:1086`` the target, ``:1118`` the draft, @ llama-cpp-python 0.3.36);
            until then it is not known to stop the engine.
    """

    line: int
    marker: str | None = None
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    exception: str | None = None
    message: str = ""
    exception_line: int | None = None
    cut: bool = False
    model_unnamed: bool = False

    @property
    def speculative(self) -> bool:
        """True when a frame runs speculative-decoding code."""
        return any(SPEC_FRAME.search(f[0].rsplit("/", 1)[-1]) or SPEC_FRAME.search(f[2]) for f in self.frames)

    @property
    def during_init(self) -> bool:
        """True when the innermost speculative frame is a constructor or loader (the draft was being built)."""
        spec = [f for f in self.frames if SPEC_FRAME.search(f[0].rsplit("/", 1)[-1]) or SPEC_FRAME.search(f[2])]
        return bool(spec) and bool(INIT_FRAME.search(spec[-1][2]) or any(INIT_FRAME.search(f[2]) for f in self.frames[-2:]))

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        top = self.frames[-1] if self.frames else None
        return {"line": self.line, "marker": self.marker, "exception": self.exception, "message": self.message,
                "exception_line": self.exception_line, "cut": self.cut, "speculative_frames": self.speculative,
                "last_frame": None if top is None else {"file": top[0], "line": top[1], "function": top[2]},
                "frames": len(self.frames)}


@dataclass
class Fact:
    """A value read from the log with the line it came from."""

    value: Any
    line: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"value": self.value, "line": self.line}


class LogFacts:
    """Collects the facts of one log, one :class:`LogLine` at a time (see :meth:`feed`).

    Attributes (all bounded):
        votes: engine -> number of lines only that engine prints.
        first_seen: engine -> first such line.
        version: engine -> :class:`Fact` of its version.
        config: resolved configuration fields -> :class:`Fact` (``algorithm``, ``num_speculative_tokens``,
            ``draft_model``, ``model``, ``quantization``, ...), values as the engine printed them after its rewrites.
        draft: draft loading facts (``class``, ``shared_embedding``, ``shared_lm_head``) -> :class:`Fact`.
        series: the speculative statistics of the current run.
        runs: start lines of the runs seen (a paste may hold several).
        decode_without_spec: SGLang Decode batch lines without accept fields: (count, first line).
        unused: llama.cpp unused tensors per block index: block -> [count, bytes, first line, nextn named].
        crashes: at most 5 crashes, in order.
        client: benchmark-client lines (not engine output): (count, first line).
        threshold_off: line where TensorRT-LLM said speculation was turned off by its acceptance threshold.
    """

    def __init__(self) -> None:
        self.votes: Counter[str] = Counter()
        self.first_seen: dict[str, int] = {}
        self.version: dict[str, Fact] = {}
        self.config: dict[str, Fact] = {}
        self.draft: dict[str, Fact] = {}
        self.series = Series()
        self.runs: list[int] = []
        self.run_has_data = False
        self.earlier_runs: list[dict[str, Any]] = []
        self.decode_without_spec = [0, 0]
        self.unused: dict[int, list[Any]] = {}
        self.n_layer: Fact | None = None
        self.crashes: list[Crash] = []
        self.client = [0, 0]
        self.threshold_off: int | None = None
        #: the first statistics line without speculative fields after speculative ones (a run without speculation)
        self.spec_off_from: int | None = None
        self.spec_init: Fact | None = None
        self.draft_types: dict[str, int] = {}
        self._tb: Crash | None = None
        self._tb_budget = 0
        self._wrap: tuple[Callable[[Any, str, int], None], int, str] | None = None
        self._cmd: CommandReader | None = None
        self._line: LogLine | None = None
        self._commands_left = MAX_COMMANDS
        self.command: Fact | None = None
        self.wrapper: Fact | None = None
        self.client_figures: list[dict[str, Any]] = []
        self.draft_failure: dict[str, Any] | None = None
        self._load_error: tuple[int, str, str | None] | None = None
        self._load_named = False
        self._last_line = 0
        self._scratch: dict[str, dict[str, Any]] = {}
        self._wrap_budget = 0
        self._last_iv_line = -1
        self.time_back: list[dict[str, Any]] = []
        self.reported_run: dict[str, Any] | None = None
        self._stamp: Stamp | None = None
        self._stamp_line = 0
        self._run_stamps: tuple[Stamp | None, Stamp | None] = (None, None)
        self._latest: tuple[Stamp, dict[str, Any]] | None = None
        #: a statistics line waiting for its fold continuation: (engine, line, text so far, lines joined)
        self._held: tuple[str, int, str, int] | None = None
        self._final = False
        #: statistics lines whose figures could not be read: why ("cut", "bad") -> [count, [(line, text)...]]
        self.unread_lines: dict[str, list[Any]] = {}

    # -- reader protocol ---------------------------------------------------------------------------
    def wants_next(self) -> bool:
        """True while inside a traceback or a hard-wrapped configuration line (the reader then hands
        over the next line even without a marker)."""
        return self._tb is not None or self._wrap is not None or self._cmd is not None or self._held is not None

    # -- launch commands ----------------------------------------------------------------------------
    def _continue_command(self, raw: str | None) -> None:
        """Add a continuation line to the open launch command; read it by its engine's parser once it closes."""
        cmd = self._cmd
        assert cmd is not None
        if raw is not None:
            cmd.add(raw)
        if cmd.open:
            return
        self._cmd = None
        got = read_command(cmd.body)
        if got is not None:
            self.command = Fact(got, cmd.line)
            self._count_vote(got.engine, cmd.line)

    def feed(self, ln: LogLine) -> None:
        """Take one line (in file order). A last line the log ends inside (no line end: maybe cut) names its engine
        and may start a crash, but its figures are not read."""
        raw = ln.text
        if self._held is not None and (self._fold(ln) or self._only_asked(ln)):
            return
        if ln.open_end:
            self._vote(ln.number, raw, strip_prefixes(raw))
            return
        self._clock(ln, raw)
        if self._cmd is not None:
            if raw.strip() and strip_prefixes(raw) == raw:  # a continuation line carries no log prefix
                self._continue_command(raw)
                return
            self._cmd.open = False
            self._continue_command(None)
        if self._wrap is None and self._tb is None and self._fast(ln, raw):
            return
        text = strip_prefixes(raw)
        if self._wrap is not None and self._continue_wrap(ln, raw, text):
            return
        if self._tb is not None and self._continue_traceback(ln, text):
            return
        if ("=" in text or "Accept" in text) and P.CLIENT.search(text):
            self._client(ln, text)
            return
        if self._commands_left > 0 and may_hold_command(text):
            self._commands_left -= 1
            self._cmd = CommandReader(ln.number, text)
            self._continue_command(None)
        self._vote(ln.number, raw, text)
        self._crash_start(ln, raw, text)
        self._line = ln
        for d in dialects():
            if d.read is not None:
                d.read(self, ln.number, raw, text, ln.cut)

    # -- folded statistics lines ---------------------------------------------------------------------
    def hold(self, engine: str, line: int, raw: str) -> bool:
        """A statistics line that stops before its figures end waits for the next line (True), unless it is being read
        as it is (False: no line continues it, or it has reached :data:`MAX_FOLD_LINES` lines)."""
        if self._final:
            return False
        pieces = self._held[3] if self._held is not None and self._held[1] == line else 1
        self._held = (engine, line, raw, pieces)
        return True

    def unread(self, line: int, why: str) -> None:
        """Count a statistics line whose figures cannot be read (``cut`` or ``bad``), keeping the first few."""
        entry = self.unread_lines.setdefault(why, [0, []])
        entry[0] += 1
        if len(entry[1]) < MAX_UNREAD:
            ln = self._line
            text = ln.text if ln is not None and ln.number == line else ""
            entry[1].append((line, strip_prefixes(text).strip()[:160]))

    def _fold(self, ln: LogLine) -> bool:
        """Resolve the held statistics line with the line after it: join ``ln`` to it when ``ln`` continues it (True:
        ``ln`` is taken), else read it as it is (False)."""
        assert self._held is not None
        engine, line, raw, pieces = self._held
        self._held = None
        nxt = ln.text
        if ln.number == line + pieces and pieces < MAX_FOLD_LINES and len(raw) + len(nxt) <= MAX_FOLD_CHARS \
                and not ln.cut and continues(raw, nxt):
            self._last_line = ln.number
            if not ln.open_end:  # a joined line the log ends inside is not read: the open-end gap says so
                self._held = (engine, line, raw, pieces + 1)
                self._read_again(engine, line, raw + nxt, final=False)
                if self._held is not None and self._held[1] == line and self._held[2] == raw:
                    self._held = None  # the reader took the joined line without holding it again
            return True
        self._read_again(engine, line, raw, final=True)
        return False

    def _read_again(self, engine: str, line: int, raw: str, *, final: bool) -> None:
        """Hand the (joined) statistics line ``raw`` of ``line`` to ``engine``'s reader again."""
        d = next((x for x in dialects() if x.engine == engine and x.read is not None), None)
        if d is None or d.read is None:
            return
        self._line, self._final = LogLine(line, raw), final
        try:
            d.read(self, line, raw, strip_prefixes(raw), False)
        finally:
            self._final = False

    def _only_asked(self, ln: LogLine) -> bool:
        """True when ``ln`` was handed on only for a held line (no marker, and nothing else asked for it): the reader
        would have skipped it, so nothing else reads it."""
        if self._tb is not None or self._wrap is not None or self._cmd is not None or self._held is not None:
            return False
        return MARKERS.search(ln.text.encode("utf-8", "replace")) is None

    def _fast(self, ln: LogLine, raw: str) -> bool:
        """The statistics lines that make up most of a long log, read by their engine without the general path."""
        self._line = ln
        return any(d.fast(self, ln.number, raw) for d in dialects() if d.fast is not None)

    def vote(self, engine: str, number: int) -> None:
        """Count ``number`` as a line only ``engine`` prints."""
        self._count_vote(engine, number)

    def _count_vote(self, engine: str, number: int) -> None:
        self.votes[engine] += 1
        if engine not in self.first_seen:
            self.first_seen[engine] = number

    def finish(self) -> None:
        """Close an open traceback or wrapped line at the end of the input; when time went back in the log
        (rotated files concatenated out of order) and an earlier run in the file is the latest in time, make
        that run the one reported."""
        if self._held is not None:
            engine, line, raw, _ = self._held
            self._held = None
            self._read_again(engine, line, raw, final=True)
        if self._wrap is not None:
            self._close_wrap()
        if self._tb is not None:
            self._tb.cut = self._tb.exception is None
            self._tb = None
        last = self._run_stamps[1]
        if self._latest is not None and last is not None and self._latest[0].kind == last.kind \
                and self._latest[0].key > last.key and self.run_has_data:
            current = self._snapshot(self.runs[-1] if self.runs else 1, self._last_line)
            self.earlier_runs.append(self._summary(current))
            self._restore(self._latest[1])
            self.reported_run = {"start": self._latest[1]["start"], "end": self._latest[1]["end"],
                                 "why": "latest in time (the log's time goes back)"}

    @property
    def reported_stamp(self) -> Stamp | None:
        """The last stamp of the reported run (the latest-in-time run when :meth:`finish` chose an earlier one, else
        the last run), or None when its lines carry none: how files given together are ordered in time."""
        if self.reported_run is not None and self._latest is not None:
            return self._latest[0]
        return self._run_stamps[1]

    # -- time and runs -------------------------------------------------------------------------------
    def _clock(self, ln: LogLine, raw: str) -> None:
        """Follow the line stamps; time going back starts a new run (a restart, or rotated logs out of order)."""
        now = stamp(raw)
        self._last_line = ln.number
        if now is None:
            return
        if self._stamp is not None and went_back(self._stamp, now):
            if len(self.time_back) < 16:
                self.time_back.append({"line": ln.number, "from": self._stamp.text, "to": now.text})
            self._run_start(ln.number, forced=True)
        first, _ = self._run_stamps
        self._run_stamps = (first or now, now)
        self._stamp, self._stamp_line = now, ln.number

    # -- engine recognition ------------------------------------------------------------------------
    def _vote(self, number: int, raw: str, text: str) -> None:
        hits = [d.engine for d in dialects() if d.recognise is not None and d.recognise(raw, text)]
        for d in dialects():  # any line only one engine prints, and the launchers that wrap an engine
            if d.engine not in hits and ((not hits and any(w in raw for w in d.words))
                                         or (self.wrapper is None and d.wrappers and self._wrapped(d, number, raw))):
                hits.append(d.engine)
        for e in hits:
            self.votes[e] += 1
            self.first_seen.setdefault(e, number)

    def _wrapped(self, d: LogDialect, number: int, raw: str) -> bool:
        """True when ``raw`` names a launcher that wraps the engine of ``d`` (the first one named is kept)."""
        for word, name in d.wrappers:
            if word in raw:
                if self.wrapper is None:
                    self.wrapper = Fact(f"{name} (wraps {d.label})", number)
                return True
        return False

    @property
    def engine(self) -> str | None:
        """The engine with the most votes, or None when no engine line was seen."""
        if not self.votes:
            return None
        return self.votes.most_common(1)[0][0]

    # -- runs ----------------------------------------------------------------------------------------
    def _run_start(self, number: int, *, forced: bool = False) -> None:
        """A new engine run starts at line ``number`` (an engine's start-up line, or time going back when
        ``forced``): the run before it is summarised, and kept whole while it is the latest in time."""
        if self.run_has_data:
            done = self._snapshot(self.runs[-1] if self.runs else 1, number - 1)
            self.earlier_runs.append(self._summary(done))
            last = self._run_stamps[1]
            if last is not None and last.kind != "since-start" and (self._latest is None or (
                    self._latest[0].kind == last.kind and last.key >= self._latest[0].key)):
                self._latest = (last, done)
            self.series = Series()
            self.crashes = []
            self.decode_without_spec = [0, 0]
            self.threshold_off = None
            self.run_has_data = False
            self._run_stamps = (None, None)
        if forced or not self.runs or self.runs[-1] != number:
            if not self.runs or self.runs[-1] != number:
                self.runs.append(number)

    def _snapshot(self, start: int, end: int) -> dict[str, Any]:
        return {"start": start, "end": end, "series": self.series, "crashes": self.crashes,
                "decode_without_spec": self.decode_without_spec, "threshold_off": self.threshold_off,
                "config": dict(self.config), "draft": dict(self.draft), "command": self.command,
                "draft_failure": self.draft_failure,
                "stamps": [None if x is None else x.text for x in self._run_stamps]}

    @staticmethod
    def _summary(run: dict[str, Any]) -> dict[str, Any]:
        s = run["series"]
        return {"start": run["start"], "end": run["end"], "intervals": s.intervals, "rate": s.rate,
                "mean_len": s.mean_len, "first_time": run["stamps"][0], "last_time": run["stamps"][1]}

    def _restore(self, run: dict[str, Any]) -> None:
        self.series, self.crashes = run["series"], run["crashes"]
        self.decode_without_spec, self.threshold_off = run["decode_without_spec"], run["threshold_off"]
        self.config, self.draft, self.command = run["config"], run["draft"], run["command"]
        self.draft_failure = run["draft_failure"]

    def _add(self, iv: Interval) -> None:
        self.series.add(iv)
        if self.series.tail_zero == 1 and self._stamp is not None and self._stamp_line == iv.line:
            self.series.tail_zero_time = self._stamp.text
        self.run_has_data = True
        self._last_iv_line = iv.line

    # -- what engine readers tell the facts (mtp_audit.engines.base.LogSink) ------------------------
    def fact(self, value: Any, line: int) -> Fact:
        """A :class:`Fact`."""
        return Fact(value, line)

    def run_start(self, line: int) -> None:
        """An engine run starts at ``line``."""
        self._run_start(line)

    def interval(self, line: int, mean_len: float | None = None, rate: float | None = None, accepted: int | None = None,
                 drafted: int | None = None, per_pos: tuple[float, ...] = (), source: str | None = None) -> None:
        """One statistics line (see :class:`~mtp_audit.runtime.series.Interval`); its text as printed is kept (the
        last one, 300 characters, without container and logger prefixes)."""
        self._add(Interval(line, mean_len, rate, accepted, drafted, per_pos, source))
        ln = self._line
        if ln is not None and ln.number == line:
            self.series.last_printed = (line, ln.text)  # prefixes stripped when reported

    def per_position(self, line: int, values: tuple[float, ...]) -> None:
        """Per-position rates on the line right after a statistics line belong to it."""
        if self._last_iv_line == line - 1:
            self.series.per_pos_last = values

    def no_speculation(self, line: int, restart: bool = False) -> None:
        """A statistics line without speculative fields. With ``restart`` (the engine's reader saw its own speculative
        lines before) and statistics in the current run it starts a new run: an engine that writes its speculative
        fields whenever speculation is set (SGLang, ``metrics_reporter.py:967`` @ 0.5.23: the algorithm is fixed when
        the scheduler starts) prints lines without them only from a process started without speculation."""
        if restart and self.series.intervals and not self.decode_without_spec[0]:
            self._run_start(line, forced=True)
            self.spec_off_from = self.spec_off_from or line
        self.decode_without_spec[0] += 1
        self.decode_without_spec[1] = self.decode_without_spec[1] or line
        self.run_has_data = True

    def unused_tensor(self, block: int, name: str, size: int, line: int) -> None:
        """A loaded but unused tensor of block ``block``."""
        blk = self.unused.setdefault(block, [0, 0, line, False])
        blk[0] += 1
        blk[1] += size
        blk[3] = blk[3] or "nextn" in name

    def note(self, key: str, value: Any, line: int) -> None:
        """``n_layer`` (last one), ``spec_init`` (first), ``draft_type`` (first line of each), ``threshold_off`` (first)."""
        if key == "n_layer":
            self.n_layer = Fact(value, line)
        elif key == "spec_init" and self.spec_init is None:
            self.spec_init = Fact(value, line)
        elif key == "draft_type":
            self.draft_types.setdefault(value, line)
        elif key == "threshold_off":
            self.threshold_off = self.threshold_off or line
        elif key == "command" and self.command is None:  # what the engine logged of its arguments
            self.command = Fact(value, line)

    def scratch(self, engine: str) -> dict[str, Any]:
        """Per-log state of an engine reader (bounded by that reader)."""
        return self._scratch.setdefault(engine, {})

    # -- wrapped configuration lines ---------------------------------------------------------------
    def open_config(self, line: int, body: str, cut: bool, read: Callable[[Any, str, int], None]) -> None:
        """A configuration line, maybe hard-wrapped: ``read`` it once its parentheses close (at most 40 more lines)."""
        self._wrap = (read, line, body)
        self._wrap_budget = 40
        if _depth(body) <= 0 or cut:
            self._close_wrap()

    def _continue_wrap(self, ln: LogLine, raw: str, text: str) -> bool:
        assert self._wrap is not None
        read, start, body = self._wrap
        if text != raw or self._wrap_budget <= 0 or not raw.strip():
            self._close_wrap()
            return False
        self._wrap = (read, start, body + raw)
        self._wrap_budget -= 1
        if _depth(body + raw) <= 0:
            self._close_wrap()
        return True

    def _close_wrap(self) -> None:
        assert self._wrap is not None
        read, line, body = self._wrap
        self._wrap = None
        read(self, body, line)

    # -- crashes ---------------------------------------------------------------------------------------
    def _crash_start(self, ln: LogLine, raw: str, text: str) -> None:
        if not any(k in text for k in _CRASH_WORDS):
            return
        if self._native_crash(ln, text) or self._load_failure(ln, text):
            return
        native = next((w for w in _native_fatal() if w in text), None)
        marker = native or next((w for d in dialects() for w in d.fatal if w in text), None)
        if P.TRACEBACK.search(text) or native or P.FRAME.search(text):
            crash = Crash(ln.number, marker)
            if P.FRAME.search(text):
                self._frame(crash, text)
            if len(self.crashes) < 5:
                self.crashes.append(crash)
            self._tb, self._tb_budget = crash, 400
            self.run_has_data = True
            if native:
                crash.exception, crash.message, crash.exception_line = native, text[:300], ln.number
                self._tb = None
        elif marker and self.crashes and ln.number - self.crashes[-1].line < 5:
            self.crashes[-1].marker = marker
        m = P.CUDA_ERROR.search(text)
        if m and self.crashes and not self.crashes[-1].message:
            self.crashes[-1].message = "CUDA error: " + m.group(1)

    def _frame(self, crash: Crash, text: str) -> None:
        m = P.FRAME.search(text)
        assert m is not None
        crash.frames.append((m.group(1), int(m.group(2)), m.group(3)))
        del crash.frames[:-8]

    def _continue_traceback(self, ln: LogLine, text: str) -> bool:
        crash = self._tb
        assert crash is not None
        self._tb_budget -= 1
        body = text.strip()
        if P.FRAME.search(body):
            self._frame(crash, body)
            # a frame in an engine's own package (``sglang/srt/``, ``site-packages/vllm/``: each dialect's words) names
            # the engine, so a log that holds only a traceback still says whose it is
            self._vote(ln.number, ln.text, body)
            return True
        native = P.CXX_WHAT.search(body) or P.ASSERT_FAILED.search(body) if ("what():" in body or "ssertion" in body) else None
        if native is not None and crash.exception is None:  # the C++ exception ends the Python traceback
            crash.exception, crash.message = _native_words(body, native)
            crash.exception_line = ln.number
            self._tb = None
            return True
        m = P.EXCEPTION.match(body)
        if m and crash.frames:
            crash.exception, crash.message, crash.exception_line = m.group(1), (m.group(2) or "")[:300], ln.number
            self._tb = None
            return True
        new_record = text != ln.text and not text.startswith(" ")
        if self._tb_budget <= 0 or (new_record and not body.startswith(("File", "^", "~"))) and crash.frames:
            crash.cut = True
            self._tb = None
            return False
        return True

    def _native_crash(self, ln: LogLine, text: str) -> bool:
        """C/C++ crashes: ``terminate called after throwing an instance of 'T'`` then ``what(): <message>``, TensorRT-LLM's
        and glibc's ``Assertion failed``, a CUDA error line on its own. True when the line was taken."""
        m = P.CXX_TERMINATE.search(text)
        if m:
            self._new_crash(Crash(ln.number, "terminate called", exception=m.group(1)))
            return True
        native = P.CXX_WHAT.search(text) if "what():" in text else P.ASSERT_FAILED.search(text) if "ssertion" in text else None
        if native is None:
            m = P.CUDA_ERROR.search(text) if "CUDA error" in text and not P.TRACEBACK.search(text) else None
            if m is None or (self.crashes and ln.number - self.crashes[-1].line < 40):
                return False
            self._new_crash(Crash(ln.number, None, exception="CUDA error", message=m.group(1)[:300], exception_line=ln.number))
            return True
        last = self.crashes[-1] if self.crashes else None
        exc, msg = _native_words(text, native)
        if last is not None and last.marker == "terminate called" and not last.message and ln.number - last.line < 4:
            last.message, last.exception_line = msg, ln.number
            if "Assertion failed" in msg:
                last.exception = f"{last.exception} (Assertion failed)"
        else:
            self._new_crash(Crash(ln.number, None, exception=exc, message=msg, exception_line=ln.number))
        return True

    def _new_crash(self, crash: Crash) -> None:
        if len(self.crashes) < 5:
            self.crashes.append(crash)
        else:
            self.crashes[-1] = crash
        self.run_has_data = True

    def _load_failure(self, ln: LogLine, text: str) -> bool:
        """llama.cpp's model-loading errors: ``error loading model: ...`` (with ``unknown model architecture: 'A'``),
        then ``failed to load draft model, 'PATH'`` when the model was the draft. True when the line was taken."""
        m = P.DRAFT_LOAD_FAILED.search(text) if "failed to load draft" in text else None
        if m is not None:
            err = self._load_error if self._load_error and ln.number - self._load_error[0] < 20 else None
            self.draft_failure = {"line": ln.number, "draft": m.group(1), "architecture": err[2] if err else None,
                                  "cause": err[1] if err else "failed to load draft model", "cause_line": err[0] if err else None}
            self.run_has_data = True
            return True
        named = P.TARGET_LOAD_FAILED.search(text) is not None
        if named and self.crashes and self.crashes[-1].model_unnamed and self._load_error \
                and ln.number - self._load_error[0] < 20:
            self.crashes[-1].model_unnamed = False
            self._load_named = True
        m = P.LOAD_ERROR.search(text) if "error loading model" in text else None
        if m is None:
            return named
        arch = P.ARCH_UNKNOWN.search(text)
        cause = f"unknown model architecture: '{arch.group(1)}'" if arch else m.group(1)
        known = self._load_error is not None and self._load_error[1] == cause and self._load_named
        self._load_error = (ln.number, cause, arch.group(1) if arch else None)
        self._load_named = named or known
        self._new_crash(Crash(ln.number, "error loading model", exception="model load failure", message=cause,
                              exception_line=ln.number, model_unnamed=not self._load_named))
        return True

    def _client(self, ln: LogLine, text: str) -> None:
        """A benchmark client's summary line: counted, and its figure kept as the client's."""
        self.client[0] += 1
        self.client[1] = self.client[1] or ln.number
        m = P.CLIENT.search(text)
        assert m is not None
        if m.group(1):
            what, client, value = "rate", "llama.cpp mtp-bench.py", float(m.group(1))
        elif m.group(2):
            what, client, value = "accept length", "sglang.bench_serving", float(m.group(2))
        else:
            pct = m.group(3).startswith("rate")
            what, client = ("rate" if pct else "accept length"), "vllm bench serve"
            value = float(m.group(4)) / (100.0 if pct else 1.0)
        if len(self.client_figures) < 16:
            self.client_figures.append({"line": ln.number, "client": client, "what": what, "value": value,
                                        "text": text.strip()[:120]})

    # -- output --------------------------------------------------------------------------------------
    def mtp_block(self) -> tuple[int, list[Any]] | None:
        """The llama.cpp block whose tensors were all unused (the MTP/NextN block), as (index, entry), or None."""
        if not self.unused:
            return None
        idx = max(self.unused)
        entry = self.unused[idx]
        if entry[3] or (self.n_layer and idx == self.n_layer.value) or (len(self.unused) == 1 and entry[0] >= 3):
            return idx, entry
        return None


def _native_words(text: str, m: re.Match[str]) -> tuple[str, str]:
    """(exception, message) of a ``what():`` or ``Assertion failed`` match."""
    if m.re is P.CXX_WHAT:
        msg = m.group(1).strip()
        return ("Assertion failed" if "Assertion failed" in msg else "C++ exception"), msg[:300]
    return "Assertion failed", (m.group(1) or m.group(2) or "").strip()[:300]


def _depth(text: str) -> int:
    return text.count("(") + text.count("{") - text.count(")") - text.count("}")


#: Lines that are a crash on their own whatever the engine (the C runtime's words).
RUNTIME_FATAL = ("Segmentation fault", "core dumped")


def _native_fatal() -> tuple[str, ...]:
    return tuple(w for d in dialects() for w in d.native_fatal) + RUNTIME_FATAL
